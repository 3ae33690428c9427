// The kinds a model folder names, which the engine computes: poolings (1_Pooling/config.json,
// --pooling) and activations (config.json's hidden_act). Here, not in engine/ops, so that
// reading a folder needs no engine. Their namespace is the engine's ops, where they are used.
#pragma once

#include <array>
#include <cstddef>
#include <iterator>
#include <optional>
#include <string_view>

namespace stamen::engine::ops {

// kWeightedMean and kMeanSqrtLen are sentence-transformers' "weightedmean" (token i of a
// sequence of n weighs i, 1-based: Σ i·x_i / Σ i) and "mean_sqrt_len_tokens" (Σ x_i / √n).
// kSplade is SPLADE's max over tokens of log(1 + relu(x)) over masked-LM logits: Pool refuses
// it (the logits are [T, vocab], too wide to make at once), ops::SpladePool computes it.
enum class PoolingMode { kCls, kMean, kMax, kLastToken, kWeightedMean, kMeanSqrtLen, kSplade };

// What the model files, the command line and the wire call a pooling mode. Adding a mode is its
// enum value, its row here and its kernels (engine/cpu/pooling.cc, engine/cuda/kernels.cu).
struct PoolingModeNames {
  PoolingMode mode;
  // 1_Pooling/config.json's "pooling_mode" spelling; the command line's and the wire's with
  // '-' for '_' (model_options.h).
  std::string_view name;
  // Another spelling model files write for it; empty: none.
  std::string_view alias;
  // Its boolean key in 1_Pooling/config.json's older spelling; empty: a mode no Pooling module
  // selects (splade comes from a SpladePooling module), by key or by name.
  std::string_view sentence_transformers_flag;
};
// Every mode, in the order help texts and errors list them.
inline constexpr PoolingModeNames kPoolingModeNames[] = {
    {PoolingMode::kCls, "cls", "", "pooling_mode_cls_token"},
    {PoolingMode::kMean, "mean", "", "pooling_mode_mean_tokens"},
    {PoolingMode::kMax, "max", "", "pooling_mode_max_tokens"},
    {PoolingMode::kLastToken, "last_token", "lasttoken", "pooling_mode_lasttoken"},
    {PoolingMode::kWeightedMean, "weightedmean", "", "pooling_mode_weightedmean_tokens"},
    {PoolingMode::kMeanSqrtLen, "mean_sqrt_len_tokens", "", "pooling_mode_mean_sqrt_len_tokens"},
    {PoolingMode::kSplade, "splade", "", ""},
};
// The modes alone, in the table's order, for loops over every mode.
inline constexpr auto kPoolingModes = [] {
  std::array<PoolingMode, std::size(kPoolingModeNames)> modes{};
  for (std::size_t i = 0; i < modes.size(); ++i) modes[i] = kPoolingModeNames[i].mode;
  return modes;
}();

// A mode by its name or alias ("cls", …, "last_token" or sentence-transformers' "lasttoken");
// nullopt for any other text.
std::optional<PoolingMode> PoolingModeFromName(std::string_view name);
// Its name ("?" for a value with no row).
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
