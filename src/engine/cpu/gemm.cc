// Dense layers on the CPU with oneDNN's matmul (short inputs go to small_gemm.h's kernel). One
// primitive per (n, k, bias, options, precision), created on first use with the row count m
// left as a runtime dimension, so a ragged batch of any token count reuses it (creating a
// primitive costs far more than a small gemm).
//
// In bf16 (matrix_precision.h) the weight is multiplied in its bf16 copy (prepared_weights.h)
// and the input is rounded per call into a scratch buffer: as bf16 for oneDNN's bf16 matmul
// where the CPU has AVX512-BF16, else as fp32 values for the fp32 matmul over the rounded
// weight copy. A weight the copies' cap leaves without one is multiplied in fp32.
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/cpu_path.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/prepared_weights.h"
#include "engine/cpu/small_gemm.h"

namespace stamen::engine::cpu {
namespace {

// n, k, bias, accumulate, activation, and whether input and weight are bf16.
using Key = std::tuple<int64_t, int64_t, bool, bool, ops::Activation, bool>;

dnnl::algorithm EltwiseAlgorithm(ops::Activation activation) {
  switch (activation) {
    case ops::Activation::kGeluErf: return dnnl::algorithm::eltwise_gelu_erf;
    case ops::Activation::kGeluTanh: return dnnl::algorithm::eltwise_gelu_tanh;
    case ops::Activation::kRelu: return dnnl::algorithm::eltwise_relu;
    case ops::Activation::kSilu: return dnnl::algorithm::eltwise_swish;
    case ops::Activation::kTanh: return dnnl::algorithm::eltwise_tanh;
    case ops::Activation::kIdentity: break;
  }
  return dnnl::algorithm::undef;
}

class MatmulCache {
 public:
  static MatmulCache& Get() {
    static MatmulCache cache;
    return cache;
  }
  dnnl::engine& engine() { return engine_; }

  // The primitive for `key`, created on first use; throws dnnl::error.
  const dnnl::matmul& Find(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = primitives_.find(key);
    if (it != primitives_.end()) return it->second;
    const auto [n, k, has_bias, accumulate, activation, bfloat16] = key;
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const auto operand_type = bfloat16 ? dnnl::memory::data_type::bf16 : f32;
    const dnnl::memory::desc source({DNNL_RUNTIME_DIM_VAL, k}, operand_type, tag::ab);
    const dnnl::memory::desc weights({k, n}, operand_type, tag::ba);  // [n, k] row-major is Wᵀ in "ba"
    const dnnl::memory::desc bias({1, n}, f32, tag::ab);
    const dnnl::memory::desc destination({DNNL_RUNTIME_DIM_VAL, n}, f32, tag::ab);
    dnnl::post_ops post_ops;
    if (accumulate) post_ops.append_sum(1.0f);
    if (activation != ops::Activation::kIdentity) {
      const float alpha = activation == ops::Activation::kSilu ? 1.0f : 0.0f;  // swish(x) = x·σ(αx)
      post_ops.append_eltwise(1.0f, EltwiseAlgorithm(activation), alpha, 0.0f);
    }
    dnnl::primitive_attr attributes;
    attributes.set_post_ops(post_ops);
    const auto descriptor = has_bias ? dnnl::matmul::desc(source, weights, bias, destination)
                                     : dnnl::matmul::desc(source, weights, destination);
    return primitives_.emplace(key, dnnl::matmul(dnnl::matmul::primitive_desc(descriptor, attributes, engine_)))
        .first->second;
  }

 private:
  MatmulCache() : engine_(dnnl::engine::kind::cpu, 0) {}
  std::mutex mutex_;
  dnnl::engine engine_;
  std::map<Key, dnnl::matmul> primitives_;
};

// The operands of one product as oneDNN multiplies them: the caller's in fp32; in bf16, the
// weight's copy and the input rounded into a scratch buffer of the calling thread.
struct Operands {
  const void* input;
  const void* weight;
  bool bfloat16 = false;  // bf16 bit patterns (else fp32 values)
};

Operands PrepareOperands(const Tensor& input, const Tensor& weight) {
  const Operands fp32{input.raw_data(), weight.raw_data()};
  if (CurrentMatrixPrecision() == MatrixPrecision::kFloat32) return fp32;
  const int64_t count = input.NumElements();
  if (DetectCpuPath().bfloat16_instructions) {
    const void* copy = FindPreparedWeight(weight, WeightForm::kRowsBFloat16);
    if (copy == nullptr) return fp32;
    thread_local std::vector<uint16_t> scratch;
    if (scratch.size() < static_cast<size_t>(count)) scratch.resize(count);
    FloatsToBFloat16(input.data<float>(), count, scratch.data());
    return {scratch.data(), copy, true};
  }
  const void* copy = FindPreparedWeight(weight, WeightForm::kRowsRoundedFloat32);
  if (copy == nullptr) return fp32;
  thread_local std::vector<float> scratch;
  if (scratch.size() < static_cast<size_t>(count)) scratch.resize(count);
  RoundFloatsToBFloat16(input.data<float>(), count, scratch.data());
  return {scratch.data(), copy, false};
}

}  // namespace

Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const ops::GemmOptions& options) {
  const int64_t m = input.dim(0);
  const int64_t k = input.dim(1);
  const int64_t n = weight.dim(0);
  if (m == 0 || n == 0) return Status();
  if (SmallGemm(input, weight, bias, output, options)) return Status();  // short inputs: packed weights
  try {
    const Operands operands = PrepareOperands(input, weight);
    MatmulCache& cache = MatmulCache::Get();
    const dnnl::matmul& matmul =
        cache.Find(Key{n, k, !bias.empty(), options.accumulate, options.activation, operands.bfloat16});
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const auto operand_type = operands.bfloat16 ? dnnl::memory::data_type::bf16 : f32;
    dnnl::engine& engine = cache.engine();
    // oneDNN memory objects carry their shape, so they are kept per thread and per shape and
    // only pointed at this call's buffers: a step of a shape seen before allocates nothing here.
    struct Memories {
      dnnl::memory source, weights, destination, bias;
    };
    using ShapeKey = std::tuple<int64_t, int64_t, int64_t, bool>;
    thread_local std::map<ShapeKey, Memories> memories;
    if (memories.size() > 1024) memories.clear();  // bounded: token counts vary without end
    auto [found, added] = memories.try_emplace(ShapeKey{m, k, n, operands.bfloat16});
    Memories& memory = found->second;
    if (added) {
      memory.source = dnnl::memory({{m, k}, operand_type, tag::ab}, engine, nullptr);
      memory.weights = dnnl::memory({{k, n}, operand_type, tag::ba}, engine, nullptr);
      memory.destination = dnnl::memory({{m, n}, f32, tag::ab}, engine, nullptr);
      memory.bias = dnnl::memory({{1, n}, f32, tag::ab}, engine, nullptr);
    }
    memory.source.set_data_handle(const_cast<void*>(operands.input));
    memory.weights.set_data_handle(const_cast<void*>(operands.weight));
    memory.destination.set_data_handle(output.raw_data());
    // Per thread and reused: a stream and the argument maps (their nodes stay allocated).
    thread_local dnnl::stream stream(engine);
    thread_local std::unordered_map<int, dnnl::memory> with_bias, without_bias;
    std::unordered_map<int, dnnl::memory>& arguments = bias.empty() ? without_bias : with_bias;
    arguments[DNNL_ARG_SRC] = memory.source;
    arguments[DNNL_ARG_WEIGHTS] = memory.weights;
    arguments[DNNL_ARG_DST] = memory.destination;
    if (!bias.empty()) {
      memory.bias.set_data_handle(bias.raw_data());
      arguments[DNNL_ARG_BIAS] = memory.bias;
    }
    matmul.execute(stream, arguments);
    stream.wait();
  } catch (const dnnl::error& error) {
    return Status::Error("gemm [" + std::to_string(m) + ", " + std::to_string(k) + "] x [" + std::to_string(n) +
                         ", " + std::to_string(k) + "]ᵀ failed in oneDNN: " + error.what());
  }
  return Status();
}

}  // namespace stamen::engine::cpu
