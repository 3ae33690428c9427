// Proves that steady-state encoding allocates nothing: once an Encoding and a Scratch have
// been used for a text, encoding it (or any smaller text) again makes no heap allocation.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/allocation_counter.h"
#include "edge_cases.h"
#include "test_corpus.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {
namespace {

using bench::AllocationCount;
using testing::SharedPath;

constexpr int kRepetitions = 50;

// A multilingual text with spaces, punctuation, a special-token string, an unknown
// character and invalid UTF-8, so every encoder path is taken.
const std::string kText =
    "Hello world, this is a test. Всеобщая декларация прав человека. 世界人権宣言 "
    "<mask> 𐌰𐌱 caf\xC3\xA9  \xFF\x80 nnn ーーーー 12345 e\xCC\x81 <|endoftext|> it's\n\n  x " +
    testing::Repeat("吾輩は猫である", 20);
const std::string kOther = "All human beings are born free and equal in dignity and rights.";

class AllocationTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    // Loaded once per model for the whole binary: the 250k files take about a second each.
    static std::map<std::string, std::unique_ptr<Tokenizer>> loaded_models;
    std::unique_ptr<Tokenizer>& model = loaded_models[GetParam()];
    if (model == nullptr) {
      auto loaded = Tokenizer::Load(SharedPath(GetParam()));
      ASSERT_TRUE(loaded.ok()) << loaded.status().message();
      model = std::move(loaded.value());
    }
    tokenizer_ = model.get();
  }
  const Tokenizer* tokenizer_ = nullptr;
};

TEST_P(AllocationTest, RepeatedEncodeAllocatesNothing) {
  for (const bool add_special_tokens : {true, false}) {
    EncodeOptions options;
    options.add_special_tokens = add_special_tokens;
    Encoding encoding;
    Scratch scratch;
    tokenizer_->Encode(kText, options, &encoding, &scratch);  // warm-up: buffers grow here
    const std::vector<int32_t> expected = encoding.ids;
    const uint64_t before = AllocationCount();
    for (int i = 0; i < kRepetitions; ++i) tokenizer_->Encode(kText, options, &encoding, &scratch);
    const uint64_t allocations = AllocationCount() - before;
    EXPECT_EQ(allocations, 0u) << kRepetitions << " Encode calls, add_special_tokens=" << add_special_tokens;
    EXPECT_EQ(encoding.ids, expected);
  }
}

TEST_P(AllocationTest, RepeatedEncodePairAllocatesNothing) {
  EncodeOptions options;
  Encoding encoding;
  Scratch scratch;
  tokenizer_->EncodePair(kText, kOther, options, &encoding, &scratch);
  const uint64_t before = AllocationCount();
  for (int i = 0; i < kRepetitions; ++i) tokenizer_->EncodePair(kText, kOther, options, &encoding, &scratch);
  EXPECT_EQ(AllocationCount() - before, 0u) << kRepetitions << " EncodePair calls";
  // Truncation only shrinks vectors, so it allocates nothing either.
  options.max_length = 16;
  tokenizer_->EncodePair(kText, kOther, options, &encoding, &scratch);
  const uint64_t before_truncated = AllocationCount();
  for (int i = 0; i < kRepetitions; ++i) tokenizer_->EncodePair(kText, kOther, options, &encoding, &scratch);
  EXPECT_EQ(AllocationCount() - before_truncated, 0u) << kRepetitions << " truncated EncodePair calls";
  EXPECT_EQ(encoding.ids.size(), 16u);
}

// A server reuses one Encoding and Scratch for different texts: after one pass over a
// corpus sample, a second pass over the same texts must not allocate.
TEST_P(AllocationTest, SecondPassOverCorpusAllocatesNothing) {
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  ASSERT_FALSE(udhr.empty());
  std::vector<std::string_view> texts;
  for (size_t i = 0; i < udhr.size(); i += 97) texts.push_back(udhr[i].text);
  EncodeOptions options;
  Encoding encoding;
  Scratch scratch;
  for (std::string_view text : texts) tokenizer_->Encode(text, options, &encoding, &scratch);
  const uint64_t before = AllocationCount();
  for (std::string_view text : texts) tokenizer_->Encode(text, options, &encoding, &scratch);
  EXPECT_EQ(AllocationCount() - before, 0u) << "second pass over " << texts.size() << " udhr lines";
}

// The counter must see allocations at all, or the tests above would pass vacuously.
TEST(AllocationCounterTest, CountsAllocations) {
  volatile size_t size = 1000;  // volatile: the compiler may not elide the allocation
  const uint64_t before = AllocationCount();
  std::vector<char> buffer(size, 'x');
  EXPECT_GE(AllocationCount() - before, 1u);
  EXPECT_EQ(buffer.size(), 1000u);
}

INSTANTIATE_TEST_SUITE_P(Models, AllocationTest,
                         ::testing::Values("models/synthetic-unigram-250k/sentencepiece.bpe.model",
                                           "models/synthetic-unigram-250k/tokenizer.json",
                                           "models/qwen2-bpe/tokenizer.json", "models/qwen2-bpe/vocab.json"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           const std::string_view path = info.param;
                           if (path.starts_with("models/qwen2-bpe/")) {
                             return std::string(path.ends_with("tokenizer.json") ? "qwen2_bpe_tokenizer_json"
                                                                                 : "qwen2_bpe_vocab_json");
                           }
                           const bool json = path.ends_with(".json");
                           return std::string(json ? "tokenizer_json" : "sentencepiece_model");
                         });

}  // namespace
}  // namespace stamen::tokenizer
