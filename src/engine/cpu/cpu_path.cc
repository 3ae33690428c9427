#include "engine/cpu/cpu_path.h"

#include <cpuid.h>

#include <cstdlib>
#include <cstring>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/amx_gemm.h"

namespace stamen::engine::cpu {
namespace {

const char* OneDnnIsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::all: break;
  }
  return "unknown";
}

// The features worth naming in a figure: the baseline's and the wider ones a later kernel may use.
std::string VectorFeatures() {
  __builtin_cpu_init();
  std::string features;
  const auto add = [&features](bool present, const char* name) {
    if (present) features += (features.empty() ? "" : " ") + std::string(name);
  };
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(__builtin_cpu_supports("avx512dq"), "avx512dq");
  add(__builtin_cpu_supports("avx512vl"), "avx512vl");
  add(__builtin_cpu_supports("avx512vnni"), "avx512vnni");
  add(__builtin_cpu_supports("avx512bf16"), "avx512bf16");
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) != 0) {
    add((edx >> 24) & 1, "amx-tile");
    add((edx >> 22) & 1, "amx-bf16");
    add((edx >> 25) & 1, "amx-int8");
  }
  return features;
}

std::string Vendor() {
  unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return "unknown";
  char name[13] = {};
  std::memcpy(name, &ebx, 4);
  std::memcpy(name + 4, &edx, 4);
  std::memcpy(name + 8, &ecx, 4);
  return name;
}

CpuPath Detect() {
  CpuPath path;
  const char* held = std::getenv("STAMEN_CPU_KERNELS");
  const std::string hold = held == nullptr ? "" : held;
  path.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && hold != "avx2";
  const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
  path.onednn_isa = OneDnnIsaName(isa);
  path.features = VectorFeatures();
  path.vendor = Vendor();
  path.bfloat16_instructions = __builtin_cpu_supports("avx512bf16") &&
                               (isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx);
  path.amx = path.avx512 && path.bfloat16_instructions && hold != "avx512" && RequestAmxTiles();
  path.kernels = path.amx ? "avx512-amx" : path.avx512 ? "avx512" : "avx2-fma";
  // See DefaultsToBFloat16 for the measurements behind this.
  path.bfloat16_faster = path.bfloat16_instructions && (path.vendor == "AuthenticAMD" || path.amx);
  return path;
}

}  // namespace

const CpuPath& DetectCpuPath() {
  static const CpuPath path = Detect();
  return path;
}

std::string DescribeCpuPath() {
  const CpuPath& path = DetectCpuPath();
  const char* bfloat16 = path.amx                     ? "bf16 on AMX tiles, faster than fp32"
                         : path.bfloat16_faster        ? "bf16 native, faster than fp32"
                         : path.bfloat16_instructions ? "bf16 native, slower than fp32"
                                                      : "bf16 emulated in fp32";
  return "kernels " + path.kernels + ", oneDNN ISA " + path.onednn_isa + ", " + bfloat16 + " (" + path.vendor + ": " +
         path.features + ")";
}

bool DefaultsToBFloat16() { return DetectCpuPath().bfloat16_faster; }

}  // namespace stamen::engine::cpu
