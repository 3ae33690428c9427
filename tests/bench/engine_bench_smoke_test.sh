#!/usr/bin/env bash
# Smoke test of the engine benchmarks: `stamen bench engine` on the tiny BERT golden model
# (JSON) and `stamen bench attention` with grouped heads, an odd head size and lengths that end
# inside the kernel's tiles. Not a measurement: it only shows the programs run and print what
# docs/BENCHMARKS.md quotes.
#   engine_bench_smoke_test.sh STAMEN SHARED_DIR
set -euo pipefail
stamen=$1
shared=$2

engine=$("$stamen" bench engine --model "$shared/models/golden/tiny-bert" --lengths 8,20 --batches 1,3 \
  --seconds 0.05 --threads 1 --json)
echo "$engine"
runs=$(grep -o '"tokens_per_second": [0-9.]*' <<< "$engine" | wc -l)
[[ "$runs" == 4 ]] || { echo "expected 4 runs in the JSON, got $runs"; exit 1; }

attention=$("$stamen" bench attention --heads 4 --kv-heads 2 --head-dim 12 --lengths 7,40 --sequences 2 --causal \
  --seconds 0.05 --threads 1)
echo "$attention"
grep -q '4 heads (2 key/value) of 12, 2 sequence(s) per call, causal' <<< "$attention"
[[ $(grep -c '^length .* ms .* GFLOP/s$' <<< "$attention") == 2 ]] || { echo "expected 2 lengths"; exit 1; }
echo "engine benchmarks ok"
