// Shared by the fuzz targets: encodes texts with a loaded tokenizer and traps on any broken
// invariant of the public contract (sizes, id range, offsets, truncation), not only crashes.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "tokenizer/tokenizer.h"

namespace stamen::fuzz {

inline void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

// Option flags from one input byte: bit 0 special tokens, bit 1 pieces and offsets,
// bit 2 left truncation, bits 3..7 max_length (0 = no limit).
inline tokenizer::EncodeOptions OptionsFromByte(unsigned char flags) {
  tokenizer::EncodeOptions options;
  options.add_special_tokens = (flags & 1) != 0;
  options.with_pieces = (flags & 2) != 0;
  options.truncation_side = (flags & 4) != 0 ? tokenizer::TruncationSide::kLeft
                                             : tokenizer::TruncationSide::kRight;
  options.max_length = flags >> 3;
  return options;
}

// `text_size` bounds the offsets of a single text (pairs: unchecked).
// `strict` adds the checks that hold for a well-formed file but not for any file a fuzzer writes (a template
// may name ids outside the vocabulary or repeat a sequence): ids in range, truncation.
inline void CheckEncoding(const tokenizer::Tokenizer& tokenizer, const tokenizer::Encoding& encoding,
                          const tokenizer::EncodeOptions& options, bool pair, size_t text_size,
                          bool strict) {
  const size_t count = encoding.ids.size();
  Require(encoding.type_ids.size() == count, "type_ids.size() == ids.size()");
  if (options.with_pieces) {
    Require(encoding.pieces.size() == count, "pieces.size() == ids.size()");
    Require(encoding.offsets.size() == count, "offsets.size() == ids.size()");
    for (const auto& [begin, end] : encoding.offsets) {
      Require(begin <= end, "offset begin <= end");
      if (!pair) Require(end <= text_size, "offset end <= text size");
    }
  }
  if (!strict) return;
  for (size_t i = 0; i < count; ++i) {
    const int32_t id = encoding.ids[i];
    Require(id >= 0 && static_cast<size_t>(id) < tokenizer.VocabularySize(), "0 <= id < VocabularySize()");
    if (!pair) Require(encoding.type_ids[i] == 0, "type_id == 0 for a single text");
  }
  const size_t specials = options.add_special_tokens ? tokenizer.SpecialTokenCount(pair) : 0;
  if (options.max_length > 0 && options.max_length >= specials) {
    Require(count <= options.max_length, "ids.size() <= max_length");
  }
}

// Encodes `text` (and the pair of its two halves) with `options`, checks the results and
// decodes them both ways.
inline void EncodeAndCheck(const tokenizer::Tokenizer& tokenizer, std::string_view text,
                           const tokenizer::EncodeOptions& options, bool strict,
                           tokenizer::Scratch* scratch, tokenizer::Encoding* encoding) {
  tokenizer.Encode(text, options, encoding, scratch);
  CheckEncoding(tokenizer, *encoding, options, false, text.size(), strict);
  (void)tokenizer.Decode(encoding->ids, true);
  (void)tokenizer.Decode(encoding->ids, false);

  const size_t half = text.size() / 2;
  tokenizer.EncodePair(text.substr(0, half), text.substr(half), options, encoding, scratch);
  CheckEncoding(tokenizer, *encoding, options, true, 0, strict);
  (void)tokenizer.Decode(encoding->ids, true);
}

// A fixed few texts for the loader fuzzers: once a fuzzed file loads, it must encode these.
inline constexpr std::string_view kSampleTexts[] = {
    "",
    " ",
    "Hello world, this is a test.",
    "  abc  nnn \xC3\xA9 e\xCC\x81 \xEF\xBC\xA1 <s> <mask> </s>",
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xD9\x85\xD8\xB1\xD8\xAD\xD8\xA8\xD8\xA7 \xF0\x9F\x98\x80",
    "bad utf-8: \xFF\xFE\xC3( \xE2\x82 \xED\xA0\x80 end",
};

// Loads `bytes` as a tokenizer file; when it loads, encodes the sample texts with several
// option sets. The bytes are copied and freed before encoding, so a tokenizer that kept a
// view into its input is caught by AddressSanitizer.
inline void LoadAndEncodeSamples(const uint8_t* data, size_t size, bool is_json) {
  auto loaded = [&] {
    std::string bytes(reinterpret_cast<const char*>(data), size);
    return tokenizer::Tokenizer::LoadFromBytes(bytes, is_json);
  }();
  if (!loaded.ok()) {
    if (std::getenv("STAMEN_FUZZ_VERBOSE") != nullptr) {
      std::fprintf(stderr, "load failed: %s\n", loaded.status().message().c_str());
    }
    Require(!loaded.status().message().empty(), "a load error has a message");
    return;
  }
  const tokenizer::Tokenizer& tokenizer = **loaded;
  (void)tokenizer.GetStats();
  for (size_t id = 0; id < tokenizer.VocabularySize() && id < 64; ++id) {
    const std::string_view piece = tokenizer.IdToPiece(static_cast<int32_t>(id));
    (void)tokenizer.PieceToId(piece);
    (void)tokenizer.IsSpecial(static_cast<int32_t>(id));
  }
  tokenizer::Scratch scratch;
  tokenizer::Encoding encoding;
  for (const unsigned char flags : {0x01, 0x02, 0x1F}) {
    for (std::string_view text : kSampleTexts) {
      EncodeAndCheck(tokenizer, text, OptionsFromByte(flags), /*strict=*/false, &scratch, &encoding);
    }
  }
}

}  // namespace stamen::fuzz
