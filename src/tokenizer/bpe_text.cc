// NFC and the Split-pattern scanner over the probed tables (see bpe_text.h).
//
// The scanner follows Oniguruma's backtracking semantics alternative by alternative: at each
// position the first alternative that matches wins (not the longest), and its greedy
// quantifiers give back characters only as far as the rest of the alternative needs:
//   \s*[\r\n]+   the whitespace run starting here, up to its last \r or \n;
//   \s+(?!\S)    the whitespace run, less its last character unless the run ends the text;
//   [^\r\n\p{L}\p{N}]?\p{L}+   one optional non-letter, non-digit, non-newline, then letters.
#include "tokenizer/bpe_text.h"

#include <algorithm>
#include <array>
#include <utility>

#include "tokenizer/block_flags.h"

namespace stamen::tokenizer::bpe {
namespace {

struct BpeDecomposition {
  uint32_t code_point;
  uint16_t offset;  // into kBpeDecompositionPool
  uint8_t length;
};

struct BpeCombiningClass {
  uint32_t code_point;
  uint8_t combining_class;
};

struct BpeComposition {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};

#include "tokenizer/bpe_tables.inc"

enum : uint8_t {
  kBpeLetter = 1,    // \p{L}
  kBpeNumber = 2,    // \p{N}
  kBpeSpace = 4,     // \s
  kBpeNfcCheck = 8,  // NFC may change it, or it may compose with the character before
};

constexpr uint8_t TableFlags(char32_t c) { return BlockFlags<kBpeBlockShift>(kBpeBlockIndex, kBpeBlocks, c); }

constexpr std::array<uint8_t, 128> kAsciiFlags = AsciiFlagTable<TableFlags>();

// One character of valid UTF-8: its code point, length and class flags.
struct Character {
  char32_t code_point;
  uint32_t length;
  uint8_t flags;
};

inline Character Read(const unsigned char* bytes, uint32_t position) {
  const unsigned char lead = bytes[position];
  if (lead < 0x80) return {lead, 1, kAsciiFlags[lead]};
  char32_t c;
  uint32_t length;
  if (lead < 0xE0) {
    c = ((lead & 0x1Fu) << 6) | (bytes[position + 1] & 0x3Fu);
    length = 2;
  } else if (lead < 0xF0) {
    c = ((lead & 0x0Fu) << 12) | ((bytes[position + 1] & 0x3Fu) << 6) | (bytes[position + 2] & 0x3Fu);
    length = 3;
  } else {
    c = ((lead & 0x07u) << 18) | ((bytes[position + 1] & 0x3Fu) << 12) | ((bytes[position + 2] & 0x3Fu) << 6) |
        (bytes[position + 3] & 0x3Fu);
    length = 4;
  }
  return {c, length, TableFlags(c)};
}

constexpr uint8_t kClasses = kBpeLetter | kBpeNumber | kBpeSpace;
inline bool IsLetter(const Character& c) { return (c.flags & kBpeLetter) != 0; }
inline bool IsNumber(const Character& c) { return (c.flags & kBpeNumber) != 0; }
inline bool IsSpace(const Character& c) { return (c.flags & kBpeSpace) != 0; }
// [^\s\p{L}\p{N}]
inline bool IsOther(const Character& c) { return (c.flags & kClasses) == 0; }
inline bool IsNewline(const Character& c) { return c.code_point == '\r' || c.code_point == '\n'; }

// The ASCII letter `c` matches under (?i:...), or 0.
char FoldedLetter(char32_t c, bool ignore_case) {
  if (c < 0x80) {
    const char letter = static_cast<char>(c);
    if (letter >= 'a' && letter <= 'z') return letter;
    return ignore_case && letter >= 'A' && letter <= 'Z' ? static_cast<char>(letter - 'A' + 'a') : 0;
  }
  if (!ignore_case) return 0;
  for (const auto& [code_point, letter] : kBpeCaseFolds) {
    if (code_point == c) return letter;
  }
  return 0;
}

// Bytes after the apostrophe at `position` that 's|'t|'re|'ve|'m|'ll|'d match, or 0.
uint32_t ContractionLength(const unsigned char* bytes, uint32_t position, uint32_t end, bool ignore_case) {
  uint32_t next = position + 1;
  if (next >= end) return 0;
  const Character first = Read(bytes, next);
  const char a = FoldedLetter(first.code_point, ignore_case);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return first.length;
  if (a != 'r' && a != 'v' && a != 'l') return 0;
  next += first.length;
  if (next >= end) return 0;
  const Character second = Read(bytes, next);
  const char b = FoldedLetter(second.code_point, ignore_case);
  if ((a == 'l' && b == 'l') || (a != 'l' && b == 'e')) return first.length + second.length;
  return 0;
}

template <typename Predicate>
inline uint32_t RunEnd(const unsigned char* bytes, uint32_t position, uint32_t end, Predicate predicate) {
  while (position < end) {
    const Character c = Read(bytes, position);
    if (!predicate(c)) break;
    position += c.length;
  }
  return position;
}

// The whitespace alternatives at `position` (a whitespace character): with `newlines`,
// \s*[\r\n]+ first; then \s+(?!\S); then \s+.
uint32_t WhitespaceEnd(const unsigned char* bytes, uint32_t position, uint32_t end, bool newlines) {
  uint32_t last_newline_end = 0;
  uint32_t last_start = position;
  uint32_t run_end = position;
  while (run_end < end) {
    const Character c = Read(bytes, run_end);
    if (!IsSpace(c)) break;
    last_start = run_end;
    run_end += c.length;
    if (IsNewline(c)) last_newline_end = run_end;
  }
  if (newlines && last_newline_end != 0) return last_newline_end;
  if (run_end == end || last_start == position) return run_end;
  return last_start;
}

void SplitGpt2(std::string_view text, uint32_t begin, uint32_t end, std::vector<Word>* words) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (uint32_t position = begin; position < end;) {
    const Character c0 = Read(bytes, position);
    uint32_t match_end = 0;
    if (c0.code_point == '\'') match_end = ContractionLength(bytes, position, end, false);
    if (match_end != 0) {
      match_end += position + 1;
    } else {
      // ` ?X+` for the three classes: the space joins a run of the class that follows it.
      uint32_t start = position;
      Character first = c0;
      if (c0.code_point == ' ' && position + 1 < end) {
        const Character c1 = Read(bytes, position + 1);
        if (!IsSpace(c1)) {
          first = c1;
          start = position + 1;
        }
      }
      if (IsLetter(first)) {
        match_end = RunEnd(bytes, start, end, IsLetter);
      } else if (IsNumber(first)) {
        match_end = RunEnd(bytes, start, end, IsNumber);
      } else if (IsOther(first)) {
        match_end = RunEnd(bytes, start, end, IsOther);
      } else {
        match_end = WhitespaceEnd(bytes, position, end, false);
      }
    }
    words->push_back({position, match_end, -1});
    position = match_end;
  }
}

void SplitQwen2(std::string_view text, uint32_t begin, uint32_t end, uint32_t max_digits, std::vector<Word>* words) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (uint32_t position = begin; position < end;) {
    const Character c0 = Read(bytes, position);
    uint32_t match_end = 0;
    if (IsLetter(c0)) {
      match_end = RunEnd(bytes, position + c0.length, end, IsLetter);
    } else if (IsNumber(c0)) {
      match_end = position + c0.length;
      for (uint32_t digits = 1; digits < max_digits && match_end < end; ++digits) {
        const Character c = Read(bytes, match_end);
        if (!IsNumber(c)) break;
        match_end += c.length;
      }
    } else {
      if (c0.code_point == '\'') {
        const uint32_t length = ContractionLength(bytes, position, end, true);
        if (length != 0) match_end = position + 1 + length;
      }
      const uint32_t next = position + c0.length;
      const Character c1 = next < end ? Read(bytes, next) : Character{0, 0, 0};
      if (match_end != 0) {
        // 's and the like.
      } else if (!IsNewline(c0) && next < end && IsLetter(c1)) {
        match_end = RunEnd(bytes, next + c1.length, end, IsLetter);
      } else if (IsOther(c0) || (c0.code_point == ' ' && next < end && IsOther(c1))) {
        const uint32_t start = IsOther(c0) ? position : next;
        match_end = RunEnd(bytes, start, end, IsOther);
        match_end = RunEnd(bytes, match_end, end, IsNewline);
      } else {
        match_end = WhitespaceEnd(bytes, position, end, true);
      }
    }
    words->push_back({position, match_end, -1});
    position = match_end;
  }
}

constexpr std::string_view kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kCl100kPattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// ---- NFC ----

constexpr char32_t kHangulFirst = 0xAC00;
constexpr char32_t kHangulLast = 0xD7A3;
constexpr char32_t kLeadFirst = 0x1100, kVowelFirst = 0x1161, kTrailFirst = 0x11A7;
constexpr uint32_t kVowelCount = 21, kTrailCount = 28;

uint8_t CombiningClass(char32_t c) {
  const auto* found = std::lower_bound(std::begin(kBpeCombiningClasses), std::end(kBpeCombiningClasses), c,
                                       [](const BpeCombiningClass& entry, char32_t key) { return entry.code_point < key; });
  return found != std::end(kBpeCombiningClasses) && found->code_point == c ? found->combining_class : 0;
}

void Decompose(char32_t c, std::vector<char32_t>* points) {
  if (c >= kHangulFirst && c <= kHangulLast) {
    const uint32_t index = c - kHangulFirst;
    points->push_back(kLeadFirst + index / (kVowelCount * kTrailCount));
    points->push_back(kVowelFirst + (index % (kVowelCount * kTrailCount)) / kTrailCount);
    if (index % kTrailCount != 0) points->push_back(kTrailFirst + index % kTrailCount);
    return;
  }
  const auto* found = std::lower_bound(std::begin(kBpeDecompositions), std::end(kBpeDecompositions), c,
                                       [](const BpeDecomposition& entry, char32_t key) { return entry.code_point < key; });
  if (found == std::end(kBpeDecompositions) || found->code_point != c) {
    points->push_back(c);
    return;
  }
  points->insert(points->end(), kBpeDecompositionPool + found->offset,
                 kBpeDecompositionPool + found->offset + found->length);
}

// The primary composite of (first, second), or 0.
char32_t Compose(char32_t first, char32_t second) {
  if (first >= kLeadFirst && first < kLeadFirst + 19 && second >= kVowelFirst && second < kVowelFirst + kVowelCount) {
    return kHangulFirst + ((first - kLeadFirst) * kVowelCount + (second - kVowelFirst)) * kTrailCount;
  }
  if (first >= kHangulFirst && first <= kHangulLast && (first - kHangulFirst) % kTrailCount == 0 &&
      second > kTrailFirst && second < kTrailFirst + kTrailCount) {
    return first + (second - kTrailFirst);
  }
  const auto* found = std::lower_bound(std::begin(kBpeCompositions), std::end(kBpeCompositions),
                                       std::make_pair(uint32_t{first}, uint32_t{second}),
                                       [](const BpeComposition& entry, std::pair<uint32_t, uint32_t> key) {
                                         return std::make_pair(entry.first, entry.second) < key;
                                       });
  return found != std::end(kBpeCompositions) && found->first == first && found->second == second ? found->composite
                                                                                                  : 0;
}

// NFC of a run of characters (decomposed into `points`), appended to `out` as UTF-8.
void ComposeRun(std::vector<char32_t>* points, std::string* out) {
  std::vector<char32_t>& p = *points;
  // Canonical ordering: a stable insertion sort of each run of nonzero classes.
  for (size_t i = 1; i < p.size(); ++i) {
    const uint8_t value = CombiningClass(p[i]);
    if (value == 0) continue;
    for (size_t j = i; j > 0;) {
      const uint8_t before = CombiningClass(p[j - 1]);
      if (before <= value) break;
      std::swap(p[j - 1], p[j]);
      --j;
    }
  }
  // Canonical composition.
  size_t kept = 0;
  size_t starter = SIZE_MAX;
  int last_class = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    const char32_t c = p[i];
    const int value = CombiningClass(c);
    if (starter != SIZE_MAX && (last_class < value || (last_class == 0 && kept - 1 == starter))) {
      const char32_t composite = Compose(p[starter], c);
      if (composite != 0) {
        p[starter] = composite;
        continue;
      }
    }
    if (value == 0) starter = kept;
    last_class = value;
    p[kept++] = c;
  }
  for (size_t i = 0; i < kept; ++i) utf8::Append(p[i], out);
}

}  // namespace

bool RecognizeSplitPattern(std::string_view regex, SplitPattern* pattern) {
  if (regex == kGpt2Pattern) *pattern = SplitPattern::kGpt2;
  else if (regex == kQwen2Pattern) *pattern = SplitPattern::kQwen2;
  else if (regex == kCl100kPattern) *pattern = SplitPattern::kCl100k;
  else return false;
  return true;
}

std::string_view SplitPatternText(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2: return kGpt2Pattern;
    case SplitPattern::kQwen2: return kQwen2Pattern;
    case SplitPattern::kCl100k: return kCl100kPattern;
  }
  return {};
}

void SplitWords(std::string_view text, uint32_t begin, uint32_t end, SplitPattern pattern, std::vector<Word>* words) {
  switch (pattern) {
    case SplitPattern::kGpt2: SplitGpt2(text, begin, end, words); return;
    case SplitPattern::kQwen2: SplitQwen2(text, begin, end, 1, words); return;
    case SplitPattern::kCl100k: SplitQwen2(text, begin, end, 3, words); return;
  }
}

bool IsNfcQuick(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const auto size = static_cast<uint32_t>(text.size());
  for (uint32_t position = 0; position < size;) {
    // Below U+0300 nothing changes under NFC nor composes with what precedes it.
    if (bytes[position] < 0xCC) {
      position += bytes[position] < 0x80 ? 1 : 2;
      continue;
    }
    const Character c = Read(bytes, position);
    if (c.flags & kBpeNfcCheck) return false;
    position += c.length;
  }
  return true;
}

void AppendNfc(std::string_view text, uint32_t base, std::string* out, OffsetMap* offsets,
               std::vector<char32_t>* points) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  const auto size = static_cast<uint32_t>(text.size());
  uint32_t copied = 0;        // text[0, copied) is already in `out`
  uint32_t previous = 0;      // start of the last character before `position`
  for (uint32_t position = 0; position < size;) {
    if (bytes[position] < 0xCC) {
      previous = position;
      position += bytes[position] < 0x80 ? 1 : 2;
      continue;
    }
    const Character c = Read(bytes, position);
    if (!(c.flags & kBpeNfcCheck)) {
      previous = position;
      position += c.length;
      continue;
    }
    // A run: the stable character before (it may compose with what follows) up to the next
    // stable character.
    const uint32_t run_begin = position > 0 ? previous : 0;
    uint32_t run_end = position + c.length;
    while (run_end < size) {
      const Character next = Read(bytes, run_end);
      if (!(next.flags & kBpeNfcCheck)) break;
      run_end += next.length;
    }
    out->append(text, copied, run_begin - copied);
    offsets->AppendSequence(run_begin - copied, base + copied);
    points->clear();
    for (uint32_t i = run_begin; i < run_end;) {
      const Character d = Read(bytes, i);
      Decompose(d.code_point, points);
      i += d.length;
    }
    const size_t before = out->size();
    ComposeRun(points, out);
    offsets->Append(out->size() - before, base + run_begin);
    copied = run_end;
    position = run_end;
    previous = run_end;  // never used as a run start: the next character starts or ends a run
  }
  out->append(text, copied, size - copied);
  offsets->AppendSequence(size - copied, base + copied);
}

bool IsRegexSpace(char32_t c) { return (TableFlags(c) & kBpeSpace) != 0; }

}  // namespace stamen::tokenizer::bpe
