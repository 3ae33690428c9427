// The kinds a model folder names, which the engine computes: poolings (1_Pooling/config.json,
// --pooling) and activations (config.json's hidden_act). Here, not in engine/ops, so that
// reading a folder needs no engine. Their namespace is the engine's ops, where they are used.
#pragma once

#include <optional>
#include <string_view>

namespace stamen::engine::ops {

// kWeightedMean and kMeanSqrtLen are sentence-transformers' "weightedmean" (token i of a
// sequence of n weighs i, 1-based: Σ i·x_i / Σ i) and "mean_sqrt_len_tokens" (Σ x_i / √n).
// kSplade is SPLADE's max over tokens of log(1 + relu(x)) over masked-LM logits: Pool refuses
// it (the logits are [T, vocab], too wide to make at once), ops::SpladePool computes it.
enum class PoolingMode { kCls, kMean, kMax, kLastToken, kWeightedMean, kMeanSqrtLen, kSplade };
// Every mode, in the order help texts and errors list them.
inline constexpr PoolingMode kPoolingModes[] = {PoolingMode::kCls,          PoolingMode::kMean,
                                                PoolingMode::kMax,          PoolingMode::kLastToken,
                                                PoolingMode::kWeightedMean, PoolingMode::kMeanSqrtLen,
                                                PoolingMode::kSplade};

// "cls", "mean", "max", "last_token" (also sentence-transformers' "lasttoken"), "weightedmean",
// "mean_sqrt_len_tokens", "splade".
std::optional<PoolingMode> PoolingModeFromName(std::string_view name);
std::string_view PoolingModeName(PoolingMode mode);

enum class Activation { kIdentity, kGeluErf, kGeluTanh, kRelu, kSilu, kTanh };

// The activation a config's `hidden_act` names ("gelu" is the exact erf form, as in
// transformers' ACT2FN); nullopt when unknown.
std::optional<Activation> ActivationFromName(std::string_view name);

// How RoPE frequencies are rescaled (ops/rope_frequency.h); factor 0: plain RoPE.
//   kLlama3: Llama 3's (rope_type "llama3": Llama 3.1/3.2 and the embedders built on them,
//     llama-nemotron-embed): frequencies whose wavelength exceeds
//     original_max_position_embeddings / low_freq_factor are divided by `factor`, those below
//     original / high_freq_factor kept, the ones between interpolated.
//   kNtk: GTE's fixed NTK scaling (the hub's rope_scaling {"type": "ntk"}, Alibaba-NLP/new-impl's
//     NTKScalingRotaryEmbedding): base · factor, every frequency then divided by factor^(2/d).
//   kDynamicNtk: dynamic NTK scaling (NomicBERT's rotary_scaling_factor, the remote code's
//     NomicBertDynamicNTKRotaryEmbedding; transformers' rope_type "dynamic"): a sequence of L
//     tokens longer than original_max_position_embeddings (the trained length) rotates with base
//     base · (factor · L / original − (factor − 1))^(d / (d − 2)); shorter ones with base. The
//     table then depends on each sequence's length, so ops::RopeTable needs its boundaries.
enum class RopeScalingType { kLlama3, kNtk, kDynamicNtk };

struct RopeScaling {
  float factor = 0.0f;
  float low_freq_factor = 1.0f;
  float high_freq_factor = 4.0f;
  float original_max_position_embeddings = 8192.0f;
  RopeScalingType type = RopeScalingType::kLlama3;
};

}  // namespace stamen::engine::ops
