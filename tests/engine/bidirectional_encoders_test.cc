// Issue 48's bidirectional Llama / Qwen3 encoders (EuroBERT, pplx-embed-v1, llama-nemotron-embed
// and its reranker llama-nemotron-rerank, voyage-4-nano's Qwen3BidirectionalModel)
// beyond the shared golden checks (golden_test.cc): what their hub configs read as (EuroBERT's
// classifier poolings too), pplx-embed's
// served int8 vectors against transformers, and the refusal of folders whose auto_map names
// remote code stamen does not implement, whichever reader the folder is handed to.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/finish_rows.h"
#include "engine/weight_store.h"
#include "model_folder/model_config.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

using testing::ReadText;
using testing::TempDir;
using testing::WriteFile;

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

// `folder`'s config.json with every `from` replaced by `to`, read back; "" when it parsed.
std::string EditedConfigError(const std::string& folder, const std::string& from, const std::string& to) {
  std::string json = ReadText(kData + folder + "/config.json");
  const size_t at = json.find(from);
  EXPECT_NE(at, std::string::npos) << folder << " has no " << from;
  if (at == std::string::npos) return "(edit failed)";
  json.replace(at, from.size(), to);
  TempDir dir;
  WriteFile(dir.File("config.json"), json);
  auto config = ReadModelConfig(dir.File("config.json"));
  return config.ok() ? "" : config.status().message();
}

TEST(BidirectionalEncodersTest, HubConfigsRead) {
  auto eurobert = ReadModelConfig(kData + "tiny-eurobert/config.json");
  ASSERT_TRUE(eurobert.ok()) << eurobert.status().message();
  EXPECT_EQ(eurobert->family, ModelFamily::kEuroBert);
  EXPECT_FALSE(eurobert->causal);
  EXPECT_DOUBLE_EQ(eurobert->rope_theta, 250000.0);
  auto native = ReadModelConfig(kData + "tiny-eurobert-bf16/config.json");
  ASSERT_TRUE(native.ok()) << native.status().message();
  EXPECT_EQ(native->architecture, "EuroBertModel");
  EXPECT_TRUE(native->attention_bias);
  EXPECT_DOUBLE_EQ(native->rope_theta, 250000.0);  // from rope_parameters

  auto pplx = ReadModelConfig(kData + "tiny-pplx-embed/config.json");
  ASSERT_TRUE(pplx.ok()) << pplx.status().message();
  EXPECT_EQ(pplx->family, ModelFamily::kPplxQwen3);
  EXPECT_FALSE(pplx->causal);
  EXPECT_TRUE(pplx->pooled_tanh_int8);
  EXPECT_NE(EditedConfigError("tiny-pplx-embed", R"("use_bidirectional_attention": true)",
                              R"("use_bidirectional_attention": false)")
                .find("'use_bidirectional_attention'"),
            std::string::npos);

  auto llama = ReadModelConfig(kData + "tiny-llama-bidirectional/config.json");
  ASSERT_TRUE(llama.ok()) << llama.status().message();
  EXPECT_EQ(llama->family, ModelFamily::kLlamaBidirectional);
  EXPECT_FALSE(llama->causal);
  EXPECT_FLOAT_EQ(llama->rope_scaling.factor, 8.0f);
  EXPECT_FLOAT_EQ(llama->rope_scaling.original_max_position_embeddings, 64.0f);
  EXPECT_NE(EditedConfigError("tiny-llama-bidirectional", R"("pooling": "avg")", R"("pooling": "cls")").find("'pooling'"),
            std::string::npos);
  EXPECT_NE(EditedConfigError("tiny-llama-bidirectional", R"("rope_type": "llama3")", R"("rope_type": "yarn")")
                .find("'yarn' is not supported"),
            std::string::npos);

  // llama-nemotron-rerank: the same family with a `score` head, on the mean (its "pooling": "avg",
  // golden_test.cc's tiny-llama-bidirectional-reranker); other poolings and temperatures are
  // refused by name.
  auto reranker = ReadModelConfig(kData + "tiny-llama-bidirectional-reranker/config.json");
  ASSERT_TRUE(reranker.ok()) << reranker.status().message();
  EXPECT_EQ(reranker->family, ModelFamily::kLlamaBidirectional);
  EXPECT_EQ(reranker->head, ModelHead::kSequenceClassification);
  EXPECT_EQ(reranker->num_labels, 1);
  EXPECT_FALSE(reranker->causal);
  EXPECT_NE(EditedConfigError("tiny-llama-bidirectional-reranker", R"("pooling": "avg")", R"("pooling": "last")")
                .find("'pooling' is 'last'"),
            std::string::npos);
  EXPECT_NE(EditedConfigError("tiny-llama-bidirectional-reranker", R"("temperature": 1.0)", R"("temperature": 0.5)")
                .find("'temperature'"),
            std::string::npos);
}

// voyage-4-nano: config.json names Qwen3BidirectionalModel (model_type qwen3) and its auto_map that
// class; it attends bidirectionally, and its `linear` becomes the first Dense module, so every
// pooled vector is projected (its outputs against transformers: golden_test.cc's
// tiny-voyage-qwen3-bidirectional). TEI's key use_bidirectional_attention is read on any Qwen3
// folder, and a folder naming a base Qwen3 class runs as the class its auto_map loads.
TEST(BidirectionalEncodersTest, VoyageReadsAsBidirectionalQwen3WithItsProjection) {
  const std::string name = "tiny-voyage-qwen3-bidirectional";
  auto folder = ReadModelFolder(kData + name);
  ASSERT_TRUE(folder.ok()) << folder.status().message();
  EXPECT_EQ(folder->config.family, ModelFamily::kQwen3);
  EXPECT_EQ(folder->config.architecture, "Qwen3BidirectionalModel");
  EXPECT_FALSE(folder->config.causal);
  ASSERT_EQ(folder->sentence_transformers.dense.size(), 1u);
  const DenseModuleConfig& projection = folder->sentence_transformers.dense[0];
  EXPECT_EQ(projection.in_features, 64);
  EXPECT_EQ(projection.out_features, 48);
  EXPECT_FALSE(projection.bias);
  EXPECT_EQ(projection.activation, ops::Activation::kIdentity);
  EXPECT_EQ(DefaultPooling(folder->config, folder->sentence_transformers), ops::PoolingMode::kMean);
  EXPECT_EQ(DefaultEmbeddingWidth(folder->config, folder->sentence_transformers), 48);
  EXPECT_NE(EditedConfigError(name, R"("use_bidirectional_attention": true)", R"("use_bidirectional_attention": false)")
                .find("always attends bidirectionally"),
            std::string::npos);

  // Named as a base Qwen3 class beside the auto_map: run as Qwen3BidirectionalModel, projection included.
  const std::string json = ReadText(kData + name + "/config.json");
  const std::string named = R"("Qwen3BidirectionalModel"
  ],)";
  ASSERT_NE(json.find(named), std::string::npos);
  for (const std::string base : {"Qwen3ForCausalLM", "Qwen3Model"}) {
    std::string edited = json;
    edited.replace(edited.find(named), named.size(), "\"" + base + "\"\n  ],");
    TempDir dir;
    WriteFile(dir.File("config.json"), edited);
    std::filesystem::copy_file(kData + name + "/model.safetensors", dir.File("model.safetensors"));
    auto renamed = ReadModelFolder(dir.File(""));
    ASSERT_TRUE(renamed.ok()) << base << ": " << renamed.status().message();
    EXPECT_EQ(renamed->config.architecture, "Qwen3BidirectionalModel") << base;
    EXPECT_EQ(renamed->sentence_transformers.dense.size(), 1u) << base;
  }

  // num_labels must be what `linear` projects to, and the projection must be there.
  {
    std::string edited = json;
    const std::string labels = R"("num_labels": 48)";
    ASSERT_NE(edited.find(labels), std::string::npos);
    edited.replace(edited.find(labels), labels.size(), R"("num_labels": 32)");
    TempDir dir;
    WriteFile(dir.File("config.json"), edited);
    std::filesystem::copy_file(kData + name + "/model.safetensors", dir.File("model.safetensors"));
    auto mismatched = ReadModelFolder(dir.File(""));
    ASSERT_FALSE(mismatched.ok());
    EXPECT_NE(mismatched.status().message().find("projects to 48"), std::string::npos) << mismatched.status().message();
  }
  {
    TempDir dir;
    WriteFile(dir.File("config.json"), json);
    testing::SafetensorsBuilder weights;
    weights.AddFloats("model.norm.weight", {64}, std::vector<float>(64, 1.0f));
    WriteFile(dir.File("model.safetensors"), weights.Bytes());
    auto missing = ReadModelFolder(dir.File(""));
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.status().message().find("\"linear.weight\""), std::string::npos) << missing.status().message();
  }

  // TEI's use_bidirectional_attention on a plain Qwen3 folder: bidirectional, no projection.
  std::string plain = ReadText(kData + "tiny-qwen3/config.json");
  plain.replace(plain.find('{'), 1, R"({"use_bidirectional_attention": true,)");
  TempDir dir;
  WriteFile(dir.File("config.json"), plain);
  auto bidirectional = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(bidirectional.ok()) << bidirectional.status().message();
  EXPECT_FALSE(bidirectional->causal);
  auto causal = ReadModelConfig(kData + "tiny-qwen3/config.json");
  ASSERT_TRUE(causal.ok());
  EXPECT_TRUE(causal->causal);
}

// Each hub folder handed to its model_type's base family (the reader a stamen without this
// family would use): refused by its auto_map, naming the class; and a class none implements
// is refused even under the right architecture.
TEST(BidirectionalEncodersTest, RemoteCodeOfAnotherFamilyIsRefused) {
  struct WrongReader {
    const char* folder;
    const char* architecture;  // as the folder names it
    const char* base;          // a family that does not implement its remote code
    const char* remote_class;  // what the refusal names
  };
  for (const WrongReader& wrong : {WrongReader{"tiny-eurobert", "EuroBertForMaskedLM", "LlamaForCausalLM", "EuroBertConfig"},
                                   WrongReader{"tiny-pplx-embed", "PPLXQwen3Model", "Qwen3Model", "PPLXQwen3Config"},
                                   WrongReader{"tiny-pplx-embed", "PPLXQwen3Model", "LlamaBidirectionalModel", "PPLXQwen3Config"},
                                   WrongReader{"tiny-llama-bidirectional", "LlamaBidirectionalModel", "LlamaModel",
                                               "LlamaBidirectionalConfig"},
                                   WrongReader{"tiny-llama-bidirectional", "LlamaBidirectionalModel", "EuroBertModel",
                                               "LlamaBidirectionalConfig"},
                                   WrongReader{"tiny-voyage-qwen3-bidirectional", "Qwen3BidirectionalModel", "LlamaModel",
                                               "Qwen3BidirectionalModel"},
                                   WrongReader{"tiny-voyage-qwen3-bidirectional", "Qwen3BidirectionalModel",
                                               "PPLXQwen3Model", "Qwen3BidirectionalModel"}}) {
    const std::string error = EditedConfigError(wrong.folder, wrong.architecture, wrong.base);
    EXPECT_NE(error.find("'" + std::string(wrong.remote_class) + "'"), std::string::npos) << wrong.folder << ": " << error;
    EXPECT_NE(error.find("does not implement"), std::string::npos) << error;
  }
  const std::string adapters = EditedConfigError("tiny-eurobert", "modeling_eurobert.EuroBertModel",
                                                 "modeling_eurobert.EuroBertWithAdapters");
  EXPECT_NE(adapters.find("'EuroBertWithAdapters'"), std::string::npos) << adapters;
}

// What the issue names: JinaBERT says model_type "bert", jina-embeddings-v3 "xlm-roberta" with
// XLMRobertaModel; both name their remote code in auto_map and must never run as BERT / XLM-R.
// (jina-embeddings-v3 loaded through its XLMRobertaLoRA runs as its own family:
// jina_embeddings_v3_test; loaded through another class of that code it is refused.)
TEST(BidirectionalEncodersTest, BaseFamiliesRefuseForeignRemoteCode) {
  const std::string shape =
      R"("hidden_size":8,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":16,"vocab_size":10,)"
      R"("max_position_embeddings":16)";
  struct Case {
    std::string json, named;
  };
  const Case cases[] = {
      {R"({"model_type":"bert","architectures":["BertModel"],"auto_map":{"AutoConfig":)"
       R"("jinaai/jina-bert-implementation--configuration_bert.JinaBertConfig","AutoModel":)"
       R"("jinaai/jina-bert-implementation--modeling_bert.JinaBertModel"},)" + shape + "}",
       "JinaBertConfig"},
      {R"({"model_type":"xlm-roberta","architectures":["XLMRobertaModel"],"auto_map":{"AutoConfig":)"
       R"("jinaai/xlm-roberta-flash-implementation--configuration_xlm_roberta.XLMRobertaFlashConfig",)"
       R"("AutoModel":"jinaai/xlm-roberta-flash-implementation--modeling_xlm_roberta.XLMRobertaModel"},)" + shape +
           "}",
       "XLMRobertaFlashConfig"},
      // A classifier is checked through the class it loads with, not AutoModel.
      {R"({"architectures":["BertForSequenceClassification"],"auto_map":{"AutoModelForSequenceClassification":)"
       R"("custom_head.BertWithCustomHead"},)" + shape + "}",
       "BertWithCustomHead"},
  };
  for (const Case& c : cases) {
    TempDir dir;
    WriteFile(dir.File("config.json"), c.json);
    auto config = ReadModelConfig(dir.File("config.json"));
    ASSERT_FALSE(config.ok()) << c.named;
    EXPECT_NE(config.status().message().find("'" + c.named + "'"), std::string::npos) << config.status().message();
  }
  // A tokenizer's auto_map entry is no model code.
  TempDir dir;
  WriteFile(dir.File("config.json"), R"({"architectures":["BertModel"],"auto_map":{"AutoTokenizer":["a.B", null]},)" +
                                         shape + "}");
  EXPECT_TRUE(ReadModelConfig(dir.File("config.json")).ok());
}

// EuroBertForSequenceClassification: each classifier_pooling as transformers 5.25 names it, the hub's
// clf_pooling, the default "late", and a pooling transformers lacks refused by name. (Logits against
// transformers, alone and packed: golden_test.cc's tiny-eurobert-reranker-late, -reranker-bos-bf16 and
// -classifier-mean.)
TEST(BidirectionalEncodersTest, EuroBertClassifierPoolingsRead) {
  auto late = ReadModelConfig(kData + "tiny-eurobert-reranker-late/config.json");
  ASSERT_TRUE(late.ok()) << late.status().message();
  EXPECT_EQ(late->family, ModelFamily::kEuroBert);
  EXPECT_EQ(late->head, ModelHead::kSequenceClassification);
  EXPECT_EQ(late->num_labels, 1);
  EXPECT_EQ(late->classifier_pooling, ops::PoolingMode::kMean);
  EXPECT_TRUE(late->classifier_late_pooling);  // from the hub's clf_pooling
  EXPECT_EQ(late->classifier_activation, ops::Activation::kGeluErf);
  auto bos = ReadModelConfig(kData + "tiny-eurobert-reranker-bos-bf16/config.json");
  ASSERT_TRUE(bos.ok()) << bos.status().message();
  EXPECT_EQ(bos->classifier_pooling, ops::PoolingMode::kCls);
  EXPECT_FALSE(bos->classifier_late_pooling);
  auto mean = ReadModelConfig(kData + "tiny-eurobert-classifier-mean/config.json");
  ASSERT_TRUE(mean.ok()) << mean.status().message();
  EXPECT_EQ(mean->classifier_pooling, ops::PoolingMode::kMean);
  EXPECT_FALSE(mean->classifier_late_pooling);
  EXPECT_EQ(mean->id2label, (std::vector<std::string>{"negative", "neutral", "positive"}));

  // No pooling key: EuroBertConfig's default, "late".
  std::string json = ReadText(kData + "tiny-eurobert-classifier-mean/config.json");
  const std::string key = R"("classifier_pooling": "mean",)";
  ASSERT_NE(json.find(key), std::string::npos);
  json.erase(json.find(key), key.size());
  TempDir dir;
  WriteFile(dir.File("config.json"), json);
  auto defaulted = ReadModelConfig(dir.File("config.json"));
  ASSERT_TRUE(defaulted.ok()) << defaulted.status().message();
  EXPECT_TRUE(defaulted->classifier_late_pooling);

  // Poolings transformers' EuroBertForSequenceClassification lacks ("cls" is ModernBERT's name).
  for (const std::string unknown : {"cls", "max"}) {
    const std::string error = EditedConfigError("tiny-eurobert-classifier-mean", R"("classifier_pooling": "mean")",
                                                R"("classifier_pooling": ")" + unknown + "\"");
    EXPECT_NE(error.find("'classifier_pooling'"), std::string::npos) << error;
    EXPECT_NE(error.find("'" + unknown + "'"), std::string::npos) << error;
  }
  const std::string hub_error =
      EditedConfigError("tiny-eurobert-reranker-late", R"("clf_pooling": "late")", R"("clf_pooling": "last")");
  EXPECT_NE(hub_error.find("'clf_pooling'"), std::string::npos) << hub_error;
  EXPECT_NE(hub_error.find("'last'"), std::string::npos) << hub_error;
}

// A EuroBERT classifier handed to a reader that is not EuroBERT's (its architecture renamed to
// another family's classifier) is refused by its auto_map, naming the remote class; and a hub
// folder whose AutoModelForSequenceClassification names a class EuroBERT's code lacks is refused.
TEST(BidirectionalEncodersTest, EuroBertClassifierRemoteCodeOfAnotherReaderIsRefused) {
  for (const char* base : {"LlamaForSequenceClassification", "Qwen3ForSequenceClassification", "BertForSequenceClassification"}) {
    const std::string error = EditedConfigError("tiny-eurobert-reranker-late", "\"EuroBertForSequenceClassification\"\n",
                                                std::string("\"") + base + "\"\n");
    EXPECT_NE(error.find("'EuroBertConfig'"), std::string::npos) << base << ": " << error;
    EXPECT_NE(error.find("does not implement"), std::string::npos) << error;
  }
  const std::string custom = EditedConfigError("tiny-eurobert-reranker-late",
                                               "modeling_eurobert.EuroBertForSequenceClassification",
                                               "modeling_eurobert.EuroBertForRanking");
  EXPECT_NE(custom.find("'EuroBertForRanking'"), std::string::npos) << custom;
  // Without the remote code's auto_map, transformers' own layout reads as EuroBERT only under its name.
  auto native = ReadModelConfig(kData + "tiny-eurobert-reranker-bos-bf16/config.json");
  ASSERT_TRUE(native.ok()) << native.status().message();
  EXPECT_EQ(native->architecture, "EuroBertForSequenceClassification");
}

// A fine-tune of the hub's first modeling_eurobert.py names the head's output layer out_proj (the
// later code and transformers: classifier); the same forward, so the same logits: the late
// reranker's tensors with classifier.* renamed, every sequence alone and packed, against its goldens.
TEST(BidirectionalEncodersTest, EuroBertClassifierWithOutProjNamesMatchesTransformers) {
  const std::string folder = kData + "tiny-eurobert-reranker-late/";
  auto weights = WeightStore::OpenFile(folder + "model.safetensors");
  ASSERT_TRUE(weights.ok()) << weights.status().message();
  testing::SafetensorsBuilder renamed;
  bool had_classifier = false;
  for (const std::string& name : weights->Names()) {
    auto tensor = weights->Load(name);
    ASSERT_TRUE(tensor.ok()) << tensor.status().message();
    std::vector<int64_t> shape;
    for (int axis = 0; axis < tensor->rank(); ++axis) shape.push_back(tensor->dim(axis));
    const float* values = tensor->data<float>();
    const bool head = name.starts_with("classifier.");
    had_classifier = had_classifier || head;
    renamed.AddFloats(head ? "out_proj." + name.substr(11) : name, shape,
                      std::vector<float>(values, values + tensor->NumElements()));
  }
  ASSERT_TRUE(had_classifier);
  TempDir dir;
  WriteFile(dir.File("config.json"), ReadText(folder + "config.json"));
  WriteFile(dir.File("model.safetensors"), renamed.Bytes());
  auto engine = Engine::Load(dir.File(""), {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = WeightStore::OpenFile(folder + "golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  std::vector<int32_t> ids, bounds = {0};
  std::vector<float> expected;
  for (int i = 0; i < 6; ++i) {
    auto sequence = golden->Load("input_ids_" + std::to_string(i), DataType::kI64);
    auto logits = golden->Load("logits_" + std::to_string(i));
    ASSERT_TRUE(sequence.ok() && logits.ok());
    ids.insert(ids.end(), sequence->data<int64_t>(), sequence->data<int64_t>() + sequence->NumElements());
    bounds.push_back(static_cast<int32_t>(ids.size()));
    expected.push_back(logits->data<float>()[0]);
  }
  auto scores = (*engine)->Step({ids, bounds, {}}, {.output = StepOutput::kScores});
  ASSERT_TRUE(scores.ok() && scores->Wait().ok());
  for (int i = 0; i < 6; ++i) EXPECT_NEAR(scores->Row(i)[0], expected[i], 1e-4) << "sequence " << i;
}

// pplx-embed-v1 serves round(127·tanh(mean)): every value an integer within 0.5 of the float64
// 127·tanh(mean) (a rounding flip is allowed only there), and nearly all equal to its rounding.
TEST(BidirectionalEncodersTest, PplxServesInt8MeanVectors) {
  auto engine = Engine::Load(kData + "tiny-pplx-embed", {.num_threads = 1});
  ASSERT_TRUE(engine.ok()) << engine.status().message();
  auto golden = WeightStore::OpenFile(kData + "tiny-pplx-embed/golden.safetensors");
  ASSERT_TRUE(golden.ok()) << golden.status().message();
  int64_t values = 0, equal = 0;
  double worst_hidden = 0.0;
  for (int i = 0; i < 6; ++i) {
    const std::string index = std::to_string(i);
    auto ids64 = golden->Load("input_ids_" + index, DataType::kI64);
    ASSERT_TRUE(ids64.ok());
    const std::vector<int32_t> ids(ids64->data<int64_t>(), ids64->data<int64_t>() + ids64->NumElements());
    const std::vector<int32_t> bounds = {0, static_cast<int32_t>(ids.size())};
    auto served = (*engine)->Step({ids, bounds, {}}, {.pooling = ops::PoolingMode::kMean});
    ASSERT_TRUE(served.ok() && served->Wait().ok());
    auto scaled = golden->Load("scaled_tanh_mean_" + index);
    auto rounded = golden->Load("int8_mean_" + index);
    ASSERT_TRUE(scaled.ok() && rounded.ok());
    for (int64_t j = 0; j < scaled->NumElements(); ++j) {
      const float value = served->values().data<float>()[j];
      EXPECT_EQ(value, std::nearbyint(value)) << "sequence " << i << " value " << j;
      EXPECT_LE(std::abs(value - scaled->data<float>()[j]), 0.5 + 1e-3) << "sequence " << i << " value " << j;
      equal += value == rounded->data<float>()[j];
      ++values;
    }
    auto tokens = (*engine)->Step({ids, bounds, {}}, {.output = StepOutput::kTokenEmbeddings});
    ASSERT_TRUE(tokens.ok() && tokens->Wait().ok());
    auto hidden = golden->Load("last_hidden_state_" + index);
    ASSERT_TRUE(hidden.ok());
    for (int64_t j = 0; j < hidden->NumElements(); ++j) {
      worst_hidden = std::max(worst_hidden, double{std::abs(tokens->values().data<float>()[j] - hidden->data<float>()[j])});
    }
  }
  EXPECT_GE(equal, values - 2) << "of " << values << " values";
  EXPECT_LE(worst_hidden, 1e-4);
  std::cout << "[ golden   ] tiny-pplx-embed: int8 vectors equal to transformers' in " << equal << " of " << values
            << " values; last hidden state max abs error " << worst_hidden << "\n";
  // Normalised when asked, as TEI does (the int8 scale is then gone): unit length.
  const std::vector<int32_t> ids = {5, 17, 99}, bounds = {0, 3};
  auto step = (*engine)->Step({ids, bounds, {}}, {.pooling = ops::PoolingMode::kMean});
  ASSERT_TRUE(step.ok() && step->Wait().ok());
  std::vector<float> normalized(step->Row(0).size());
  ASSERT_TRUE(FinishRows(*step, 0, 1, static_cast<int64_t>(normalized.size()), true, normalized.data()).ok());
  double norm = 0.0;
  for (float v : normalized) norm += double{v} * v;
  EXPECT_NEAR(norm, 1.0, 1e-5);
}

}  // namespace
}  // namespace stamen::engine
