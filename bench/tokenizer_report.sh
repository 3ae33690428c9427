#!/usr/bin/env bash
# Measures the tokenizer against its peers on the udhr inputs and prints the Markdown tables
# of docs/BENCHMARKS.md: wall-clock p50/p99 (stamen and SentencePiece in one process, Hugging
# Face tokenizers through its Python binding) and callgrind instructions per encode.
# Usage: bench/tokenizer_report.sh [MODEL_DIR] [ITERATIONS]   (run after scripts/build.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
model_dir=${1:-../shared/models/synthetic-unigram-250k}
iterations=${2:-2000}
stamen=build/release/apps/stamen
inputs=bench/data/tokenizer
sizes="130 514 1026 4098 16386"

json_field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))" "$1" "$2"; }

echo "## Latency, single thread ($(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F))"
echo
echo "| tokens | stamen .model p50 / p99 µs | stamen tokenizer.json p50 / p99 µs | SentencePiece p50 / p99 µs | HF tokenizers (Python) p50 / p99 µs | ratio p50 .model / SentencePiece | ratio p50 .json / SentencePiece | allocations/encode | pages |"
echo "|---|---|---|---|---|---|---|---|---|"
for size in $sizes; do
  input=$inputs/udhr_$size.txt
  iters=$iterations; [ "$size" -ge 4098 ] && iters=$((iterations / 4))
  model=$($stamen bench tokenizer --model "$model_dir/sentencepiece.bpe.model" --input "$input" --iterations "$iters" --warmup 100 --peer sentencepiece --json)
  json=$($stamen bench tokenizer --model "$model_dir/tokenizer.json" --input "$input" --iterations "$iters" --warmup 100 --peer sentencepiece --json)
  hf=$(.venv/bin/python bench/peers/hf_tokenizers_latency.py "$model_dir/tokenizer.json" "$input" "$iters" 100)
  printf '| %s | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.1f / %.1f | %.2f | %.2f | %s | %s |\n' \
    "$(json_field "$json" 'd["tokens"]')" \
    "$(json_field "$model" 'd["p50_us"]')" "$(json_field "$model" 'd["p99_us"]')" \
    "$(json_field "$json" 'd["p50_us"]')" "$(json_field "$json" 'd["p99_us"]')" \
    "$(json_field "$model" 'd["peer"]["p50_us"]')" "$(json_field "$model" 'd["peer"]["p99_us"]')" \
    "$(json_field "$hf" 'd["p50_us"]')" "$(json_field "$hf" 'd["p99_us"]')" \
    "$(json_field "$model" 'd["ratio_p50"]')" "$(json_field "$json" 'd["ratio_p50"]')" \
    "$(json_field "$json" 'd["allocations_per_encode"]')" "$(json_field "$json" 'd["huge_pages"]')"
done
echo
echo "Hugging Face's per-call binding overhead (1-token input): $(json_field "$hf" 'd["overhead_p50_us"]') µs p50."
echo
echo "## Instructions per encode (valgrind callgrind, exact)"
echo
echo "| tokens | stamen .model | stamen tokenizer.json | SentencePiece | ratio .model / SentencePiece | ratio .json / SentencePiece |"
echo "|---|---|---|---|---|---|"
count_instructions() {  # model subject input -> instructions per encode
  local out; out=$(mktemp)
  valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
    $stamen bench tokenizer --model "$1" --subject "$2" --input "$3" --warmup 0 --iterations 10 >/dev/null 2>&1
  python3 -c "import re,sys; t=open(sys.argv[1]).read(); print(int(re.search(r'^totals: (\d+)', t, re.M).group(1)) // 10)" "$out"
  rm -f "$out"
}
for size in $sizes; do
  input=$inputs/udhr_$size.txt
  model=$(count_instructions "$model_dir/sentencepiece.bpe.model" stamen "$input")
  json=$(count_instructions "$model_dir/tokenizer.json" stamen "$input")
  peer=$(count_instructions "$model_dir/sentencepiece.bpe.model" sentencepiece "$input")
  python3 -c "import sys; s,m,j,p=sys.argv[1:]; m,j,p=int(m),int(j),int(p); print(f'| {s} | {m:,} | {j:,} | {p:,} | {m/p:.2f} | {j/p:.2f} |')" "$size" "$model" "$json" "$peer"
done
echo
echo "## Batch encoding, 10,000 udhr lines"
echo
cut -f2 ../shared/corpus/udhr.tsv > /tmp/stamen_udhr_lines.txt
$stamen bench tokenizer-batch --model "$model_dir/tokenizer.json" --input /tmp/stamen_udhr_lines.txt --lines 10000 --threads "$(nproc)"
