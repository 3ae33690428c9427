#!/usr/bin/env bash
# Measures added-token matching where it costs most: EmbeddingGemma's tokenizer.json (6,415
# added tokens, nearly all starting with "<") on the "<"-heavy inputs of
# make_added_token_inputs.py (an HTML page, C++ code) and plain udhr text, against Hugging Face
# tokenizers. Several stamen binaries (say, before and after a change) are timed in turns,
# ROUNDS times, and each keeps its best p50; callgrind counts each one's instructions per encode.
# Prints the Markdown tables of docs/BENCHMARKS.md.
# Usage: bench/added_token_report.sh [TOKENIZER_JSON] [ROUNDS] [ITERATIONS] [STAMEN_BINARY ...]
set -euo pipefail
cd "$(dirname "$0")/.."
tokenizer=${1:-../models/embeddinggemma-300m/tokenizer.json}
rounds=${2:-5}
iterations=${3:-200}
shift $(($# < 3 ? $# : 3))
binaries=("$@")
[ ${#binaries[@]} -eq 0 ] && binaries=(build/release/apps/stamen)
inputs="gemma_html_4098 gemma_code_4098 gemma_udhr_4098"

json_field() { python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(d[sys.argv[2]])" "$1" "$2"; }
min() { python3 -c "import sys; print(min(float(x) for x in sys.argv[1:]))" "$@"; }

echo "## Added tokens, single thread ($(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(date -u +%F))"
echo
echo "Best of $rounds rounds of $iterations encodes (p50 µs, wall / thread CPU time), binaries in turn:"
echo
header="| input | bytes | \"<\" |"
rule="|---|---|---|"
for binary in "${binaries[@]}"; do header+=" $binary |"; rule+="---|"; done
echo "$header HF tokenizers (Python) |"
echo "$rule---|"
for input in $inputs; do
  file=bench/data/tokenizer/$input.txt
  declare -A wall=() cpu=()
  hf_wall=() hf_cpu=()
  for _ in $(seq "$rounds"); do
    for binary in "${binaries[@]}"; do
      out=$("$binary" bench tokenizer --model "$tokenizer" --input "$file" --iterations "$iterations" --warmup 10 --json)
      wall[$binary]+=" $(json_field "$out" p50_us)"
      cpu[$binary]+=" $(json_field "$out" cpu_p50_us)"
    done
    hf=$(.venv/bin/python bench/peers/hf_tokenizers_latency.py "$tokenizer" "$file" "$iterations" 10)
    hf_wall+=("$(json_field "$hf" p50_us)")
    hf_cpu+=("$(json_field "$hf" cpu_p50_us)")
  done
  row="| $input | $(wc -c <"$file") | $(tr -cd '<' <"$file" | wc -c) |"
  for binary in "${binaries[@]}"; do
    # shellcheck disable=SC2086
    row+=" $(printf '%.0f / %.0f' "$(min ${wall[$binary]})" "$(min ${cpu[$binary]})") |"
  done
  echo "$row $(printf '%.0f / %.0f' "$(min "${hf_wall[@]}")" "$(min "${hf_cpu[@]}")") |"
  unset wall cpu
done
echo
echo "Instructions per encode (valgrind callgrind, --warmup 0 --iterations 10):"
echo
echo "$header"
echo "$rule"
for input in $inputs; do
  file=bench/data/tokenizer/$input.txt
  row="| $input | $(wc -c <"$file") | $(tr -cd '<' <"$file" | wc -c) |"
  for binary in "${binaries[@]}"; do
    out=$(mktemp)
    valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out" \
      "$binary" bench tokenizer --model "$tokenizer" --input "$file" --warmup 0 --iterations 10 >/dev/null 2>&1
    row+=" $(python3 -c "import re,sys; t=open(sys.argv[1]).read(); print(format(int(re.search(r'^totals: (\d+)', t, re.M).group(1)) // 10, ','))" "$out") |"
    rm -f "$out"
  done
  echo "$row"
done
