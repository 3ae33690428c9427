#!/usr/bin/env bash
# The serving suites through the real stack on one device: what users get, not the engine alone.
# Two layouts, each with `stamen bench serve` (answers checked against the engine in the
# benchmark's own process before anything is timed):
#   1. `stamen serve --device D`: latency (pre-tokenized, batch 1), throughput (4 clients ×
#      100 inputs) and concurrency (text, 1–16 clients) on the embedder; scoring (5/25/50 pairs)
#      on the reranker;
#   2. `stamen gateway` in front of `stamen worker --device D` over gRPC: latency against the
#      worker itself (grpc://), concurrency through the gateway.
# Each server's /metrics is kept at the end (on a GPU: graph captures, replays, eager runs,
# device memory, steps in flight). bench/gpu/run.sh calls it with --device cuda; with
# --device cpu --quick on a tiny model it is the fallback that tests/bench runs in CI.
#   bench/gpu/serve_suites.sh --device cuda|cpu --stamen BIN --embedder DIR --reranker DIR --out DIR [--quick]
set -uo pipefail

device=cuda stamen= embedder= reranker= out= quick=false
while (( $# > 0 )); do
  case $1 in
    --device) device=$2; shift 2 ;;
    --stamen) stamen=$2; shift 2 ;;
    --embedder) embedder=$2; shift 2 ;;
    --reranker) reranker=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) quick=true; shift ;;
    *) echo "serve_suites: unknown argument $1" >&2; exit 2 ;;
  esac
done
for name in stamen embedder reranker out; do
  [[ -n "${!name}" ]] || { echo "serve_suites: --$name is required" >&2; exit 2; }
done
mkdir -p "$out"
base_port=${STAMEN_SUITES_PORT:-18900}
failures=0
started=()
stop_all() {
  local pid
  for pid in "${started[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${started[@]}"; do wait "$pid" 2> /dev/null || true; done
  started=()
}
trap stop_all EXIT
say() { echo "serve_suites: $*"; }

# Step sizes: the issue's on a GPU, a few requests per step on the CPU fallback.
if $quick; then
  latency_seq=(--seq 16,64) throughput=(--seq 64 --batch 8 --requests 2) concurrency=(--seq 32 --clients 1,4)
  scoring=(--seq 32 --batch 5 --requests 2) requests=(--requests 3)
else
  latency_seq=(--seq 128,512,4096) throughput=(--seq 512,1024,4096 --requests 4) concurrency=(--clients 1,4,16)
  scoring=() requests=(--requests 30)
fi

wait_for_line() {  # log pattern: until the log has a line matching pattern (3 minutes at most)
  for _ in $(seq 900); do
    grep -q "$2" "$1" 2> /dev/null && return 0
    sleep 0.2
  done
  say "no '$2' in $1:"; tail -20 "$1"
  return 1
}
start_serve() {  # name model port
  : > "$out/$1.log"
  "$stamen" serve --device "$device" --model "$2" --port "$3" --log-level info 2> "$out/$1.log" &
  started+=($!)
  wait_for_line "$out/$1.log" "serve: ready"
}
suite() {  # name target suite model [options...]: one run → OUT/NAME.{json,txt}
  local name=$1 target=$2 which=$3 model=$4
  shift 4
  if "$stamen" bench serve --target "$target" --suite "$which" --model "$model" --label "${name%%.*}" \
       --json "$out/$name.json" "$@" > "$out/$name.txt" 2>&1; then
    say "$name: ok"
  else
    say "$name: FAILED (see $out/$name.txt)"; tail -5 "$out/$name.txt"
    failures=$((failures + 1))
  fi
}
keep_metrics() {  # name port
  curl -sf "http://127.0.0.1:$2/metrics" > "$out/$1.metrics.txt" || say "$1: no /metrics"
}

# 1. stamen serve.
port=$((base_port + 0))
if start_serve serve "$embedder" "$port"; then
  suite serve.latency "http://127.0.0.1:$port" latency "$embedder" --inputs ids "${latency_seq[@]}" "${requests[@]}"
  suite serve.throughput "http://127.0.0.1:$port" throughput "$embedder" "${throughput[@]}"
  suite serve.concurrency "http://127.0.0.1:$port" concurrency "$embedder" "${concurrency[@]}" "${requests[@]}"
  keep_metrics serve "$port"
else
  failures=$((failures + 1))
fi
stop_all
port=$((base_port + 1))
if start_serve serve-reranker "$reranker" "$port"; then
  suite serve.scoring "http://127.0.0.1:$port" scoring "$reranker" "${scoring[@]}"
  keep_metrics serve-reranker "$port"
else
  failures=$((failures + 1))
fi
stop_all

# 2. A gateway in front of one worker over gRPC.
worker_port=$((base_port + 2)) worker_metrics=$((base_port + 3)) gateway_port=$((base_port + 4))
: > "$out/worker.log"
"$stamen" worker --device "$device" --model "$embedder" --listen "127.0.0.1:$worker_port" \
  --metrics-port "$worker_metrics" --log-level info 2> "$out/worker.log" &
started+=($!)
if wait_for_line "$out/worker.log" "worker: serving"; then
  "$stamen" gateway --model "$embedder" --workers "127.0.0.1:$worker_port" --port "$gateway_port" 2> "$out/gateway.log" &
  started+=($!)
  suite worker.latency "grpc://127.0.0.1:$worker_port" latency "$embedder" "${latency_seq[@]}" "${requests[@]}"
  if wait_for_line "$out/gateway.log" "gateway: .* on http://"; then
    suite gateway.concurrency "http://127.0.0.1:$gateway_port" concurrency "$embedder" "${concurrency[@]}" "${requests[@]}"
  else
    failures=$((failures + 1))
  fi
  keep_metrics worker "$worker_metrics"
else
  failures=$((failures + 1))
fi
stop_all

# The timed lines of every suite in one file, for the summary.
: > "$out/suites.txt"
for run in serve.latency serve.throughput serve.concurrency serve.scoring worker.latency gateway.concurrency; do
  [[ -f "$out/$run.txt" ]] && grep " p50 " "$out/$run.txt" | sed "s|^|$run: |" >> "$out/suites.txt"
done
say "$(wc -l < "$out/suites.txt") timed steps, $failures failure(s); results in $out"
exit $(( failures > 0 ))
