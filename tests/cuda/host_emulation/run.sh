#!/usr/bin/env bash
# Runs the attention kernels of attention.cu (scalar) and tensor_core_attention.cu on the host
# (attention_emulation.cc, cuda_shim.h): for a machine without a GPU, a check of the kernels'
# logic, not of the hardware. About 3 minutes for the scalar cases on 2 cores (one thread per
# CUDA thread); ctest runs the tensor-core cases (CudaKernelsOnHost). Usage:
# tests/cuda/host_emulation/run.sh [SUBSTRING] (only the cases whose name holds SUBSTRING, e.g.
# "empty after": trailing empty sequences, "tensor cores": the tensor-core kernel's cases)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# Each kernel file's namespace body, with its shared memory taken from the emulated block, in
# a namespace of its own (both files define kBlockM, kThreads, ...).
python3 - "$root/src/engine/cuda" "$work/attention_kernel.inc" <<'PY'
import sys
folder, target = sys.argv[1], sys.argv[2]
parts = ['#include "cuda_shim.h"\n#include "engine/ops/position_buckets.h"\n#include "engine/cuda/ragged_tiles.cuh"\n']
for file, namespace in [('attention.cu', 'emulated'), ('tensor_core_attention.cu', 'emulated_tensor_cores')]:
    source = open(folder + '/' + file).read()
    body = source[source.index('namespace stamen::engine::cuda {'):source.index('}  // namespace\n')]
    for old, new in [('  extern __shared__ __align__(16) unsigned char shared[];\n',
                      '  unsigned char* shared = emulated_block->dynamic_shared;\n'),
                     ('  __shared__ int tile_sequence;\n', '  int& tile_sequence = emulated_block->shared_ints[0];\n'),
                     ('  __shared__ int tile_index;\n', '  int& tile_index = emulated_block->shared_ints[1];\n'),
                     ('namespace {', 'namespace ' + namespace + ' {')]:
        if old not in body:
            sys.exit(file + ' changed: cannot find ' + repr(old) + '; update run.sh')
        body = body.replace(old, new, 1)
    if '__shared__' in body:
        sys.exit(file + ' has shared variables run.sh does not map')
    parts.append(body + '}  // namespace ' + namespace + '\n}  // namespace stamen::engine::cuda\n')
with open(target, 'w') as out:
    out.write('\n'.join(parts))
PY
# -fno-strict-aliasing: the kernels read bf16 storage as 16-byte chunks and 32-bit fragment
# registers, as CUDA code does and nvcc allows; GCC at -O2 would otherwise reorder those reads.
g++ -std=c++20 -O2 -fno-strict-aliasing -pthread -I"$root/src" -I"$here" -I"$work" -o "$work/attention_emulation" "$here/attention_emulation.cc"
"$work/attention_emulation" "$@"
