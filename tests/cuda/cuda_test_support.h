// What the CUDA tests share: why a GPU test must skip, random bf16-exact inputs, copies to and
// from the device, the relative error and the kernel test fixture (a context per test).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/models/model.h"
#include "engine/ops/convert.h"
#include "engine/tensor.h"

#if STAMEN_WITH_CUDA
#include "engine/cuda/context.h"
#include "engine/cuda/runtime.h"
#endif

namespace stamen::engine::cuda_test {

// ‖gpu − cpu‖ / ‖cpu‖ that a kernel test accepts: bf16 activations, fp32 accumulation.
constexpr double kKernelTolerance = 1e-2;

// Empty when a GPU test can run, else why not.
inline std::string WhyNoGpu() {
#if STAMEN_WITH_CUDA
  std::string why;
  if (cuda::DeviceCount(&why) == 0) return "no CUDA device: " + why;
  return "";
#else
  return "this build has no CUDA backend";
#endif
}

#if STAMEN_WITH_CUDA

// Random F32 host tensor, values rounded to bf16 so both backends see identical inputs.
inline Tensor Random(const Shape& shape, std::mt19937& rng, float scale = 1.0f) {
  Tensor tensor = *Tensor::Allocate(DataType::kF32, shape);
  std::normal_distribution<float> normal(0.0f, scale);
  for (int64_t i = 0; i < tensor.NumElements(); ++i) tensor.data<float>()[i] = normal(rng);
  Tensor rounded = *Tensor::Allocate(DataType::kBF16, shape);
  EXPECT_TRUE(ops::Convert(tensor, rounded).ok());
  EXPECT_TRUE(ops::Convert(rounded, tensor).ok());
  return tensor;
}

// A host F32 tensor on the device as BF16 (or as-is for I32 and F32 tables).
inline Tensor ToDevice(const Tensor& host, DataType type = DataType::kBF16) {
  if (host.dtype() != DataType::kF32) type = host.dtype();
  auto placed = model_weights::Place(host, {Device::kCuda, type});
  EXPECT_TRUE(placed.ok()) << placed.status().message();
  return placed.ok() ? *placed : Tensor();
}

inline Tensor ToHost(const Tensor& device) {
  Tensor copy = *Tensor::Allocate(device.dtype(), device.shape());
  Status status = CopyTensor(device, copy);
  EXPECT_TRUE(status.ok()) << status.message();
  if (copy.dtype() == DataType::kF32 || copy.dtype() == DataType::kI32) return copy;
  Tensor wide = *Tensor::Allocate(DataType::kF32, device.shape());
  EXPECT_TRUE(ops::Convert(copy, wide).ok());
  return wide;
}

inline Tensor Empty(DataType type, const Shape& shape, Device device) {
  auto tensor = Tensor::Allocate(type, shape, device);
  EXPECT_TRUE(tensor.ok()) << tensor.status().message();
  return tensor.ok() ? *tensor : Tensor();
}

inline Tensor Ints(const std::vector<int32_t>& values) {
  Tensor tensor = *Tensor::Allocate(DataType::kI32, {static_cast<int64_t>(values.size())});
  std::copy(values.begin(), values.end(), tensor.data<int32_t>());
  return tensor;
}

inline double RelativeError(const Tensor& expected, const Tensor& actual) {
  EXPECT_EQ(expected.NumElements(), actual.NumElements());
  double difference = 0.0;
  double norm = 0.0;
  for (int64_t i = 0; i < expected.NumElements() && i < actual.NumElements(); ++i) {
    const double e = expected.data<float>()[i];
    const double a = actual.data<float>()[i];
    if (!std::isfinite(a)) return INFINITY;
    difference += (a - e) * (a - e);
    norm += e * e;
  }
  return std::sqrt(difference) / std::max(std::sqrt(norm), 1e-30);
}

class CudaKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = WhyNoGpu();
    if (!why.empty()) GTEST_SKIP() << why;
    auto context = cuda::Context::Create(0);
    ASSERT_TRUE(context.ok()) << context.status().message();
    context_ = std::move(context.value());
    scope_ = std::make_unique<cuda::ScopedContext>(context_.get());
  }
  void TearDown() override {
    if (context_ != nullptr) {
      EXPECT_TRUE(context_->Synchronize().ok());
    }
    scope_.reset();
    context_.reset();
  }
  std::mt19937 rng_{20240611};
  std::unique_ptr<cuda::Context> context_;
  std::unique_ptr<cuda::ScopedContext> scope_;
};

#define EXPECT_CLOSE(expected, actual, what)                                       \
  do {                                                                             \
    const double error_ = RelativeError((expected), (actual));                     \
    EXPECT_LE(error_, kKernelTolerance) << what;                                   \
    std::cout << "[ cuda     ] " << what << ": relative error " << error_ << "\n"; \
  } while (0)

#endif  // STAMEN_WITH_CUDA

}  // namespace stamen::engine::cuda_test
