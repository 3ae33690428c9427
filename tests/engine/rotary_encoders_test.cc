// Issue 48's rotary post-norm encoders (NomicBERT, Alibaba's GTE) beyond the shared golden checks
// (golden_test.cc, ≤ 1e-4 absolute): cosine ≥ 0.9999 to transformers on every golden, what the
// hub's configs and transformers' own read as, GTE's NTK frequencies against the ones the golden
// run used, the refusal of what transformers' NomicBertModel / GteModel do not compute, and of
// each family's folder handed to another reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/models/family.h"
#include "engine/ops/rope.h"
#include "engine/weight_store.h"
#include "model_folder/json_document.h"
#include "model_folder/model_config.h"
#include "golden_targets.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

using testing::Cosine;
using testing::ReadText;
using testing::TempDir;
using testing::WriteFile;

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

// `folder`'s config.json with the first `from` replaced by `to`, written into `dir`.
void WriteEditedConfig(const std::string& folder, const std::string& from, const std::string& to, TempDir& dir) {
  std::string json = ReadText(kData + folder + "/config.json");
  const size_t at = json.find(from);
  ASSERT_NE(at, std::string::npos) << folder << " has no " << from;
  json.replace(at, from.size(), to);
  WriteFile(dir.File("config.json"), json);
}

// The error of reading `folder`'s config.json edited so; "" when it reads.
std::string EditedConfigError(const std::string& folder, const std::string& from, const std::string& to) {
  TempDir dir;
  WriteEditedConfig(folder, from, to, dir);
  auto config = ReadModelConfig(dir.File("config.json"));
  return config.ok() ? "" : config.status().message();
}

StatusOr<ModelConfig> Read(const std::string& folder) { return ReadModelConfig(kData + folder + "/config.json"); }

TEST(RotaryEncodersTest, NomicConfigsRead) {
  auto native = Read("tiny-nomic-bert");
  ASSERT_TRUE(native.ok()) << native.status().message();
  EXPECT_EQ(native->family, ModelFamily::kNomicBert);
  EXPECT_EQ(native->hidden_act, ops::Activation::kSilu);
  EXPECT_TRUE(native->gated_feed_forward);
  EXPECT_DOUBLE_EQ(native->rope_theta, 1000.0);
  EXPECT_EQ(native->type_vocab_size, 2);

  // The hub's keys alone (n_embd, …), rotary_emb_base 10000 where transformers' default is 1000.
  auto hub = Read("tiny-nomic-bert-hub-bf16");
  ASSERT_TRUE(hub.ok()) << hub.status().message();
  EXPECT_EQ(hub->family, ModelFamily::kNomicBert);
  EXPECT_EQ(hub->hidden_size, 64);
  EXPECT_EQ(hub->num_hidden_layers, 2);
  EXPECT_EQ(hub->num_attention_heads, 4);
  EXPECT_EQ(hub->intermediate_size, 128);
  EXPECT_EQ(hub->max_position_embeddings, 512);  // n_positions
  EXPECT_DOUBLE_EQ(hub->rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(hub->norm_eps, 1e-12);
  EXPECT_EQ(hub->hidden_act, ops::Activation::kSilu);

  EXPECT_EQ(hub->rotary_dim, 16);
  EXPECT_EQ(hub->rope_scaling.factor, 0.0f);  // rotary_scaling_factor null

  // rotary_emb_fraction 0.5 of 16 dimensions: the first 8 of each head turn.
  auto partial = Read("tiny-nomic-bert-partial-rotary-hub");
  ASSERT_TRUE(partial.ok()) << partial.status().message();
  EXPECT_EQ(partial->rotary_dim, 8);
  EXPECT_EQ(partial->head_dim, 16);

  // rotary_scaling_factor: dynamic NTK beyond max_trained_positions; sequences run to n_positions.
  auto scaled = Read("tiny-nomic-bert-dynamic-ntk-hub-bf16");
  ASSERT_TRUE(scaled.ok()) << scaled.status().message();
  EXPECT_EQ(scaled->rope_scaling.type, ops::RopeScalingType::kDynamicNtk);
  EXPECT_FLOAT_EQ(scaled->rope_scaling.factor, 2.0f);
  EXPECT_FLOAT_EQ(scaled->rope_scaling.original_max_position_embeddings, 16.0f);
  EXPECT_EQ(scaled->max_position_embeddings, 512);

  // transformers' rope_type "dynamic": max_position_embeddings (32) is the trained length; stamen
  // serves factor (5) times it.
  auto native_scaled = Read("tiny-nomic-bert-dynamic-ntk");
  ASSERT_TRUE(native_scaled.ok()) << native_scaled.status().message();
  EXPECT_EQ(native_scaled->rope_scaling.type, ops::RopeScalingType::kDynamicNtk);
  EXPECT_FLOAT_EQ(native_scaled->rope_scaling.factor, 5.0f);
  EXPECT_FLOAT_EQ(native_scaled->rope_scaling.original_max_position_embeddings, 32.0f);
  EXPECT_EQ(native_scaled->max_position_embeddings, 160);

  // Without the key the remote config class's default decides, which was 1.0 and is now None: the
  // two agree up to max_trained_positions, where sequences then stop.
  TempDir dir;
  WriteEditedConfig("tiny-nomic-bert-dynamic-ntk-hub-bf16", R"("rotary_scaling_factor": 2.0,)", "", dir);
  auto absent = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(absent.ok()) << absent.status().message();
  EXPECT_EQ(absent->max_position_embeddings, 16);
  EXPECT_EQ(absent->rope_scaling.factor, 0.0f);

  // nomic-embed-text-v2-moe's keys: biases, a plain gelu MLP, 8 experts in layers 1 and 3, top 2.
  auto moe = Read("tiny-nomic-bert-moe-hub");
  ASSERT_TRUE(moe.ok()) << moe.status().message();
  EXPECT_EQ(moe->hidden_act, ops::Activation::kGeluErf);
  EXPECT_FALSE(moe->gated_feed_forward);
  EXPECT_TRUE(moe->attention_bias);
  EXPECT_TRUE(moe->feed_forward_bias);
  EXPECT_DOUBLE_EQ(moe->norm_eps, 1e-5);
  EXPECT_DOUBLE_EQ(moe->rope_theta, 10000.0);
  EXPECT_EQ(moe->type_vocab_size, 1);
  EXPECT_EQ(moe->num_experts, 8);
  EXPECT_EQ(moe->moe_top_k, 2);
  EXPECT_EQ(moe->moe_every_n_layers, 2);
  for (int64_t layer = 0; layer < moe->num_hidden_layers; ++layer) {
    EXPECT_EQ(moe->IsMixtureOfExpertsLayer(layer), layer % 2 == 1) << layer;
  }
}

TEST(RotaryEncodersTest, GteConfigsRead) {
  auto native = Read("tiny-gte");
  ASSERT_TRUE(native.ok()) << native.status().message();
  EXPECT_EQ(native->family, ModelFamily::kGte);
  EXPECT_EQ(native->hidden_act, ops::Activation::kGeluErf);
  EXPECT_DOUBLE_EQ(native->rope_theta, 160000.0);
  EXPECT_EQ(native->rope_scaling.factor, 0.0f);
  EXPECT_EQ(native->type_vocab_size, 1);

  auto hub = Read("tiny-gte-hub-ntk-f16");
  ASSERT_TRUE(hub.ok()) << hub.status().message();
  EXPECT_EQ(hub->architecture, "NewModel");
  EXPECT_EQ(hub->type_vocab_size, 0);  // gte-base-en-v1.5's: no token type embeddings
  EXPECT_DOUBLE_EQ(hub->rope_theta, 500000.0);
  EXPECT_EQ(hub->rope_scaling.type, ops::RopeScalingType::kNtk);
  EXPECT_FLOAT_EQ(hub->rope_scaling.factor, 2.0f);

  auto reranker = Read("tiny-gte-reranker-hub");
  ASSERT_TRUE(reranker.ok()) << reranker.status().message();
  EXPECT_EQ(reranker->head, ModelHead::kSequenceClassification);
  EXPECT_EQ(reranker->num_labels, 1);
  EXPECT_FLOAT_EQ(reranker->rope_scaling.factor, 8.0f);
  auto native_reranker = Read("tiny-gte-reranker");
  ASSERT_TRUE(native_reranker.ok()) << native_reranker.status().message();
  EXPECT_EQ(native_reranker->head, ModelHead::kSequenceClassification);
}

// The hub's NTK frequencies: stamen's table at position 1 holds cos and sin of each inverse
// frequency, which must be the ones the golden run rotated by (report.json, from
// new-impl's NTKScalingRotaryEmbedding formula).
TEST(RotaryEncodersTest, NtkFrequenciesAreTheGoldenRunsOnes) {
  for (const std::string folder : {"tiny-gte-hub-ntk-f16", "tiny-gte-reranker-hub"}) {
    auto config = Read(folder);
    ASSERT_TRUE(config.ok()) << config.status().message();
    auto report = JsonDocument::Load(kData + folder + "/report.json");
    ASSERT_TRUE(report.ok()) << report.status().message();
    simdjson::dom::array frequencies;
    ASSERT_EQ(report.value()->root().raw()["checks"]["rope_inv_freq"].get(frequencies), simdjson::SUCCESS);
    const int64_t d = config->head_dim;
    ASSERT_EQ(static_cast<int64_t>(frequencies.size()), d / 2);
    Tensor positions = *Tensor::Allocate(DataType::kI32, {1});
    positions.data<int32_t>()[0] = 1;
    Tensor table = *Tensor::Allocate(DataType::kF32, {1, d});
    ASSERT_TRUE(ops::RopeTable(positions, config->rope_theta, table, config->rope_scaling).ok());
    Tensor plain = *Tensor::Allocate(DataType::kF32, {1, d});
    ASSERT_TRUE(ops::RopeTable(positions, config->rope_theta, plain).ok());
    int64_t i = 0;
    double scaling_moved = 0.0;
    for (simdjson::dom::element element : frequencies) {
      double frequency = 0.0;
      ASSERT_EQ(element.get(frequency), simdjson::SUCCESS);
      EXPECT_NEAR(table.data<float>()[i], std::cos(frequency), 1e-6) << folder << " pair " << i;
      EXPECT_NEAR(table.data<float>()[d / 2 + i], std::sin(frequency), 1e-6) << folder << " pair " << i;
      scaling_moved = std::max(scaling_moved, double{std::abs(table.data<float>()[d / 2 + i] - plain.data<float>()[d / 2 + i])});
      ++i;
    }
    EXPECT_GT(scaling_moved, 1e-2) << folder << ": the NTK scaling must change the table";
  }
}

// NomicBERT's rotary variants: stamen's table at position 1, for a sequence of each golden length,
// holds cos and sin of the inverse frequencies transformers rotated that sequence by
// (report.json's rope_inv_freq_by_length): over the first rotary_dim dimensions (partial rotary)
// and stretched per sequence beyond the trained length (dynamic NTK), one step holding every length.
TEST(RotaryEncodersTest, NomicVariantFrequenciesAreTheGoldenRunsOnes) {
  for (const std::string folder : {"tiny-nomic-bert-partial-rotary-hub", "tiny-nomic-bert-dynamic-ntk-hub-bf16",
                                   "tiny-nomic-bert-dynamic-ntk"}) {
    auto config = Read(folder);
    ASSERT_TRUE(config.ok()) << config.status().message();
    auto report = JsonDocument::Load(kData + folder + "/report.json");
    ASSERT_TRUE(report.ok()) << report.status().message();
    simdjson::dom::object by_length;
    ASSERT_EQ(report.value()->root().raw()["checks"]["rope_inv_freq_by_length"].get(by_length), simdjson::SUCCESS);
    const int64_t d = config->rotary_dim > 0 ? config->rotary_dim : config->head_dim;
    // One packed step: a sequence of each length, each token at position 1 of a table row.
    std::vector<int32_t> bounds = {0};
    for (const int length : {1, 3, 7, 16, 64, 130}) bounds.push_back(bounds.back() + length);
    const int64_t tokens = bounds.back();
    Tensor cu_seqlens = *Tensor::Allocate(DataType::kI32, {static_cast<int64_t>(bounds.size())});
    std::copy(bounds.begin(), bounds.end(), cu_seqlens.data<int32_t>());
    Tensor positions = *Tensor::Allocate(DataType::kI32, {tokens});
    for (int64_t t = 0; t < tokens; ++t) positions.data<int32_t>()[t] = 1;
    Tensor table = *Tensor::Allocate(DataType::kF32, {tokens, d});
    const Status made = ops::RopeTable(positions, config->rope_theta, table, config->rope_scaling, cu_seqlens);
    ASSERT_TRUE(made.ok()) << folder << ": " << made.message();
    double scaling_moved = 0.0;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      const int length = bounds[s + 1] - bounds[s];
      simdjson::dom::array frequencies;
      ASSERT_EQ(by_length["len_" + std::to_string(length)].get(frequencies), simdjson::SUCCESS) << folder << " " << length;
      ASSERT_EQ(static_cast<int64_t>(frequencies.size()), d / 2) << folder;
      const float* row = table.data<float>() + (bounds[s + 1] - 1) * d;  // the sequence's last token
      int64_t i = 0;
      for (simdjson::dom::element element : frequencies) {
        double frequency = 0.0;
        ASSERT_EQ(element.get(frequency), simdjson::SUCCESS);
        EXPECT_NEAR(row[i], std::cos(frequency), 1e-6) << folder << " length " << length << " pair " << i;
        EXPECT_NEAR(row[d / 2 + i], std::sin(frequency), 1e-6) << folder << " length " << length << " pair " << i;
        const double unscaled = std::pow(config->rope_theta, -2.0 * static_cast<double>(i) / static_cast<double>(d));
        scaling_moved = std::max(scaling_moved, std::abs(std::sin(unscaled) - double{row[d / 2 + i]}));
        ++i;
      }
    }
    if (config->rope_scaling.factor > 0.0f) {
      EXPECT_GT(scaling_moved, 1e-2) << folder << ": the scaling must change the table";
    }
  }
}

// The issue's targets in fp32: cosine ≥ 0.9999 and abs error ≤ 1e-4 to transformers, per token
// (each token's vector), mean-pooled and, for rerankers, logits.
TEST(RotaryEncodersTest, MatchTransformersByCosineAndAbsoluteError) {
  for (const std::string folder : {"tiny-nomic-bert", "tiny-nomic-bert-hub-bf16", "tiny-nomic-bert-partial-rotary-hub",
                                   "tiny-nomic-bert-dynamic-ntk-hub-bf16", "tiny-nomic-bert-dynamic-ntk",
                                   "tiny-nomic-bert-moe-hub", "tiny-gte",
                                   "tiny-gte-hub-ntk-f16", "tiny-gte-reranker", "tiny-gte-reranker-hub"}) {
    testing::ExpectMatchesGoldenTargets(kData + folder, folder, 64);
  }
}

// nomic-embed-text-v2-moe's experts are routed on the host from the router's logits, so its forward
// pass must never be replayed from a CUDA graph captured for another batch: the runner learns it
// from Graphable. Its router stays F32 whatever the placement's dtype (the routing's precision).
TEST(RotaryEncodersTest, ExpertsAreNeverGraphed) {
  for (const auto& [folder, graphable] :
       {std::pair{"tiny-nomic-bert-moe-hub", false}, std::pair{"tiny-nomic-bert-hub-bf16", true}}) {
    auto config = Read(folder);
    ASSERT_TRUE(config.ok()) << config.status().message();
    auto weights = WeightStore::OpenDirectory(kData + folder);
    ASSERT_TRUE(weights.ok()) << weights.status().message();
    auto model = LoadModel(*config, *weights, Placement{});
    ASSERT_TRUE(model.ok()) << folder << ": " << model.status().message();
    EXPECT_EQ((*model)->Graphable(), graphable) << folder;
  }
}

// What transformers' NomicBertModel and GteModel do not compute is refused, naming the key.
TEST(RotaryEncodersTest, UnsupportedVariantsAreRefused) {
  struct Case {
    const char* folder;
    const char* from;
    const char* to;
    const char* named;  // in the message
  };
  const Case cases[] = {
      // 16 · 0.3 is no whole number of dimensions; 0 (the remote config's default) rotates nothing.
      {"tiny-nomic-bert-hub-bf16", R"("rotary_emb_fraction": 1.0)", R"("rotary_emb_fraction": 0.3)",
       "'rotary_emb_fraction'"},
      {"tiny-nomic-bert-hub-bf16", R"("rotary_emb_fraction": 1.0)", R"("rotary_emb_fraction": 0.0)",
       "'rotary_emb_fraction'"},
      {"tiny-nomic-bert-hub-bf16", R"("rotary_emb_scale_base": null)", R"("rotary_emb_scale_base": 512)",
       "'rotary_emb_scale_base'"},
      {"tiny-nomic-bert-hub-bf16", R"("rotary_scaling_factor": null)", R"("rotary_scaling_factor": 0.5)",
       "'rotary_scaling_factor'"},
      // transformers' NomicBertModel rotates whole heads whatever partial_rotary_factor says.
      {"tiny-nomic-bert-dynamic-ntk", R"("rope_type": "dynamic")", R"("rope_type": "dynamic", "partial_rotary_factor": 0.5)",
       "'partial_rotary_factor'"},
      {"tiny-nomic-bert-dynamic-ntk", R"("rope_type": "dynamic")", R"("rope_type": "yarn")", "'yarn'"},
      // Families without dynamic NTK or partial rotary refuse both rather than compute plain RoPE.
      {"tiny-gte", R"("rope_type": "default")", R"("rope_type": "dynamic", "factor": 2.0)", "'dynamic'"},
      {"tiny-qwen3", R"("rope_type": "default")", R"("rope_type": "default", "partial_rotary_factor": 0.5)",
       "'partial_rotary_factor'"},
      {"tiny-eurobert", R"("rope_theta": 250000.0)", R"("rope_theta": 250000.0, "partial_rotary_factor": 0.25)",
       "'partial_rotary_factor'"},
      {"tiny-nomic-bert-hub-bf16", R"("rotary_emb_interleaved": false)", R"("rotary_emb_interleaved": true)",
       "'rotary_emb_interleaved'"},
      {"tiny-nomic-bert-hub-bf16", R"("prenorm": false)", R"("prenorm": true)", "'prenorm'"},
      {"tiny-nomic-bert-hub-bf16", R"("qkv_proj_bias": false)", R"("qkv_proj_bias": true)", "'qkv_proj_bias'"},
      // Absent, the remote code's default (biases on) applies.
      {"tiny-nomic-bert-hub-bf16", R"("mlp_fc1_bias": false,)", "", "the remote code's default"},
      {"tiny-nomic-bert-hub-bf16", R"("activation_function": "swiglu")", R"("activation_function": "geglu")",
       "'activation_function'"},
      // gelu NomicBERT is v2-moe's, with every bias on; SwiGLU with experts is not.
      {"tiny-nomic-bert-hub-bf16", R"("activation_function": "swiglu")", R"("activation_function": "gelu")",
       "'qkv_proj_bias'"},
      {"tiny-nomic-bert-hub-bf16", R"("n_embd": 64,)", R"("n_embd": 64, "moe_every_n_layers": 2, "num_experts": 8,)",
       "nomic-embed-text-v2-moe"},
      {"tiny-nomic-bert-moe-hub", R"("mlp_fc2_bias": true)", R"("mlp_fc2_bias": false)", "'mlp_fc2_bias'"},
      // The experts' settings nomic's NomicMoELayer does not compute.
      {"tiny-nomic-bert-moe-hub", R"("moe_top_k": 2)", R"("moe_top_k": 9)", "'moe_top_k'"},
      {"tiny-nomic-bert-moe-hub", R"("moe_top_k": 2,)", "", "'moe_top_k' is missing"},
      {"tiny-nomic-bert-moe-hub", R"("moe_every_n_layers": 2)", R"("moe_every_n_layers": 1)", "'moe_every_n_layers'"},
      {"tiny-nomic-bert-moe-hub", R"("moe_normalize_expert_weights": false)",
       R"("moe_normalize_expert_weights": true)", "'moe_normalize_expert_weights'"},
      {"tiny-nomic-bert-moe-hub", R"("moe_normalize_expert_weights": false)", R"("moe_normalize_expert_weights": 1)",
       "'moe_normalize_expert_weights'"},
      {"tiny-nomic-bert-moe-hub", R"("moe_impl": "megablocks")", R"("moe_impl": "contrastors")", "'moe_impl'"},
      {"tiny-nomic-bert-moe-hub", R"("num_shared_experts": 0)", R"("num_shared_experts": 1)", "'num_shared_experts'"},
      {"tiny-nomic-bert-moe-hub", R"("expert_choice_router": false)", R"("expert_choice_router": true)",
       "'expert_choice_router'"},
      {"tiny-nomic-bert-moe-hub", R"("ffn_div": 1)", R"("ffn_div": 2)", "'ffn_div'"},
      {"tiny-gte-hub-ntk-f16", R"("logn_attention_scale": false)", R"("logn_attention_scale": true)",
       "'logn_attention_scale'"},
      {"tiny-gte-hub-ntk-f16", R"("layer_norm_type": "layer_norm")", R"("layer_norm_type": "rms_norm")",
       "'layer_norm_type'"},
      {"tiny-gte-hub-ntk-f16", R"("type": "ntk")", R"("type": "linear")", "'linear'"},
      {"tiny-gte-hub-ntk-f16", R"("type": "ntk")", R"("type": "ntk", "mixed_b": 0.5)", "'mixed_b'"},
      {"tiny-gte-hub-ntk-f16", R"("pack_qkv": true)", R"("pack_qkv": false)", "'pack_qkv'"},
      {"tiny-gte-hub-ntk-f16", R"("position_embedding_type": "rope")", R"("position_embedding_type": "absolute")",
       "'position_embedding_type'"},
  };
  for (const Case& c : cases) {
    const std::string error = EditedConfigError(c.folder, c.from, c.to);
    EXPECT_NE(error.find(c.named), std::string::npos) << c.folder << " with " << c.to << ": '" << error << "'";
  }
}

// Each hub folder handed to another family's reader is refused by its auto_map, naming the
// class; a remote class the family does not implement is refused under the right architecture.
TEST(RotaryEncodersTest, HubFoldersRefusedByOtherReaders) {
  struct WrongReader {
    const char* folder;
    const char* architecture;
    const char* other;
    const char* remote_class;
  };
  for (const WrongReader& wrong :
       {WrongReader{"tiny-nomic-bert-hub-bf16", "\"NomicBertModel\"", "\"BertModel\"", "NomicBertConfig"},
        WrongReader{"tiny-nomic-bert-hub-bf16", "\"NomicBertModel\"", "\"GteModel\"", "NomicBertConfig"},
        WrongReader{"tiny-gte-hub-ntk-f16", "\"NewModel\"", "\"BertModel\"", "NewConfig"},
        WrongReader{"tiny-gte-hub-ntk-f16", "\"NewModel\"", "\"NomicBertModel\"", "NewConfig"},
        WrongReader{"tiny-gte-reranker-hub", "\"NewForSequenceClassification\"", "\"BertForSequenceClassification\"",
                    "NewConfig"}}) {
    const std::string error = EditedConfigError(wrong.folder, wrong.architecture, wrong.other);
    EXPECT_NE(error.find("'" + std::string(wrong.remote_class) + "'"), std::string::npos) << wrong.folder << ": " << error;
    EXPECT_NE(error.find("does not implement"), std::string::npos) << error;
  }
  const std::string token_classes = EditedConfigError("tiny-gte-hub-ntk-f16", "modeling.NewModel\"",
                                                      "modeling.NewForTokenClassification\"");
  EXPECT_NE(token_classes.find("'NewForTokenClassification'"), std::string::npos) << token_classes;
}

// transformers' own folders (no auto_map) handed to BERT's reader fail at load, naming the tensor
// BERT needs and the folder lacks, never computing BERT on NomicBERT's or GTE's weights.
TEST(RotaryEncodersTest, NativeFoldersRefusedByBert) {
  for (const std::string folder : {"tiny-nomic-bert", "tiny-gte"}) {
    TempDir dir;
    const std::string architecture = folder == "tiny-gte" ? "\"GteModel\"" : "\"NomicBertModel\"";
    WriteEditedConfig(folder, architecture, "\"BertModel\"", dir);
    std::filesystem::copy_file(kData + folder + "/model.safetensors", dir.File("model.safetensors"));
    auto engine = Engine::Load(dir.path(), {.num_threads = 1});
    ASSERT_FALSE(engine.ok()) << folder;
    EXPECT_NE(engine.status().message().find("position_embeddings"), std::string::npos) << engine.status().message();
  }
}

// stella_en_400M_v5's layout: one Dense module among 2_Dense_<dims> folders, the one modules.json
// names, sets the width; each choice against sentence-transformers' own forward of the folder
// (tools/make_family_goldens.py gte-stella-dense), cosine ≥ 0.9999 and ≤ 1e-4.
TEST(RotaryEncodersTest, StellaDenseFolderIsTheOneModulesJsonNames) {
  TempDir dir;
  const std::string folder = dir.path() + "/model";
  std::filesystem::copy(kData + "tiny-gte-stella-dense", folder, std::filesystem::copy_options::recursive);
  auto golden = WeightStore::OpenFile(folder + "/golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  const std::string shipped = ReadText(folder + "/modules.json");
  ASSERT_NE(shipped.find("\"2_Dense_48\""), std::string::npos);
  for (const int64_t width : {16, 48, 96}) {
    std::string modules = shipped;
    modules.replace(modules.find("2_Dense_48"), 10, "2_Dense_" + std::to_string(width));
    WriteFile(folder + "/modules.json", modules);
    auto engine = Engine::Load(folder, {.num_threads = 1});
    ASSERT_TRUE(engine.ok()) << engine.status().message();
    EXPECT_EQ((*engine)->embedding_width(), width);
    double worst_cosine = 1.0, worst_error = 0.0;
    for (int i = 0; i < 6; ++i) {
      const std::string index = std::to_string(i);
      auto ids64 = golden->Load("input_ids_" + index, DataType::kI64);
      ASSERT_TRUE(ids64.ok());
      const std::vector<int32_t> ids(ids64->data<int64_t>(), ids64->data<int64_t>() + ids64->NumElements());
      const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
      auto result = (*engine)->Step({ids, bounds, {}}, {});
      ASSERT_TRUE(result.ok() && result->Wait().ok());
      auto expected = golden->Load("dense_" + std::to_string(width) + "_" + index);
      ASSERT_TRUE(expected.ok());
      ASSERT_EQ(result->values().NumElements(), width);
      const float* actual = result->values().data<float>();
      for (int64_t j = 0; j < width; ++j) {
        worst_error = std::max(worst_error, double{std::abs(actual[j] - expected->data<float>()[j])});
      }
      worst_cosine = std::min(worst_cosine, Cosine({actual, static_cast<size_t>(width)},
                                                   {expected->data<float>(), static_cast<size_t>(width)}));
    }
    EXPECT_GE(worst_cosine, 0.9999) << width;
    EXPECT_LE(worst_error, 1e-4) << width;
    std::cout << "[ golden   ] tiny-gte-stella-dense 2_Dense_" << width << ": worst cosine " << std::setprecision(10)
              << worst_cosine << ", max abs error " << std::setprecision(3) << worst_error << "\n";
  }
}

}  // namespace
}  // namespace stamen::engine
