#!/usr/bin/env bash
# The CUDA backend's whole check in one short GPU session, from a carried bundle (the GPU
# machine can build nothing of ours: bench/gpu/pack.sh makes the bundle here). Each step has a
# time limit taken from one overall budget (default 400 s, under the 7-minute target and the
# 600 s a device command may run), fails soft (the next step still runs) and leaves one line in
# summary.txt:
#   1. nvidia-smi;
#   2. the CUDA tests (cuda_backend_test), judged from gtest's XML: a test whose <testcase> is
#      skipped (result="skipped" or a <skipped> child) is a pass only where the skip is by
#      design (a GPU is present) or there is no GPU (--device cpu); failures are rerun alone
#      with CUDA_LAUNCH_BLOCKING=1, then under compute-sanitizer when the machine has it;
#   3. random-weight models (stamen_make_model), written under /tmp, never under $OUT;
#   4. the engine benchmarks, gemm TFLOP/s, graph replay vs eager and the graph statistics
#      first, steps capped in tokens (stamen_cuda_bench --max-tokens); then the latency steps
#      again with the scalar attention kernel (STAMEN_CUDA_ATTENTION=scalar), for the A/B;
#   5. the CPU engine tests of the bundle (ops, loader, workspace, graph policy);
#   6. the serving suites through `serve --device D` and gateway + worker (serve_suites.sh,
#      --quick);
#   7. one ncu pass over the attention kernel, when ncu is there;
#   8. the targets (issue 43) read from the benchmark's lines.
# $OUT (default bench/gpu/out) receives exactly two files: summary.txt and run.tar.xz (every
# log, XML and JSON line, each log cut to its last 2 MiB), 16 MiB at most; the summary is also
# echoed to stdout. The exit status is 0 when every step that ran passed.
#
# Usage: bench/gpu/run.sh [--bundle BUNDLE.tar.xz | --bundle-dir DIR | --build-dir DIR]
#                         [--device cuda|cuda:N|cpu] [--budget SECONDS]
#   --bundle: unpacked under /tmp (default: the newest bench/gpu/*.tar.xz)
#   --bundle-dir: an unpacked bundle; --build-dir: a build tree (CI's CPU fallback)
#   --device cpu: the same script on a machine without a GPU (CI: tests/bench/gpu_run_fallback_test.sh)
#        bench/gpu/run.sh --judge-xml FILE [--device ...]   only judge a gtest XML (exit 0: pass)
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${OUT:-$ROOT/bench/gpu/out}"
DEVICE=cuda
BUDGET=400
BUNDLE= BUNDLE_DIR= BUILD_DIR= JUDGE_XML=
while (( $# > 0 )); do
  case $1 in
    --bundle) BUNDLE=$(realpath "$2"); shift 2 ;;
    --bundle-dir) BUNDLE_DIR=$(realpath "$2"); shift 2 ;;
    --build-dir) BUILD_DIR=$(realpath "$2"); shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --judge-xml) JUDGE_XML=$(realpath "$2"); shift 2 ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case $DEVICE in
  cpu) GPU=false ;;
  cuda|cuda:*) GPU=true ;;
  *) echo "run.sh: --device is cpu, cuda or cuda:N, not $DEVICE" >&2; exit 2 ;;
esac

# Skips by design when a GPU is present (the no-GPU error check).
ALLOWED_GPU_SKIPS='CudaEngineTest.LoadWithoutGpuFailsWithAClearError'

# judge_xml FILE: prints "PASS|FAIL tests=N failures=N skipped=N unexpected_skips=..." and the
# failed tests' names (one per line, "failed: Suite.Name"); exit 0 for a pass.
judge_xml() {
  python3 - "$1" "$GPU" "$ALLOWED_GPU_SKIPS" << 'PYTHON'
import sys, xml.etree.ElementTree as ET
path, gpu, allowed = sys.argv[1], sys.argv[2] == "true", set(sys.argv[3].split(","))
try:
    root = ET.parse(path).getroot()
except Exception as error:  # no XML (a crash before the end): nothing ran to judge
    print(f"FAIL unreadable XML ({error})")
    sys.exit(1)
tests = failures = skipped = 0
failed, unexpected = [], []
for case in root.iter("testcase"):
    name = f"{case.get('classname')}.{case.get('name')}"
    tests += 1
    if case.find("failure") is not None or case.find("error") is not None:
        failures += 1
        failed.append(name)
    elif case.get("result") == "skipped" or case.find("skipped") is not None or case.get("status") == "notrun":
        skipped += 1
        if gpu and name not in allowed:
            unexpected.append(name)
ran = tests - skipped
ok = tests > 0 and failures == 0 and not unexpected and (ran > 0 or not gpu)
print(f"{'PASS' if ok else 'FAIL'} tests={tests} ran={ran} failures={failures} skipped={skipped}"
      f" unexpected_skips={','.join(unexpected) or 'none'}")
for name in failed:
    print(f"failed: {name}")
sys.exit(0 if ok else 1)
PYTHON
}
if [[ -n "$JUDGE_XML" ]]; then judge_xml "$JUDGE_XML"; exit $?; fi

# ---- where things are: a bundle (bin/, tests/bin/, tests/run.sh) or a build tree ----
WORK=$(mktemp -d /tmp/stamen-gpu-run.XXXXXX)
LOGS="$WORK/logs"
MODELS="$WORK/models"
mkdir -p "$LOGS" "$MODELS" "$OUT"
rm -f "$OUT/summary.txt" "$OUT/run.tar.xz"
SUMMARY="$LOGS/summary.txt"
: > "$SUMMARY"
START=$(date +%s)
FAILED=0
note() { echo "$*" >> "$SUMMARY"; }
elapsed() { echo $(( $(date +%s) - START )); }
# step_limit CAP: seconds a step may take: CAP, or what is left of the budget less 20 s for
# packing the results; 0 when too little is left to start it.
step_limit() {
  local left=$(( BUDGET - $(elapsed) - 20 ))
  (( left < 10 )) && { echo 0; return; }
  echo $(( left < $1 ? left : $1 ))
}
finish() {
  note "total: $(elapsed) s of a ${BUDGET} s budget, $([[ $FAILED == 0 ]] && echo "every step that ran passed" || echo "a step FAILED")"
  # Every log cut to its last 2 MiB, then one tarball; models stay in /tmp and are removed.
  find "$LOGS" -type f -size +2M -exec sh -c 'tail -c 2M "$1" > "$1.tail" && mv "$1.tail" "$1"' _ {} \;
  tar -C "$WORK" -cf - logs | xz -T1 -3 > "$OUT/run.tar.xz" 2> /dev/null || echo "packing the logs failed" >> "$SUMMARY"
  if (( $(stat -c %s "$OUT/run.tar.xz" 2> /dev/null || echo 0) > 15 * 1024 * 1024 )); then
    tar -C "$WORK" -cf - logs/summary.txt | xz > "$OUT/run.tar.xz"
    echo "run.tar.xz: logs left out (over 15 MiB)" >> "$SUMMARY"
  fi
  cp "$SUMMARY" "$OUT/summary.txt"
  echo "==== summary ($OUT/summary.txt) ===="
  cat "$SUMMARY"
  rm -rf "$WORK"
  exit "$FAILED"
}
trap 'note "interrupted"; FAILED=1; finish' INT TERM

note "# stamen device check (--device $DEVICE), $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown)"

# 0. The programs.
if [[ -z "$BUNDLE$BUNDLE_DIR$BUILD_DIR" ]]; then
  BUNDLE=$(ls -t "$ROOT"/bench/gpu/*.tar.xz 2> /dev/null | head -1)
  [[ -n "$BUNDLE" ]] || { note "bundle: none (give --bundle, --bundle-dir or --build-dir; bench/gpu/pack.sh makes one)"; FAILED=1; finish; }
fi
if [[ -n "$BUNDLE" ]]; then
  t=$(date +%s)
  if xz -dc "$BUNDLE" | tar -C "$WORK" -xf - 2> "$LOGS/unpack.log"; then
    BUNDLE_DIR="$WORK/stamen-bundle"
    note "bundle: $(basename "$BUNDLE") unpacked in $(( $(date +%s) - t )) s ($(head -1 "$BUNDLE_DIR/BUNDLE.txt" 2> /dev/null))"
  else
    note "bundle: unpacking $BUNDLE FAILED"; FAILED=1; finish
  fi
fi
if [[ -n "$BUNDLE_DIR" ]]; then
  # A lean bundle (pack.sh --lean) leaves tests/engine/data to this checkout.
  if [[ ! -d "$BUNDLE_DIR/tests/data/source/tests/engine/data" ]]; then
    export STAMEN_SOURCE_DIR="$ROOT" STAMEN_ENGINE_TEST_DATA="$ROOT/tests/engine/data"
  fi
  # cuBLASLt is not in the bundle (540 MB): the CUDA toolkit's (RUNPATH), else a wheel's
  # (PyTorch's nvidia-cublas), named here ahead of the bundle's stub.
  if $GPU && ! ldconfig -p 2> /dev/null | grep -q libcublasLt.so.13 && [[ ! -e /usr/local/cuda/lib64/libcublasLt.so.13 ]]; then
    wheel=$(find / -xdev -name 'libcublasLt.so.13' -path '*nvidia*' 2> /dev/null | head -1)
    [[ -n "$wheel" ]] && export LD_LIBRARY_PATH="$(dirname "$wheel")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  fi
  STAMEN="$BUNDLE_DIR/bin/stamen"
  MAKE_MODEL="$BUNDLE_DIR/bin/stamen_make_model"
  CUDA_BENCH="$BUNDLE_DIR/bin/stamen_cuda_bench"
  test_command() { echo "$BUNDLE_DIR/tests/run.sh $1"; }  # the bundle's data, through run.sh
  have_test() { [[ -x "$BUNDLE_DIR/tests/bin/$1" ]]; }
else
  STAMEN="$BUILD_DIR/apps/stamen"
  MAKE_MODEL="$BUILD_DIR/bench/stamen_make_model"
  CUDA_BENCH="$BUILD_DIR/bench/stamen_cuda_bench"
  test_command() { ls "$BUILD_DIR"/tests/*/"$1" 2> /dev/null | head -1; }  # built-in data paths
  have_test() { [[ -n "$(test_command "$1")" ]]; }
fi
[[ -x "$MAKE_MODEL" ]] || MAKE_MODEL="$STAMEN"   # `stamen make-model` does the same
"$STAMEN" --help > "$LOGS/stamen_help.log" 2>&1 || { note "stamen --help FAILED (see stamen_help.log)"; FAILED=1; }
if $GPU; then
  note "cublasLt: $(ldd "$CUDA_BENCH" 2> /dev/null | awk '/libcublasLt/ { print $3 }')$([[ -n "${LD_LIBRARY_PATH:-}" ]] && echo " (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)")"
fi

# 1. The device.
if $GPU; then
  timeout 20 nvidia-smi > "$LOGS/nvidia-smi.log" 2>&1
  note "gpu: $(timeout 10 nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2> /dev/null | head -1 || echo "nvidia-smi failed")"
else
  note "cpu fallback: $(nproc) cores, no GPU asked for"
fi

# 2. The CUDA tests, judged from the XML.
limit=$(step_limit 120)
if ! have_test cuda_backend_test; then
  note "cuda tests: not in this bundle or build"
elif (( limit == 0 )); then
  note "cuda tests: not run (out of time)"; FAILED=1
else
  t=$(date +%s)
  # shellcheck disable=SC2046
  timeout "$limit" $(test_command cuda_backend_test) --gtest_output="xml:$LOGS/cuda_test.xml" > "$LOGS/cuda_test.log" 2>&1
  status=$?
  verdict=$(judge_xml "$LOGS/cuda_test.xml")
  judged=$?
  note "cuda tests: $(head -1 <<< "$verdict") (exit $status, $(( $(date +%s) - t )) s)"
  if (( judged != 0 )); then
    FAILED=1
    failed=$(sed -n 's/^failed: //p' <<< "$verdict" | paste -sd: -)
    if [[ -n "$failed" ]]; then
      note "  failed: $failed"
      limit=$(step_limit 60)
      if (( limit > 0 )); then
        # shellcheck disable=SC2046
        CUDA_LAUNCH_BLOCKING=1 timeout "$limit" $(test_command cuda_backend_test) --gtest_filter="$failed" \
          > "$LOGS/cuda_test_blocking.log" 2>&1
        note "  rerun with CUDA_LAUNCH_BLOCKING=1: exit $? (cuda_test_blocking.log)"
      fi
      limit=$(step_limit 90)
      if command -v compute-sanitizer > /dev/null && (( limit > 0 )) && [[ -n "$BUNDLE_DIR" ]]; then
        STAMEN_SHARED_DIR="$BUNDLE_DIR/tests/data/shared" STAMEN_SOURCE_DIR="$BUNDLE_DIR/tests/data/source" \
          STAMEN_ENGINE_TEST_DATA="$BUNDLE_DIR/tests/data/source/tests/engine/data" \
          timeout "$limit" compute-sanitizer --print-limit 20 "$BUNDLE_DIR/tests/bin/cuda_backend_test" \
          --gtest_filter="$failed" > "$LOGS/cuda_test_sanitizer.log" 2>&1
        note "  rerun under compute-sanitizer: exit $? (cuda_test_sanitizer.log)"
      fi
    fi
  fi
  grep -E "relative error|worst cosine|captures" "$LOGS/cuda_test.log" > "$LOGS/cuda_accuracy.txt" 2> /dev/null
fi

# 3. Models (random weights), under /tmp.
limit=$(step_limit 90)
t=$(date +%s)
made=0 wanted=0
if (( limit == 0 )); then
  note "models: not made (out of time)"; FAILED=1
else
  if $GPU; then
    models=("qwen3-0.6b qwen3-0.6b" "xlm-roberta-base xlmr-base" "bge-reranker-base reranker-base")
  else
    models=("all-MiniLM-L6-v2 tiny-minilm --layers 1" "ms-marco-MiniLM-L6-v2 tiny-reranker --layers 1")
  fi
  for spec in "${models[@]}"; do
    read -r like name extra <<< "$spec"
    wanted=$((wanted + 1))
    left=$(( limit - ($(date +%s) - t) ))
    (( left > 5 )) || break
    # shellcheck disable=SC2086
    timeout "$left" "$MAKE_MODEL" make-model --like "$like" --random-seed 6 --out "$MODELS/$name" $extra \
      >> "$LOGS/models.log" 2>&1 && made=$((made + 1))
  done
  note "models: $made of $wanted made under /tmp ($(( $(date +%s) - t )) s)"
  (( made == wanted )) || FAILED=1
fi
# On a GPU the engine benchmark runs on the Qwen3-0.6B shape only (the targets' model); the
# serving suites take the XLM-R-base embedder and reranker.
if $GPU; then BENCH_MODELS=(qwen3-0.6b) EMBEDDER="$MODELS/xlmr-base" RERANKER="$MODELS/reranker-base"
else BENCH_MODELS=(tiny-minilm) EMBEDDER="$MODELS/tiny-minilm" RERANKER="$MODELS/tiny-reranker"; fi

# 4. Engine benchmarks: gemm, graphs and graph statistics first; steps of at most 51,200 tokens
#    (4 × 100 × 512 is the largest throughput step kept).
for model in "${BENCH_MODELS[@]}"; do
  [[ -f "$MODELS/$model/config.json" ]] || { note "bench $model: no model"; continue; }
  limit=$(step_limit $($GPU && echo 120 || echo 30))
  (( limit == 0 )) && { note "bench $model: not run (out of time)"; FAILED=1; continue; }
  t=$(date +%s)
  if $GPU; then
    timeout "$limit" "$CUDA_BENCH" "$MODELS/$model" --quick --max-tokens 51200 > "$LOGS/bench_$model.jsonl" 2> "$LOGS/bench_$model.err"
  else
    timeout "$limit" "$STAMEN" bench engine --model "$MODELS/$model" --lengths 16,128 --batches 1,8 --seconds 0.3 --json \
      > "$LOGS/bench_$model.jsonl" 2> "$LOGS/bench_$model.err"
  fi
  status=$?
  note "bench $model: exit $status, $(grep -c . "$LOGS/bench_$model.jsonl") lines ($(( $(date +%s) - t )) s)"
  (( status == 0 )) || FAILED=1
  grep -h '"suite":"gemm"\|"suite":"graphs"\|"suite":"graph_stats"' "$LOGS/bench_$model.jsonl" | head -4 | sed 's/^/  /' >> "$SUMMARY"
done

# 4b. Tensor-core attention against the scalar kernel: the same Qwen3-0.6B latency steps (at most
#     512 tokens) with STAMEN_CUDA_ATTENTION=scalar; the batch1@512 p50 of both in the summary.
if $GPU && [[ -f "$MODELS/qwen3-0.6b/config.json" ]]; then
  limit=$(step_limit 40)
  if (( limit == 0 )); then
    note "attention a/b: not run (out of time)"
  else
    STAMEN_CUDA_ATTENTION=scalar timeout "$limit" "$CUDA_BENCH" "$MODELS/qwen3-0.6b" --quick --max-tokens 512 \
      > "$LOGS/bench_qwen3-0.6b_scalar_attention.jsonl" 2> "$LOGS/bench_qwen3-0.6b_scalar_attention.err"
    status=$?
    p50_of() { grep '"batch1@512"' "$1" 2> /dev/null | sed -E 's/.*"p50_ms":([0-9.]+).*/\1/'; }
    note "attention a/b batch1@512 p50: tensor cores $(p50_of "$LOGS/bench_qwen3-0.6b.jsonl" || true) ms," \
      "scalar $(p50_of "$LOGS/bench_qwen3-0.6b_scalar_attention.jsonl" || true) ms (exit $status)"
  fi
fi

# 5. The CPU engine tests of the same binaries.
limit=$(step_limit 60)
if (( limit == 0 )); then
  note "cpu engine tests: not run (out of time)"; FAILED=1
else
  t=$(date +%s) results=()
  for test in graph_policy_test workspace_test loader_test ops_test; do
    have_test "$test" || continue
    left=$(( limit - ($(date +%s) - t) ))
    (( left > 3 )) || { results+=("$test: no time"); FAILED=1; continue; }
    # shellcheck disable=SC2046
    timeout "$left" $(test_command "$test") --gtest_output="xml:$LOGS/$test.xml" > "$LOGS/$test.log" 2>&1
    status=$?
    verdict=$(GPU=false judge_xml "$LOGS/$test.xml" | head -1)
    results+=("$test: ${verdict%% *}")
    (( status == 0 )) || FAILED=1
  done
  note "cpu engine tests: ${results[*]:-none found} ($(( $(date +%s) - t )) s)"
fi

# 6. The serving suites through the real stack.
limit=$(step_limit $($GPU && echo 100 || echo 60))
if (( limit == 0 )); then
  note "serving suites: not run (out of time)"; FAILED=1
elif [[ ! -f "$EMBEDDER/config.json" || ! -f "$RERANKER/config.json" ]]; then
  note "serving suites: not run (models missing)"; FAILED=1
else
  t=$(date +%s)
  timeout "$limit" "$ROOT/bench/gpu/serve_suites.sh" --device "$DEVICE" --quick --stamen "$STAMEN" \
    --embedder "$EMBEDDER" --reranker "$RERANKER" --out "$LOGS/serving" > "$LOGS/serving.log" 2>&1
  status=$?
  note "serving suites: $([[ $status == 0 ]] && echo ok || echo "FAILED (exit $status)") ($(( $(date +%s) - t )) s)"
  (( status == 0 )) || FAILED=1
fi

# 7. One ncu pass over the attention kernel (its first launch in a latency step).
if $GPU; then
  limit=$(step_limit 60)
  if ! command -v ncu > /dev/null; then
    note "ncu: not on this machine"
  elif (( limit == 0 )) || [[ ! -f "$MODELS/qwen3-0.6b/config.json" ]]; then
    note "ncu: not run (out of time or no model)"
  else
    timeout "$limit" ncu --kernel-name regex:"TensorCoreAttention|RaggedAttention" --launch-skip 20 --launch-count 1 --section SpeedOfLight \
      --section Occupancy "$CUDA_BENCH" "$MODELS/qwen3-0.6b" --quick --max-tokens 512 > "$LOGS/ncu_attention.log" 2>&1
    note "ncu attention: exit $? ($(grep -m1 -E 'Duration' "$LOGS/ncu_attention.log" | tr -s ' ' || echo 'no duration line'))"
  fi
fi

# 8. Targets (issue 43): batch 1 @512 p50 ≤ 2 ms on the Qwen3-0.6B shape, graph replay ≥ 2× eager @128.
if $GPU; then
  Q="$LOGS/bench_qwen3-0.6b.jsonl"
  p50=$(grep '"batch1@512"' "$Q" 2> /dev/null | sed -E 's/.*"p50_ms":([0-9.]+).*/\1/')
  speedup=$(grep '"suite":"graphs"' "$Q" 2> /dev/null | sed -E 's/.*"speedup":([0-9.]+).*/\1/')
  note "target qwen3-0.6b batch1@512 p50 <= 2 ms: ${p50:-n/a} ms"
  note "target graph replay vs eager @128 >= 2x: $([[ -n "$speedup" ]] && echo "${speedup}x" || echo n/a)"
fi
finish
