#!/usr/bin/env bash
# The GPU serving suites' script (bench/gpu/serve_suites.sh) on its CPU fallback: `--device cpu
# --quick` on made one-layer models, so that a GPU session only has to run it. Checks that
# every layout and suite timed its steps and that each server's /metrics was kept; and that
# bench/gpu/run.sh, which calls it, parses.
#   gpu_serve_suites_fallback_test.sh STAMEN SOURCE_DIR SHARED_DIR
set -euo pipefail
stamen=$1
source_dir=$2
shared=$3
bash -n "$source_dir/bench/gpu/run.sh"  # the GPU session's one script parses
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$stamen" make-model --like all-MiniLM-L6-v2 --layers 1 --vocab-size 1000 --random-seed 1 --out "$work/embedder" \
  --tokenizer "$shared/models/configs/all-MiniLM-L6-v2" 2> "$work/make-model.log"
"$stamen" make-model --like ms-marco-MiniLM-L6-v2 --layers 1 --vocab-size 1000 --random-seed 2 --out "$work/reranker" \
  --tokenizer "$shared/models/configs/all-MiniLM-L6-v2" 2>> "$work/make-model.log"
STAMEN_SUITES_PORT=${STAMEN_SUITES_PORT:-$((20000 + RANDOM % 20000))} \
  "$source_dir/bench/gpu/serve_suites.sh" --device cpu --quick --stamen "$stamen" --embedder "$work/embedder" \
  --reranker "$work/reranker" --out "$work/out"
for step in "serve.latency: latency seq 16 batch 1 clients 1" "serve.throughput: throughput seq 64 batch 8 clients 4" \
            "serve.concurrency: concurrency seq 32 batch 1 clients 4" "serve.scoring: scoring seq 32 pairs 5" \
            "worker.latency: latency seq 64 batch 1" "gateway.concurrency: concurrency seq 32 batch 1 clients 4"; do
  grep -q "$step" "$work/out/suites.txt" || { echo "no '$step' in suites.txt:"; cat "$work/out/suites.txt"; exit 1; }
done
for run in serve.latency serve.throughput serve.concurrency serve.scoring worker.latency gateway.concurrency; do
  [[ -s "$work/out/$run.json" ]] || { echo "no $run.json"; exit 1; }  # the input of stamen bench report
done
grep -q "stamen_steps_in_flight" "$work/out/serve.metrics.txt"
grep -q "stamen_steps_in_flight" "$work/out/worker.metrics.txt"
echo "gpu_serve_suites_fallback_test: ok"
