// The config.json and sentence-transformers readers, and ReadModelFolder over both, on the
// real files in ../shared/models and tests/engine/data and on small folders the test writes:
// what they read, and that a folder they cannot serve as its library would is refused with
// the file and the key named.
#include "model_folder/model_config.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "temp_dir.h"

namespace stamen::engine {
namespace {

using stamen::test::TempDir;

void WriteFile(const std::string& path, const std::string& bytes) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

const std::string kShared = STAMEN_SHARED_DIR;

TEST(ModelConfigTest, ReadsGoldenEncoders) {
  auto bert = ReadModelConfig(kShared + "/models/golden/tiny-bert/config.json");
  ASSERT_TRUE(bert.ok()) << bert.status().message();
  EXPECT_EQ(bert->family, ModelFamily::kBert);
  EXPECT_EQ(bert->head, ModelHead::kNone);
  EXPECT_EQ(bert->hidden_size, 64);
  EXPECT_EQ(bert->num_hidden_layers, 2);
  EXPECT_EQ(bert->head_dim, 16);
  EXPECT_EQ(bert->num_key_value_heads, 4);
  EXPECT_EQ(bert->type_vocab_size, 2);
  EXPECT_EQ(bert->hidden_act, ops::Activation::kGeluErf);
  EXPECT_DOUBLE_EQ(bert->norm_eps, 1e-12);

  auto reranker = ReadModelConfig(kShared + "/models/golden/tiny-xlm-roberta-reranker/config.json");
  ASSERT_TRUE(reranker.ok()) << reranker.status().message();
  EXPECT_EQ(reranker->family, ModelFamily::kRoberta);
  EXPECT_EQ(reranker->head, ModelHead::kSequenceClassification);
  EXPECT_EQ(reranker->num_labels, 1);
  EXPECT_EQ(reranker->id2label, std::vector<std::string>{"LABEL_0"});
  EXPECT_EQ(reranker->pad_token_id, 1);
  EXPECT_DOUBLE_EQ(reranker->norm_eps, 1e-5);
}

TEST(ModelConfigTest, ReadsGoldenDecoder) {
  auto qwen = ReadModelConfig(kShared + "/models/golden/tiny-qwen2/config.json");
  ASSERT_TRUE(qwen.ok()) << qwen.status().message();
  EXPECT_EQ(qwen->family, ModelFamily::kQwen2);
  EXPECT_EQ(qwen->num_key_value_heads, 2);
  EXPECT_EQ(qwen->head_dim, 16);
  EXPECT_DOUBLE_EQ(qwen->rope_theta, 1e6);
  EXPECT_DOUBLE_EQ(qwen->norm_eps, 1e-6);
  EXPECT_TRUE(qwen->causal);
}

TEST(ModelConfigTest, ReadsEveryRealConfig) {
  for (const char* name : {"all-MiniLM-L6-v2", "bge-small-en-v1.5", "mmarco-mMiniLMv2-L12-H384-v1",
                           "ms-marco-MiniLM-L-12-v2", "ms-marco-MiniLM-L-6-v2", "ms-marco-TinyBERT-L-2-v2",
                           "multilingual-e5-large", "paraphrase-multilingual-MiniLM-L12-v2"}) {
    auto config = ReadModelConfig(kShared + "/models/configs/" + name + "/config.json");
    EXPECT_TRUE(config.ok()) << name << ": " << config.status().message();
  }
  auto e5 = ReadModelConfig(kShared + "/models/configs/multilingual-e5-large/config.json");
  ASSERT_TRUE(e5.ok());
  EXPECT_EQ(e5->architecture, "XLMRobertaModel");
  EXPECT_EQ(e5->hidden_size, 1024);
  EXPECT_EQ(e5->vocab_size, 250002);
  auto cross = ReadModelConfig(kShared + "/models/configs/ms-marco-MiniLM-L-6-v2/config.json");
  ASSERT_TRUE(cross.ok());
  EXPECT_EQ(cross->head, ModelHead::kSequenceClassification);
  EXPECT_EQ(cross->num_labels, 1);
}

// Writes `json` as config.json and returns the reader's error ("" when it parsed).
std::string ConfigError(const std::string& json) {
  TempDir dir;
  WriteFile(dir.File("config.json"), json);
  auto config = ReadModelConfig(dir.File("config.json"));
  if (config.ok()) return "";
  EXPECT_NE(config.status().message().find("config.json"), std::string::npos) << config.status().message();
  return config.status().message();
}

constexpr char kShape[] =
    R"("hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"vocab_size":10,)"
    R"("max_position_embeddings":16)";

TEST(ModelConfigTest, UnknownArchitectureListsSupportedOnes) {
  const std::string error = ConfigError(std::string(R"({"architectures":["T5EncoderModel"],)") + kShape + "}");
  EXPECT_NE(error.find("'T5EncoderModel' is not supported"), std::string::npos) << error;
  EXPECT_NE(error.find("XLMRobertaForSequenceClassification"), std::string::npos) << error;
  EXPECT_NE(error.find("Qwen3Model"), std::string::npos) << error;
}

TEST(ModelConfigTest, ErrorsNameTheKey) {
  EXPECT_NE(ConfigError(R"({"architectures":["BertModel"],"hidden_size":8})").find("'num_hidden_layers' is missing"),
            std::string::npos);
  EXPECT_NE(ConfigError(std::string(R"({"architectures":["BertModel"],"layer_norm_eps":"small",)") + kShape + "}")
                .find("'layer_norm_eps' must be a number"),
            std::string::npos);
  EXPECT_NE(ConfigError(std::string(R"({"architectures":["BertModel"],"hidden_act":"swiglu9",)") + kShape + "}")
                .find("'hidden_act'"),
            std::string::npos);
  EXPECT_NE(ConfigError(R"({"architectures":["BertModel"],"hidden_size":8,"num_hidden_layers":1,)"
                        R"("num_attention_heads":3,"intermediate_size":16,"vocab_size":10,"max_position_embeddings":16})")
                .find("multiple of num_attention_heads"),
            std::string::npos);
  EXPECT_NE(ConfigError(std::string(R"({"model_type":"bert","position_embedding_type":"relative_key",)") + kShape + "}")
                .find("'position_embedding_type'"),
            std::string::npos);
  EXPECT_NE(ConfigError("{\"architectures\":").find("not valid JSON"), std::string::npos);
  EXPECT_EQ(ConfigError(std::string(R"({"model_type":"bert",)") + kShape + "}"), "");  // architecture from model_type
}

TEST(ModelConfigTest, ReadsModernBert) {
  auto encoder = ReadModelConfig(std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-modernbert/config.json");
  ASSERT_TRUE(encoder.ok()) << encoder.status().message();
  EXPECT_EQ(encoder->family, ModelFamily::kModernBert);
  EXPECT_EQ(encoder->head, ModelHead::kNone);
  EXPECT_EQ(encoder->sliding_window_layers, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(encoder->attention_window, 9);  // |i − j| ≤ local_attention 16 / 2
  EXPECT_DOUBLE_EQ(encoder->rope_theta, 160000.0);
  EXPECT_DOUBLE_EQ(encoder->local_rope_theta, 10000.0);
  EXPECT_DOUBLE_EQ(encoder->norm_eps, 1e-5);
  EXPECT_FALSE(encoder->norm_bias);
  EXPECT_FALSE(encoder->attention_bias);
  EXPECT_FALSE(encoder->feed_forward_bias);
  EXPECT_EQ(encoder->hidden_act, ops::Activation::kGeluErf);

  auto classifier = ReadModelConfig(std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-modernbert-classifier/config.json");
  ASSERT_TRUE(classifier.ok()) << classifier.status().message();
  EXPECT_EQ(classifier->head, ModelHead::kSequenceClassification);
  EXPECT_EQ(classifier->num_labels, 1);
  EXPECT_EQ(classifier->classifier_pooling, ops::PoolingMode::kCls);
  EXPECT_EQ(classifier->classifier_activation, ops::Activation::kGeluErf);
  EXPECT_FALSE(classifier->classifier_bias);
}

// The real checkpoints' older keys (no layer_types, no rope_parameters), and what ModernBERT
// stamen cannot run is refused by name.
TEST(ModelConfigTest, ModernBertOlderKeysAndRejections) {
  const std::string base = std::string(R"({"architectures":["ModernBertForSequenceClassification"],)") +
                           R"("hidden_size":8,"num_hidden_layers":4,"num_attention_heads":2,"intermediate_size":16,)" +
                           R"("vocab_size":10,"max_position_embeddings":16,)";
  TempDir dir;
  WriteFile(dir.File("config.json"), base + R"("global_attn_every_n_layers":3,"global_rope_theta":80000.0,)" +
                                         R"("local_attention":128,"classifier_pooling":"mean"})");
  auto older = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_EQ(older->sliding_window_layers, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(older->attention_window, 65);
  EXPECT_DOUBLE_EQ(older->rope_theta, 80000.0);
  EXPECT_DOUBLE_EQ(older->local_rope_theta, 10000.0);
  EXPECT_EQ(older->classifier_pooling, ops::PoolingMode::kMean);

  EXPECT_NE(ConfigError(base + R"("classifier_pooling":"max"})").find("'classifier_pooling'"), std::string::npos);
  EXPECT_NE(ConfigError(base + R"("classifier_activation":"swish9"})").find("'classifier_activation'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"("hidden_activation":"swish9"})").find("'hidden_activation'"), std::string::npos);
  EXPECT_NE(ConfigError(base + R"("layer_types":["full_attention","sliding_attention"]})").find("'layer_types'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"("layer_types":["full_attention","chunked_attention","full_attention","full_attention"]})")
                .find("'layer_types'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"("rope_parameters":{"full_attention":{"rope_type":"yarn","rope_theta":1.0}}})")
                .find("'rope_type'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"("rope_parameters":{"rope_theta":1.0}})").find("'rope_parameters'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"("rope_scaling":{"type":"linear"}})").find("'rope_scaling'"), std::string::npos);
  EXPECT_NE(ConfigError(base + R"("local_attention":0})").find("'local_attention'"), std::string::npos);
  EXPECT_NE(ConfigError(base + R"("global_attn_every_n_layers":0})").find("'global_attn_every_n_layers'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"("head_dim":2})").find("'head_dim'"), std::string::npos);
}

// bge-reranker-v2.5-gemma2-lightweight's CostWiseGemmaForCausalLM (FlagEmbedding's remote code,
// which its auto_map names): Gemma 2 with per-layer heads from start_layer every layer_sep
// (CostWiseGemmaConfig's defaults 28 and 28); without layer_wise, or with a start_layer past the
// layers, refused by key. Not a reranker until ResolveYesNoReranker makes it one (cutoff_layer 0).
TEST(ModelConfigTest, CostWiseGemmaReadsItsLayerWiseHeads) {
  auto tiny = ReadModelConfig(std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-gemma2-costwise-reranker/config.json");
  ASSERT_TRUE(tiny.ok()) << tiny.status().message();
  EXPECT_EQ(tiny->family, ModelFamily::kGemma2);
  EXPECT_EQ(tiny->architecture, "CostWiseGemmaForCausalLM");
  EXPECT_EQ(tiny->model_type, "cost_wise_gemma");
  EXPECT_EQ(tiny->layer_wise_start, 2);
  EXPECT_EQ(tiny->layer_wise_step, 1);
  EXPECT_EQ(tiny->cutoff_layer, 0);
  EXPECT_EQ(tiny->RunLayers(), 4);
  EXPECT_DOUBLE_EQ(tiny->attention_logit_softcap, 2.0);
  EXPECT_DOUBLE_EQ(tiny->final_logit_softcap, 1.0);

  const std::string base = std::string(R"({"architectures":["CostWiseGemmaForCausalLM"],"head_dim":4,)") +
                           R"("hidden_size":8,"num_hidden_layers":42,"num_attention_heads":2,"intermediate_size":16,)" +
                           R"("vocab_size":10,"max_position_embeddings":16)";
  TempDir dir;
  WriteFile(dir.File("config.json"), base + R"(,"layer_wise":true})");
  auto defaults = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(defaults->layer_wise_start, 28);
  EXPECT_EQ(defaults->layer_wise_step, 28);
  const std::string plain = ConfigError(base + "}");
  EXPECT_NE(plain.find("'layer_wise'"), std::string::npos) << plain;
  const std::string past = ConfigError(base + R"(,"layer_wise":true,"start_layer":43})");
  EXPECT_NE(past.find("'start_layer'"), std::string::npos) << past;
  EXPECT_NE(ConfigError(base + R"(,"layer_wise":true,"layer_sep":0})").find("'layer_sep'"), std::string::npos);
  // Another remote class in auto_map is still refused.
  const std::string other = ConfigError(base + R"(,"layer_wise":true,"auto_map":{"AutoModel":"x--m.OtherModel"}})");
  EXPECT_NE(other.find("OtherModel"), std::string::npos) << other;
}

// Gemma 2 (models/gemma3.cc): the tiny reranker's settings, transformers' defaults when the keys
// are absent (layers alternate sliding / full, caps 50 and 30), null caps meaning none, and what
// stamen does not run refused by key: a layer type it does not know, the lightweight reranker's
// layer-wise heads, bidirectional attention and scaled RoPE.
TEST(ModelConfigTest, Gemma2SettingsDefaultsAndRejections) {
  auto tiny = ReadModelConfig(std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-gemma2-reranker/config.json");
  ASSERT_TRUE(tiny.ok()) << tiny.status().message();
  EXPECT_EQ(tiny->family, ModelFamily::kGemma2);
  EXPECT_EQ(tiny->architecture, "Gemma2ForCausalLM");
  EXPECT_TRUE(tiny->causal);
  EXPECT_TRUE(tiny->tie_word_embeddings);
  EXPECT_EQ(tiny->hidden_act, ops::Activation::kGeluTanh);
  EXPECT_DOUBLE_EQ(tiny->attention_logit_softcap, 2.0);
  EXPECT_DOUBLE_EQ(tiny->final_logit_softcap, 1.0);
  EXPECT_DOUBLE_EQ(tiny->attention_scale, 1.0 / std::sqrt(24.0));
  EXPECT_EQ(tiny->sliding_window_layers, (std::vector<bool>{true, false, true}));
  EXPECT_EQ(tiny->AttentionWindow(0), 16);
  EXPECT_EQ(tiny->AttentionWindow(1), 0);
  EXPECT_DOUBLE_EQ(tiny->local_rope_theta, tiny->rope_theta);

  const std::string base = std::string(R"({"architectures":["Gemma2ForCausalLM"],"head_dim":4,)") +
                           R"("hidden_size":8,"num_hidden_layers":4,"num_attention_heads":2,"intermediate_size":16,)" +
                           R"("vocab_size":10,"max_position_embeddings":16)";
  TempDir dir;
  WriteFile(dir.File("config.json"), base + "}");
  auto defaults = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(defaults->sliding_window_layers, (std::vector<bool>{true, false, true, false}));
  EXPECT_DOUBLE_EQ(defaults->attention_logit_softcap, 50.0);
  EXPECT_DOUBLE_EQ(defaults->final_logit_softcap, 30.0);
  EXPECT_EQ(defaults->sliding_window, 4096);
  EXPECT_DOUBLE_EQ(defaults->attention_scale, 1.0 / 16.0);  // query_pre_attn_scalar 256
  WriteFile(dir.File("config.json"), base + R"(,"attn_logit_softcapping":null,"final_logit_softcapping":null})");
  auto uncapped = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(uncapped.ok()) << uncapped.status().message();
  EXPECT_EQ(uncapped->attention_logit_softcap, 0.0);
  EXPECT_EQ(uncapped->final_logit_softcap, 0.0);

  const std::string unknown_type =
      ConfigError(base + R"(,"layer_types":["sliding_attention","full_attention","chunked_attention","full_attention"]})");
  EXPECT_NE(unknown_type.find("'layer_types'"), std::string::npos) << unknown_type;
  EXPECT_NE(unknown_type.find("chunked_attention"), std::string::npos) << unknown_type;
  // Per-layer heads are CostWiseGemmaForCausalLM's (below), not Gemma2ForCausalLM's.
  const std::string layer_wise = ConfigError(base + R"(,"layer_wise":true,"start_layer":2,"layer_sep":1})");
  EXPECT_NE(layer_wise.find("'layer_wise'"), std::string::npos) << layer_wise;
  EXPECT_NE(layer_wise.find("CostWiseGemmaForCausalLM"), std::string::npos) << layer_wise;
  EXPECT_NE(ConfigError(base + R"(,"use_bidirectional_attention":true})").find("'use_bidirectional_attention'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"(,"attn_logit_softcapping":-1.0})").find("'attn_logit_softcapping'"),
            std::string::npos);
  EXPECT_NE(ConfigError(base + R"(,"final_logit_softcapping":0})").find("'final_logit_softcapping'"), std::string::npos);
  EXPECT_NE(ConfigError(base + R"(,"rope_parameters":{"rope_type":"llama3","rope_theta":1.0,"factor":8.0,)" +
                        R"("low_freq_factor":1.0,"high_freq_factor":4.0,"original_max_position_embeddings":8}})")
                .find("'rope_parameters'"),
            std::string::npos);
}

TEST(SentenceTransformersTest, ReadsPoolingNormalizeAndPrompts) {
  auto minilm = ReadSentenceTransformersConfig(kShared + "/models/configs/all-MiniLM-L6-v2");
  ASSERT_TRUE(minilm.ok()) << minilm.status().message();
  EXPECT_TRUE(minilm->has_modules);
  EXPECT_EQ(minilm->pooling, ops::PoolingMode::kMean);
  EXPECT_TRUE(minilm->normalize);
  EXPECT_EQ(minilm->max_seq_length, 256);

  auto e5 = ReadSentenceTransformersConfig(kShared + "/models/configs/multilingual-e5-large");
  ASSERT_TRUE(e5.ok()) << e5.status().message();
  EXPECT_EQ(e5->pooling, ops::PoolingMode::kMean);
  EXPECT_TRUE(e5->normalize);
  EXPECT_EQ(e5->max_seq_length, 512);

  auto paraphrase = ReadSentenceTransformersConfig(kShared + "/models/configs/paraphrase-multilingual-MiniLM-L12-v2");
  ASSERT_TRUE(paraphrase.ok()) << paraphrase.status().message();
  EXPECT_EQ(paraphrase->pooling, ops::PoolingMode::kMean);  // new-style "pooling_mode"
  EXPECT_FALSE(paraphrase->normalize);
  EXPECT_EQ(paraphrase->prompts.size(), 2u);
  EXPECT_EQ(paraphrase->prompts.at("query"), "");
  EXPECT_EQ(paraphrase->default_prompt_name, "");

  auto bare = ReadSentenceTransformersConfig(kShared + "/models/golden/tiny-bert");
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->has_modules);
  EXPECT_FALSE(bare->pooling.has_value());
}

TEST(SentenceTransformersTest, RejectsWhatItCannotHonour) {
  TempDir dir;
  WriteFile(dir.File("modules.json"),
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
            R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])");
  WriteFile(dir.File("1_Pooling/config.json"), R"({"pooling_mode_cls_token":true,"pooling_mode_mean_tokens":true})");
  auto both = ReadSentenceTransformersConfig(dir.path());
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("several pooling modes"), std::string::npos) << both.status().message();

  WriteFile(dir.File("1_Pooling/config.json"), R"({"pooling_mode_lasttoken":true})");
  WriteFile(dir.File("config_sentence_transformers.json"),
            R"({"prompts":{"query":"Instruct: retrieve\nQuery: "},"default_prompt_name":"query"})");
  auto last = ReadSentenceTransformersConfig(dir.path());
  ASSERT_TRUE(last.ok()) << last.status().message();
  EXPECT_EQ(last->pooling, ops::PoolingMode::kLastToken);
  EXPECT_EQ(last->prompts.at("query"), "Instruct: retrieve\nQuery: ");
  EXPECT_EQ(last->default_prompt_name, "query");

  WriteFile(dir.File("modules.json"), R"([{"idx":2,"path":"2_Dense","type":"sentence_transformers.models.Dense"}])");
  auto dense = ReadSentenceTransformersConfig(dir.path());
  ASSERT_FALSE(dense.ok());
  EXPECT_NE(dense.status().message().find("Dense"), std::string::npos);
}

// sentence-transformers' weightedmean and mean_sqrt_len_tokens, in both spellings, and the
// sparse encoders' MLMTransformer + SpladePooling (max + relu only).
TEST(SentenceTransformersTest, ReadsWeightedMeanSqrtLenAndSplade) {
  TempDir dir;
  WriteFile(dir.File("modules.json"),
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
            R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])");
  const std::pair<std::string, ops::PoolingMode> cases[] = {
      {R"({"pooling_mode_weightedmean_tokens":true,"pooling_mode_mean_tokens":false})", ops::PoolingMode::kWeightedMean},
      {R"({"pooling_mode_mean_sqrt_len_tokens":true})", ops::PoolingMode::kMeanSqrtLen},
      {R"({"pooling_mode":"weightedmean"})", ops::PoolingMode::kWeightedMean},
      {R"({"pooling_mode":"mean_sqrt_len_tokens"})", ops::PoolingMode::kMeanSqrtLen},
  };
  for (const auto& [json, mode] : cases) {
    WriteFile(dir.File("1_Pooling/config.json"), json);
    auto config = ReadSentenceTransformersConfig(dir.path());
    ASSERT_TRUE(config.ok()) << json << ": " << config.status().message();
    EXPECT_EQ(config->pooling, mode) << json;
  }
  // "splade" is no Pooling mode: only a SpladePooling module selects it.
  WriteFile(dir.File("1_Pooling/config.json"), R"({"pooling_mode":"splade"})");
  EXPECT_FALSE(ReadSentenceTransformersConfig(dir.path()).ok());

  WriteFile(dir.File("modules.json"),
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.sparse_encoder.models.MLMTransformer"},)"
            R"({"idx":1,"name":"1","path":"1_SpladePooling","type":"sentence_transformers.sparse_encoder.models.SpladePooling"}])");
  WriteFile(dir.File("1_SpladePooling/config.json"),
            R"({"pooling_strategy":"max","activation_function":"relu","word_embedding_dimension":30522})");
  auto splade = ReadSentenceTransformersConfig(dir.path());
  ASSERT_TRUE(splade.ok()) << splade.status().message();
  EXPECT_EQ(splade->pooling, ops::PoolingMode::kSplade);
  WriteFile(dir.File("1_SpladePooling/config.json"), R"({"pooling_strategy":"sum","activation_function":"relu"})");
  auto sum = ReadSentenceTransformersConfig(dir.path());
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.status().message().find("pooling_strategy"), std::string::npos) << sum.status().message();
}

// ReadModelFolder: the whole folder, config.json with the sentence-transformers files.

constexpr char kBertConfig[] =
    R"({"architectures":["BertModel"],"model_type":"bert","hidden_size":8,"num_hidden_layers":1,)"
    R"("num_attention_heads":2,"intermediate_size":16,"vocab_size":10,"max_position_embeddings":16,)"
    R"("type_vocab_size":2})";
constexpr char kPoolingModules[] =
    R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
    R"({"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},)"
    R"({"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])";

// The folder's error ("" when it was read), which must name `file` (relative to the folder).
std::string FolderError(const TempDir& dir, const std::string& file) {
  auto folder = ReadModelFolder(dir.path());
  if (folder.ok()) return "";
  EXPECT_NE(folder.status().message().find(dir.File(file)), std::string::npos) << folder.status().message();
  return folder.status().message();
}

TEST(ReadModelFolderTest, AFolderWithConfigAndModulesIsRead) {
  TempDir dir("stamen_model_folder");
  WriteFile(dir.File("config.json"), kBertConfig);
  auto bare = ReadModelFolder(dir.path());
  ASSERT_TRUE(bare.ok()) << bare.status().message();
  EXPECT_EQ(bare->config.architecture, "BertModel");
  EXPECT_EQ(bare->config.family, ModelFamily::kBert);
  EXPECT_EQ(bare->config.hidden_size, 8);
  EXPECT_EQ(bare->config.head_dim, 4);
  EXPECT_EQ(bare->config.type_vocab_size, 2);
  EXPECT_FALSE(bare->sentence_transformers.has_modules);
  EXPECT_FALSE(bare->sentence_transformers.pooling.has_value());
  EXPECT_FALSE(bare->config.bge_m3.enabled);

  WriteFile(dir.File("modules.json"), kPoolingModules);
  WriteFile(dir.File("1_Pooling/config.json"), R"({"word_embedding_dimension":8,"pooling_mode":"cls"})");
  WriteFile(dir.File("sentence_bert_config.json"), R"({"max_seq_length":12})");
  auto pooled = ReadModelFolder(dir.path());
  ASSERT_TRUE(pooled.ok()) << pooled.status().message();
  EXPECT_TRUE(pooled->sentence_transformers.has_modules);
  EXPECT_EQ(pooled->sentence_transformers.pooling, ops::PoolingMode::kCls);
  EXPECT_TRUE(pooled->sentence_transformers.normalize);
  EXPECT_EQ(pooled->sentence_transformers.max_seq_length, 12);
}

TEST(ReadModelFolderTest, AFolderWithoutConfigJsonIsRefused) {
  TempDir dir("stamen_model_folder");
  EXPECT_NE(FolderError(dir, "config.json").find("cannot read"), std::string::npos);
  // The sentence-transformers files alone do not make a model.
  WriteFile(dir.File("modules.json"), kPoolingModules);
  WriteFile(dir.File("1_Pooling/config.json"), R"({"pooling_mode":"mean"})");
  EXPECT_NE(FolderError(dir, "config.json").find("cannot read"), std::string::npos);
  EXPECT_FALSE(ReadModelFolder(dir.File("no-such-folder")).ok());
}

TEST(ReadModelFolderTest, AConfigJsonThatIsNoJsonObjectIsRefused) {
  TempDir dir("stamen_model_folder");
  for (const char* text : {"", "{\"architectures\":", "{\"hidden_size\": 8,}", "not json"}) {
    WriteFile(dir.File("config.json"), text);
    EXPECT_NE(FolderError(dir, "config.json").find("not valid JSON"), std::string::npos) << '"' << text << '"';
  }
  WriteFile(dir.File("config.json"), "[1, 2]");
  EXPECT_NE(FolderError(dir, "config.json").find("not a JSON object"), std::string::npos);
}

TEST(ReadModelFolderTest, AnUnknownArchitectureIsRefusedWithTheSupportedOnes) {
  TempDir dir("stamen_model_folder");
  WriteFile(dir.File("config.json"), std::string(R"({"architectures":["T5EncoderModel"],)") + kShape + "}");
  const std::string error = FolderError(dir, "config.json");
  EXPECT_NE(error.find("architecture 'T5EncoderModel' is not supported"), std::string::npos) << error;
  for (const std::string& supported : SupportedArchitectures()) {
    EXPECT_NE(error.find(supported), std::string::npos) << supported << " is not listed in: " << error;
  }
  // Without "architectures", an unknown model_type is refused by name.
  WriteFile(dir.File("config.json"), std::string(R"({"model_type":"t5",)") + kShape + "}");
  EXPECT_NE(FolderError(dir, "config.json").find("model_type 't5' is not supported"), std::string::npos);
  WriteFile(dir.File("config.json"), std::string(R"({"architectures":[],)") + kShape + "}");
  EXPECT_NE(FolderError(dir, "config.json").find("'architectures' must be a non-empty list"), std::string::npos);
}

TEST(ReadModelFolderTest, APoolingNameThatDoesNotExistIsRefused) {
  TempDir dir("stamen_model_folder");
  WriteFile(dir.File("config.json"), kBertConfig);
  WriteFile(dir.File("modules.json"), kPoolingModules);
  for (const char* name : {"average", "MEAN", "last-token", ""}) {
    WriteFile(dir.File("1_Pooling/config.json"), std::string(R"({"pooling_mode":")") + name + "\"}");
    const std::string error = FolderError(dir, "1_Pooling/config.json");
    EXPECT_NE(error.find(std::string("key 'pooling_mode' names unsupported mode '") + name + "'"), std::string::npos)
        << error;
  }
  // A Pooling module that enables no mode at all, and a module type the engine does not run.
  WriteFile(dir.File("1_Pooling/config.json"), R"({"pooling_mode_cls_token":false,"pooling_mode_mean_tokens":false})");
  EXPECT_NE(FolderError(dir, "1_Pooling/config.json").find("no pooling mode is enabled"), std::string::npos);
  WriteFile(dir.File("modules.json"),
            R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},)"
            R"({"idx":1,"name":"1","path":"1_LSTM","type":"sentence_transformers.models.LSTM"}])");
  EXPECT_NE(FolderError(dir, "modules.json").find("module type 'sentence_transformers.models.LSTM' is not supported"),
            std::string::npos);
  WriteFile(dir.File("modules.json"), R"({"not": "a list"})");
  EXPECT_NE(FolderError(dir, "modules.json").find("not a JSON list"), std::string::npos);
}

}  // namespace
}  // namespace stamen::engine
