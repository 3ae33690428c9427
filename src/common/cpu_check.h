// Whether this CPU runs this build: every build targets x86-64-v3 (docs/ARCHITECTURE.md).
#pragma once

#include "common/status.h"

namespace stamen {

// An error naming what is missing when this CPU cannot run the binary's code (it needs
// x86-64-v3: AVX2, FMA, F16C, BMI1/2). Called first thing by `stamen` and `stamen-gateway`, so
// that an old CPU gets a sentence instead of SIGILL.
Status CheckCpuRunsThisBuild();

}  // namespace stamen
