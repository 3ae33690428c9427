// The model-folder tokenizer: an XLM-R folder with only sentencepiece.bpe.model must give the
// ids and template its tokenizer.json gives (fairseq's id shift), on the real XLM-R pieces of
// ../shared/models/xlmr-trimmed-32k and the UDHR corpus; transformers' longest-first split of
// a pair; and the models' maximum lengths.
#include <stdlib.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "model_folder/model_tokenizer.h"
#include "temp_dir.h"

namespace stamen::engine {
namespace {

namespace fs = std::filesystem;
const std::string kShared = STAMEN_SHARED_DIR;
const std::string kXlmr = kShared + "/models/xlmr-trimmed-32k";

using stamen::test::TempDir;

ModelConfig XlmrConfig() {
  ModelConfig config;
  config.architecture = "XLMRobertaModel";
  config.family = ModelFamily::kRoberta;
  config.max_position_embeddings = 514;
  config.pad_token_id = 1;
  config.position_offset = 2;  // as the family reader sets it: pad_token_id + 1
  return config;
}

// Two folders with the same XLM-R vocabulary: one holding only sentencepiece.bpe.model, one
// only tokenizer.json.
class XlmrFolders : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(fs::path(spm_dir_.path()));
    fs::copy_file(kXlmr + "/sentencepiece.bpe.model", spm_dir_.path() + "/sentencepiece.bpe.model");
    fs::copy_file(kXlmr + "/tokenizer.json", json_dir_.path() + "/tokenizer.json");
    auto spm = ModelTokenizer::Load(spm_dir_.path(), XlmrConfig());
    ASSERT_TRUE(spm.ok()) << spm.status().message();
    auto json = ModelTokenizer::Load(json_dir_.path(), XlmrConfig());
    ASSERT_TRUE(json.ok()) << json.status().message();
    spm_ = std::move(spm.value());
    json_ = std::move(json.value());
  }
  TempDir spm_dir_, json_dir_;
  std::unique_ptr<ModelTokenizer> spm_, json_;
};

TEST_F(XlmrFolders, PicksTheFileAndMapping) {
  EXPECT_EQ(spm_->kind(), ModelTokenizer::Kind::kFairseqSentencePiece);
  EXPECT_EQ(json_->kind(), ModelTokenizer::Kind::kTokenizer);
  EXPECT_EQ(fs::path(spm_->source()).filename(), "sentencepiece.bpe.model");
  EXPECT_EQ(fs::path(json_->source()).filename(), "tokenizer.json");
  // fairseq: <s> <pad> </s> <unk>, pieces shifted by one, then <mask>.
  EXPECT_EQ(spm_->VocabularySize(), json_->VocabularySize());
}

TEST_F(XlmrFolders, TemplateAndIdsMatchTokenizerJson) {
  std::vector<int32_t> a, b, types_a, types_b;
  spm_->Encode("Hello world, this is XLM-R.", 0, &a);
  json_->Encode("Hello world, this is XLM-R.", 0, &b);
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(a.front(), kFairseqBos);
  EXPECT_EQ(a.back(), kFairseqEos);
  EXPECT_EQ(a, b);
  // An unknown character is <unk> = 3 in both.
  spm_->Encode("\xF0\x9F\x98\x80 \xE1\x8E\xA0", 0, &a);
  json_->Encode("\xF0\x9F\x98\x80 \xE1\x8E\xA0", 0, &b);
  EXPECT_EQ(a, b);
  spm_->EncodePair("what is a fox?", "A fox is a small wild animal.", 0, &a, &types_a);
  json_->EncodePair("what is a fox?", "A fox is a small wild animal.", 0, &b, &types_b);
  EXPECT_EQ(a, b);
  EXPECT_EQ(types_a, types_b);
  // <s> A </s></s> B </s>
  int eos = 0;
  for (int32_t id : a) eos += id == kFairseqEos;
  EXPECT_EQ(eos, 3);
}

TEST_F(XlmrFolders, TruncationKeepsTheFinalSpecialToken) {
  std::string text;
  for (int i = 0; i < 100; ++i) text += "word" + std::to_string(i) + " ";
  std::vector<int32_t> a, b, types_a, types_b;
  spm_->Encode(text, 16, &a);
  json_->Encode(text, 16, &b);
  ASSERT_EQ(a.size(), 16u);
  EXPECT_EQ(a.front(), kFairseqBos);
  EXPECT_EQ(a.back(), kFairseqEos);
  EXPECT_EQ(a, b);
  for (const auto& [first, second] : std::vector<std::pair<std::string, std::string>>{
           {"short query", text}, {text, "short document"}, {text, text + text}}) {
    spm_->EncodePair(first, second, 40, &a, &types_a);
    json_->EncodePair(first, second, 40, &b, &types_b);
    EXPECT_EQ(a.size(), 40u);
    EXPECT_EQ(a, b) << first.substr(0, 20) << " | " << second.substr(0, 20);
  }
}

// The gateway loads a tokenizer once and gives each pool thread a copy sharing it: copies
// must share the loaded tokenizer (not load it again) and, encoding at the same time from two
// threads, give exactly the ids the original gives.
TEST_F(XlmrFolders, SharedCopiesEncodeAsTheOriginalFromTwoThreads) {
  const std::vector<std::string> texts = {"Hello world, this is XLM-R.", "Où est Paris ? 東京はどこ",
                                          "   spaces   and\ttabs  ", std::string(300, 'a') + " end"};
  for (const ModelTokenizer* original : {spm_.get(), json_.get()}) {
    std::vector<std::vector<int32_t>> expected(texts.size());
    std::vector<std::vector<int32_t>> expected_pairs(texts.size()), expected_types(texts.size());
    auto reference = original->ShareWithNewScratch();
    for (size_t i = 0; i < texts.size(); ++i) {
      reference->Encode(texts[i], 64, &expected[i]);
      reference->EncodePair(texts[i], texts[(i + 1) % texts.size()], 64, &expected_pairs[i], &expected_types[i]);
    }
    std::vector<std::unique_ptr<ModelTokenizer>> copies;
    for (int t = 0; t < 2; ++t) copies.push_back(original->ShareWithNewScratch());
    for (const auto& copy : copies) {
      EXPECT_EQ(&copy->tokenizer(), &original->tokenizer());
      EXPECT_EQ(copy->kind(), original->kind());
      EXPECT_EQ(copy->VocabularySize(), original->VocabularySize());
    }
    std::vector<int> mismatches(copies.size(), 0);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < copies.size(); ++t) {
      threads.emplace_back([&, t] {
        std::vector<int32_t> ids, type_ids;
        for (int round = 0; round < 200; ++round) {
          const size_t i = (round + t) % texts.size();
          copies[t]->Encode(texts[i], 64, &ids);
          mismatches[t] += ids != expected[i];
          copies[t]->EncodePair(texts[i], texts[(i + 1) % texts.size()], 64, &ids, &type_ids);
          mismatches[t] += ids != expected_pairs[i] || type_ids != expected_types[i];
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(mismatches, std::vector<int>(copies.size(), 0)) << original->source();
  }
}

// /decode's texts: the sentencepiece.bpe.model folder decodes fairseq's ids as Hugging Face
// tokenizers decodes the tokenizer.json's (the literals are what it prints for these ids).
TEST_F(XlmrFolders, DecodeUndoesTheFairseqShift) {
  const int32_t mask = static_cast<int32_t>(spm_->VocabularySize()) - 1;
  const std::vector<int32_t> plain = {0, 18798, 73, 3194, 30, 2};
  const std::vector<int32_t> specials = {0, 18798, kFairseqPad, kFairseqUnk, 73, mask, 3194, 30, 2};
  for (const ModelTokenizer* tokenizer : {spm_.get(), json_.get()}) {
    EXPECT_EQ(tokenizer->Decode(plain, true), "Where is Paris?");
    EXPECT_EQ(tokenizer->Decode(plain, false), "<s> Where is Paris?</s>");
    EXPECT_EQ(tokenizer->Decode(specials, true), "Where is Paris?");
    EXPECT_EQ(tokenizer->Decode(specials, false), "<s> Where<pad><unk> is<mask> Paris?</s>");
  }
  std::vector<int32_t> ids;
  spm_->Encode("Hello world, this is XLM-R.", 0, &ids);
  EXPECT_EQ(spm_->Decode(ids, true), "Hello world, this is XLM-R.");
}

// Lines where SentencePiece and Hugging Face tokenizers differ by design are left out:
// trailing whitespace (HF emits a final ▁) and special-token strings inside the text (HF
// matches them as tokens); equal-score ties remain and are counted. The reference libraries
// themselves (sentencepiece with fairseq's shift vs Hugging Face tokenizers) agree on 47,986
// of these 48,075 lines (99.81%): the rest are equal-score ties.
TEST_F(XlmrFolders, AgreesWithTokenizerJsonOnUdhr) {
  std::ifstream corpus(kShared + "/corpus/udhr.tsv");
  ASSERT_TRUE(corpus) << "cannot read udhr.tsv";
  std::string line;
  std::vector<int32_t> a, b;
  size_t compared = 0, agreed = 0, skipped = 0;
  std::string first_difference;
  while (std::getline(corpus, line)) {
    const size_t tab = line.find('\t');
    const std::string text = tab == std::string::npos ? line : line.substr(tab + 1);
    const bool trailing_space = !text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r');
    const bool special = text.find("<s>") != std::string::npos || text.find("</s>") != std::string::npos ||
                         text.find("<unk>") != std::string::npos || text.find("<pad>") != std::string::npos ||
                         text.find("<mask>") != std::string::npos;
    if (trailing_space || special) {
      ++skipped;
      continue;
    }
    spm_->Encode(text, 0, &a);
    json_->Encode(text, 0, &b);
    ++compared;
    if (a == b) {
      ++agreed;
    } else if (first_difference.empty()) {
      first_difference = text.substr(0, 80);
    }
  }
  const double rate = compared == 0 ? 0.0 : static_cast<double>(agreed) / static_cast<double>(compared);
  std::cout << "udhr: sentencepiece.bpe.model (fairseq ids) = tokenizer.json on " << agreed << " of " << compared
            << " lines (" << rate * 100.0 << "%), " << skipped << " skipped (trailing whitespace / special strings)"
            << (first_difference.empty() ? "" : "; first difference: " + first_difference) << "\n";
  RecordProperty("agreement_rate", std::to_string(rate));
  EXPECT_GT(compared, 40000u);
  EXPECT_GE(rate, 0.997);
}

TEST(ModelTokenizerTest, LongestFirstSplitsAsTransformers) {
  using P = std::pair<size_t, size_t>;
  EXPECT_EQ(LongestFirstLengths(3, 4, 10), P(3, 4));     // fits
  EXPECT_EQ(LongestFirstLengths(2, 20, 10), P(2, 8));    // only the longer is cut
  EXPECT_EQ(LongestFirstLengths(20, 2, 10), P(8, 2));
  EXPECT_EQ(LongestFirstLengths(20, 30, 10), P(5, 5));   // both cut to half
  EXPECT_EQ(LongestFirstLengths(20, 30, 11), P(5, 6));   // the odd token to the longer
  EXPECT_EQ(LongestFirstLengths(30, 20, 11), P(6, 5));
  EXPECT_EQ(LongestFirstLengths(7, 9, 12), P(6, 6));
  EXPECT_EQ(LongestFirstLengths(0, 9, 0), P(0, 0));
}

TEST(ModelTokenizerTest, MaxSequenceLength) {
  ModelConfig config = XlmrConfig();
  SentenceTransformersConfig st;
  EXPECT_EQ(MaxSequenceLength(config, st), 512);  // 514 positions less pad_token_id + 1
  st.max_seq_length = 256;
  EXPECT_EQ(MaxSequenceLength(config, st), 256);
  st.max_seq_length = 1000;
  EXPECT_EQ(MaxSequenceLength(config, st), 512);
  config.family = ModelFamily::kBert;
  config.max_position_embeddings = 512;
  config.pad_token_id = 0;
  config.position_offset = 0;
  EXPECT_EQ(MaxSequenceLength(config, {}), 512);
  // MPNet's positions also start at pad_token_id + 1: 514 positions hold 512 tokens (the engine's
  // limit; 514 let 513- and 514-token sequences past the worker's checks to fail their batch).
  config.family = ModelFamily::kMpnet;
  config.max_position_embeddings = 514;
  config.pad_token_id = 1;
  config.position_offset = 2;
  EXPECT_EQ(MaxSequenceLength(config, {}), 512);
  config.family = ModelFamily::kQwen3;
  config.max_position_embeddings = 32768;
  st.max_seq_length = 8192;
  EXPECT_EQ(MaxSequenceLength(config, st), 8192);
}

TEST(ModelTokenizerTest, ErrorsNameTheFolderAndFile) {
  TempDir empty;
  auto missing = ModelTokenizer::Load(empty.path(), XlmrConfig());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("tokenizer.json"), std::string::npos) << missing.status().message();
  EXPECT_NE(missing.status().message().find(empty.path()), std::string::npos) << missing.status().message();

  TempDir broken;
  std::ofstream(broken.path() + "/sentencepiece.bpe.model") << "not a protobuf";
  auto corrupt = ModelTokenizer::Load(broken.path(), XlmrConfig());
  ASSERT_FALSE(corrupt.ok());
  EXPECT_NE(corrupt.status().message().find("sentencepiece.bpe.model"), std::string::npos) << corrupt.status().message();
}

}  // namespace
}  // namespace stamen::engine
