#!/usr/bin/env bash
# stamen's engine beside PyTorch and ONNX Runtime on one model folder, same shapes, same
# thread count, in one script: prints a Markdown table of tokens/s and ratios for
# docs/BENCHMARKS.md. Needs the heavy virtualenv with requirements/bench-engine.txt.
# Usage: bench/engine_report.sh MODEL_DIR [threads] [lengths] [batches] [seconds] [stamen dtype]
#   (the peers always compute in float32; the dtype defaults to stamen's for this CPU and model)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
model=$1
threads=${2:-1}
lengths=${3:-128,512}
batches=${4:-1,32}
seconds=${5:-3}
dtype=${6:+--dtype $6}
stamen_json=$(OMP_NUM_THREADS=$threads build/release/apps/stamen bench engine --model "$model" --threads "$threads" \
  --lengths "$lengths" --batches "$batches" --seconds "$seconds" $dtype --json)
peers_json=$(.venv-heavy/bin/python bench/peers/engine_peers.py --model "$model" --threads "$threads" \
  --lengths "$lengths" --batches "$batches" --seconds "$seconds" --json 2>/dev/null | tail -n 1)
python3 - "$stamen_json" "$peers_json" <<'PY'
import json, sys
stamen, peers = json.loads(sys.argv[1]), json.loads(sys.argv[2])
cpu = stamen["cpu"]
print(f"threads {stamen['threads']}; stamen {stamen['dtype']}, kernels {cpu['kernels']}, oneDNN {cpu['gemm']}; "
      f"torch {peers['torch']}, onnxruntime {peers['onnxruntime']} (float32)")
print("| seq | batch | stamen tokens/s | GFLOP/s (% of bare GEMM) | PyTorch tokens/s | ONNX Runtime tokens/s | stamen ÷ PyTorch | stamen ÷ ORT |")
print("|---|---|---|---|---|---|---|---|")
for ours, theirs in zip(stamen["runs"], peers["runs"]):
    assert (ours["length"], ours["batch"]) == (theirs["length"], theirs["batch"])
    t = ours["tokens_per_second"]
    print(f"| {ours['length']} | {ours['batch']} | {t:.0f} | {ours['gflops']:.1f} ({100 * ours['gflops'] / ours['gemm_gflops']:.0f}%) | "
          f"{theirs['torch_tokens_per_second']:.0f} | {theirs['onnxruntime_tokens_per_second']:.0f} | "
          f"{t / theirs['torch_tokens_per_second']:.2f} | {t / theirs['onnxruntime_tokens_per_second']:.2f} |")
PY
