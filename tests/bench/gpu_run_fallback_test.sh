#!/usr/bin/env bash
# The GPU session's one script (bench/gpu/run.sh) end to end on its CPU fallback (`--device cpu`
# on the build under test), so that a GPU session only has to press the button. Checks the
# script's contract with the device machine:
#   - $OUT holds summary.txt and run.tar.xz only (at most 8 files come back, each ≤ 16 MiB,
#     at most 2 folders deep), and the summary is echoed to stdout;
#   - models and logs are written under /tmp, never under $OUT, and the /tmp work folder is gone;
#   - every step left its line in the summary, and every step that ran passed;
#   - gtest's XML is what judges the tests: a canned report with the no-GPU test skipped by
#     design passes on a GPU machine; one with a skipped GPU test or a failure does not.
#   gpu_run_fallback_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
run=$source_dir/bench/gpu/run.sh
data=$source_dir/tests/bench/data
fail() { echo "gpu_run_fallback_test: $*"; exit 1; }

# The XML verdicts first (no build needed).
"$run" --judge-xml "$data/gtest_gpu_skips.xml" --device cuda | grep -q "^PASS tests=4 ran=3 failures=0 skipped=1" ||
  fail "a by-design skip counted as a failure"
! "$run" --judge-xml "$data/gtest_gpu_unexpected_skip.xml" --device cuda > /dev/null || fail "a skipped GPU test passed on a GPU"
"$run" --judge-xml "$data/gtest_gpu_unexpected_skip.xml" --device cpu > /dev/null || fail "skips without a GPU failed"
! "$run" --judge-xml "$data/gtest_gpu_failure.xml" --device cpu > /dev/null || fail "a failed test passed"
verdict=$("$run" --judge-xml "$data/gtest_gpu_failure.xml" --device cuda || true)
grep -qx "failed: CudaKernelTest.GemmMatchesCpu" <<< "$verdict" || fail "the failed test is not named"
! "$run" --judge-xml /nonexistent.xml --device cuda > /dev/null || fail "a missing XML passed"

# The whole script on this build.
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
before=$(compgen -G "/tmp/stamen-gpu-run.*" | sort || true)
status=0
STAMEN_SUITES_PORT=${STAMEN_SUITES_PORT:-$((20000 + RANDOM % 20000))} OUT="$out/OUT" \
  "$run" --device cpu --build-dir "$build_dir" --budget 300 > "$out/stdout.txt" 2>&1 || status=$?
summary=$out/OUT/summary.txt
[[ -f "$summary" ]] || { cat "$out/stdout.txt"; fail "no summary.txt"; }
(( status == 0 )) || { cat "$out/stdout.txt"; fail "run.sh --device cpu exited $status"; }
grep -q "every step that ran passed" "$summary" || { cat "$summary"; fail "a step failed"; }

# $OUT: exactly summary.txt and run.tar.xz, small, flat.
files=$(find "$out/OUT" -mindepth 1 | sed "s|$out/OUT/||" | sort | paste -sd' ' -)
[[ "$files" == "run.tar.xz summary.txt" ]] || fail "\$OUT holds '$files', not summary.txt and run.tar.xz"
(( $(find "$out/OUT" -type f | wc -l) <= 8 )) || fail "more than 8 files in \$OUT"
(( $(stat -c %s "$out/OUT/run.tar.xz") <= 16 * 1024 * 1024 )) || fail "run.tar.xz is over 16 MiB"
# The summary is echoed.
while IFS= read -r line; do
  grep -qxF -- "$line" "$out/stdout.txt" || fail "summary line not echoed: $line"
done < "$summary"
# Every step has its line.
for step in "^# stamen device check" "^cpu fallback:" "^cuda tests: PASS" "^models: 2 of 2 made under /tmp" \
            "^bench tiny-minilm: exit 0" "^cpu engine tests: graph_policy_test: PASS workspace_test: PASS" \
            "^serving suites: ok" "^total: "; do
  grep -qE "$step" "$summary" || { cat "$summary"; fail "no line matching '$step'"; }
done
# The tarball has the logs (and no models); the /tmp work folder is removed.
tar -tJf "$out/OUT/run.tar.xz" > "$out/listing.txt"
grep -qx "logs/cuda_test.xml" "$out/listing.txt" || fail "no cuda_test.xml in run.tar.xz"
grep -qx "logs/serving/suites.txt" "$out/listing.txt" || fail "no serving/suites.txt in run.tar.xz"
! grep -q "safetensors" "$out/listing.txt" || fail "model weights in run.tar.xz"
after=$(compgen -G "/tmp/stamen-gpu-run.*" | sort || true)
[[ "$before" == "$after" ]] || fail "run.sh left its work folder in /tmp"
echo "gpu_run_fallback_test: ok"
