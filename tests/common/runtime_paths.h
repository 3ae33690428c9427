// Test data folders a test binary was built with, each overridable at run time by the
// environment variable of the same name: a bundle of test binaries (bench/gpu/pack.sh) runs on
// a machine where the build's absolute paths do not exist. Force-included (-include) by the
// engine and CUDA tests, whose STAMEN_SHARED_DIR, STAMEN_ENGINE_TEST_DATA and STAMEN_SOURCE_DIR
// expand to StamenRuntimePath("NAME", "built-in path").
#pragma once

#include <cstdlib>

inline const char* StamenRuntimePath(const char* variable, const char* built_in) {
  const char* value = std::getenv(variable);
  return value != nullptr && *value != '\0' ? value : built_in;
}
