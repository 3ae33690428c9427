#!/usr/bin/env bash
# The CUDA backend's whole verification on a machine with a GPU, in one run (target: under
# 8 minutes on an H200 with 16 cores). Writes everything under $OUT (default: bench/gpu/out):
#   gpu.txt                nvidia-smi and the device the engine sees
#   build.log, timings.txt configure/build of the cuda preset (only the targets needed)
#   cuda_test.log/.xml     GPU unit tests: every kernel vs the CPU backend (rel. err ≤ 1e-2),
#                          ragged attention with uneven lengths and GQA, whole models vs the
#                          CPU fp32 engine (cosine ≥ 0.999), graph eager/capture/replay
#   engine_tests.log       the CPU engine tests in the same build (nothing broke)
#   bench_<model>.jsonl    latency, scoring, throughput, graphs-vs-eager, bf16 gemm TFLOP/s
#   serving/, serving.log  the serving suites through stamen serve and gateway + worker on the
#                          GPU (bench/gpu/serve_suites.sh), with each server's /metrics
#   summary.txt            pass/fail per step and the targets of issue 6
# Usage: bench/gpu/run.sh            (from the repository root; OUT=/some/dir to choose)
#        bench/gpu/run.sh --check    (bash syntax and tools only, no GPU needed)
#        bench/gpu/run.sh --device cpu [--build-dir DIR]
#            the CPU fallback, end to end on any machine: the release preset (or the build in
#            DIR, not rebuilt), one-layer models, the CUDA tests and targets skipped, the engine
#            benchmark from `stamen bench engine`, the serving suites with --device cpu --quick.
#            CI runs it (tests/bench/gpu_run_fallback_test.sh), so a GPU session only has to
#            press the button.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$ROOT/bench/gpu/out}"
JOBS="${JOBS:-$(nproc)}"
QUICK="${QUICK:-}"   # set to 1 for fewer timed runs
DEVICE=cuda
BUILD_DIR=

while (( $# > 0 )); do
  case $1 in
    --check)
      bash -n "$0" && echo "syntax ok"
      for tool in cmake ninja nvcc; do command -v "$tool" >/dev/null || echo "missing: $tool"; done
      exit 0 ;;
    --device) DEVICE=$2; shift 2 ;;
    --build-dir) BUILD_DIR=$(cd "$2" && pwd) || exit 2; shift 2 ;;
    *) echo "run.sh: unknown argument $1 (see the usage at the top)" >&2; exit 2 ;;
  esac
done
case $DEVICE in
  cpu) GPU=false ;;
  cuda|cuda:*) GPU=true ;;
  *) echo "run.sh: --device is cpu, cuda or cuda:N, not $DEVICE" >&2; exit 2 ;;
esac

mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
: > "$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
step_time() { local start=$1; echo $(( $(date +%s) - start )); }
START=$(date +%s)
FAILED=0   # 1 once a step fails; the exit status

note "# stamen CUDA check (--device $DEVICE), $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if $GPU; then
  { nvidia-smi || echo "nvidia-smi failed"; nvcc --version; } > "$OUT/gpu.txt" 2>&1
  note "gpu: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
else
  lscpu > "$OUT/gpu.txt" 2>&1
  note "cpu fallback: $(grep -m1 'Model name' "$OUT/gpu.txt" | sed 's/.*: *//'), $(nproc) cores, avx512f: $(grep -c avx512f /proc/cpuinfo)"
fi

# 1. Build (cuda preset: fails if nvcc is missing; release preset on the CPU fallback). Only
#    what this check runs.
t=$(date +%s)
if [[ -n "$BUILD_DIR" ]]; then
  BIN="$BUILD_DIR"
  note "build: using $BIN as it is"
else
  export PATH="/usr/local/cuda/bin:$PATH"
  # stamen_make_model (`stamen make-model` without the server code, built with CUDA only) saves
  # the GPU check a few minutes of build; the CPU fallback uses `stamen make-model` itself.
  if $GPU; then preset=cuda targets=(cuda_backend_test stamen_cuda_bench stamen_make_model); else preset=release targets=(); fi
  if cmake --preset "$preset" > "$OUT/build.log" 2>&1 &&
     cmake --build "$ROOT/build/$preset" -j "$JOBS" --target "${targets[@]}" \
       stamen ops_test golden_test loader_test >> "$OUT/build.log" 2>&1; then
    note "build: ok ($(step_time "$t") s)"
  else
    note "build: FAILED ($(step_time "$t") s), see build.log"; tail -40 "$OUT/build.log"; exit 1
  fi
  BIN="$ROOT/build/$preset"
fi
echo "build_seconds $(step_time "$t")" > "$OUT/timings.txt"

# 2. Models: random weights shaped like the real ones. On a GPU: small copies (2 layers, small
#    vocabulary) for the correctness tests, full-depth ones for the benchmarks. On the CPU
#    fallback: one-layer MiniLM shapes with the real vocabulary, which the serving suites can
#    send text.
MODELS="$OUT/models"
mkdir -p "$MODELS"
if $GPU; then MAKE_MODEL=("$BIN/bench/stamen_make_model"); else MAKE_MODEL=("$BIN/apps/stamen"); fi
TOKENIZER="$MODELS/tokenizer.json"   # ids are fed directly; any tokenizer file will do
echo '{"version":"1.0","model":{"type":"WordLevel","vocab":{"[UNK]":0},"unk_token":"[UNK]"}}' > "$TOKENIZER"
make_model() {  # like out [extra args]: with the ids-only tokenizer above
  make_model_folder "$@" --tokenizer "$TOKENIZER"
}
make_model_folder() {  # like out [extra args]: the tokenizer shipped with stamen for --like unless named
  local like=$1 out=$2; shift 2
  [[ -f "$out/model.safetensors" ]] && return 0
  "${MAKE_MODEL[@]}" make-model --like "$like" --random-seed 6 --out "$out" "$@" >> "$OUT/models.log" 2>&1 ||
    { note "models: make-model --like $like FAILED, see models.log"; exit 1; }
}
t=$(date +%s)
if $GPU; then
  make_model xlm-roberta-base "$MODELS/small-xlmr" --layers 2 --vocab-size 4000
  make_model bge-reranker-base "$MODELS/small-reranker" --layers 2 --vocab-size 4000
  make_model qwen3-0.6b "$MODELS/small-qwen3" --layers 2 --vocab-size 4000
  make_model all-MiniLM-L6-v2 "$MODELS/small-minilm" --vocab-size 4000
  # The full-size embedder and reranker keep the real vocabulary and the tokenizer shipped with
  # stamen: the serving suites (step 6) send them text.
  make_model_folder xlm-roberta-base "$MODELS/xlmr-base"
  make_model_folder bge-reranker-base "$MODELS/reranker-base"
  make_model qwen3-0.6b "$MODELS/qwen3-0.6b"
  BENCH_MODELS=(qwen3-0.6b xlmr-base reranker-base) EMBEDDER="$MODELS/xlmr-base" RERANKER="$MODELS/reranker-base"
else
  make_model_folder all-MiniLM-L6-v2 "$MODELS/tiny-minilm" --layers 1
  make_model_folder ms-marco-MiniLM-L6-v2 "$MODELS/tiny-reranker" --layers 1
  BENCH_MODELS=(tiny-minilm) EMBEDDER="$MODELS/tiny-minilm" RERANKER="$MODELS/tiny-reranker"
fi
note "models: $(ls "$MODELS" | grep -vc tokenizer) folders ($(step_time "$t") s), see models.log"
echo "models_seconds $(step_time "$t")" >> "$OUT/timings.txt"

# 3. GPU unit and model tests (they SKIP without a GPU: a skip here is a failure).
t=$(date +%s)
if $GPU; then
  export STAMEN_CUDA_TEST_MODELS="$MODELS/small-xlmr:$MODELS/small-reranker:$MODELS/small-qwen3:$MODELS/small-minilm"
  "$BIN/tests/cuda/cuda_backend_test" --gtest_output="xml:$OUT/cuda_test.xml" > "$OUT/cuda_test.log" 2>&1
  status=$?
  skipped=$(grep -c "^\[  SKIPPED \]" "$OUT/cuda_test.log" || true)
  if [[ $status -eq 0 && $skipped -le 2 ]]; then
    note "cuda tests: ok ($(step_time "$t") s, $skipped skipped lines)"
  else
    note "cuda tests: FAILED (exit $status, $skipped skipped lines), see cuda_test.log"
    grep -E "Failure|SKIPPED|Skipped|error" "$OUT/cuda_test.log" | head -30 | tee -a "$SUMMARY"
    FAILED=1
  fi
  grep "relative error\|worst cosine\|captures" "$OUT/cuda_test.log" > "$OUT/cuda_accuracy.txt" || true
else
  note "cuda tests: skipped (--device cpu)"
fi
echo "cuda_tests_seconds $(step_time "$t")" >> "$OUT/timings.txt"

# 4. The CPU engine tests of the same build.
t=$(date +%s)
ok=1
for test in ops_test golden_test loader_test; do
  "$BIN/tests/engine/$test" >> "$OUT/engine_tests.log" 2>&1 || ok=0
done
note "cpu engine tests: $([[ $ok == 1 ]] && echo ok || echo FAILED) ($(step_time "$t") s)"
[[ $ok == 1 ]] || FAILED=1

# 5. Engine-only benchmarks, the lower bound under the serving suites (each bounded so the whole
#    run stays under 8 minutes). The CPU fallback times `stamen bench engine` on its tiny model.
t=$(date +%s)
for model in "${BENCH_MODELS[@]}"; do
  if $GPU; then
    bench=("$BIN/bench/stamen_cuda_bench" "$MODELS/$model" ${QUICK:+--quick})
  else
    bench=("$BIN/apps/stamen" bench engine --model "$MODELS/$model" --lengths 16,128 --batches 1,8 --seconds 0.3 --json)
  fi
  timeout 150 "${bench[@]}" > "$OUT/bench_$model.jsonl" 2> "$OUT/bench_$model.err" ||
    { note "bench $model: exit $? (see bench_$model.err)"; FAILED=1; }
done
note "benchmarks: $(step_time "$t") s"
echo "bench_seconds $(step_time "$t")" >> "$OUT/timings.txt"

# 6. The serving suites through the real stack: stamen serve --device D, and a gateway in front
#    of stamen worker --device D (bench/gpu/serve_suites.sh).
t=$(date +%s)
if timeout 240 "$ROOT/bench/gpu/serve_suites.sh" --device "$DEVICE" $($GPU || echo --quick) \
     --stamen "$BIN/apps/stamen" --embedder "$EMBEDDER" --reranker "$RERANKER" --out "$OUT/serving" > "$OUT/serving.log" 2>&1; then
  note "serving suites: ok ($(step_time "$t") s), see serving/suites.txt"
else
  note "serving suites: FAILED or timed out ($(step_time "$t") s), see serving.log"; tail -20 "$OUT/serving.log"
  FAILED=1
fi
echo "serving_seconds $(step_time "$t")" >> "$OUT/timings.txt"

# 7. Targets (issue 6, H200, bf16, 0.6B shape).
if $GPU; then
  Q="$OUT/bench_qwen3-0.6b.jsonl"
  p50_512=$(grep '"batch1@512"' "$Q" | sed -E 's/.*"p50_ms":([0-9.]+).*/\1/')
  speedup=$(grep '"suite":"graphs"' "$Q" | sed -E 's/.*"speedup":([0-9.]+).*/\1/')
  tflops=$(grep '"suite":"gemm"' "$Q" | sed -E 's/.*"tflops":([0-9.]+).*/\1/')
  tps=$(grep '"4x100x512"' "$Q" | sed -E 's/.*"tokens_per_second":([0-9.]+).*/\1/')
  note "target batch1@512 p50 <= 2 ms: ${p50_512:-n/a} ms"
  note "target graph replay vs eager @128 >= 2x: ${speedup:-n/a}x"
  if [[ -n "${tflops:-}" && -n "${tps:-}" ]]; then
    # A 0.6B-parameter forward pass is ~2 FLOP per parameter per token (attention extra).
    util=$(awk -v t="$tps" -v f="$tflops" 'BEGIN { printf "%.1f", 100 * t * 2 * 0.44e9 / (f * 1e12) }')
    note "target throughput 4x100x512 >= 60% of gemm FLOP rate: ${util}% (${tps} tok/s, gemm ${tflops} TFLOP/s, 0.44e9 non-embedding params)"
  fi
else
  note "targets: GPU only (--device cpu)"
fi
note "total: $(step_time "$START") s, $([[ $FAILED == 0 ]] && echo "every step passed" || echo "a step FAILED")"
exit "$FAILED"
