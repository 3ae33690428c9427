// Tensor basics, and the safetensors reader and weight store on files written by the test,
// valid and corrupted: every failure must be an error naming the file and the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/engine.h"
#include "engine/safetensors.h"
#include "engine/tensor.h"
#include "engine/weight_store.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

using testing::SafetensorsBuilder;
using testing::TempDir;
using testing::WriteFile;

std::string Halves(const std::vector<uint16_t>& values) {
  std::string bytes(values.size() * 2, '\0');
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST(TensorTest, AllocatesAlignedZeroedMemoryAndViews) {
  auto tensor = Tensor::Allocate(DataType::kF32, {3, 5});
  ASSERT_TRUE(tensor.ok()) << tensor.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(tensor->raw_data()) % Tensor::kAlignment, 0u);
  EXPECT_EQ(tensor->NumElements(), 15);
  EXPECT_EQ(tensor->NumBytes(), 60u);
  EXPECT_TRUE(tensor->owns_memory());
  for (int i = 0; i < 15; ++i) EXPECT_EQ(tensor->data<float>()[i], 0.0f);
  tensor->data<float>()[7] = 2.5f;
  Tensor rows = tensor->Rows(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 5}));
  EXPECT_EQ(rows.data<float>()[2], 2.5f);
  EXPECT_EQ(tensor->View({15}).data<float>()[7], 2.5f);
  EXPECT_TRUE(tensor->View({4, 4}).empty());  // larger than the buffer
  EXPECT_TRUE(tensor->Rows(2, 4).empty());
  EXPECT_EQ(tensor->Describe(), "F32[3, 5] cpu");
}

TEST(TensorTest, ViewKeepsOwnerAlive) {
  Tensor view;
  {
    auto tensor = Tensor::Allocate(DataType::kI64, {4});
    ASSERT_TRUE(tensor.ok());
    tensor->data<int64_t>()[3] = 42;
    view = tensor->Rows(2, 4);
  }
  EXPECT_EQ(view.data<int64_t>()[1], 42);  // ASan would flag a use after free
}

TEST(TensorTest, RejectsBadShapesAndDevices) {
  EXPECT_FALSE(Tensor::Allocate(DataType::kF32, {1 << 30, 1 << 30, 1 << 30}).ok());
  EXPECT_FALSE(Tensor::Allocate(DataType::kF32, {-1}).ok());
#if !STAMEN_WITH_CUDA
  EXPECT_FALSE(Tensor::Allocate(DataType::kF32, {4}, Device::kCuda).ok());  // no backend
#endif
  const std::vector<int64_t> five = {1, 2, 3, 4, 5};
  EXPECT_FALSE(Shape::FromDims(five).ok());
}

TEST(SafetensorsTest, ReadsF32AsViewAndConvertsHalfFormats) {
  TempDir dir;
  SafetensorsBuilder builder;
  builder.AddFloats("weight", {2, 2}, {1.0f, -2.0f, 0.5f, 3.25f});
  // F16: 1.0, -2.0, 0.5, 65504 (largest), 2^-24 (smallest subnormal); BF16: 1.0, -3.0.
  builder.Add("half", "F16", {5}, Halves({0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001}));
  builder.Add("brain", "BF16", {2}, Halves({0x3F80, 0xC040}));
  builder.Add("ids", "I64", {2}, std::string("\x07\0\0\0\0\0\0\0\x09\0\0\0\0\0\0\0", 16));
  WriteFile(dir.File("model.safetensors"), builder.Bytes());

  auto file = SafetensorsFile::Open(dir.File("model.safetensors"));
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ((*file)->metadata().at("format"), "pt");
  ASSERT_EQ((*file)->entries().size(), 4u);

  auto weight = (*file)->Load(*(*file)->Find("weight"), DataType::kF32);
  ASSERT_TRUE(weight.ok()) << weight.status().message();
  EXPECT_EQ(weight->shape(), (Shape{2, 2}));
  EXPECT_EQ(weight->data<float>()[3], 3.25f);

  auto half = (*file)->Load(*(*file)->Find("half"), DataType::kF32);
  ASSERT_TRUE(half.ok()) << half.status().message();
  const std::vector<float> expected_half = {1.0f, -2.0f, 0.5f, 65504.0f, 5.9604645e-08f};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(half->data<float>()[i], expected_half[i]) << i;

  auto brain = (*file)->Load(*(*file)->Find("brain"), DataType::kF32);
  ASSERT_TRUE(brain.ok());
  EXPECT_EQ(brain->data<float>()[0], 1.0f);
  EXPECT_EQ(brain->data<float>()[1], -3.0f);

  auto ids = (*file)->Load(*(*file)->Find("ids"), DataType::kI64);
  ASSERT_TRUE(ids.ok());
  EXPECT_EQ(ids->data<int64_t>()[1], 9);
  auto ids_as_float = (*file)->Load(*(*file)->Find("ids"), DataType::kF32);
  ASSERT_FALSE(ids_as_float.ok());
  EXPECT_NE(ids_as_float.status().message().find("'ids'"), std::string::npos);
}

TEST(SafetensorsTest, CopiesUnalignedData) {
  TempDir dir;
  SafetensorsBuilder builder;
  builder.AddFloats("w", {3}, {1.5f, 2.5f, 3.5f});
  std::string header = builder.Header() + " ";  // trailing blanks are valid JSON; misalign the data
  while ((8 + header.size()) % 4 == 0) header += " ";
  WriteFile(dir.File("model.safetensors"), builder.Bytes(header));
  auto store = WeightStore::OpenDirectory(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto w = store->Load("w");
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->raw_data()) % 4, 0u);
  EXPECT_EQ(w->data<float>()[2], 3.5f);
}

// Opens bytes written as a file and returns the error message (empty if it opened).
std::string OpenError(const std::string& bytes) {
  TempDir dir;
  WriteFile(dir.File("broken.safetensors"), bytes);
  auto file = SafetensorsFile::Open(dir.File("broken.safetensors"));
  if (file.ok()) return "";
  EXPECT_NE(file.status().message().find("broken.safetensors"), std::string::npos) << file.status().message();
  return file.status().message();
}

TEST(SafetensorsTest, RejectsTruncatedFiles) {
  SafetensorsBuilder builder;
  builder.AddFloats("encoder.weight", {4}, {1, 2, 3, 4});
  const std::string bytes = builder.Bytes();
  EXPECT_NE(OpenError(bytes.substr(0, 5)).find("shorter than the 8-byte header length"), std::string::npos);
  EXPECT_NE(OpenError(bytes.substr(0, 20)).find("runs past the end of the file"), std::string::npos);
  const std::string cut = OpenError(bytes.substr(0, bytes.size() - 1));
  EXPECT_NE(cut.find("'encoder.weight'"), std::string::npos) << cut;
  EXPECT_NE(cut.find("outside the data area"), std::string::npos) << cut;
}

TEST(SafetensorsTest, RejectsBadHeaders) {
  SafetensorsBuilder builder;
  builder.AddFloats("w", {2}, {1, 2});
  std::string huge = builder.Bytes();
  const uint64_t length = uint64_t{1} << 40;
  std::memcpy(huge.data(), &length, 8);
  EXPECT_NE(OpenError(huge).find("exceeds the limit"), std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes("{not json")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes("[1,2]")).find("not a JSON object"), std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes(R"({"w":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}})")).find("unknown dtype 'F33'"),
            std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})")).find("needs 12"),
            std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes(R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})")).find("\"shape\""),
            std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})")).find("outside"),
            std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes(R"({"w":{"dtype":"F32","shape":[2]}})")).find("data_offsets"), std::string::npos);
  EXPECT_NE(OpenError(builder.Bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})"))
                .find("overlap"),
            std::string::npos);
}

TEST(SafetensorsTest, UnsupportedDtypeFailsOnlyWhenLoaded) {
  TempDir dir;
  SafetensorsBuilder builder;
  builder.Add("doubles", "F64", {1}, std::string(8, '\0'));
  builder.AddFloats("w", {1}, {7.0f});
  WriteFile(dir.File("model.safetensors"), builder.Bytes());
  auto store = WeightStore::OpenDirectory(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().message();
  EXPECT_TRUE(store->Load("w").ok());
  auto doubles = store->Load("doubles");
  ASSERT_FALSE(doubles.ok());
  EXPECT_NE(doubles.status().message().find("'doubles' has dtype F64"), std::string::npos);
}

TEST(WeightStoreTest, ReportsMissingTensorsAndShapeMismatches) {
  TempDir dir;
  SafetensorsBuilder builder;
  builder.AddFloats("layer.weight", {2, 3}, {1, 2, 3, 4, 5, 6});
  WriteFile(dir.File("model.safetensors"), builder.Bytes());
  auto store = WeightStore::OpenDirectory(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto missing = store->Load("layer.bias");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing tensor 'layer.bias'"), std::string::npos);
  EXPECT_NE(missing.status().message().find("model.safetensors"), std::string::npos);
  auto wrong = store->Load("layer.weight", Shape{3, 2});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("has shape [2, 3], expected [3, 2]"), std::string::npos);
  EXPECT_TRUE(store->Load("layer.weight", Shape{2, 3}).ok());
}

TEST(WeightStoreTest, ReadsShardedIndex) {
  TempDir dir;
  SafetensorsBuilder first;
  first.AddFloats("a.weight", {2}, {1, 2});
  SafetensorsBuilder second;
  second.AddFloats("b.weight", {1}, {3});
  WriteFile(dir.File("model-00001-of-00002.safetensors"), first.Bytes());
  WriteFile(dir.File("model-00002-of-00002.safetensors"), second.Bytes());
  WriteFile(dir.File("model.safetensors.index.json"),
            R"({"metadata":{"total_size":12},"weight_map":{"a.weight":"model-00001-of-00002.safetensors",)"
            R"("b.weight":"model-00002-of-00002.safetensors"}})");
  auto store = WeightStore::OpenDirectory(dir.path());
  ASSERT_TRUE(store.ok()) << store.status().message();
  auto b = store->Load("b.weight");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->data<float>()[0], 3.0f);
  EXPECT_EQ(store->Names().size(), 2u);

  WriteFile(dir.File("model.safetensors.index.json"),
            R"({"weight_map":{"c.weight":"model-00001-of-00002.safetensors"}})");
  auto wrong = WeightStore::OpenDirectory(dir.path());
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("'c.weight'"), std::string::npos) << wrong.status().message();

  WriteFile(dir.File("model.safetensors.index.json"), R"({"weight_map":{"a.weight":"../escape.safetensors"}})");
  EXPECT_FALSE(WeightStore::OpenDirectory(dir.path()).ok());
}

TEST(WeightStoreTest, EmptyFolderNamesWhatIsMissing) {
  TempDir dir;
  auto store = WeightStore::OpenDirectory(dir.path());
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("no model.safetensors"), std::string::npos);
}

// The golden tiny BERT (2 layers) with config.json's num_hidden_layers set to `layers`.
// This project's tiny BERT (2 layers; also in the GPU bundle, which leaves ../shared's 8 MB
// tiny-bert out) with `layers` in its config.
std::string TinyBertWithLayers(const TempDir& dir, int64_t layers) {
  const std::string golden = std::string(STAMEN_ENGINE_TEST_DATA) + "/tiny-bert-classifier";
  std::filesystem::copy_file(golden + "/model.safetensors", dir.File("model.safetensors"));
  std::stringstream config;
  config << std::ifstream(golden + "/config.json").rdbuf();
  std::string text = config.str();
  const std::string key = "\"num_hidden_layers\": 2";
  const size_t at = text.find(key);
  EXPECT_NE(at, std::string::npos) << text;
  text.replace(at, key.size(), "\"num_hidden_layers\": " + std::to_string(layers));
  WriteFile(dir.File("config.json"), text);
  return dir.path();
}

// A layer count the weights cannot hold is refused, naming the key, before the model is built:
// 2e9 layers once aborted loading with an uncaught std::bad_alloc, 1e6 allocated 3.5 GB first.
TEST(EngineLoadTest, LayerCountsBeyondTheWeightsAreRefusedBeforeAllocation) {
  for (const int64_t layers : {int64_t{2'000'000'000}, int64_t{1'000'000}, int64_t{50'000}, int64_t{3}}) {
    TempDir dir;
    auto engine = Engine::Load(TinyBertWithLayers(dir, layers), {.num_threads = 1});
    ASSERT_FALSE(engine.ok()) << layers;
    const std::string message = engine.status().message();
    EXPECT_NE(message.find("key 'num_hidden_layers' is " + std::to_string(layers)), std::string::npos) << message;
    if (layers <= 100'000) {
      EXPECT_NE(message.find("the weights hold the tensors of at most 2 layers"), std::string::npos) << message;
    }
  }
  TempDir dir;
  auto engine = Engine::Load(TinyBertWithLayers(dir, 2), {.num_threads = 1});
  EXPECT_TRUE(engine.ok()) << engine.status().message();
}

}  // namespace
}  // namespace stamen::engine
