#!/usr/bin/env bash
# Runs the measurements of docs/BENCHMARKS.md "Worker", "Gateway" and "Serving suites" on
# the real all-MiniLM-L6-v2 (max_seq_length raised to 512, bench/make_serving_model.sh) and
# writes JSON runs and logs to docs/bench/, then the Markdown report docs/bench/README.md.
#   scripts/build.sh release && bench/serving_bench.sh [OUT_DIR]
# About 10–15 minutes on the 2-core development VM. Runs one measurement at a time.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
stamen=build/release/apps/stamen
out=${1:-docs/bench}
port=${STAMEN_BENCH_PORT:-18640}
mkdir -p "$out"
model=$(bench/make_serving_model.sh)
log() { echo "== $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg): $*" | tee -a "$out/machine.txt"; }
: > "$out/machine.txt"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB" >> "$out/machine.txt"

log "knee"
"$stamen" bench knee --model "$model" --seq 32,128,512 --json "$out/knee.json" | tee "$out/knee.txt"

log "stack: engine, grpc worker, gateway (ids, text)"
"$stamen" bench worker --model "$model" --layers engine,grpc,http-ids,http-text --seq 128,512 --batch 1,100 \
  --rounds 2 --json "$out/stack.json" | tee "$out/stack.txt"

log "stamen serve suites"
"$stamen" serve --model "$model" --port "$port" 2> "$out/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "serve: ready" "$out/serve.log" && break; sleep 0.2; done
"$stamen" bench serve --target "http://127.0.0.1:$port" --model "$model" --suite latency \
  --json "$out/serve-latency.json" | tee "$out/serve-latency.txt"
log "throughput"
"$stamen" bench serve --target "http://127.0.0.1:$port" --model "$model" --suite throughput --requests 4 \
  --json "$out/serve-throughput.json" | tee "$out/serve-throughput.txt"
log "concurrency"
"$stamen" bench serve --target "http://127.0.0.1:$port" --model "$model" --suite concurrency \
  --json "$out/serve-concurrency.json" | tee "$out/serve-concurrency.txt"
log "wrk"
wrk -t2 -c8 -d15s -s bench/wrk_embeddings.lua "http://127.0.0.1:$port/v1/embeddings" | tee "$out/wrk.txt"
kill $server; wait $server 2>/dev/null || true
log "done"
"$stamen" bench report "$out"/knee.json "$out"/stack.json "$out"/serve-*.json --out "$out" > /dev/null
