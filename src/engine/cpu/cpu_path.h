// Which code the CPU engine runs on this machine, picked at run time. One binary serves every
// x86-64 machine of the x86-64-v3 level (AVX2 + FMA): our own kernels are built for that level,
// and oneDNN chooses its GEMM kernels by the CPU it finds (AVX2 sgemm, or JIT-built AVX-512
// brgemm kernels where the CPU has AVX-512). `/info`, the workers' start log and
// `stamen bench engine --json` say which path was taken, so that every figure names it.
#pragma once

#include <string>

#include "engine/status.h"

namespace stamen::engine::cpu {

struct CpuPath {
  std::string kernels;   // instruction set of stamen's own kernels, e.g. "avx2-fma"
  std::string gemm;      // oneDNN's effective instruction set, e.g. "avx2", "avx512_core_bf16"
  std::string features;  // the vector features this CPU has among those that matter here
};

// Read once per process (oneDNN's answer is fixed after its first use).
const CpuPath& DetectCpuPath();

// "kernels avx2-fma, GEMM oneDNN avx512_core_bf16 (avx2 fma avx512f …)" for logs.
std::string DescribeCpuPath();


}  // namespace stamen::engine::cpu
