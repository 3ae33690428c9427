// Checks that `stamen tokenize` on a tokenizer.json prints exactly Hugging Face tokenizers'
// ids (hf_reference_ids.py in the project venv) for corpora, edge cases and udhr pairs (a
// sample of the corpora under STAMEN_EXACTNESS_SAMPLE, see test_corpus.h).
//
// CI checks the tokenizers in ../shared/models. Real files that cannot ship with the project
// (downloaded weights: tools/fetch_real_weights.sh) are checked by naming them, run directly:
//   STAMEN_EXACTNESS_TOKENIZERS=/work/models/all-mpnet-base-v2/tokenizer.json:…
//   build/release/tests/tokenizer/huggingface_exactness_test --gtest_filter='Real*'
// (the variable set for the second command).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "edge_cases.h"
#include "reference_lines.h"
#include "test_corpus.h"

#ifndef STAMEN_CLI
#error "STAMEN_CLI must name the stamen binary"
#endif
#ifndef STAMEN_PYTHON
#error "STAMEN_PYTHON must name the venv python"
#endif
#ifndef STAMEN_HF_REFERENCE_SCRIPT
#error "STAMEN_HF_REFERENCE_SCRIPT must name hf_reference_ids.py"
#endif

namespace stamen::tokenizer {
namespace {

namespace fs = std::filesystem;
using testing::Abbreviate;
using testing::Escape;
using testing::SharedPath;

using testing::Line;
using testing::ShellQuote;

// Single texts: every `stride`-th udhr paragraph, both novels line by line, and the one-line
// edge cases alone and inside text. The reference runs at about 1.5 MB/s, so modes other
// than the default check a stride of udhr to keep the test short.
std::vector<Line> SingleTexts(const std::vector<testing::UdhrLine>& udhr, size_t stride) {
  std::vector<Line> lines;
  for (const size_t i : testing::UdhrIndices(udhr, stride)) {
    lines.push_back({udhr[i].text, "udhr.tsv line " + std::to_string(i + 1) + " (" + udhr[i].language + ")"});
  }
  for (const char* corpus : {"corpus/botchan.txt", "corpus/wagahaiwa_nekodearu.txt"}) {
    const std::vector<std::string> texts = testing::SplitLines(testing::ReadFileOrFail(SharedPath(corpus)));
    for (const size_t i : testing::LineIndices(texts.size())) {
      lines.push_back({texts[i], std::string(corpus) + " line " + std::to_string(i + 1)});
    }
  }
  for (const testing::EdgeCase& edge_case : testing::WithoutNewlines(testing::EdgeCases(udhr))) {
    lines.push_back({edge_case.text, "edge case \"" + edge_case.name + "\""});
    lines.push_back({"Hello " + edge_case.text + " world", "edge case \"" + edge_case.name + "\" inside text"});
  }
  return lines;
}

// `A<TAB>B` pairs of consecutive udhr paragraphs (lines 2k+1 and 2k+2, every `stride`-th such
// pair), then each edge case with the next one when both are under `max_edge_bytes`. Both
// sides split a line at its first tab, so edge cases holding a tab split there.
std::vector<Line> PairTexts(const std::vector<testing::UdhrLine>& udhr, size_t stride, size_t max_edge_bytes) {
  std::vector<Line> lines;
  for (const size_t i : testing::UdhrIndices(udhr, 2 * stride, udhr.empty() ? 0 : udhr.size() - 1)) {
    lines.push_back({udhr[i].text + "\t" + udhr[i + 1].text,
                     "udhr.tsv lines " + std::to_string(i + 1) + "+" + std::to_string(i + 2)});
  }
  const std::vector<testing::EdgeCase> cases = testing::WithoutNewlines(testing::EdgeCases(udhr));
  for (size_t i = 0; i + 1 < cases.size(); ++i) {
    if (cases[i].text.size() > max_edge_bytes || cases[i + 1].text.size() > max_edge_bytes) continue;
    lines.push_back({cases[i].text + "\t" + cases[i + 1].text,
                     "edge cases \"" + cases[i].name + "\" + \"" + cases[i + 1].name + "\""});
  }
  return lines;
}

class HuggingFaceExactnessTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    // CI always creates the venv (scripts/setup.sh); without it this test would check nothing.
    ASSERT_TRUE(fs::exists(STAMEN_PYTHON))
        << "the Hugging Face reference needs the project venv: " << STAMEN_PYTHON
        << " is missing; run scripts/setup.sh to create it (tokenizers==0.23.3)";
    ASSERT_TRUE(fs::exists(STAMEN_CLI)) << STAMEN_CLI << " is missing; build the `stamen` target";
    model_ = fs::path(GetParam()).is_absolute() ? GetParam() : SharedPath("models/" + GetParam() + "/tokenizer.json");
    ASSERT_TRUE(fs::exists(model_)) << model_ << " is missing";
    std::string pattern = (fs::temp_directory_path() / "stamen_hf_exactness_XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr) << "cannot create a temporary directory";
    directory_ = pattern;
  }

  void TearDown() override {
    std::error_code error;
    if (!directory_.empty()) fs::remove_all(directory_, error);
  }

  std::string TempFile(const std::string& name) const { return (directory_ / name).string(); }

  static void WriteLines(const std::vector<Line>& lines, const std::string& path) {
    std::ofstream stream(path, std::ios::binary);
    for (const Line& line : lines) stream << line.text << '\n';
    ASSERT_TRUE(stream.good()) << "cannot write " << path;
  }

  // Runs `command`, failing the test with its stderr when it exits non-zero.
  void Run(const std::string& command, const std::string& what) {
    const std::string errors = TempFile("stderr.txt");
    const int status = std::system((command + " 2>" + ShellQuote(errors)).c_str());
    ASSERT_EQ(status, 0) << what << " failed (status " << status << "): " << command << "\n"
                         << testing::ReadFileOrFail(errors);
  }

  // Hugging Face's ids for each line of `input`, from hf_reference_ids.py with `flags`.
  void Reference(const std::string& input, const std::string& flags, const std::string& output) {
    Run(ShellQuote(STAMEN_PYTHON) + " " + ShellQuote(STAMEN_HF_REFERENCE_SCRIPT) + " " + ShellQuote(model_) + " " +
            ShellQuote(input) + " " + ShellQuote(output) + " " + flags,
        "hf_reference_ids.py");
  }

  void Stamen(const std::string& input, const std::string& flags, const std::string& output) {
    Run(ShellQuote(STAMEN_CLI) + " tokenize --model " + ShellQuote(model_) + " " + flags + " <" + ShellQuote(input) +
            " >" + ShellQuote(output),
        "stamen tokenize");
  }

  // Compares output files line by line; reports the first mismatches with their inputs.
  void Compare(const std::vector<Line>& lines, const std::string& expected_path, const std::string& got_path,
               const std::string& mode) {
    const std::vector<std::string> expected = testing::SplitLines(testing::ReadFileOrFail(expected_path));
    const std::vector<std::string> got = testing::SplitLines(testing::ReadFileOrFail(got_path));
    ASSERT_FALSE(lines.empty()) << mode << ": nothing to compare";
    ASSERT_EQ(expected.size(), lines.size()) << mode << ": the reference printed the wrong number of lines";
    ASSERT_EQ(got.size(), lines.size()) << mode << ": stamen tokenize printed the wrong number of lines";
    size_t mismatches = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (expected[i] == got[i]) continue;
      if (++mismatches <= 10) {
        ADD_FAILURE() << mode << ": " << lines[i].origin << " differs from Hugging Face\n  input:    \""
                      << Escape(lines[i].text) << "\"\n  expected: " << Abbreviate(expected[i])
                      << "\n  got:      " << Abbreviate(got[i]);
      }
    }
    std::printf("[ exactness ] %s %s: %zu lines checked, %zu mismatches%s\n", GetParam().c_str(), mode.c_str(), lines.size(),
                mismatches, testing::SampleNote().c_str());
    EXPECT_EQ(mismatches, 0u) << mode;
  }

  // The reference for `flags`, then each stamen flag set on top of it.
  void CheckMode(const std::vector<Line>& lines, const std::string& reference_flags,
                 const std::vector<std::string>& stamen_flags) {
    const std::string input = TempFile("input.txt");
    const std::string expected = TempFile("expected.txt");
    WriteLines(lines, input);
    Reference(input, reference_flags, expected);
    if (HasFatalFailure()) return;
    for (const std::string& flags : stamen_flags) {
      const std::string got = TempFile("got.txt");
      Stamen(input, flags, got);
      if (HasFatalFailure()) return;
      Compare(lines, expected, got, flags.empty() ? "(default)" : flags);
    }
  }

  std::string model_;
  fs::path directory_;
};

// No limit on the edge cases: the longest are 64 KB texts of thousands of tokens.
constexpr size_t kAllEdgeCases = SIZE_MAX;

TEST_P(HuggingFaceExactnessTest, SingleTextsMatch) {
  CheckMode(SingleTexts(testing::ReadUdhr(), 1), "", {"", "--batch"});
}

TEST_P(HuggingFaceExactnessTest, SingleTextsWithoutSpecialTokensMatch) {
  CheckMode(SingleTexts(testing::ReadUdhr(), 4), "--no-special-tokens",
            {"--no-special-tokens", "--no-special-tokens --batch"});
}

TEST_P(HuggingFaceExactnessTest, PairsMatch) {
  CheckMode(PairTexts(testing::ReadUdhr(), 2, kAllEdgeCases), "--pair", {"--pair", "--pair --batch"});
}

TEST_P(HuggingFaceExactnessTest, PairsWithoutSpecialTokensMatch) {
  CheckMode(PairTexts(testing::ReadUdhr(), 4, kAllEdgeCases), "--pair --no-special-tokens",
            {"--pair --no-special-tokens"});
}

// Truncation on corpus text: right-side cuts of single texts, longest-first for pairs (an odd
// budget of 61 content tokens, so the longer text gets the extra one). Hugging Face keeps
// every overflowing window of a truncated pair, the cross product of both sides' windows,
// so the long edge cases are left out of the pairs to bound its memory.
TEST_P(HuggingFaceExactnessTest, TruncatedTextsMatch) {
  const std::vector<testing::UdhrLine> udhr = testing::ReadUdhr();
  CheckMode(SingleTexts(udhr, 4), "--max-length=24", {"--max-length 24", "--max-length 24 --batch"});
  CheckMode(PairTexts(udhr, 4, 2048), "--pair --max-length=65", {"--pair --max-length 65"});
}

// A test name from a shared model's name or a tokenizer file's folder.
std::string TestName(const ::testing::TestParamInfo<std::string>& info) {
  const fs::path path(info.param);
  std::string name = path.is_absolute() ? path.parent_path().filename().string() : info.param;
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return name;
}

// The tokenizer files named by STAMEN_EXACTNESS_TOKENIZERS (absolute paths, ':'-separated).
std::vector<std::string> NamedTokenizers() {
  std::vector<std::string> paths;
  const char* named = std::getenv("STAMEN_EXACTNESS_TOKENIZERS");
  std::string rest = named == nullptr ? "" : named;
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    if (colon != 0) paths.push_back(fs::absolute(rest.substr(0, colon)).string());
    rest = colon == std::string::npos ? "" : rest.substr(colon + 1);
  }
  return paths;
}

INSTANTIATE_TEST_SUITE_P(Models, HuggingFaceExactnessTest,
                         ::testing::Values("xlmr-trimmed-32k", "synthetic-unigram-250k"), TestName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(HuggingFaceExactnessTest);
INSTANTIATE_TEST_SUITE_P(Real, HuggingFaceExactnessTest, ::testing::ValuesIn(NamedTokenizers()), TestName);

}  // namespace
}  // namespace stamen::tokenizer
