#!/usr/bin/env bash
# Smoke test of the serving benchmarks: `stamen bench serve` runs a tiny latency and
# concurrency suite against `stamen serve` on a made one-layer model (answers checked against
# the engine in the benchmark's process), and `stamen bench report` turns the runs into
# Markdown; the same server also as an OpenAI-API peer, the two runs side by side. Not a measurement: it only shows the programs work end to end.
#   serve_bench_smoke_test.sh STAMEN SHARED_DIR
set -euo pipefail
stamen=$1
shared=$2
work=$(mktemp -d)
server=
cleanup() {
  [[ -n "$server" ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

"$stamen" make-model --like all-MiniLM-L6-v2 --layers 1 --vocab-size 1000 --random-seed 1 --out "$work/model" \
  --tokenizer "$shared/models/configs/all-MiniLM-L6-v2" 2> "$work/make-model.log"
# The log exists before the server starts: the loop below may read it before the child opens it.
: > "$work/serve.log"
"$stamen" serve --model "$work/model" --port 0 --threads 1 2> "$work/serve.log" &
server=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's|.*serve: ready: try  curl http://[^:]*:\([0-9]*\)/.*|\1|p' "$work/serve.log")
  [[ -n "$port" ]] && break
  sleep 0.1
done
[[ -n "$port" ]] || { echo "stamen serve did not start:"; cat "$work/serve.log"; exit 1; }

"$stamen" bench serve --target "http://127.0.0.1:$port" --model "$work/model" --suite latency --seq 16,64,4096 \
  --requests 5 --json "$work/latency.json" | tee "$work/latency.txt"
grep -q "latency seq 16 batch 1 clients 1 .*p50" "$work/latency.txt"
grep -q "latency seq 4096 .*skipped: longer than the model's max_input_length" "$work/latency.txt"
"$stamen" bench serve --target "http://127.0.0.1:$port" --model "$work/model" --suite concurrency --seq 32 \
  --clients 1,2 --requests 4 --json "$work/concurrency.json" | tee "$work/concurrency.txt"
grep -q "concurrency seq 32 batch 1 clients 2 .*p50" "$work/concurrency.txt"
# The same server as an OpenAI-API peer (text only, no /info): the limits come from --model.
"$stamen" bench serve --target "openai+http://127.0.0.1:$port/v1/embeddings?model=x" --model "$work/model" \
  --suite latency --seq 16,4096 --requests 5 --label as-a-peer --json "$work/peer.json" | tee "$work/peer.txt"
grep -q "latency seq 16 batch 1 clients 1 .*p50" "$work/peer.txt"
grep -q "latency seq 4096 .*skipped: longer than the model's max_input_length" "$work/peer.txt"
grep -q '"kind": *"embed-text"' "$work/peer.json"
# Queries during a bulk request (bench/fairness.sh's measurement, tiny here).
"$stamen" bench fairness --target "http://127.0.0.1:$port" --model "$work/model" --bulk-inputs 200 \
  --idle-queries 3 --query-interval-ms 5 --query-priority high --json "$work/fairness.json" | tee "$work/fairness.txt"
grep -q "queries during bulk: p50 .* bound .*: \(met\|MISSED\)" "$work/fairness.txt"
grep -q '"bulk_slowdown":' "$work/fairness.json"
"$stamen" bench report "$work/latency.json" "$work/concurrency.json" "$work/peer.json" --out "$work/report" > /dev/null
grep -q "| latency seq 16 batch 1 clients 1 | 5 |" "$work/report/README.md"
grep -q "## latency: side by side" "$work/report/README.md"
grep -q "^| 16 | .* | .*× | .*× |$" "$work/report/README.md"
echo "serve_bench_smoke_test: ok"
