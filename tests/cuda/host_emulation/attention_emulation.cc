// attention.cu's RaggedAttentionKernel and tensor_core_attention.cu's TensorCoreAttentionKernel
// run on the host (cuda_shim.h) against a double-precision reference of ops::Attention's
// semantics: plain, causal and windowed attention, grouped heads, ALiBi, MPNet's relative
// position bias, DeBERTa's c2p / p2c (log buckets and raw, odd columns; scalar kernel only), over one
// ragged batch of 1..300 tokens. run.sh extracts the kernels into attention_kernel.inc and
// builds this; it prints one line per case and exits 1 on a failure. The reference adds what the
// op's comments define, so a wrong offset or row shows as a relative error near 1 (bf16
// rounding of the output alone gives about 2e-3; the tensor-core kernel also rounds the
// softmax weights to bf16, as FlashAttention does, about 3e-3).
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "attention_kernel.inc"

namespace stamen::engine {
namespace {

using cuda::bf16;
using cuda::emulated::PositionTerms;

struct Case {
  std::string name;
  bool tensor_cores;  // TensorCoreAttentionKernel (no position terms), else RaggedAttentionKernel
  int heads, kv_heads, head_dim;
  bool causal;
  int window;
  float scale;  // 0: 1/sqrt(head_dim)
  bool relative_bias;  // MPNet's, 32 buckets, max_distance 128
  int query_column, key_column;  // DeBERTa's p2c / c2p columns, -1: none
  int span, position_buckets, max_relative_positions;  // span 0: no disentangled terms
  bool alibi = false;  // JinaBERT's −slope_h · |i − j|
  float softcap = 0.0f;  // Gemma 2's: each scaled score → softcap · tanh(score / softcap); 0: none
};

// The ALiBi paper's slopes in closed form: 2^(−8k/p) for k = 1..p, p the power of two at or
// below `heads`, then 2^(−8(2k − 1)/(2p)) for the remaining heads (what ops::AlibiSlopes computes
// its own way).
std::vector<float> ClosedFormAlibiSlopes(int heads) {
  int power = 1;
  while (power * 2 <= heads) power *= 2;
  std::vector<float> slopes;
  for (int k = 1; k <= power; ++k) slopes.push_back(static_cast<float>(std::exp2(-8.0 * k / power)));
  for (int k = 1; k <= heads - power; ++k) slopes.push_back(static_cast<float>(std::exp2(-8.0 * (2 * k - 1) / (2 * power))));
  return slopes;
}

float RoundToBFloat16(float value) { return __bfloat162float(__float2bfloat16(value)); }

double RelativeError(const Case& test, const std::vector<int>& lengths, std::mt19937& rng) {
  std::vector<int> bounds = {0};
  for (int length : lengths) bounds.push_back(bounds.back() + length);
  const int tokens = bounds.back();
  const int sequences = static_cast<int>(lengths.size());
  const int d = test.head_dim;
  const int row_size = (test.heads + 2 * test.kv_heads) * d;
  const int width = test.heads * d;
  const int columns = 2 * width + 8;
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> qkv(static_cast<size_t>(tokens) * row_size);
  for (float& value : qkv) value = RoundToBFloat16(1.5f * normal(rng));
  std::vector<float> table(32 * test.heads);
  for (float& value : table) value = normal(rng);
  std::vector<float> projections(static_cast<size_t>(2 * test.span) * columns);
  for (float& value : projections) value = RoundToBFloat16(normal(rng));
  std::vector<bf16> qkv_bf16, projections_bf16;
  for (float value : qkv) qkv_bf16.push_back(__float2bfloat16(value));
  for (float value : projections) projections_bf16.push_back(__float2bfloat16(value));

  const std::vector<float> slopes = ClosedFormAlibiSlopes(test.heads);
  PositionTerms terms;
  if (test.alibi) terms.alibi_slopes = slopes.data();
  if (test.relative_bias) {
    terms.bias_table = table.data();
    terms.num_buckets = 32;
    terms.max_distance = 128;
  }
  if (test.span > 0) {
    terms.projections = projections_bf16.data();
    terms.projection_columns = columns;
    terms.query_column = test.query_column;
    terms.key_column = test.key_column;
    terms.span = test.span;
    terms.position_buckets = test.position_buckets;
    terms.max_relative_positions = test.max_relative_positions;
  }
  const float scale = test.scale > 0.0f ? test.scale : 1.0f / std::sqrt(static_cast<float>(d));
  // As cuda::Attention launches the chosen kernel: an upper bound of tiles by the number of heads.
  std::vector<bf16> output(static_cast<size_t>(tokens) * width, __float2bfloat16(1e4f));
  const int window = std::min(test.window, tokens + 1);
  const int block_rows = test.tensor_cores ? cuda::emulated_tensor_cores::kBlockM : 32;
  size_t shared_bytes = cuda::emulated::MakeLayout(d, terms).bytes;
  if (test.tensor_cores) {
    switch (d) {
      case 32: shared_bytes = cuda::emulated_tensor_cores::TileShape<32>::kSharedBytes; break;
      case 64: shared_bytes = cuda::emulated_tensor_cores::TileShape<64>::kSharedBytes; break;
      case 128: shared_bytes = cuda::emulated_tensor_cores::TileShape<128>::kSharedBytes; break;
      default: shared_bytes = cuda::emulated_tensor_cores::TileShape<256>::kSharedBytes; break;
    }
  }
  const float scale_log2 = scale * 1.4426950408889634f;
  // As LaunchTensorCoreAttention fills it.
  const cuda::emulated_tensor_cores::SoftCap cap =
      test.softcap > 0.0f ? cuda::emulated_tensor_cores::SoftCap{test.softcap * 1.4426950408889634f, scale / test.softcap}
                          : cuda::emulated_tensor_cores::SoftCap{};
  const auto run_thread = [&] {
    if (!test.tensor_cores) {
      cuda::emulated::RaggedAttentionKernel(qkv_bf16.data(), bounds.data(), sequences, test.heads, test.kv_heads, d,
                                            scale, test.causal, window, test.softcap, terms, output.data());
      return;
    }
    const auto kernel = [&](auto head_dim) {
      cuda::emulated_tensor_cores::TensorCoreAttentionKernel<decltype(head_dim)::value>(
          qkv_bf16.data(), bounds.data(), sequences, test.heads, test.kv_heads, scale_log2, test.causal, window, cap,
          test.alibi ? slopes.data() : nullptr, output.data());
    };
    switch (d) {
      case 32: kernel(std::integral_constant<int, 32>{}); break;
      case 64: kernel(std::integral_constant<int, 64>{}); break;
      case 128: kernel(std::integral_constant<int, 128>{}); break;
      default: kernel(std::integral_constant<int, 256>{}); break;
    }
  };
  const int tiles = (tokens + block_rows - 1) / block_rows + sequences;
  for (int tile = 0; tile < tiles; ++tile) {
    for (int head = 0; head < test.heads; ++head) {
      EmulatedBlock block;
      std::vector<unsigned char> shared(shared_bytes, 0xab);  // garbage, as on a GPU
      block.dynamic_shared = shared.data();
      std::vector<std::thread> threads;
      for (int thread = 0; thread < kEmulatedThreads; ++thread) {
        threads.emplace_back([&, thread] {
          threadIdx.x = thread;
          blockIdx.x = tile;
          blockIdx.y = head;
          emulated_block = &block;
          run_thread();
        });
      }
      for (std::thread& thread : threads) thread.join();
    }
  }

  double difference = 0.0, norm = 0.0;
  const int group = test.heads / test.kv_heads;
  for (int s = 0; s < sequences; ++s) {
    const int begin = bounds[s], length = lengths[s];
    for (int head = 0; head < test.heads; ++head) {
      const int kv_head = head / group;
      for (int i = 0; i < length; ++i) {
        std::vector<double> weights(length, 0.0);
        std::vector<bool> visible(length, false);
        double maximum = -INFINITY;
        const float* query = &qkv[static_cast<size_t>(begin + i) * row_size + head * d];
        for (int j = 0; j < length; ++j) {
          if ((test.causal && j > i) || (test.window > 0 && std::abs(i - j) >= test.window)) continue;
          const float* key = &qkv[static_cast<size_t>(begin + j) * row_size + (test.heads + kv_head) * d];
          double score = 0.0;
          for (int t = 0; t < d; ++t) score += double{query[t]} * key[t];
          score *= scale;
          if (test.softcap > 0.0f) score = test.softcap * std::tanh(score / test.softcap);
          if (test.alibi) score -= double{slopes[head]} * std::abs(i - j);
          if (test.relative_bias) score += table[ops::RelativePositionBucket(j - i, 32, 128) * test.heads + head];
          if (test.span > 0) {
            const int row = ops::DisentangledPositionRow(i - j, test.span, test.position_buckets,
                                                         test.max_relative_positions);
            const float* position = &projections[static_cast<size_t>(row) * columns];
            double term = 0.0;
            for (int t = 0; t < d; ++t) {
              if (test.key_column >= 0) term += double{query[t]} * position[test.key_column + head * d + t];
              if (test.query_column >= 0) term += double{key[t]} * position[test.query_column + head * d + t];
            }
            score += scale * term;
          }
          weights[j] = score;
          visible[j] = true;
          maximum = std::max(maximum, score);
        }
        double sum = 0.0;
        for (int j = 0; j < length; ++j) {
          weights[j] = visible[j] ? std::exp(weights[j] - maximum) : 0.0;
          sum += weights[j];
        }
        for (int t = 0; t < d; ++t) {
          double expected = 0.0;
          for (int j = 0; j < length; ++j) {
            expected += weights[j] * qkv[static_cast<size_t>(begin + j) * row_size + (test.heads + test.kv_heads + kv_head) * d + t];
          }
          expected /= sum;
          const double actual = __bfloat162float(output[static_cast<size_t>(begin + i) * width + head * d + t]);
          difference += (actual - expected) * (actual - expected);
          norm += expected * expected;
        }
      }
    }
  }
  return std::sqrt(difference / norm);
}

}  // namespace
}  // namespace stamen::engine

// Usage: attention_emulation [SUBSTRING]: only the cases whose name holds SUBSTRING.
int main(int argc, char** argv) {
  using stamen::engine::Case;
  const std::string only = argc > 1 ? argv[1] : "";
  std::mt19937 rng(5);
  const std::vector<int> lengths = {1, 7, 33, 64, 100, 129, 300};
  const int width64 = 4 * 64, width24 = 3 * 24;
  const float deberta_scale_64 = 1.0f / std::sqrt(64.0f * 3.0f);
  const float deberta_scale_24 = 1.0f / std::sqrt(24.0f * 3.0f);
  const std::vector<Case> cases = {
      {"plain, grouped heads", false, 4, 2, 64, false, 0, 0.0f, false, -1, -1, 0, 0, 0},
      {"causal, window 40", false, 4, 2, 64, true, 40, 0.0f, false, -1, -1, 0, 0, 0},
      {"mpnet bias", false, 4, 4, 64, false, 0, 0.0f, true, -1, -1, 0, 0, 0},
      {"mpnet bias, window 7, scale 0.2", false, 4, 4, 64, false, 7, 0.2f, true, -1, -1, 0, 0, 0},
      {"mpnet bias, causal, head_dim 32", false, 2, 2, 32, true, 0, 0.0f, true, -1, -1, 0, 0, 0},
      {"deberta c2p + p2c, buckets 256/512", false, 4, 4, 64, false, 0, deberta_scale_64, false, 0, width64 + 8, 256, 256, 512},
      {"deberta c2p, column 3, buckets 32/512", false, 4, 4, 64, false, 0, deberta_scale_64, false, -1, 3, 32, 32, 512},
      {"deberta p2c, column 5, raw span 48", false, 4, 4, 64, false, 0, deberta_scale_64, false, 5, -1, 48, 0, 48},
      {"deberta c2p + p2c, raw span 48, d 24", false, 3, 3, 24, false, 0, deberta_scale_24, false, 0, width24, 48, 0, 48},
      {"deberta c2p + p2c, causal window 20", false, 4, 4, 64, true, 20, deberta_scale_64, false, 0, width64 + 8, 32, 32, 512},
      {"alibi, 12 heads (jina-embeddings-v2-base)", false, 12, 12, 64, false, 0, 0.0f, false, -1, -1, 0, 0, 0, true},
      {"alibi, 6 heads, d 32, window 20", false, 6, 6, 32, false, 20, 0.0f, false, -1, -1, 0, 0, 0, true},
      // Gemma 2's soft-capping; a cap of 1.5 bends most scores of these inputs, 50 (Gemma 2's own) few.
      {"softcap 1.5, causal, grouped heads", false, 4, 2, 64, true, 0, 0.0f, false, -1, -1, 0, 0, 0, false, 1.5f},
      {"softcap 50, causal window 20, d 32", false, 2, 2, 32, true, 20, 0.0f, false, -1, -1, 0, 0, 0, false, 50.0f},
      // The tensor-core kernel: every head size it has, grouped heads, masks; 1..300 tokens
      // cover partial query tiles (64 rows), partial key tiles (64, or 32 at head_dim 256),
      // warps with no rows, and key tiles a mask hides whole.
      {"tensor cores, d 64, grouped heads", true, 4, 2, 64, false, 0, 0.0f, false, -1, -1, 0, 0, 0},
      {"tensor cores, d 32, scale 0.3", true, 2, 2, 32, false, 0, 0.3f, false, -1, -1, 0, 0, 0},
      {"tensor cores, d 128, causal, 4/2 heads", true, 4, 2, 128, true, 0, 0.0f, false, -1, -1, 0, 0, 0},
      {"tensor cores, d 256, causal, window 40", true, 2, 1, 256, true, 40, 0.0f, false, -1, -1, 0, 0, 0},
      {"tensor cores, d 64, window 7", true, 2, 2, 64, false, 7, 0.0f, false, -1, -1, 0, 0, 0},
      {"tensor cores, alibi, 6 heads (not a power of two)", true, 6, 6, 64, false, 0, 0.0f, false, -1, -1, 0, 0, 0, true},
      {"tensor cores, softcap 1.5, d 256, causal window 40", true, 4, 2, 256, true, 40, 0.0f, false, -1, -1, 0, 0, 0, false, 1.5f},
      {"tensor cores, softcap 2, d 64, scale 0.3", true, 2, 2, 64, false, 0, 0.3f, false, -1, -1, 0, 0, 0, false, 2.0f},
  };
  int failures = 0;
  for (const Case& test : cases) {
    if (test.name.find(only) == std::string::npos) continue;
    const double error = stamen::engine::RelativeError(test, lengths, rng);
    const bool ok = error <= 1e-2;
    failures += ok ? 0 : 1;
    std::printf("%-42s relative error %.3g %s\n", test.name.c_str(), error, ok ? "ok" : "FAILED");
  }
  // A CUDA graph's sequence bucket: the batch padded with empty sequences at the end (30 of
  // them here, so the tile scan's second 32-sequence chunk holds only empty ones); the kernel
  // must give them no tile and leave the real sequences' results as they are.
  std::vector<int> padded = {1, 7, 33, 64, 100, 129, 300};
  padded.resize(padded.size() + 30, 0);
  for (const Case& test : {cases[0], cases[1], cases[9], cases[12], cases[14]}) {
    const std::string name = test.name + ", 30 empty after";
    if (name.find(only) == std::string::npos) continue;
    const double error = stamen::engine::RelativeError(test, padded, rng);
    const bool ok = error <= 1e-2;
    failures += ok ? 0 : 1;
    std::printf("%-42s relative error %.3g %s\n", name.c_str(), error, ok ? "ok" : "FAILED");
  }
  return failures == 0 ? 0 : 1;
}
