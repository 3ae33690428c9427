#!/usr/bin/env bash
# Runs the measurements of docs/BENCHMARKS.md "Worker" and "Gateway" on
# the real all-MiniLM-L6-v2 (max_seq_length raised to 512, bench/make_serving_model.sh) and
# writes JSON runs and logs to docs/bench/, then the Markdown report docs/bench/README.md.
# The serving suites themselves are scripts/bench.sh's (docs/bench/suites/).
#   scripts/build.sh release && bench/serving_bench.sh [OUT_DIR]
# About 15 minutes on the idle 2-core development VM (much longer under load). One measurement
# at a time; the load average is logged to OUT_DIR/machine.txt before each.
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
"$stamen" bench knee --model "$model" --seq 32,128,512 --repeats 3 --json "$out/knee.json" | tee "$out/knee.txt"
"$stamen" bench knee --model "$model" --seq 32,128,512 --budgets 256,512,1024,2048,4096 --repeats 2 --threads 1 \
  --json "$out/knee-1thread.json" | tee "$out/knee-1thread.txt"

log "stack: engine, grpc worker, gateway (ids, text)"
"$stamen" bench worker --model "$model" --layers engine,grpc,http-ids,http-text --seq 128,512 --batch 1 \
  --rounds 3 --requests 10 --json "$out/stack-batch1.json" | tee "$out/stack-batch1.txt"
"$stamen" bench worker --model "$model" --layers engine,grpc,http-ids,http-text --seq 128 --batch 100 \
  --rounds 2 --requests 1 --json "$out/stack-batch100.json" | tee "$out/stack-batch100.txt"

log "stamen serve for wrk"
: > "$out/serve.log"  # exists before the readiness loop reads it, whenever the child opens it
"$stamen" serve --model "$model" --port "$port" 2> "$out/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "serve: ready" "$out/serve.log" && break; sleep 0.2; done
log "wrk"
wrk -t2 -c8 -d15s -s bench/wrk_embeddings.lua "http://127.0.0.1:$port/v1/embeddings" | tee "$out/wrk.txt"
kill $server; wait $server 2>/dev/null || true
log "done"
"$stamen" bench report "$out"/knee.json "$out"/knee-1thread.json "$out"/stack-batch1.json "$out"/stack-batch100.json \
  --out "$out" > /dev/null
