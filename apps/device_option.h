// --device ("cpu", "cuda" or "cuda:N") and --dtype ("float32" or "bfloat16") for the model
// commands, into EngineOptions.
#pragma once

#include <string>

#include "engine/engine.h"

namespace stamen::apps {

// Sets options->device (and cuda_device); returns an error message, empty on success. Whether
// a GPU is present is for Engine::Load to say ("cannot run on cuda: no CUDA device …").
inline std::string ApplyDeviceOption(const std::string& device, engine::EngineOptions* options) {
  if (device == "cpu") {
    options->device = engine::Device::kCpu;
    return "";
  }
  if (device == "cuda" || device.rfind("cuda:", 0) == 0) {
    int index = 0;
    if (device.size() > 5) {
      const std::string digits = device.substr(5);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 4) {
        return "device '" + device + "' is not cpu, cuda or cuda:N";
      }
      index = std::stoi(digits);
    }
#if !STAMEN_WITH_CUDA
    return "device '" + device + "' is not available: this build has no CUDA backend (supported: cpu)";
#endif
    options->device = engine::Device::kCuda;
    options->cuda_device = index;
    return "";
  }
  return "device '" + device + "' is not available (supported: cpu, cuda, cuda:N)";
}

// The help text of every command's --dtype.
inline constexpr const char* kDtypeHelp =
    "What the matrix products compute in: float32 or bfloat16 (default: bfloat16 on a GPU; on the CPU bfloat16 "
    "where this CPU multiplies it faster than float32 and the model's family passed the bf16 accuracy gate, "
    "else float32)";

// Sets options->compute_dtype from --dtype (empty: the default); returns an error message,
// empty on success.
inline std::string ApplyDtypeOption(const std::string& dtype, engine::EngineOptions* options) {
  if (dtype.empty()) {
    options->compute_dtype = std::nullopt;
    return "";
  }
  options->compute_dtype = engine::ParseComputeType(dtype);
  if (!options->compute_dtype) return "dtype '" + dtype + "' is not float32 or bfloat16";
  return "";
}

}  // namespace stamen::apps
