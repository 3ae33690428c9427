// The CUDA runtime as the rest of the engine sees it, without CUDA headers: device queries,
// device memory and copies between host and device. Only compiled when STAMEN_WITH_CUDA.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::cuda {

// Number of usable CUDA devices; 0 (with the reason in `why`) when there is no driver or GPU.
int DeviceCount(std::string* why = nullptr);
// "NVIDIA H200 (sm_90, 139.8 GiB)" for device `device`.
std::string DeviceDescription(int device);
// The compute capability's major version of device `device` (9 on Hopper), 0 when it cannot be
// read; cached per device, and safe while a stream is being captured.
int ComputeCapabilityMajor(int device);

// `bytes` of zero-filled device memory on the current device, freed when the last owner goes.
// Fails while the current context's stream is being captured into a graph (a captured
// forward pass must not allocate).
StatusOr<std::shared_ptr<void>> AllocateDevice(size_t bytes);

// Copies `bytes` between any two of host and device memory, ordered on the current context's
// stream (or the default stream without one), and waits for the copy to finish.
Status CopyBytes(void* target, Device target_device, const void* source, Device source_device, size_t bytes);

}  // namespace stamen::engine::cuda
