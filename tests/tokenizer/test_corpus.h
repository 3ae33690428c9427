// Reading the shared test models and corpora (../shared/ beside the repository) for the
// tokenizer tests: file contents, '\n'-split lines, the udhr.tsv language/text columns, and the
// corpus sample the exactness tests check (STAMEN_EXACTNESS_SAMPLE).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#ifndef STAMEN_SHARED_DIR
#define STAMEN_SHARED_DIR "../shared"
#endif

namespace stamen::tokenizer::testing {

// Absolute (or repository-relative) path of `relative` inside the shared folder.
inline std::string SharedPath(std::string_view relative) {
  return std::string(STAMEN_SHARED_DIR) + "/" + std::string(relative);
}

// The whole file, or "" with a test failure when it cannot be read: a missing fixture must
// fail loudly rather than make an exactness test pass vacuously.
inline std::string ReadFileOrFail(const std::string& path) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    ADD_FAILURE() << "cannot read " << path;
    return {};
  }
  std::ostringstream contents;
  contents << stream.rdbuf();
  return std::move(contents).str();
}

// Splits on '\n' only (a '\r' before it stays in the line), as `stamen tokenize` and
// hf_reference_ids.py do; a final empty line after the last '\n' is not a line.
inline std::vector<std::string> SplitLines(std::string_view text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

// Printable form of a (possibly invalid, NUL-holding) input for failure messages.
inline std::string Escape(std::string_view text, size_t limit = 200) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20 || byte == 0x7F || byte >= 0x80) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02X", byte);
      out += hex;
    } else {
      out.push_back(static_cast<char>(byte));
    }
  }
  if (text.size() > limit) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

// A long id list cut for failure messages.
inline std::string Abbreviate(const std::string& text, size_t limit = 400) {
  return text.size() <= limit ? text : text.substr(0, limit) + " ...";
}

struct UdhrLine {
  std::string language;
  std::string text;
};

// corpus/udhr.tsv: `language<TAB>text`, one paragraph per line.
inline std::vector<UdhrLine> ReadUdhr() {
  std::vector<UdhrLine> lines;
  for (std::string& line : SplitLines(ReadFileOrFail(SharedPath("corpus/udhr.tsv")))) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      ADD_FAILURE() << "udhr.tsv line without a tab: " << line.substr(0, 80);
      continue;
    }
    lines.push_back({line.substr(0, tab), line.substr(tab + 1)});
  }
  return lines;
}

// STAMEN_EXACTNESS_SAMPLE=N (unset or 1: every line) thins the corpus lines the exactness tests
// compare with their references to every N-th, keeping every udhr language and every generated
// edge case (the long multi-thousand-token texts included): `scripts/test.sh debug` sets it so
// that the comparisons also run under the sanitizers within CI's time. Anything but a positive
// integer fails the test that reads it (and every line is then checked), so a typo cannot
// silently change what is checked.
inline size_t ExactnessSample() {
  const char* value = std::getenv("STAMEN_EXACTNESS_SAMPLE");
  if (value == nullptr || *value == '\0') return 1;
  size_t sample = 0;
  bool valid = true;
  for (const char* c = value; *c != '\0' && valid; ++c) {
    valid = *c >= '0' && *c <= '9' && sample <= (SIZE_MAX - 9) / 10;
    if (valid) sample = sample * 10 + static_cast<size_t>(*c - '0');
  }
  if (!valid || sample == 0) {
    ADD_FAILURE() << "STAMEN_EXACTNESS_SAMPLE=\"" << value << "\" is not a positive integer";
    return 1;
  }
  return sample;
}

// For the "lines checked" messages: what the sample was, "" when every line was checked.
inline std::string SampleNote() {
  const size_t sample = ExactnessSample();
  if (sample == 1) return "";
  return " [sample: every " + std::to_string(sample) +
         "th corpus line, every udhr language, all edge cases (STAMEN_EXACTNESS_SAMPLE)]";
}

// The udhr lines below `end` that an exactness test checks, in order. In full (sample 1): the
// indices 0, step, 2*step, ... Sampled (N > 1): every N-th of those, plus, for each language
// left without a line, its first of those, so that the sample covers every language the full
// run does and is never empty.
inline std::vector<size_t> UdhrIndices(const std::vector<UdhrLine>& udhr, size_t step = 1, size_t end = SIZE_MAX) {
  const size_t sample = ExactnessSample();
  end = std::min(end, udhr.size());
  std::vector<size_t> indices;
  std::map<std::string_view, size_t> first_of_missing;  // language -> its first candidate, while none is kept
  std::map<std::string_view, bool> kept;
  for (size_t i = 0, n = 0; i < end; i += step, ++n) {
    const std::string_view language = udhr[i].language;
    if (n % sample == 0) {
      indices.push_back(i);
      kept[language] = true;
    } else if (!kept.contains(language) && !first_of_missing.contains(language)) {
      first_of_missing[language] = i;
    }
  }
  for (const auto& [language, index] : first_of_missing) {
    if (!kept.contains(language)) indices.push_back(index);
  }
  std::sort(indices.begin(), indices.end());
  return indices;
}

// The indices 0, step, 2*step, ... below `count` (lines of a novel) that an exactness test
// checks: every N-th of them under STAMEN_EXACTNESS_SAMPLE=N; line 0 always.
inline std::vector<size_t> LineIndices(size_t count, size_t step = 1) {
  const size_t stride = step * ExactnessSample();
  std::vector<size_t> indices;
  for (size_t i = 0; i < count; i += stride) indices.push_back(i);
  return indices;
}

}  // namespace stamen::tokenizer::testing
