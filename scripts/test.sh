#!/usr/bin/env bash
# The project's test command: installs dependencies, builds a preset (default: release), runs
# ctest. Exits with ctest's status; ctest's summary line is the last thing printed.
# Usage: scripts/test.sh [release|debug] [extra ctest arguments...]
#   debug: the same tests under AddressSanitizer + UndefinedBehaviorSanitizer. Every report,
#   also from the `stamen` processes the tests start, goes to build/debug/sanitizer/, and any
#   report fails the run. The tokenizer exactness tests compare a sample of their corpora with
#   the references there: every STAMEN_EXACTNESS_SAMPLE-th line (default 8; 1: every line), every
#   udhr language and all edge cases (tests/tokenizer/test_corpus.h); release checks every line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

preset="${1:-release}"
shift || true

scripts/setup.sh
scripts/build.sh "$preset"
# Engines without --dtype compute in float32 whatever the machine (on a CPU that multiplies bf16
# faster, BERT models would default to bfloat16): the references are fp32. The bf16 tests name
# their dtype.
export STAMEN_CPU_DTYPE=float32
if [[ "$preset" != debug ]]; then
  # The optimised build checks every corpus line, whatever the caller's environment holds.
  unset STAMEN_EXACTNESS_SAMPLE
  # --no-tests=error: a test command that silently runs nothing is a failure.
  exec ctest --preset "$preset" --parallel 2 --output-on-failure --no-tests=error "$@"
fi

# The sample keeps the whole suite under the sanitizers within CI's time (docs/RELIABILITY.md).
# Each exactness test prints how many lines it checked and the sample.
export STAMEN_EXACTNESS_SAMPLE="${STAMEN_EXACTNESS_SAMPLE:-8}"
echo "test: exactness tests check every ${STAMEN_EXACTNESS_SAMPLE}th corpus line (STAMEN_EXACTNESS_SAMPLE)"
reports="$PWD/build/debug/sanitizer"
rm -rf "$reports"
mkdir -p "$reports"
# log_path: reports of child processes (killed workers too) land in files, not lost in logs.
export ASAN_OPTIONS="log_path=$reports/asan:detect_leaks=1:abort_on_error=0:strict_string_checks=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="log_path=$reports/ubsan:print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
status=0
ctest --preset debug --parallel 2 --output-on-failure --no-tests=error "$@" || status=$?
# What the exactness tests compared (ctest shows their output only when they fail).
log=build/debug/Testing/Temporary/LastTest.log
if [[ -f "$log" ]] && grep -q '^\[ exactness \].* lines checked' "$log"; then
  grep '^\[ exactness \].* lines checked' "$log" | grep -oE '[0-9]+ lines checked' |
    awk -v file="$log" '{ n++; total += $1; if (n == 1 || $1 < fewest) fewest = $1 }
      END { printf "test: %d exactness comparisons, %d lines checked in all, fewest in one: %d (details: %s)\n", n, total, fewest, file }'
fi
if compgen -G "$reports/*" > /dev/null; then
  echo "test: sanitizer reports in $reports:"
  for report in "$reports"/*; do
    echo "--- $report"
    head -n 80 "$report"
  done
  echo "test: FAILED: $(ls "$reports" | wc -l) sanitizer report(s)"
  exit 1
fi
echo "test: no sanitizer reports"
exit "$status"
