// BertNormalizer and BertPreTokenizer over the generated per-code-point flags.
//
// The normalizer works one input character at a time, which is exact because every step is
// a function of the character alone except NFD's canonical reordering. Reordering only
// matters for the few marks that keep a nonzero combining class yet survive strip_accents
// (the crates behind tokenizers disagree on which marks are Mn); those are inserted by class
// into the run of such marks since the last starter, as NFD would have placed them. A
// dropped mark with class 0 still ends a run, since NFD sees it before the Mn filter does.
// With offsets, a run that NFD reordered is replayed with its dropped marks too, because
// Hugging Face aligns NFD's output by position rather than by character (FlushRun).
#include "tokenizer/bert_normalizer.h"

#include <algorithm>
#include <array>
#include <cstdlib>

#include "tokenizer/block_flags.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

struct BertMapping {
  uint32_t code_point;
  uint16_t offset;  // into the pool
  uint8_t length;
};

struct BertCombining {
  uint32_t code_point;
  uint8_t combining_class;
};

#include "tokenizer/bert_tables.inc"

enum : uint8_t {
  kRemoved = 1,       // clean_text drops it
  kWhitespace = 2,    // Rust's char::is_whitespace
  kChinese = 4,       // handle_chinese_chars surrounds it with spaces
  kMark = 8,          // strip_accents drops it (set only where NFD keeps the character)
  kDecomposes = 16,   // NFD replaces it (kBertNfdMappings); Hangul syllables are arithmetic
  kLower = 32,        // lowercase changes it (kBertLowerMappings)
  kPunctuation = 64,  // BertPreTokenizer isolates it
  kCombining = 128,   // nonzero combining class in the NFD crate
};

constexpr uint8_t Flags(char32_t c) { return BlockFlags<kBertBlockShift>(kBertBlockIndex, kBertBlocks, c); }

constexpr std::array<uint8_t, 128> kAsciiFlags = AsciiFlagTable<Flags>();

constexpr char32_t kHangulFirst = 0xAC00;
constexpr char32_t kHangulLast = 0xD7A3;

template <size_t N>
const BertMapping* FindMapping(const BertMapping (&mappings)[N], char32_t c) {
  const BertMapping* found = std::lower_bound(
      mappings, mappings + N, c, [](const BertMapping& mapping, char32_t value) { return mapping.code_point < value; });
  return found != mappings + N && found->code_point == c ? found : nullptr;
}

uint8_t CombiningClass(char32_t c) {
  const BertCombining* end = kBertCombining + std::size(kBertCombining);
  const BertCombining* found = std::lower_bound(
      kBertCombining, end, c, [](const BertCombining& entry, char32_t value) { return entry.code_point < value; });
  return found != end && found->code_point == c ? found->combining_class : 0;
}

}  // namespace

struct BertNormalizer::Output {
  std::string* text;
  const BertOffsets* offsets;  // null when not tracking
  // Surviving marks after this byte form the current reordering run (NFD's non-starters
  // since the last starter).
  size_t run_begin;
  Origin last_head{0, 0};      // input character of the last head NFD consumed
  Origin run_last_head{0, 0};  // the same when the current run began

  void Append(char32_t c, Origin origin) {
    const size_t before = text->size();
    utf8::Append(c, text);
    if (offsets != nullptr) {
      offsets->begins->insert(offsets->begins->end(), text->size() - before, origin.begin);
      offsets->ends->insert(offsets->ends->end(), text->size() - before, origin.end);
    }
  }
};

BertNormalizer::BertNormalizer(BertNormalizerOptions options) : options_(options) {
  std::string text;
  for (char32_t c = 0; c < 128; ++c) {
    text.clear();
    Output output{&text, nullptr, 0};
    AppendCharacter(c, {0, 1}, &output);
    if (text.size() > 1) std::abort();  // the generator checks that ASCII maps to one byte at most
    ascii_[c] = text.empty() ? int16_t{-1} : static_cast<int16_t>(static_cast<unsigned char>(text[0]));
  }
}

void BertNormalizer::Normalize(std::string_view text, uint32_t begin, uint32_t end, std::string* out,
                               const BertOffsets* offsets) const {
  Output output{out, offsets, out->size()};
  output.last_head = {begin, begin};  // Hugging Face's (0, 0) of the segment, should nothing precede
  if (offsets != nullptr) offsets->marks->clear();
  // Flags that make a non-ASCII character more than a copy of its bytes.
  uint8_t active = kLower * options_.lowercase;
  if (options_.clean_text) active |= kRemoved | kWhitespace;
  if (options_.handle_chinese_chars) active |= kChinese;
  if (options_.strip_accents) active |= kMark | kDecomposes | kCombining;
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  uint32_t position = begin;
  while (position < end) {
    const unsigned char byte = bytes[position];
    if (byte < 0x80) {
      const int16_t mapped = ascii_[byte];
      if (mapped >= 0) {
        if (offsets != nullptr) {
          if (!offsets->marks->empty()) FlushRun(&output);
          output.last_head = {position, position + 1};
          offsets->begins->push_back(position);
          offsets->ends->push_back(position + 1);
        }
        out->push_back(static_cast<char>(mapped));
        output.run_begin = out->size();
      }
      ++position;
      continue;
    }
    const utf8::Decoded decoded = utf8::Decode(text, position);
    const auto next = position + static_cast<uint32_t>(decoded.length);
    const char32_t c = decoded.code_point;
    const bool hangul = options_.strip_accents && c >= kHangulFirst && c <= kHangulLast;
    if ((Flags(c) & active) == 0 && !hangul) {
      // A starter that every step keeps as it is.
      if (offsets != nullptr) {
        if (!offsets->marks->empty()) FlushRun(&output);
        output.last_head = {position, next};
        offsets->begins->insert(offsets->begins->end(), decoded.length, position);
        offsets->ends->insert(offsets->ends->end(), decoded.length, next);
      }
      out->append(text.data() + position, decoded.length);
      output.run_begin = out->size();
    } else {
      AppendCharacter(c, {position, next}, &output);
    }
    position = next;
  }
  if (offsets != nullptr) FlushRun(&output);
}

void BertNormalizer::AppendCharacter(char32_t c, Origin origin, Output* output) const {
  uint8_t flags = Flags(c);
  if (options_.clean_text) {
    if (flags & kRemoved) return;
    if (flags & kWhitespace) {
      c = ' ';
      flags = kAsciiFlags[' '];
    }
  }
  const bool chinese = options_.handle_chinese_chars && (flags & kChinese);
  if (chinese) AppendElement(' ', kAsciiFlags[' '], origin, true, output);
  if (options_.strip_accents && (flags & kDecomposes)) {
    const BertMapping* mapping = FindMapping(kBertNfdMappings, c);
    for (size_t i = 0; mapping != nullptr && i < mapping->length; ++i) {
      const char32_t d = kBertNfdPool[mapping->offset + i];
      AppendElement(d, Flags(d), origin, i == 0, output);
    }
  } else if (options_.strip_accents && c >= kHangulFirst && c <= kHangulLast) {
    // Unicode 3.12: L V, or L V T, jamo (starters, neither marks nor cased).
    const char32_t index = c - kHangulFirst;
    AppendElement(0x1100 + index / 588, 0, origin, true, output);
    AppendElement(0x1161 + (index % 588) / 28, 0, origin, false, output);
    if (index % 28 != 0) AppendElement(0x11A7 + index % 28, 0, origin, false, output);
  } else {
    AppendElement(c, flags, origin, true, output);
  }
  if (chinese) AppendElement(' ', kAsciiFlags[' '], origin, true, output);
}

void BertNormalizer::AppendElement(char32_t c, uint8_t flags, Origin origin, bool head, Output* output) const {
  if (options_.strip_accents) {
    if (flags & kCombining) {
      AppendMark(c, flags, origin, head, output);
      return;
    }
    // A starter ends the reordering run, even one that strip_accents then drops.
    if (output->offsets != nullptr) FlushRun(output);
    if (head) output->last_head = origin;
    if (flags & kMark) {
      output->run_begin = output->text->size();
      return;
    }
  }
  AppendLowered(c, flags, origin, output);
  output->run_begin = output->text->size();
}

void BertNormalizer::AppendMark(char32_t c, uint8_t flags, Origin origin, bool head, Output* output) const {
  std::string& text = *output->text;
  const bool kept = !(flags & kMark);
  if (!kept && output->offsets == nullptr) return;  // dropped, and its place is of no interest
  uint8_t length = 0;
  const uint8_t combining_class = CombiningClass(c);
  if (kept) {
    // It survives strip_accents (and is never cased): after the run's survivors of lower or
    // equal class, where NFD's stable sort puts it.
    size_t position = text.size();
    while (position > output->run_begin) {
      size_t start = position - 1;
      while (start > output->run_begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
      if (CombiningClass(utf8::Decode(text, start).code_point) <= combining_class) break;
      position = start;
    }
    const size_t before = text.size();
    utf8::Append(c, &text);
    length = static_cast<uint8_t>(text.size() - before);
    std::rotate(text.begin() + static_cast<std::ptrdiff_t>(position),
                text.begin() + static_cast<std::ptrdiff_t>(before), text.end());
    if (output->offsets != nullptr) {
      output->offsets->begins->insert(output->offsets->begins->begin() + static_cast<std::ptrdiff_t>(position),
                                      length, origin.begin);
      output->offsets->ends->insert(output->offsets->ends->begin() + static_cast<std::ptrdiff_t>(position), length,
                                    origin.end);
    }
  }
  if (output->offsets != nullptr) {
    std::vector<CombiningMark>& marks = *output->offsets->marks;
    if (marks.empty()) output->run_last_head = output->last_head;
    marks.push_back({origin.begin, origin.end, combining_class, length, head});
  }
  if (head) output->last_head = origin;
}

void BertNormalizer::FlushRun(Output* output) {
  std::vector<CombiningMark>& marks = *output->offsets->marks;
  const size_t count = marks.size();
  bool ordered = true;
  for (size_t i = 1; i < count && ordered; ++i) ordered = marks[i - 1].combining_class <= marks[i].combining_class;
  if (ordered) {  // NFD moved nothing: every mark kept its own character's origin
    marks.clear();
    return;
  }
  // Hugging Face aligns NFD's output by position: in the sorted run, the k-th head takes the
  // input character of the k-th head in input order, any other mark the last one taken.
  // Stable counting sort into the tail of `marks`.
  size_t starts[257] = {};
  for (size_t i = 0; i < count; ++i) ++starts[marks[i].combining_class + 1];
  for (size_t k = 1; k < 257; ++k) starts[k] += starts[k - 1];
  marks.resize(2 * count);
  for (size_t i = 0; i < count; ++i) marks[count + starts[marks[i].combining_class]++] = marks[i];
  size_t next_head = 0;
  Origin last = output->run_last_head;
  size_t byte = output->run_begin;
  for (size_t k = count; k < 2 * count; ++k) {
    if (marks[k].head) {
      while (!marks[next_head].head) ++next_head;
      last = {marks[next_head].origin_begin, marks[next_head].origin_end};
      ++next_head;
    }
    for (size_t i = 0; i < marks[k].length; ++i, ++byte) {
      (*output->offsets->begins)[byte] = last.begin;
      (*output->offsets->ends)[byte] = last.end;
    }
  }
  marks.clear();
}

void BertNormalizer::AppendLowered(char32_t c, uint8_t flags, Origin origin, Output* output) const {
  const BertMapping* mapping = options_.lowercase && (flags & kLower) ? FindMapping(kBertLowerMappings, c) : nullptr;
  if (mapping == nullptr) {
    output->Append(c, origin);
    return;
  }
  for (size_t i = 0; i < mapping->length; ++i) output->Append(kBertLowerPool[mapping->offset + i], origin);
}

void BertPreTokenize(std::string_view text, uint32_t begin, uint32_t end, std::vector<Word>* words) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  uint32_t word_begin = begin;
  for (uint32_t position = begin; position < end;) {
    uint8_t flags;
    uint32_t length = 1;
    if (bytes[position] < 0x80) {
      flags = kAsciiFlags[bytes[position]];
    } else {
      const utf8::Decoded decoded = utf8::Decode(text, position);
      flags = Flags(decoded.code_point);
      length = static_cast<uint32_t>(decoded.length);
    }
    if (!(flags & (kWhitespace | kPunctuation))) {
      position += length;
      continue;
    }
    if (position > word_begin) words->push_back({word_begin, position, -1});
    if (flags & kPunctuation) words->push_back({position, position + length, -1});
    position += length;
    word_begin = position;
  }
  if (end > word_begin) words->push_back({word_begin, end, -1});
}

bool IsBertPunctuation(char32_t c) { return c <= 0x10FFFF && (Flags(c) & kPunctuation); }
bool IsBertWhitespace(char32_t c) { return c <= 0x10FFFF && (Flags(c) & kWhitespace); }

}  // namespace stamen::tokenizer
