// The CUDA backend's elementwise, normalisation, embedding, rotary and pooling kernels: bf16
// storage, fp32 arithmetic. One launch per op, on the current context's stream; grids depend
// only on tensor shapes, so every launch can be captured into a CUDA graph and replayed.
#include <atomic>
#include <cmath>

#include "engine/cuda/common.cuh"
#include "engine/cuda/kernels.h"
#include "engine/ops/rope_frequency.h"

namespace stamen::engine::cuda {
namespace {

constexpr int kThreads = 256;

// ---- convert ----

__global__ void ConvertKernel(const void* input, DataType input_type, void* output, DataType output_type,
                              int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    StoreFloat(output, i, output_type, LoadFloat(input, i, input_type));
  }
}

// ---- activations ----

__device__ __forceinline__ float Apply(ops::Activation activation, float x) {
  switch (activation) {
    case ops::Activation::kGeluErf: return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f));
    case ops::Activation::kGeluTanh:
      return 0.5f * x * (1.0f + tanhf(0.79788456080286536f * (x + 0.044715f * x * x * x)));
    case ops::Activation::kRelu: return fmaxf(x, 0.0f);
    case ops::Activation::kSilu: return x / (1.0f + expf(-x));
    case ops::Activation::kTanh: return tanhf(x);
    case ops::Activation::kIdentity: return x;
  }
  return x;
}

__global__ void ActivateKernel(ops::Activation activation, const bf16* input, bf16* output, int64_t count) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    output[i] = __float2bfloat16(Apply(activation, __bfloat162float(input[i])));
  }
}

__global__ void GatedActivationKernel(ops::Activation activation, const bf16* gate_up, bf16* output, int64_t rows,
                                      int64_t n) {
  const int64_t count = rows * n;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < count; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / n;
    const int64_t column = i - row * n;
    const float gate = __bfloat162float(gate_up[row * 2 * n + column]);
    const float up = __bfloat162float(gate_up[row * 2 * n + n + column]);
    output[i] = __float2bfloat16(Apply(activation, gate) * up);
  }
}

// ---- norms: one block per row, the row staged in shared memory as fp32 ----

// Rows `stride` elements apart (n for a [rows, n] tensor; a packed qkv row's size for
// LayerNormQueryKey, whose query or key block is the row). The row is staged before any store,
// so output may alias input.
__global__ void LayerNormKernel(const bf16* input, const bf16* residual, const bf16* gamma, const bf16* beta,
                                float eps, bf16* output, int n, int64_t stride) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const int64_t offset = blockIdx.x * stride;
  float sum = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    float x = __bfloat162float(input[offset + i]);
    if (residual != nullptr) x += __bfloat162float(residual[offset + i]);
    row[i] = x;
    sum += x;
  }
  const float mean = BlockSum(sum, scratch) / static_cast<float>(n);
  float squares = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float centred = row[i] - mean;
    squares += centred * centred;
  }
  const float variance = BlockSum(squares, scratch) / static_cast<float>(n);
  const float scale = rsqrtf(variance + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float normalised = (row[i] - mean) * scale;
    const float shift = beta != nullptr ? __bfloat162float(beta[i]) : 0.0f;  // no beta: norm_bias false
    output[offset + i] = __float2bfloat16(normalised * __bfloat162float(gamma[i]) + shift);
  }
}

__global__ void RmsNormKernel(const bf16* input, const bf16* weight, float eps, bf16* output, int n,
                              bool accumulate) {
  extern __shared__ float row[];
  __shared__ float scratch[32];
  const int64_t offset = blockIdx.x * int64_t{n};
  float squares = 0.0f;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float x = __bfloat162float(input[offset + i]);
    row[i] = x;
    squares += x * x;
  }
  const float scale = rsqrtf(BlockSum(squares, scratch) / static_cast<float>(n) + eps);
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    const float normalised = row[i] * scale * __bfloat162float(weight[i]);
    // The row is in shared memory, so output may alias input; the sum rounds to bf16 once.
    output[offset + i] = __float2bfloat16(accumulate ? __bfloat162float(output[offset + i]) + normalised : normalised);
  }
}

// One warp per (token, query-or-key head); blockIdx.y picks the head.
__global__ void RmsNormHeadsKernel(bf16* qkv, int64_t row_size, int num_heads, int head_dim,
                                   const bf16* query_weight, const bf16* key_weight, float eps) {
  const int head = blockIdx.y;
  bf16* x = qkv + blockIdx.x * row_size + int64_t{head} * head_dim;
  const bf16* weight = head < num_heads ? query_weight : key_weight;
  float squares = 0.0f;
  for (int i = threadIdx.x; i < head_dim; i += 32) {
    const float value = __bfloat162float(x[i]);
    squares += value * value;
  }
  const float scale = rsqrtf(WarpSum(squares) / static_cast<float>(head_dim) + eps);
  for (int i = threadIdx.x; i < head_dim; i += 32) {
    x[i] = __float2bfloat16(__bfloat162float(x[i]) * scale * __bfloat162float(weight[i]));
  }
}

// ---- rotary embedding ----

// The sequence token `t` belongs to: the last s of [0, sequences) with cu_seqlens[s] <= t, by
// binary search (read from device memory, so a replayed graph finds it for the batch it runs).
__device__ inline int SequenceOfToken(const int32_t* cu_seqlens, int sequences, int64_t t) {
  int low = 0;
  int high = sequences - 1;
  while (low < high) {
    const int middle = (low + high + 1) / 2;
    if (cu_seqlens[middle] <= t) {
      low = middle;
    } else {
      high = middle - 1;
    }
  }
  return low;
}

// Same fp32 arithmetic as the CPU table (and transformers): inverse frequency and angle in
// fp32, cos/sin of the fp32 angle in double.
// With boundaries (dynamic NTK), each token finds its sequence by binary search, so the length
// comes from device memory and a replayed graph recomputes it.
__global__ void RopeTableKernel(const int32_t* positions, float base, ops::RopeScaling scaling, float* table,
                                int64_t tokens, int d, const int32_t* cu_seqlens, int sequences) {
  const int half = d / 2;
  const int64_t count = tokens * half;
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < count; k += int64_t{gridDim.x} * blockDim.x) {
    const int64_t t = k / half;
    const int i = static_cast<int>(k - t * half);
    int64_t length = 0;
    if (cu_seqlens != nullptr) {
      const int sequence = SequenceOfToken(cu_seqlens, sequences, t);
      length = cu_seqlens[sequence + 1] - cu_seqlens[sequence];
    }
    const float inverse_frequency = ops::RopeInverseFrequency(i, d, base, scaling, length);
    const float angle = static_cast<float>(positions[t]) * inverse_frequency;
    table[t * d + i] = static_cast<float>(cos(static_cast<double>(angle)));
    table[t * d + half + i] = static_cast<float>(sin(static_cast<double>(angle)));
  }
}

// One block per token; threads over (query and key head, frequency) pairs. The table covers the
// first `rotated` of each head's d dimensions (fewer for partial rotary); the rest stay.
__global__ void ApplyRopeKernel(bf16* qkv, int64_t row_size, int rotated_heads, int d, int rotated, const float* table) {
  const int half = rotated / 2;
  const float* cos_row = table + blockIdx.x * int64_t{rotated};
  const float* sin_row = cos_row + half;
  bf16* row = qkv + blockIdx.x * row_size;
  for (int k = threadIdx.x; k < rotated_heads * half; k += blockDim.x) {
    const int head = k / half;
    const int i = k - head * half;
    bf16* x = row + head * d;
    const float first = __bfloat162float(x[i]);
    const float second = __bfloat162float(x[half + i]);
    x[i] = __float2bfloat16(first * cos_row[i] - second * sin_row[i]);
    x[half + i] = __float2bfloat16(second * cos_row[i] + first * sin_row[i]);
  }
}

// ---- embeddings ----

__global__ void GatherKernel(const bf16* table, int64_t rows, const int32_t* ids, bf16* output, int64_t n,
                             bool accumulate, float scale) {
  int64_t id = ids[blockIdx.x];
  id = id < 0 ? 0 : (id >= rows ? rows - 1 : id);  // checked on the host; never read out of bounds
  const bf16* source = table + id * n;
  bf16* target = output + blockIdx.x * n;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float value = __bfloat162float(source[i]) * scale;
    target[i] = __float2bfloat16(accumulate ? __bfloat162float(target[i]) + value : value);
  }
}

__global__ void SequencePositionsKernel(const int32_t* cu_seqlens, int sequences, int32_t offset, int32_t* positions,
                                        int64_t tokens) {
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < tokens; t += int64_t{gridDim.x} * blockDim.x) {
    if (t >= cu_seqlens[sequences]) {
      positions[t] = offset;
      continue;
    }
    positions[t] = offset + static_cast<int32_t>(t - cu_seqlens[SequenceOfToken(cu_seqlens, sequences, t)]);
  }
}

// ---- pooling: one block per sequence, threads over columns ----

__global__ void PoolKernel(const void* hidden, DataType type, int64_t n, const int32_t* cu_seqlens,
                           ops::PoolingMode mode, float* output, int64_t width) {
  const int64_t begin = cu_seqlens[blockIdx.x];
  const int64_t end = cu_seqlens[blockIdx.x + 1];
  for (int64_t column = threadIdx.x; column < width; column += blockDim.x) {
    float value = 0.0f;
    switch (mode) {
      case ops::PoolingMode::kCls: value = LoadFloat(hidden, begin * n + column, type); break;
      case ops::PoolingMode::kLastToken: value = LoadFloat(hidden, (end - 1) * n + column, type); break;
      case ops::PoolingMode::kMean:
      case ops::PoolingMode::kMeanSqrtLen: {
        for (int64_t t = begin; t < end; ++t) value += LoadFloat(hidden, t * n + column, type);
        const float count = static_cast<float>(end > begin ? end - begin : 1);
        value /= mode == ops::PoolingMode::kMean ? count : sqrtf(count);
        break;
      }
      case ops::PoolingMode::kWeightedMean: {
        // Token t - begin + 1 of the sequence weighs that much; the weights sum to n(n + 1)/2.
        for (int64_t t = begin; t < end; ++t) {
          value += static_cast<float>(t - begin + 1) * LoadFloat(hidden, t * n + column, type);
        }
        const int64_t count = end - begin;
        value /= fmaxf(static_cast<float>(count * (count + 1) / 2), 1.0f);
        break;
      }
      case ops::PoolingMode::kSplade: break;  // refused by ops::Pool: SpladePoolKernel computes it
      case ops::PoolingMode::kMax: {
        value = -INFINITY;
        for (int64_t t = begin; t < end; ++t) value = fmaxf(value, LoadFloat(hidden, t * n + column, type));
        break;
      }
    }
    output[blockIdx.x * width + column] = value;
  }
}

// SPLADE over a slice of tokens [first, first + count): block (s, column tile), threads over
// columns, each folding max(out, log1p(relu(logit))) over sequence s's tokens in the slice.
__global__ void SpladePoolKernel(const void* logits, DataType type, int64_t vocabulary, const int32_t* cu_seqlens,
                                 int64_t first, int64_t count, float* output) {
  const int64_t column = static_cast<int64_t>(blockIdx.y) * blockDim.x + threadIdx.x;
  if (column >= vocabulary) return;
  const int64_t start = cu_seqlens[blockIdx.x], stop = cu_seqlens[blockIdx.x + 1];
  const int64_t begin = start > first ? start : first;
  const int64_t end = stop < first + count ? stop : first + count;
  if (begin >= end) return;
  float* out = output + blockIdx.x * vocabulary + column;
  float best = *out;
  for (int64_t t = begin; t < end; ++t) {
    const float logit = LoadFloat(logits, (t - first) * vocabulary + column, type);
    if (logit > 0.0f) best = fmaxf(best, log1pf(logit));
  }
  *out = best;
}

__global__ void L2NormalizeKernel(const float* input, float* output, int64_t n) {
  __shared__ float scratch[32];
  const float* row = input + blockIdx.x * n;
  float squares = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) squares += row[i] * row[i];
  const float norm = sqrtf(BlockSum(squares, scratch));
  const float scale = 1.0f / fmaxf(norm, 1e-12f);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) output[blockIdx.x * n + i] = row[i] * scale;
}

__global__ void ScaledTanhRoundKernel(float* values, int64_t count, float scale) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < count; k += int64_t{gridDim.x} * blockDim.x) {
    values[k] = rintf(scale * tanhf(values[k]));  // rintf: half to even, as torch.round
  }
}

// One block per token: expert e's logit is a block sum over the hidden width, in fp32 against
// the router's fp32 weights (ops::ExpertLogits).
__global__ void ExpertLogitsKernel(const bf16* input, const float* router, float* logits, int64_t hidden,
                                   int64_t experts) {
  __shared__ float scratch[32];
  const bf16* row = input + blockIdx.x * hidden;
  for (int64_t e = 0; e < experts; ++e) {
    const float* weights = router + e * hidden;
    float partial = 0.0f;
    for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) partial = fmaf(__bfloat162float(row[i]), weights[i], partial);
    const float total = BlockSum(partial, scratch);
    if (threadIdx.x == 0) logits[blockIdx.x * experts + e] = total;
  }
}

// One block per token: bias + Σ_k weight · its k-th expert's row, in fp32, rounded once
// (ops::CombineExperts).
__global__ void CombineExpertsKernel(const bf16* expert_rows, const int32_t* positions, const float* weights,
                                     const bf16* bias, bf16* output, int64_t width, int64_t chosen) {
  const int64_t token = blockIdx.x;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    float sum = __bfloat162float(bias[j]);
    for (int64_t k = 0; k < chosen; ++k) {
      const int64_t row = positions[token * chosen + k];
      sum = fmaf(weights[token * chosen + k], __bfloat162float(expert_rows[row * width + j]), sum);
    }
    output[token * width + j] = __float2bfloat16(sum);
  }
}

// ---- reference gemm: 16×16 output tiles, fp32 accumulation ----

constexpr int kTile = 16;

__global__ void ReferenceGemmKernel(const bf16* input, const bf16* weight, const bf16* bias, bf16* output, int64_t m,
                                    int64_t n, int64_t k, bool accumulate, ops::Activation activation) {
  __shared__ float a_tile[kTile][kTile + 1];
  __shared__ float b_tile[kTile][kTile + 1];
  const int64_t row = blockIdx.y * int64_t{kTile} + threadIdx.y;     // of input / output
  const int64_t column = blockIdx.x * int64_t{kTile} + threadIdx.x;  // of output = row of weight
  const int64_t weight_row = blockIdx.x * int64_t{kTile} + threadIdx.y;
  float sum = 0.0f;
  for (int64_t k0 = 0; k0 < k; k0 += kTile) {
    const int64_t kk = k0 + threadIdx.x;
    a_tile[threadIdx.y][threadIdx.x] = row < m && kk < k ? __bfloat162float(input[row * k + kk]) : 0.0f;
    b_tile[threadIdx.y][threadIdx.x] = weight_row < n && kk < k ? __bfloat162float(weight[weight_row * k + kk]) : 0.0f;
    __syncthreads();
#pragma unroll
    for (int i = 0; i < kTile; ++i) sum = fmaf(a_tile[threadIdx.y][i], b_tile[threadIdx.x][i], sum);
    __syncthreads();
  }
  if (row < m && column < n) {
    if (bias != nullptr) sum += __bfloat162float(bias[column]);
    if (accumulate) sum += __bfloat162float(output[row * n + column]);
    output[row * n + column] = __float2bfloat16(Apply(activation, sum));
  }
}

// Threads for a row of `n`: a multiple of 32, at most kThreads.
int RowThreads(int64_t n) {
  const int64_t warps = (n + 31) / 32;
  return static_cast<int>(warps >= kThreads / 32 ? kThreads : (warps < 1 ? 32 : warps * 32));
}

// Shared memory above the default 48 KiB needs an opt-in per kernel. Raised only when a larger
// size is first needed (an eager step always precedes a capture of the same shapes, so no
// attribute call happens while a graph is being captured).
template <typename Kernel>
Status AllowSharedMemory(Kernel kernel, size_t bytes, std::atomic<size_t>& allowed, const char* name) {
  if (bytes <= 48 * 1024 || bytes <= allowed.load()) return Status();
  STAMEN_RETURN_IF_ERROR(CheckCuda(
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)), name));
  allowed.store(bytes);
  return Status();
}

std::atomic<size_t> layer_norm_shared{0};
std::atomic<size_t> rms_norm_shared{0};

}  // namespace

Status Convert(const Tensor& input, Tensor& output) {
  auto context = RequireContext("convert");
  if (!context.ok()) return context.status();
  if (input.dtype() == output.dtype()) {
    return CheckCuda(cudaMemcpyAsync(output.raw_data(), input.raw_data(), input.NumBytes(), cudaMemcpyDeviceToDevice,
                                     (*context)->stream()),
                     "convert (copy)");
  }
  const int64_t count = input.NumElements();
  ConvertKernel<<<BlocksFor(count, kThreads), kThreads, 0, (*context)->stream()>>>(
      input.raw_data(), input.dtype(), output.raw_data(), output.dtype(), count);
  return CheckLaunch("convert");
}

Status Zero(Tensor& tensor) {
  auto context = RequireContext("zero");
  if (!context.ok()) return context.status();
  return CheckCuda(cudaMemsetAsync(tensor.raw_data(), 0, tensor.NumBytes(), (*context)->stream()), "zero");
}

Status Activate(ops::Activation activation, const Tensor& input, Tensor& output) {
  auto context = RequireContext("activate");
  if (!context.ok()) return context.status();
  const int64_t count = input.NumElements();
  ActivateKernel<<<BlocksFor(count, kThreads), kThreads, 0, (*context)->stream()>>>(
      activation, input.data<bf16>(), output.data<bf16>(), count);
  return CheckLaunch("activate");
}

Status GatedActivation(ops::Activation activation, const Tensor& gate_up, Tensor& output) {
  auto context = RequireContext("gated_activation");
  if (!context.ok()) return context.status();
  const int64_t count = output.NumElements();
  GatedActivationKernel<<<BlocksFor(count, kThreads), kThreads, 0, (*context)->stream()>>>(
      activation, gate_up.data<bf16>(), output.data<bf16>(), output.dim(0), output.dim(1));
  return CheckLaunch("gated_activation");
}

Status LayerNorm(const Tensor& input, const Tensor& residual, const Tensor& gamma, const Tensor& beta, float eps,
                 Tensor& output) {
  auto context = RequireContext("layer_norm");
  if (!context.ok()) return context.status();
  const int64_t rows = input.dim(0);
  const int64_t n = input.dim(1);
  if (rows == 0) return Status();
  const size_t shared = static_cast<size_t>(n) * sizeof(float);
  STAMEN_RETURN_IF_ERROR(AllowSharedMemory(LayerNormKernel, shared, layer_norm_shared, "layer_norm (shared memory)"));
  LayerNormKernel<<<static_cast<unsigned int>(rows), RowThreads(n), shared, (*context)->stream()>>>(
      input.data<bf16>(), residual.empty() ? nullptr : residual.data<bf16>(), gamma.data<bf16>(),
      beta.empty() ? nullptr : beta.data<bf16>(), eps, output.data<bf16>(), static_cast<int>(n), n);
  return CheckLaunch("layer_norm");
}

Status LayerNormQueryKey(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& query_gamma, const Tensor& query_beta,
                         const Tensor& key_gamma, const Tensor& key_beta, float eps) {
  auto context = RequireContext("layer_norm_query_key");
  if (!context.ok()) return context.status();
  const int64_t tokens = qkv.dim(0);
  if (tokens == 0) return Status();
  const int64_t query_size = layout.num_heads * layout.head_dim;
  const int64_t key_size = layout.num_kv_heads * layout.head_dim;
  const struct {
    int64_t column, size;
    const Tensor& gamma;
    const Tensor& beta;
  } blocks[] = {{0, query_size, query_gamma, query_beta}, {query_size, key_size, key_gamma, key_beta}};
  for (const auto& block : blocks) {
    const size_t shared = static_cast<size_t>(block.size) * sizeof(float);
    STAMEN_RETURN_IF_ERROR(
        AllowSharedMemory(LayerNormKernel, shared, layer_norm_shared, "layer_norm_query_key (shared memory)"));
    bf16* rows = qkv.data<bf16>() + block.column;
    LayerNormKernel<<<static_cast<unsigned int>(tokens), RowThreads(block.size), shared, (*context)->stream()>>>(
        rows, nullptr, block.gamma.data<bf16>(), block.beta.data<bf16>(), eps, rows, static_cast<int>(block.size),
        layout.row_size());
  }
  return CheckLaunch("layer_norm_query_key");
}

Status RmsNorm(const Tensor& input, const Tensor& weight, float eps, Tensor& output, bool accumulate) {
  auto context = RequireContext("rms_norm");
  if (!context.ok()) return context.status();
  const int64_t rows = input.dim(0);
  const int64_t n = input.dim(1);
  if (rows == 0) return Status();
  const size_t shared = static_cast<size_t>(n) * sizeof(float);
  STAMEN_RETURN_IF_ERROR(AllowSharedMemory(RmsNormKernel, shared, rms_norm_shared, "rms_norm (shared memory)"));
  RmsNormKernel<<<static_cast<unsigned int>(rows), RowThreads(n), shared, (*context)->stream()>>>(
      input.data<bf16>(), weight.data<bf16>(), eps, output.data<bf16>(), static_cast<int>(n), accumulate);
  return CheckLaunch("rms_norm");
}

Status RmsNormHeads(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& query_weight, const Tensor& key_weight,
                    float eps) {
  auto context = RequireContext("rms_norm_heads");
  if (!context.ok()) return context.status();
  if (qkv.dim(0) == 0) return Status();
  const dim3 grid(static_cast<unsigned int>(qkv.dim(0)),
                  static_cast<unsigned int>(layout.num_heads + layout.num_kv_heads));
  RmsNormHeadsKernel<<<grid, 32, 0, (*context)->stream()>>>(qkv.data<bf16>(), layout.row_size(),
                                                            static_cast<int>(layout.num_heads),
                                                            static_cast<int>(layout.head_dim),
                                                            query_weight.data<bf16>(), key_weight.data<bf16>(), eps);
  return CheckLaunch("rms_norm_heads");
}

Status RopeTable(const Tensor& positions, double base, Tensor& table, const ops::RopeScaling& scaling,
                 const Tensor& cu_seqlens) {
  auto context = RequireContext("rope_table");
  if (!context.ok()) return context.status();
  const int64_t count = table.dim(0) * (table.dim(1) / 2);
  if (count == 0) return Status();
  const bool bounded = !cu_seqlens.empty() && cu_seqlens.dim(0) > 1;
  RopeTableKernel<<<BlocksFor(count, kThreads), kThreads, 0, (*context)->stream()>>>(
      positions.data<int32_t>(), static_cast<float>(base), scaling, table.data<float>(), table.dim(0),
      static_cast<int>(table.dim(1)), bounded ? cu_seqlens.data<int32_t>() : nullptr,
      bounded ? static_cast<int>(cu_seqlens.dim(0) - 1) : 0);
  return CheckLaunch("rope_table");
}

Status ApplyRope(Tensor& qkv, const ops::QkvLayout& layout, const Tensor& table) {
  auto context = RequireContext("apply_rope");
  if (!context.ok()) return context.status();
  if (qkv.dim(0) == 0) return Status();
  const int rotated = static_cast<int>(layout.num_heads + layout.num_kv_heads);
  const int pairs = rotated * static_cast<int>(table.dim(1) / 2);
  ApplyRopeKernel<<<static_cast<unsigned int>(qkv.dim(0)), RowThreads(pairs), 0, (*context)->stream()>>>(
      qkv.data<bf16>(), layout.row_size(), rotated, static_cast<int>(layout.head_dim), static_cast<int>(table.dim(1)),
      table.data<float>());
  return CheckLaunch("apply_rope");
}

Status Gather(const Tensor& table, const Tensor& ids, Tensor& output, bool accumulate, float scale) {
  auto context = RequireContext("gather");
  if (!context.ok()) return context.status();
  if (ids.dim(0) == 0) return Status();
  GatherKernel<<<static_cast<unsigned int>(ids.dim(0)), RowThreads(table.dim(1)), 0, (*context)->stream()>>>(
      table.data<bf16>(), table.dim(0), ids.data<int32_t>(), output.data<bf16>(), table.dim(1), accumulate, scale);
  return CheckLaunch("gather");
}

Status SequencePositions(const Tensor& cu_seqlens, int32_t offset, Tensor& positions) {
  auto context = RequireContext("sequence_positions");
  if (!context.ok()) return context.status();
  const int64_t tokens = positions.dim(0);
  if (tokens == 0) return Status();
  SequencePositionsKernel<<<BlocksFor(tokens, kThreads), kThreads, 0, (*context)->stream()>>>(
      cu_seqlens.data<int32_t>(), static_cast<int>(cu_seqlens.dim(0) - 1), offset, positions.data<int32_t>(), tokens);
  return CheckLaunch("sequence_positions");
}

Status Pool(const Tensor& hidden, const Tensor& cu_seqlens, ops::PoolingMode mode, Tensor& output) {
  auto context = RequireContext("pool");
  if (!context.ok()) return context.status();
  if (output.dim(0) == 0) return Status();
  PoolKernel<<<static_cast<unsigned int>(output.dim(0)), RowThreads(output.dim(1)), 0, (*context)->stream()>>>(
      hidden.raw_data(), hidden.dtype(), hidden.dim(1), cu_seqlens.data<int32_t>(), mode, output.data<float>(),
      output.dim(1));
  return CheckLaunch("pool");
}

Status SpladePool(const Tensor& logits, const Tensor& cu_seqlens, int64_t first_token, Tensor& output) {
  auto context = RequireContext("splade_pool");
  if (!context.ok()) return context.status();
  if (output.dim(0) == 0 || logits.dim(0) == 0) return Status();
  const int64_t vocabulary = logits.dim(1);
  const dim3 grid(static_cast<unsigned int>(output.dim(0)), BlocksFor(vocabulary, kThreads));
  SpladePoolKernel<<<grid, kThreads, 0, (*context)->stream()>>>(logits.raw_data(), logits.dtype(), vocabulary,
                                                                 cu_seqlens.data<int32_t>(), first_token,
                                                                 logits.dim(0), output.data<float>());
  return CheckLaunch("splade_pool");
}

Status L2Normalize(const Tensor& input, Tensor& output) {
  auto context = RequireContext("l2_normalize");
  if (!context.ok()) return context.status();
  if (input.dim(0) == 0) return Status();
  L2NormalizeKernel<<<static_cast<unsigned int>(input.dim(0)), RowThreads(input.dim(1)), 0, (*context)->stream()>>>(
      input.data<float>(), output.data<float>(), input.dim(1));
  return CheckLaunch("l2_normalize");
}

Status ScaledTanhRound(Tensor& values, float scale) {
  auto context = RequireContext("scaled_tanh_round");
  if (!context.ok()) return context.status();
  const int64_t count = values.NumElements();
  if (count == 0) return Status();
  ScaledTanhRoundKernel<<<BlocksFor(count, kThreads), kThreads, 0, (*context)->stream()>>>(values.data<float>(), count,
                                                                                           scale);
  return CheckLaunch("scaled_tanh_round");
}

Status ExpertLogits(const Tensor& input, const Tensor& router, Tensor& logits) {
  auto context = RequireContext("expert_logits");
  if (!context.ok()) return context.status();
  if (input.dim(0) == 0) return Status();
  ExpertLogitsKernel<<<static_cast<unsigned int>(input.dim(0)), RowThreads(input.dim(1)), 0, (*context)->stream()>>>(
      input.data<bf16>(), router.data<float>(), logits.data<float>(), input.dim(1), router.dim(0));
  return CheckLaunch("expert_logits");
}

Status CombineExperts(const Tensor& expert_rows, const Tensor& positions, const Tensor& weights, const Tensor& bias,
                      Tensor& output) {
  auto context = RequireContext("combine_experts");
  if (!context.ok()) return context.status();
  if (output.dim(0) == 0) return Status();
  CombineExpertsKernel<<<static_cast<unsigned int>(output.dim(0)), RowThreads(output.dim(1)), 0,
                         (*context)->stream()>>>(expert_rows.data<bf16>(), positions.data<int32_t>(),
                                                 weights.data<float>(), bias.data<bf16>(), output.data<bf16>(),
                                                 output.dim(1), positions.dim(1));
  return CheckLaunch("combine_experts");
}

Status ReferenceGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
                     const ops::GemmOptions& options) {
  auto context = RequireContext("gemm");
  if (!context.ok()) return context.status();
  const int64_t m = input.dim(0);
  const int64_t n = weight.dim(0);
  if (m == 0 || n == 0) return Status();
  const dim3 grid(static_cast<unsigned int>((n + kTile - 1) / kTile), static_cast<unsigned int>((m + kTile - 1) / kTile));
  ReferenceGemmKernel<<<grid, dim3(kTile, kTile), 0, (*context)->stream()>>>(
      input.data<bf16>(), weight.data<bf16>(), bias.empty() ? nullptr : bias.data<bf16>(), output.data<bf16>(), m, n,
      input.dim(1), options.accumulate, options.activation);
  return CheckLaunch("gemm (reference)");
}

}  // namespace stamen::engine::cuda
