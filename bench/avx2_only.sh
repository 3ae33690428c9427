#!/usr/bin/env bash
# Runs a command, and every process it starts, with AVX-512 hidden from cpuid
# (bench/hide_avx512.c, loaded as an audit library), so that an AVX-512 machine measures the ratios of an
# AVX2-only one in one run: stamen, oneDNN, ONNX Runtime's MLAS and PyTorch all take their AVX2
# kernels. It holds the instruction set, not the core: caches, memory and clock stay this
# machine's. Needs Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID); says so and stops if
# the machine lacks it.
# Usage: bench/avx2_only.sh COMMAND [ARGUMENTS...]
#   e.g. bench/avx2_only.sh bench/engine_report.sh MODEL_DIR 2 16,48,128 1 3
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
library=$root/build/hide_avx512/hide_avx512.so
if [[ ! -f $library || $root/bench/hide_avx512.c -nt $library ]]; then
  mkdir -p "$(dirname "$library")"
  gcc -O2 -Wall -Wextra -shared -fPIC -o "$library" "$root/bench/hide_avx512.c"
fi
LD_AUDIT=$library${LD_AUDIT:+:$LD_AUDIT} exec "$@"
