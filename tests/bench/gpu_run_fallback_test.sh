#!/usr/bin/env bash
# The GPU session's one script (bench/gpu/run.sh) end to end on its CPU fallback: `--device cpu`
# on the build under test, so that a GPU session only has to press the button. run.sh makes
# one-layer models, runs the CPU engine tests, times `stamen bench engine`, and runs the
# serving suites (bench/gpu/serve_suites.sh --device cpu --quick) through stamen serve and a
# gateway in front of a worker. Checks that every step passed, that every layout and suite
# timed its steps, and that each server's /metrics was kept.
#   gpu_run_fallback_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

STAMEN_SUITES_PORT=${STAMEN_SUITES_PORT:-$((20000 + RANDOM % 20000))} OUT="$work" \
  "$source_dir/bench/gpu/run.sh" --device cpu --build-dir "$build_dir" ||
  { echo "run.sh --device cpu failed:"; cat "$work/summary.txt"; tail -30 "$work/serving.log" "$work/models.log" 2> /dev/null; exit 1; }
grep -q "every step passed" "$work/summary.txt"
grep -q '"runs": \[{"length": 16, "batch": 1' "$work/bench_tiny-minilm.jsonl"  # the engine-only lower bound
out=$work/serving
for step in "serve.latency: latency seq 16 batch 1 clients 1" "serve.throughput: throughput seq 64 batch 8 clients 4" \
            "serve.concurrency: concurrency seq 32 batch 1 clients 4" "serve.scoring: scoring seq 32 pairs 5" \
            "worker.latency: latency seq 64 batch 1" "gateway.concurrency: concurrency seq 32 batch 1 clients 4"; do
  grep -q "$step" "$out/suites.txt" || { echo "no '$step' in suites.txt:"; cat "$out/suites.txt"; exit 1; }
done
for run in serve.latency serve.throughput serve.concurrency serve.scoring worker.latency gateway.concurrency; do
  [[ -s "$out/$run.json" ]] || { echo "no $run.json"; exit 1; }  # the input of stamen bench report
done
grep -q "stamen_steps_in_flight" "$out/serve.metrics.txt"
grep -q "stamen_steps_in_flight" "$out/worker.metrics.txt"
echo "gpu_run_fallback_test: ok"
