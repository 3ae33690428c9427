#!/usr/bin/env bash
# Runs attention.cu's kernel on the host (attention_emulation.cc, cuda_shim.h): for a machine
# without a GPU, a check of the kernel's logic, not of the hardware. About 3 minutes on 2 cores
# (one thread per CUDA thread). Not part of ctest. Usage: tests/cuda/host_emulation/run.sh [SUBSTRING]
# (only the cases whose name holds SUBSTRING, e.g. "empty after": trailing empty sequences)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# The kernel's namespace body, with its shared memory taken from the emulated block.
python3 - "$root/src/engine/cuda/attention.cu" "$work/attention_kernel.inc" <<'PY'
import sys
source = open(sys.argv[1]).read()
body = source[source.index('namespace stamen::engine::cuda {'):source.index('}  // namespace\n')]
for old, new in [('  extern __shared__ __align__(16) unsigned char shared[];\n',
                  '  unsigned char* shared = emulated_block->dynamic_shared;\n'),
                 ('  __shared__ int tile_sequence;\n', '  int& tile_sequence = emulated_block->shared_ints[0];\n'),
                 ('  __shared__ int tile_index;\n', '  int& tile_index = emulated_block->shared_ints[1];\n'),
                 ('namespace {', 'namespace emulated {')]:
    if old not in body:
        sys.exit('attention.cu changed: cannot find ' + repr(old) + '; update run.sh')
    body = body.replace(old, new, 1)
if '__shared__' in body:
    sys.exit('attention.cu has shared variables run.sh does not map')
with open(sys.argv[2], 'w') as out:
    out.write('#include "cuda_shim.h"\n#include "engine/ops/position_buckets.h"\n' + body +
              '}  // namespace emulated\n}  // namespace stamen::engine::cuda\n')
PY
g++ -std=c++20 -O2 -pthread -I"$root/src" -I"$here" -I"$work" -o "$work/attention_emulation" "$here/attention_emulation.cc"
"$work/attention_emulation" "$@"
