// What the exactness tests that compare with a Hugging Face reference script share: input
// lines with where they came from, hex and shell quoting for the scripts' command lines,
// running a script, and comparing its output with stamen's line by line.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "test_corpus.h"

namespace stamen::tokenizer::testing {

// One input line and where it came from, for failure messages.
struct Line {
  std::string text;
  std::string origin;
};

// Lower-case hex of `bytes`.
inline std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char byte : bytes) {
    out.push_back(kDigits[byte >> 4]);
    out.push_back(kDigits[byte & 15]);
  }
  return out;
}

// `value` as one word of a POSIX shell command line.
inline std::string ShellQuote(const std::string& value) {
  std::string quoted = "'";
  for (char c : value) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// Runs `command` (a reference script writing `output`) with stderr to `errors`; the lines of
// `output`, or none with a failure naming `script` when it fails.
inline std::vector<std::string> RunReference(const std::string& command, const std::string& output,
                                             const std::string& errors, const std::string& script) {
  const std::string line = command + " 2>" + ShellQuote(errors);
  const int status = std::system(line.c_str());
  EXPECT_EQ(status, 0) << script << " failed: " << line << "\n" << ReadFileOrFail(errors);
  if (status != 0) return {};
  return SplitLines(ReadFileOrFail(output));
}

// Compares `got` with `expected` line by line; reports the first mismatches with their inputs
// under `what`, and prints how many lines were checked under `summary`.
inline void CompareLines(const std::vector<Line>& lines, const std::vector<std::string>& expected,
                         const std::vector<std::string>& got, const std::string& what, const std::string& summary) {
  ASSERT_FALSE(lines.empty()) << what << ": nothing to compare";
  ASSERT_EQ(expected.size(), lines.size()) << what << ": the reference printed the wrong number of lines";
  ASSERT_EQ(got.size(), lines.size());
  size_t mismatches = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (expected[i] == got[i]) continue;
    if (++mismatches <= 10) {
      ADD_FAILURE() << what << ": " << lines[i].origin << " differs from Hugging Face\n  input:    \""
                    << Escape(lines[i].text) << "\"\n  expected: " << Abbreviate(expected[i])
                    << "\n  got:      " << Abbreviate(got[i]);
    }
  }
  std::printf("[ exactness ] %s: %zu lines checked, %zu mismatches%s\n", summary.c_str(), lines.size(), mismatches,
              SampleNote().c_str());
  EXPECT_EQ(mismatches, 0u) << what;
}

}  // namespace stamen::tokenizer::testing
