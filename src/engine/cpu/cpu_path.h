// Which code the CPU engine runs on this machine, picked at run time. One binary serves every
// x86-64 machine of the x86-64-v3 level (AVX2 + FMA): our own kernels are built for that level,
// with AVX-512 variants of the hot ones (the small-m GEMM's tiles) compiled beside them for
// the CPUs that have AVX-512 F/BW/DQ/VL, and AMX tile kernels (amx_gemm.h) for bf16 on the CPUs
// that have AMX; oneDNN chooses its GEMM kernels by the CPU it finds (AVX2 sgemm, or JIT-built
// AVX-512 brgemm kernels where the CPU has AVX-512). `/info`, the workers' start log and
// `stamen bench engine --json` say which GEMM path runs (DescribeGemm in kernels.h), so that every
// figure names it.
#pragma once

#include <string>

#include "engine/status.h"

// The attribute of the AVX-512 variants of our kernels, [[STAMEN_AVX512_TARGET]]: a target
// attribute on each function rather than a file built with -mavx512*, so that nothing shared
// (inline functions, the standard library's templates) is ever emitted in AVX-512 code that an
// AVX2 machine could end up calling. Callers check CpuPath::avx512 first.
#define STAMEN_AVX512_TARGET gnu::target("avx512f,avx512bw,avx512dq,avx512vl")
// The bf16 dot-product variants (AVX512-BF16's vdpbf16ps): callers check
// CpuPath::avx512 and CpuPath::bfloat16_instructions first.
#define STAMEN_AVX512_BF16_TARGET gnu::target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")

namespace stamen::engine::cpu {

struct CpuPath {
  // Instruction set of stamen's own kernels: "avx512-amx", "avx512" or "avx2-fma".
  // STAMEN_CPU_KERNELS in the environment holds a machine to a lower set: "avx512" keeps an AMX
  // machine off its tiles, "avx2" an AVX-512 machine to the AVX2 kernels (tests run each there).
  std::string kernels;
  bool avx512 = false;   // kernels "avx512" or "avx512-amx"
  // bf16 products on AMX tiles (amx_gemm.h): the CPU has AMX-BF16, Linux granted the tile
  // state, and no STAMEN_CPU_KERNELS holds it back.
  bool amx = false;
  // oneDNN's effective instruction set, e.g. "avx2", "avx512_core_amx": the best its kernels
  // could use, not what a product runs (DescribeGemm in kernels.h says that).
  std::string onednn_isa;
  std::string features;  // the vector features this CPU has among those that matter here
  std::string vendor;    // "AuthenticAMD", "GenuineIntel", …
  // oneDNN multiplies bf16 with the CPU's bf16 instructions (AVX512-BF16); without them a
  // bf16 engine multiplies bf16-rounded values in fp32 (matrix_precision.h).
  bool bfloat16_instructions = false;
  // …and faster than fp32 (see DefaultsToBFloat16).
  bool bfloat16_faster = false;
};

// Read once per process (oneDNN's answer is fixed after its first use).
const CpuPath& DetectCpuPath();

// "kernels avx512, oneDNN ISA avx512_core_bf16, bf16 native … (GenuineIntel: avx2 fma avx512f …)"
// for logs.
std::string DescribeCpuPath();

// What a CPU engine computes its matrix products in when the user does not say (--dtype):
// bf16 where it is faster than fp32 on this CPU (bfloat16_faster), else fp32.
//   - AMD Zen 4 and Zen 5 run AVX512-BF16's dot products at the FMA's rate with two products
//     per lane: oneDNN's bf16 matmul measured 1.97–2.02× its fp32 one on Zen 5 (issue 21), and
//     ~2× on Zen 4, where vdpbf16ps and vfmadd231ps both issue one zmm per cycle
//     (docs/BENCHMARKS.md, "bf16 on AMD Zen 4").
//   - Intel Xeons with AVX512-BF16 but no AMX exposed (Cooper Lake; Sapphire and Emerald Rapids
//     in VMs that hide AMX) run it at half that rate: bf16 measured 0.55–0.6× fp32 on an
//     Emerald Rapids VM (docs/BENCHMARKS.md, "On AVX-512 and in bf16"), so fp32 stays the default.
//   - Xeons with AMX (CpuPath::amx) multiply bf16 on tiles (amx_gemm.h): MiniLM's bf16 steps ran
//     2.3–3.6× faster than fp32 at 16 to 512 tokens, batch 1 and 32 (docs/BENCHMARKS.md, "Intel
//     Xeon with AMX"). Without the tiles (refused by the kernel, or held off) the rule above holds.
// bf16's accuracy is checked per family by bench/dtype_gate.sh (DefaultComputeType in
// engine.h applies it).
bool DefaultsToBFloat16();


}  // namespace stamen::engine::cpu
