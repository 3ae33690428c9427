#!/usr/bin/env bash
# Two builds of stamen serving the same model, one serving suite, alternated round by round so
# that both see the same machine (this VM's speed drifts by tens of percent within minutes):
# prints each round's line from `stamen bench serve` and the candidate ÷ baseline ratio of the
# best round's throughput. For questions like "is the CPU worker loop any slower after this
# change" (issue 19).
#   bench/compare_builds.sh BASELINE_STAMEN CANDIDATE_STAMEN MODEL_DIR [rounds] [bench serve options...]
# Default options: --suite throughput --seq 128 --batch 32 --clients 4 --duration 8.
set -euo pipefail
baseline=$1 candidate=$2 model=$3
rounds=${4:-3}
shift $(( $# < 4 ? $# : 4 ))
options=("$@")
(( ${#options[@]} > 0 )) || options=(--suite throughput --seq 128 --batch 32 --clients 4 --duration 8)
port=${STAMEN_COMPARE_PORT:-$((20000 + RANDOM % 20000))}
work=$(mktemp -d)
server=
trap '[[ -n "$server" ]] && kill "$server" 2> /dev/null; rm -rf "$work"' EXIT

run_one() {  # name binary → appends "name rate" to $work/rates
  local name=$1 binary=$2
  "$binary" serve --model "$model" --port "$port" --log-level info 2> "$work/$name.log" &
  server=$!
  for _ in $(seq 300); do grep -q "serve: ready" "$work/$name.log" && break; sleep 0.2; done
  grep -q "serve: ready" "$work/$name.log" || { echo "$name did not start:"; tail -5 "$work/$name.log"; exit 1; }
  "$candidate" bench serve --target "http://127.0.0.1:$port" --model "$model" "${options[@]}" > "$work/$name.txt" 2>&1 ||
    { echo "$name: bench serve failed:"; tail -5 "$work/$name.txt"; exit 1; }
  kill "$server"; wait "$server" 2> /dev/null || true; server=
  local line; line=$(grep " p50 " "$work/$name.txt" | tail -1)
  echo "$name: $line"
  echo "$name $(echo "$line" | grep -oE '[0-9.]+ emb/s' | grep -oE '^[0-9.]+')" >> "$work/rates"
}

echo "# $(date -u +%H:%M:%S) UTC, load $(cut -d' ' -f1-3 /proc/loadavg), ${options[*]}"
for round in $(seq "$rounds"); do
  run_one baseline "$baseline"
  run_one candidate "$candidate"
done
awk '{ if ($2 > best[$1]) best[$1] = $2 }
     END { printf "best round: baseline %.1f emb/s, candidate %.1f emb/s, candidate ÷ baseline %.3f\n",
                  best["baseline"], best["candidate"], best["candidate"] / best["baseline"] }' "$work/rates"
