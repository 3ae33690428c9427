// The CPU backend: one function per op, called by the op's device-independent part after
// it has checked dtypes, shapes and devices (so these only compute). They return Status like
// the CUDA backend's, so one dispatch (ops/dispatch.h) serves both; most cannot fail.
//   - Gemm fails only if oneDNN does (an unsupported shape or out of memory).
//   - Gather fails on an id outside the table.
#pragma once

#include <string>

#include "engine/ops/activation.h"
#include "engine/ops/attention.h"
#include "engine/ops/gemm.h"
#include "engine/ops/pooling.h"
#include "model_folder/kinds.h"
#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::cpu {

#include "engine/ops/backend_kernels.inc"

// Both dense layers of a feed-forward block (ops::FeedForwardGemms).
Status FeedForwardGemms(const Tensor& input, const Tensor& up_weight, const Tensor& up_bias,
                        ops::Activation activation, const Tensor& down_weight, const Tensor& down_bias,
                        Tensor& intermediate, Tensor& output, bool accumulate);
// The kernels Gemm runs on this machine in fp32 or bf16, by row count, as `/info` and the logs
// report them: e.g. "stamen AVX-512 tiles up to 128 rows, oneDNN brg:avx512_core (fixed rows) to
// 512, oneDNN gemm:jit above".
std::string DescribeGemm(bool bfloat16);

}  // namespace stamen::engine::cpu
