// Reading the shared test models and corpora (../shared/ beside the repository) for the
// tokenizer tests: file contents, '\n'-split lines, and the udhr.tsv language/text columns.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
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

}  // namespace stamen::tokenizer::testing
