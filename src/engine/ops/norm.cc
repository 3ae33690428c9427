// Normalisations: argument checks and device dispatch.
#include "engine/ops/norm.h"

#include "engine/ops/checks.h"
#include "engine/ops/dispatch.h"

namespace stamen::engine::ops {

Status LayerNorm(const Tensor& input, const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                 Tensor& output) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("layer_norm", "input", input, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("layer_norm", "gamma", gamma, 1));
  if (!beta.empty()) {
    STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("layer_norm", "beta", beta, 1));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim("layer_norm", "beta", beta, 0, input.dim(1)));
    STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("layer_norm", {&input, &beta}));
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("layer_norm", "output", output, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("layer_norm", "gamma", gamma, 0, input.dim(1)));
  if (!(output.shape() == input.shape())) {
    return Status::Error("layer_norm: output is " + output.Describe() + ", input " + input.Describe());
  }
  if (!residual.empty()) {
    if (residual.dtype() != input.dtype() || !(residual.shape() == input.shape())) {
      return Status::Error("layer_norm: residual is " + residual.Describe() + ", input " + input.Describe());
    }
    STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("layer_norm", {&input, &residual}));
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("layer_norm", {&input, &gamma, &output}));
  STAMEN_RETURN_IF_ERROR(
      internal::ExpectComputeType("layer_norm", input.device(), {&input, &residual, &gamma, &beta, &output}));
  return internal::Dispatch(
      "layer_norm", input.device(),
      [&] { return cpu::LayerNorm(input, residual, gamma, beta, eps, output); },
      STAMEN_CUDA_KERNEL([&] { return cuda::LayerNorm(input, residual, gamma, beta, eps, output); }));
}

Status RmsNorm(const Tensor& input, const Tensor& weight, float eps, Tensor& output, bool accumulate) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("rms_norm", "input", input, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("rms_norm", "weight", weight, 1));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("rms_norm", "weight", weight, 0, input.dim(1)));
  if (output.dtype() != input.dtype() || !(output.shape() == input.shape())) {
    return Status::Error("rms_norm: output is " + output.Describe() + ", input " + input.Describe());
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("rms_norm", {&input, &weight, &output}));
  STAMEN_RETURN_IF_ERROR(internal::ExpectComputeType("rms_norm", input.device(), {&input, &weight, &output}));
  return internal::Dispatch(
      "rms_norm", input.device(),
      [&] { return cpu::RmsNorm(input, weight, eps, output, accumulate); },
      STAMEN_CUDA_KERNEL([&] { return cuda::RmsNorm(input, weight, eps, output, accumulate); }));
}

Status RmsNormHeads(Tensor& qkv, const QkvLayout& layout, const Tensor& query_weight, const Tensor& key_weight,
                    float eps) {
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("rms_norm_heads", "qkv", qkv, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("rms_norm_heads", "qkv", qkv, 1, layout.row_size()));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("rms_norm_heads", "query_weight", query_weight, 1));
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat("rms_norm_heads", "key_weight", key_weight, 1));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("rms_norm_heads", "query_weight", query_weight, 0, layout.head_dim));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim("rms_norm_heads", "key_weight", key_weight, 0, layout.head_dim));
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice("rms_norm_heads", {&qkv, &query_weight, &key_weight}));
  STAMEN_RETURN_IF_ERROR(
      internal::ExpectComputeType("rms_norm_heads", qkv.device(), {&qkv, &query_weight, &key_weight}));
  return internal::Dispatch(
      "rms_norm_heads", qkv.device(),
      [&] { return cpu::RmsNormHeads(qkv, layout, query_weight, key_weight, eps); },
      STAMEN_CUDA_KERNEL([&] { return cuda::RmsNormHeads(qkv, layout, query_weight, key_weight, eps); }));
}

Status LayerNormQueryKey(Tensor& qkv, const QkvLayout& layout, const Tensor& query_gamma, const Tensor& query_beta,
                         const Tensor& key_gamma, const Tensor& key_beta, float eps) {
  constexpr std::string_view kOp = "layer_norm_query_key";
  STAMEN_RETURN_IF_ERROR(internal::ExpectFloat(kOp, "qkv", qkv, 2));
  STAMEN_RETURN_IF_ERROR(internal::ExpectDim(kOp, "qkv", qkv, 1, layout.row_size()));
  const struct {
    const char* name;
    const Tensor& tensor;
    int64_t size;
  } parameters[] = {{"query_gamma", query_gamma, layout.num_heads * layout.head_dim},
                    {"query_beta", query_beta, layout.num_heads * layout.head_dim},
                    {"key_gamma", key_gamma, layout.num_kv_heads * layout.head_dim},
                    {"key_beta", key_beta, layout.num_kv_heads * layout.head_dim}};
  for (const auto& parameter : parameters) {
    STAMEN_RETURN_IF_ERROR(internal::ExpectFloat(kOp, parameter.name, parameter.tensor, 1));
    STAMEN_RETURN_IF_ERROR(internal::ExpectDim(kOp, parameter.name, parameter.tensor, 0, parameter.size));
  }
  STAMEN_RETURN_IF_ERROR(internal::ExpectSameDevice(kOp, {&qkv, &query_gamma, &query_beta, &key_gamma, &key_beta}));
  STAMEN_RETURN_IF_ERROR(
      internal::ExpectComputeType(kOp, qkv.device(), {&qkv, &query_gamma, &query_beta, &key_gamma, &key_beta}));
  return internal::Dispatch(
      kOp, qkv.device(),
      [&] { return cpu::LayerNormQueryKey(qkv, layout, query_gamma, query_beta, key_gamma, key_beta, eps); },
      STAMEN_CUDA_KERNEL(
          [&] { return cuda::LayerNormQueryKey(qkv, layout, query_gamma, query_beta, key_gamma, key_beta, eps); }));
}

}  // namespace stamen::engine::ops
