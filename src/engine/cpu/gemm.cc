// Dense layers on the CPU with oneDNN's matmul (short inputs go to small_gemm.h's kernel). One
// primitive per (n, k, bias, options, precision), created on first use with the row count m
// left as a runtime dimension, so a ragged batch of any token count reuses it (creating a
// primitive costs far more than a small gemm).
//
// Between the small-m cut and 512 rows in fp32 on AVX-512, the rows go in a whole number of
// 64-row blocks to a primitive made for that row count over the weight's blocked copy
// (blocked_weights.h: oneDNN's brgemm kernels, which a runtime row count does not get), and
// the remaining rows (fewer than 64) to the small-m kernel: at most 8 such primitives per
// weight shape and options.
//
// In bf16 (matrix_precision.h) the weight is multiplied in its bf16 copy (prepared_weights.h)
// and the input is rounded per call into a scratch buffer: as bf16 for oneDNN's bf16 matmul
// where the CPU has AVX512-BF16, else as fp32 values for the fp32 matmul over the rounded
// weight copy. A weight the copies' cap leaves without one is multiplied in fp32.
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "engine/cpu/amx_gemm.h"
#include "engine/cpu/blocked_weights.h"
#include "engine/cpu/cpu_path.h"
#include "engine/cpu/kernels.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/prepared_weights.h"
#include "engine/cpu/small_gemm.h"
#include "engine/cpu/thread_pool.h"

namespace stamen::engine::cpu {
namespace {

// n, k, bias, accumulate, activation, whether input and weight are bf16, and the fixed row
// count over the blocked weight (0: rows at run time, plain weight).
using Key = std::tuple<int64_t, int64_t, bool, bool, ops::Activation, bool, int64_t>;

// Rows of the fixed-row primitives: multiples of kFixedRowsStep up to kFixedRowsLimit.
constexpr int64_t kFixedRowsStep = 64;
constexpr int64_t kFixedRowsLimit = 512;

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

// A primitive and the scratchpad it asks of its caller (fixed-row primitives: oneDNN would
// otherwise allocate, and the kernel fault in, its brgemm buffers on every call).
struct Matmul {
  dnnl::matmul primitive;
  dnnl::memory::desc scratchpad;  // zero bytes: none
  std::string implementation;     // oneDNN's name of the kernel it runs, e.g. "gemm:jit"
};

class MatmulCache {
 public:
  static MatmulCache& Get() {
    static MatmulCache cache;
    return cache;
  }
  dnnl::engine& engine() { return engine_; }

  // The primitive for `key`, created on first use; throws dnnl::error. For a fixed row count,
  // null when oneDNN has no kernel for it over the blocked layout with a brgemm kernel (the
  // caller then takes the runtime-row primitive); remembered, so it is asked once.
  const Matmul* Find(const Key& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = primitives_.find(key);
    if (it != primitives_.end()) return it->second ? &*it->second : nullptr;
    const auto [n, k, has_bias, accumulate, activation, bfloat16, fixed_rows] = key;
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const auto operand_type = bfloat16 ? dnnl::memory::data_type::bf16 : f32;
    const int64_t rows = fixed_rows > 0 ? fixed_rows : DNNL_RUNTIME_DIM_VAL;
    const dnnl::memory::desc source({rows, k}, operand_type, tag::ab);
    // [n, k] row-major is Wᵀ in "ba"; a fixed row count takes the blocked copy.
    const dnnl::memory::desc weights =
        fixed_rows > 0 ? BlockedWeightLayout(n, k) : dnnl::memory::desc({k, n}, operand_type, tag::ba);
    const dnnl::memory::desc bias({1, n}, f32, tag::ab);
    const dnnl::memory::desc destination({rows, n}, f32, tag::ab);
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
    if (fixed_rows == 0) {
      const dnnl::matmul::primitive_desc primitive(descriptor, attributes, engine_);
      return &*primitives_.emplace(key, Matmul{dnnl::matmul(primitive), {}, primitive.impl_info_str()}).first->second;
    }
    attributes.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    std::optional<Matmul> fixed;
    try {
      const dnnl::matmul::primitive_desc primitive(descriptor, attributes, engine_);
      const std::string implementation = primitive.impl_info_str();
      if (implementation.rfind("brg", 0) == 0) {
        fixed.emplace(Matmul{dnnl::matmul(primitive), primitive.scratchpad_desc(), implementation});
      }
    } catch (const dnnl::error&) {
    }
    auto& entry = primitives_.emplace(key, std::move(fixed)).first->second;
    return entry ? &*entry : nullptr;
  }

 private:
  MatmulCache() : engine_(dnnl::engine::kind::cpu, 0) {}
  std::mutex mutex_;
  dnnl::engine engine_;
  std::map<Key, std::optional<Matmul>> primitives_;
};

// The operands of one product as oneDNN multiplies them: the caller's in fp32; in bf16, the
// weight's copy and the input rounded into a scratch buffer of the calling thread.
struct Operands {
  const void* input;
  const void* weight;
  bool bfloat16 = false;  // bf16 bit patterns (else fp32 values)
};

// The bf16 operands: the weight's prepared copy in `form`, and the input through `round`
// (fp32 → Element, `count` values) into this thread's scratch buffer of Element; the fp32
// operands where the weight has no such copy.
template <typename Element>
Operands RoundedOperands(const Tensor& input, const Tensor& weight, WeightForm form,
                         void (*round)(const float*, int64_t, Element*), const Operands& fp32) {
  const void* copy = FindPreparedWeight(weight, form);
  if (copy == nullptr) return fp32;
  const int64_t count = input.NumElements();
  thread_local std::vector<Element> scratch;
  if (scratch.size() < static_cast<size_t>(count)) scratch.resize(count);
  round(input.data<float>(), count, scratch.data());
  return {scratch.data(), copy, std::is_same_v<Element, uint16_t>};
}

Operands PrepareOperands(const Tensor& input, const Tensor& weight) {
  const Operands fp32{input.raw_data(), weight.raw_data()};
  if (CurrentMatrixPrecision() == MatrixPrecision::kFloat32) return fp32;
  if (DetectCpuPath().bfloat16_instructions) {
    return RoundedOperands<uint16_t>(input, weight, WeightForm::kRowsBFloat16, FloatsToBFloat16, fp32);
  }
  return RoundedOperands<float>(input, weight, WeightForm::kRowsRoundedFloat32, RoundFloatsToBFloat16, fp32);
}

// The calling thread's scratchpad for `matmul` (at least `bytes`): one buffer per thread that
// grows to the largest asked for, and one memory object per primitive pointed at it, so a
// step of shapes seen before allocates nothing.
dnnl::memory Scratchpad(const Matmul& matmul, size_t bytes, const dnnl::engine& engine) {
  struct Free {
    void operator()(void* data) const { std::free(data); }
  };
  thread_local std::unique_ptr<void, Free> buffer;
  thread_local size_t capacity = 0;
  thread_local std::map<const Matmul*, dnnl::memory> memories;
  if (bytes > capacity) {
    constexpr size_t kAlign = 64;
    capacity = (bytes + kAlign - 1) / kAlign * kAlign;
    buffer.reset(std::aligned_alloc(kAlign, capacity));
    if (buffer == nullptr) {
      capacity = 0;
      throw dnnl::error(dnnl_out_of_memory, "no memory for a matmul scratchpad");
    }
  }
  auto [found, added] = memories.try_emplace(&matmul);
  if (added) found->second = dnnl::memory(matmul.scratchpad, engine, nullptr);
  found->second.set_data_handle(buffer.get());
  return found->second;
}

// The product through one oneDNN primitive: `fixed`, made for the input's row count over
// `operands.weight` in the blocked layout, or (null) the runtime-row primitive over the weight
// as `operands` give it.
Status OneDnnGemm(const Tensor& input, const Operands& operands, const Tensor& bias, Tensor& output,
                  const ops::GemmOptions& options, int64_t n, const Matmul* fixed) {
  const int64_t m = input.dim(0);
  const int64_t k = input.dim(1);
  const bool fixed_rows = fixed != nullptr;
  try {
    MatmulCache& cache = MatmulCache::Get();
    const Matmul* matmul =
        fixed_rows ? fixed
                   : cache.Find(Key{n, k, !bias.empty(), options.accumulate, options.activation, operands.bfloat16, 0});
    using tag = dnnl::memory::format_tag;
    const auto f32 = dnnl::memory::data_type::f32;
    const auto operand_type = operands.bfloat16 ? dnnl::memory::data_type::bf16 : f32;
    dnnl::engine& engine = cache.engine();
    // oneDNN memory objects carry their shape, so they are kept per thread and per shape and
    // only pointed at this call's buffers: a step of a shape seen before allocates nothing here.
    struct Memories {
      dnnl::memory source, weights, destination, bias;
    };
    using ShapeKey = std::tuple<int64_t, int64_t, int64_t, bool, bool>;
    thread_local std::map<ShapeKey, Memories> memories;
    if (memories.size() > 1024) memories.clear();  // bounded: token counts vary without end
    auto [found, added] = memories.try_emplace(ShapeKey{m, k, n, operands.bfloat16, fixed_rows});
    Memories& memory = found->second;
    if (added) {
      memory.source = dnnl::memory({{m, k}, operand_type, tag::ab}, engine, nullptr);
      memory.weights = dnnl::memory(
          fixed_rows ? BlockedWeightLayout(n, k) : dnnl::memory::desc({k, n}, operand_type, tag::ba), engine, nullptr);
      memory.destination = dnnl::memory({{m, n}, f32, tag::ab}, engine, nullptr);
      memory.bias = dnnl::memory({{1, n}, f32, tag::ab}, engine, nullptr);
    }
    memory.source.set_data_handle(const_cast<void*>(operands.input));
    memory.weights.set_data_handle(const_cast<void*>(operands.weight));
    memory.destination.set_data_handle(output.raw_data());
    // Per thread and reused: a stream and the argument maps (their nodes stay allocated).
    thread_local dnnl::stream stream(engine);
    // One map per set of arguments (bias or not, scratchpad or not), so no call adds a node.
    thread_local std::unordered_map<int, dnnl::memory> argument_sets[2][2];
    const size_t scratchpad_bytes = matmul->scratchpad.get_size();
    std::unordered_map<int, dnnl::memory>& arguments = argument_sets[!bias.empty()][scratchpad_bytes > 0];
    arguments[DNNL_ARG_SRC] = memory.source;
    arguments[DNNL_ARG_WEIGHTS] = memory.weights;
    arguments[DNNL_ARG_DST] = memory.destination;
    if (!bias.empty()) {
      memory.bias.set_data_handle(bias.raw_data());
      arguments[DNNL_ARG_BIAS] = memory.bias;
    }
    if (scratchpad_bytes > 0) arguments[DNNL_ARG_SCRATCHPAD] = Scratchpad(*matmul, scratchpad_bytes, engine);
    matmul->primitive.execute(stream, arguments);
    stream.wait();
  } catch (const dnnl::error& error) {
    return Status::Error("gemm [" + std::to_string(m) + ", " + std::to_string(k) + "] x [" + std::to_string(n) +
                         ", " + std::to_string(k) + "]ᵀ failed in oneDNN: " + error.what());
  }
  return Status();
}

// Whether `rows` rows go to a fixed-row primitive over the blocked weight.
bool TakesFixedRows(int64_t rows) {
  return rows > SmallGemmMaxRows() && rows <= kFixedRowsLimit && DetectCpuPath().avx512 &&
         CurrentMatrixPrecision() == MatrixPrecision::kFloat32;
}

// Whether this thread's products take the AMX tiles (every row count, in bf16).
bool TakesAmxTiles() { return CurrentMatrixPrecision() == MatrixPrecision::kBFloat16 && DetectCpuPath().amx; }

}  // namespace

std::string DescribeGemm(bool bfloat16) {
  const CpuPath& path = DetectCpuPath();
  MatrixPrecisionScope scope(bfloat16 ? MatrixPrecision::kBFloat16 : MatrixPrecision::kFloat32);
  if (TakesAmxTiles()) return "stamen AMX tiles (tdpbf16ps), every row count";
  const std::string cut = std::to_string(SmallGemmMaxRows());
  std::string small = !bfloat16                          ? (path.avx512 ? "stamen AVX-512 tiles" : "stamen AVX2 tiles")
                      : path.avx512 && path.bfloat16_instructions ? "stamen AVX512-BF16 pair tiles"
                                                                  : "stamen tiles over bf16-rounded panels";
  // oneDNN's kernels as it names them, asked of primitives of MiniLM's shape.
  const auto implementation = [](const Key& key) -> std::string {
    try {
      const Matmul* matmul = MatmulCache::Get().Find(key);
      return matmul == nullptr ? "" : matmul->implementation;
    } catch (const dnnl::error&) {
      return "";
    }
  };
  const bool onednn_bfloat16 = bfloat16 && path.bfloat16_instructions;
  const std::string runtime = implementation(Key{384, 384, false, false, ops::Activation::kIdentity, onednn_bfloat16, 0});
  std::string description = small + " up to " + cut + " rows";
  if (!bfloat16 && path.avx512) {
    const std::string fixed = implementation(Key{384, 384, false, false, ops::Activation::kIdentity, false, kFixedRowsStep});
    if (!fixed.empty()) description += ", oneDNN " + fixed + " (fixed rows) to " + std::to_string(kFixedRowsLimit);
  }
  return description + ", oneDNN " + (runtime.empty() ? "matmul" : runtime) + (onednn_bfloat16 ? " bf16" : "") +
         (bfloat16 && !onednn_bfloat16 ? " fp32 over bf16-rounded weights" : "") + " above";
}

Status Gemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
            const ops::GemmOptions& options) {
  const int64_t m = input.dim(0);
  const int64_t n = weight.dim(0);
  if (m == 0 || n == 0) return Status();
  if (TakesAmxTiles() && AmxGemm(input, weight, bias, output, options)) return Status();
  if (SmallGemm(input, weight, bias, output, options)) return Status();  // short inputs: packed weights
  ParkWorkers();  // oneDNN's OpenMP threads get the cores
  const void* blocked = TakesFixedRows(m) ? FindPreparedWeight(weight, WeightForm::kBlockedFloat32) : nullptr;
  const int64_t whole = m / kFixedRowsStep * kFixedRowsStep;
  // Null where there is no blocked copy, or no brgemm kernel for this row count (never throws).
  const Matmul* fixed = blocked == nullptr ? nullptr
                                           : MatmulCache::Get().Find(Key{n, input.dim(1), !bias.empty(), options.accumulate,
                                                                         options.activation, false, whole});
  if (fixed == nullptr) return OneDnnGemm(input, PrepareOperands(input, weight), bias, output, options, n, nullptr);
  Tensor head = output.Rows(0, whole);
  STAMEN_RETURN_IF_ERROR(OneDnnGemm(input.Rows(0, whole), {input.raw_data(), blocked}, bias, head, options, n, fixed));
  if (whole == m) return Status();
  const Tensor rest_input = input.Rows(whole, m);
  Tensor rest = output.Rows(whole, m);
  if (SmallGemm(rest_input, weight, bias, rest, options)) return Status();
  return OneDnnGemm(rest_input, PrepareOperands(rest_input, weight), bias, rest, options, n, nullptr);
}

Status FeedForwardGemms(const Tensor& input, const Tensor& up_weight, const Tensor& up_bias,
                        ops::Activation activation, const Tensor& down_weight, const Tensor& down_bias,
                        Tensor& intermediate, Tensor& output, bool accumulate) {
  if (input.dim(0) > 0 && TakesAmxTiles() &&
      AmxFeedForward(input, up_weight, up_bias, activation, down_weight, down_bias, output, accumulate)) {
    return Status();
  }
  STAMEN_RETURN_IF_ERROR(Gemm(input, up_weight, up_bias, intermediate, {.activation = activation}));
  return Gemm(intermediate, down_weight, down_bias, output, {.accumulate = accumulate});
}

}  // namespace stamen::engine::cpu
