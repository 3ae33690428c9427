// The reader of torch.save files (engine/torch_file.h, engine/zip_archive.h) against files that
// torch.save itself wrote (tools/make_bge_m3_goldens.py, tests/engine/data/torch-files): a Linear's
// state dict, F16 and BF16 tensors, views with strides and a storage offset into a shared storage;
// and the files it must refuse by name: a state dict holding an int, a pickled module (a class
// global), compressed entries, the legacy non-zip format, a truncated file, a pickle patched to
// name another global, and hand-made pickles of a dict inside itself.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <string>
#include <vector>

#include "engine/torch_file.h"
#include "engine/zip_archive.h"
#include "test_files.h"

namespace stamen::engine {
namespace {

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/torch-files/";

// Each tensor of `file` against the values torch saved (reference.json), exactly: F16 and BF16
// widen to F32 without rounding.
void ExpectMatchesReference(const std::string& file) {
  simdjson::dom::parser parser;
  simdjson::dom::element reference = parser.load(kData + "reference.json").value()[file].value();
  auto state = TorchStateDict::Open(kData + file);
  ASSERT_TRUE(state.ok()) << state.status().message();
  size_t count = 0;
  for (auto [key, expected] : reference.get_object()) {
    ++count;
    auto tensor = state->Get(std::string(key));
    ASSERT_TRUE(tensor.ok()) << tensor.status().message();
    std::vector<int64_t> shape;
    for (simdjson::dom::element dim : expected["shape"].get_array()) shape.push_back(int64_t(dim));
    ASSERT_EQ(tensor->rank(), static_cast<int>(shape.size())) << key;
    for (size_t axis = 0; axis < shape.size(); ++axis) EXPECT_EQ(tensor->dim(static_cast<int>(axis)), shape[axis]) << key;
    ASSERT_EQ(tensor->dtype(), DataType::kF32);
    size_t i = 0;
    for (simdjson::dom::element value : expected["values"].get_array()) {
      ASSERT_LT(i, static_cast<size_t>(tensor->NumElements()));
      EXPECT_EQ(tensor->data<float>()[i], static_cast<float>(double(value))) << key << " element " << i;
      ++i;
    }
    EXPECT_EQ(i, static_cast<size_t>(tensor->NumElements())) << key;
  }
  EXPECT_EQ(state->Names().size(), count);
}

TEST(TorchFileTest, ReadsALinearStateDict) {
  ExpectMatchesReference("linear.pt");
  auto state = TorchStateDict::Open(kData + "linear.pt");
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->Names(), (std::vector<std::string>{"bias", "weight"}));
  EXPECT_TRUE(state->Get("weight", Shape{2, 3}).ok());
  auto wrong = state->Get("weight", Shape{3, 2});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("has shape [2, 3], expected [3, 2]"), std::string::npos) << wrong.status().message();
  auto missing = state->Get("running_mean");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no tensor 'running_mean'"), std::string::npos);
}

TEST(TorchFileTest, WidensHalfAndBFloat16) { ExpectMatchesReference("half.pt"); }

TEST(TorchFileTest, HonoursStridesAndStorageOffsets) { ExpectMatchesReference("views.pt"); }

// The message of opening `file` (which must fail).
std::string Refusal(const std::string& path) {
  auto state = TorchStateDict::Open(path);
  EXPECT_FALSE(state.ok()) << path;
  return state.ok() ? "" : state.status().message();
}

TEST(TorchFileTest, RefusesAValueThatIsNotATensor) {
  const std::string message = Refusal(kData + "int_value.pt");
  EXPECT_NE(message.find("'step' holds an int, not a tensor"), std::string::npos) << message;
}

TEST(TorchFileTest, RefusesEveryOtherGlobalByName) {
  const std::string message = Refusal(kData + "module.pt");
  EXPECT_NE(message.find("refuses the pickled global 'torch.nn.modules.linear.Linear'"), std::string::npos) << message;
  // A pickle patched to call os.system instead of OrderedDict: refused before anything runs.
  std::string bytes = testing::ReadText(kData + "linear.pt");
  const std::string from = "ccollections\nOrderedDict\n", to = "cos\nsystem\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n";
  ASSERT_EQ(from.size(), to.size());
  size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, from.size(), to);
  testing::TempDir dir;
  testing::WriteFile(dir.File("patched.pt"), bytes);
  const std::string patched = Refusal(dir.File("patched.pt"));
  EXPECT_NE(patched.find("refuses the pickled global 'os.system'"), std::string::npos) << patched;
}

// Hand-made pickles no torch.save writes: a value held by itself would never be freed, so a dict
// or list may change only while it is inside no other value.
TEST(TorchFileTest, RefusesValuesThatHoldThemselves) {
  const std::string cycle = Refusal(kData + "cycle.pt");
  EXPECT_NE(cycle.find("puts a value inside itself"), std::string::npos) << cycle;
  const std::string nested = Refusal(kData + "nested_change.pt");
  EXPECT_NE(nested.find("changes a dict or list that is already inside another value"), std::string::npos) << nested;
}

// linear.pt with its weight's storage said to hold 5 elements instead of 6: its [2, 3] view would
// read past the end.
TEST(TorchFileTest, RefusesAViewOutsideItsStorage) {
  std::string bytes = testing::ReadText(kData + "linear.pt");
  const std::string from = "cpuq\x07K\x06t", to = "cpuq\x07K\x05t";
  const size_t at = bytes.find(from);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, from.size(), to);
  testing::TempDir dir;
  testing::WriteFile(dir.File("short.pt"), bytes);
  const std::string message = Refusal(dir.File("short.pt"));
  EXPECT_NE(message.find("'weight' reads outside its storage of 5 elements"), std::string::npos) << message;
}

TEST(TorchFileTest, RefusesCompressedEntriesAndOtherFormats) {
  const std::string deflated = Refusal(kData + "deflated.pt");
  EXPECT_NE(deflated.find("is compressed"), std::string::npos) << deflated;
  const std::string legacy = Refusal(kData + "legacy.pt");
  EXPECT_NE(legacy.find("not a readable zip archive"), std::string::npos) << legacy;
  const std::string bytes = testing::ReadText(kData + "linear.pt");
  testing::TempDir dir;
  testing::WriteFile(dir.File("truncated.pt"), bytes.substr(0, bytes.size() - 30));
  EXPECT_NE(Refusal(dir.File("truncated.pt")).find("not a readable zip archive"), std::string::npos);
  testing::WriteFile(dir.File("empty.pt"), "");
  EXPECT_FALSE(Refusal(dir.File("empty.pt")).empty());
}

TEST(ZipArchiveTest, ListsAndReadsStoredEntries) {
  auto archive = ZipArchive::Open(kData + "linear.pt");
  ASSERT_TRUE(archive.ok()) << archive.status().message();
  EXPECT_TRUE(archive->Contains("linear/data.pkl"));
  auto order = archive->Read("linear/byteorder");
  ASSERT_TRUE(order.ok()) << order.status().message();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(order->data()), order->size()), "little");
  EXPECT_FALSE(archive->Read("linear/none").ok());
}

}  // namespace
}  // namespace stamen::engine
