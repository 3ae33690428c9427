#!/usr/bin/env bash
# The four serving suites (issue 7, docs/BENCHMARKS.md "Serving suites") on the demo model —
# the real all-MiniLM-L6-v2 weights of .venv, max_seq_length raised to its 512 positions
# (bench/make_serving_model.sh) — against `stamen serve` and against a 2-worker setup
# (`stamen gateway` + 2 × `stamen worker --threads 1`); the scoring suite on a cross-encoder of
# ms-marco-MiniLM-L6-v2's shape (random weights: the timing depends on the shape only). Then
# `stamen bench report` writes docs/bench/suites/README.md and the plots, and the tables replace the
# generated part of docs/BENCHMARKS.md.
#
#   scripts/bench.sh            stamen only, under 10 minutes on 2 cores
#   scripts/bench.sh --peers    also the peers in the same run, on the same folder, with text
#                               inputs everywhere (Infinity with its torch and ONNX engines,
#                               sentence-transformers on PyTorch, ONNX Runtime; needs
#                               .venv-heavy and .venv-infinity, see
#                               bench/peers/README.md); about 25 minutes
#
# One measurement at a time: run it on an otherwise idle machine (the load average is logged
# before each suite into docs/bench/suites/machine.txt and into every JSON run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

peers=false
[[ "${1:-}" == "--peers" ]] && peers=true
out=docs/bench/suites
logs=build/bench-logs
base_port=${STAMEN_BENCH_PORT:-18700}
stamen=build/release/apps/stamen
# A throughput step queues 4 × 100 × 512 tokens at once: on 2 CPU cores that is over a minute of
# work, so the servers' deadlines (60 s by default) are raised for the benchmark.
deadline=(--request-timeout 900)

scripts/setup.sh >&2
scripts/build.sh release >&2
mkdir -p "$out" "$logs"
rm -f "$out"/*.json "$out"/*.png "$out"/*.dat "$out"/*.txt
model=$(bench/make_serving_model.sh)
reranker=build/bench-models/ms-marco-MiniLM-L6-v2-random
[[ -f "$reranker/model.safetensors" ]] ||
  "$stamen" make-model --like ms-marco-MiniLM-L6-v2 --random-seed 1 --out "$reranker" 2> "$logs/make-model.log"

started=()
peer_pid=
stop_all() {
  local pid
  for pid in "${started[@]}"; do kill "$pid" 2> /dev/null || true; done
  for pid in "${started[@]}"; do wait "$pid" 2> /dev/null || true; done
  started=()
  # A peer runs in its own session (not our child): stop_peer.sh signals its whole process group
  # and waits for it, so the next peer finds the port free.
  if [[ -n "$peer_pid" ]]; then
    bench/peers/stop_peer.sh "$peer_pid" || true
    peer_pid=
  fi
}
trap stop_all EXIT

log() { echo "== $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg): $*" | tee -a "$out/machine.txt" >&2; }
wait_healthy() {  # port: until GET /health answers 200 (3 minutes at most)
  for _ in $(seq 900); do
    curl -sf "http://127.0.0.1:$1/health" > /dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "bench: nothing healthy on port $1; logs in $logs" >&2
  return 1
}
suite() {  # name target suite [options...]: one run → docs/bench/NAME.json
  local name=$1 target=$2 which=$3
  shift 3
  log "$name"
  "$stamen" bench serve --target "$target" --suite "$which" --label "${name%%.*}" --json "$out/$name.json" "$@" |
    tee "$out/$name.txt" || echo "bench: $name: some steps failed (see above); going on" >&2
}
embedding_suites() {  # label target [options...]: latency, throughput, concurrency
  local label=$1 target=$2
  shift 2
  suite "$label.latency" "$target" latency --model "$model" --requests 20 "$@"
  suite "$label.throughput" "$target" throughput --model "$model" --requests 4 "$@"
  suite "$label.concurrency" "$target" concurrency --model "$model" "$@"
}

: > "$out/machine.txt"
echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores," \
  "$(free -g | awk '/Mem:/ {print $2}') GB, $(date -u +%F)" >> "$out/machine.txt"

# 1. stamen serve: gateway and worker in one process, all cores.
port=$base_port
"$stamen" serve --model "$model" --port "$port" "${deadline[@]}" 2> "$logs/serve.log" &
started+=($!)
wait_healthy "$port"
embedding_suites stamen-serve "http://127.0.0.1:$port"
if $peers; then  # the pre-tokenized suites again with text, as the peers get them
  suite stamen-serve-text.latency "http://127.0.0.1:$port" latency --model "$model" --requests 20 --inputs text
  suite stamen-serve-text.throughput "http://127.0.0.1:$port" throughput --model "$model" --requests 4 --inputs text
fi
stop_all

port=$((base_port + 1))
"$stamen" serve --model "$reranker" --port "$port" "${deadline[@]}" 2> "$logs/serve-reranker.log" &
started+=($!)
wait_healthy "$port"
suite stamen-serve.scoring "http://127.0.0.1:$port" scoring --model "$reranker" --requests 5
stop_all

# 2. stamen gateway in front of two single-thread workers (the Kubernetes layout, one machine).
workers=127.0.0.1:$((base_port + 3)),127.0.0.1:$((base_port + 4))
for address in ${workers//,/ }; do
  "$stamen" worker --model "$model" --listen "$address" --threads 1 2> "$logs/worker-${address##*:}.log" &
  started+=($!)
done
port=$((base_port + 2))
"$stamen" gateway --model "$model" --workers "$workers" --port "$port" "${deadline[@]}" --worker-timeout 900 2> "$logs/gateway.log" &
started+=($!)
wait_healthy "$port"
embedding_suites stamen-gateway-2-workers "http://127.0.0.1:$port"
stop_all

# 3. The peers, one at a time, on the same folder, text in (they take no token ids).
peer_names=(sentence-transformers onnxruntime openvino infinity infinity-optimum)
if $peers; then
  for peer in "${peer_names[@]}"; do
    port=$((base_port + 10))
    peer_pid=$(PEER_LOG="$logs/$peer.log" bench/peers/start_peer.sh "$peer" "$model" "$port")
    target="openai+http://127.0.0.1:$port/v1/embeddings"
    [[ $peer == infinity* ]] && target="$target?model=$(basename "$model")"
    embedding_suites "$peer" "$target" --inputs text
    stop_all
  done
fi
log "done"

# The report. Within a suite the first run is the base of every ratio: stamen as the peers are
# timed (text) when they ran, else stamen serve.
runs=()
for which in latency throughput concurrency scoring; do
  for name in stamen-serve-text stamen-serve stamen-gateway-2-workers "${peer_names[@]}"; do
    [[ -f "$out/$name.$which.json" ]] && runs+=("$out/$name.$which.json")
  done
done
"$stamen" bench report "${runs[@]}" --out "$out" > /dev/null

# docs/BENCHMARKS.md: the report replaces what lies between the two markers.
python3 - "$out/README.md" docs/BENCHMARKS.md <<'PY'
import re, sys
report = open(sys.argv[1], encoding="utf-8").read()
report = re.sub(r"^# .*\n", "", report, count=1)                  # the report's own title
report = re.sub(r"^(#+) ", r"#\1 ", report, flags=re.M)         # its sections one level down
report = re.sub(r"\]\(([^)]+\.png)\)", r"](bench/suites/\1)", report)  # plots live in docs/bench/suites/
begin, end = "<!-- scripts/bench.sh: begin -->", "<!-- scripts/bench.sh: end -->"
text = open(sys.argv[2], encoding="utf-8").read()
if begin not in text or end not in text:
    sys.exit("bench: docs/BENCHMARKS.md lacks the markers " + begin + " / " + end)
head, rest = text.split(begin, 1)
tail = rest.split(end, 1)[1]
open(sys.argv[2], "w", encoding="utf-8").write(head + begin + "\n" + report.strip() + "\n" + end + tail)
PY
echo "bench: wrote $out/README.md (tables, plots) and refreshed docs/BENCHMARKS.md" >&2
