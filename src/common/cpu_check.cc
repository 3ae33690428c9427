#include "common/cpu_check.h"

#include <cpuid.h>

#include <string>

namespace stamen {

Status CheckCpuRunsThisBuild() {
  __builtin_cpu_init();
  std::string missing;
  const auto need = [&missing](bool present, const char* name) {
    if (!present) missing += (missing.empty() ? "" : ", ") + std::string(name);
  };
  need(__builtin_cpu_supports("avx2"), "AVX2");
  need(__builtin_cpu_supports("fma"), "FMA");
  // From CPUID leaf 1 directly: clang 14's __builtin_cpu_supports does not know "f16c".
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  need(__get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0, "F16C");
  need(__builtin_cpu_supports("bmi"), "BMI1");
  need(__builtin_cpu_supports("bmi2"), "BMI2");
  if (missing.empty()) return Status();
  return Status::Error("this CPU lacks " + missing +
                       ": this build is for x86-64-v3 (AVX2 + FMA, Haswell or Zen and newer) and cannot run here");
}

}  // namespace stamen
