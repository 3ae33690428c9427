// Extended grapheme cluster boundaries, rule for rule as unicode-segmentation 1.13.3 decides
// them (UAX #29 GB1-GB13 with GB9c, Unicode 17.0.0); the ASCII fast path is in grapheme.h.
#include "tokenizer/grapheme.h"

#include <cstdint>

#include "tokenizer/code_point_ranges.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

// Grapheme_Cluster_Break refined the way the crate does it, so that one lookup answers every
// rule: Extended_Pictographic and InCB=Consonant (both only ever Grapheme_Cluster_Break=Other)
// get values of their own, and Extend splits by InCB, which only GB9c looks at.
enum GraphemeProperty : uint8_t {
  kOther,
  kCR,
  kLF,
  kControl,
  kExtend,        // Grapheme_Cluster_Break=Extend, InCB=Extend
  kLinker,        // Grapheme_Cluster_Break=Extend, InCB=Linker (viramas)
  kExtendNoInCB,  // Grapheme_Cluster_Break=Extend, InCB=None (U+200C ZWNJ)
  kZWJ,           // also InCB=Extend
  kRegionalIndicator,
  kPrepend,
  kSpacingMark,
  kL,
  kV,
  kT,
  kLV,
  kLVT,
  kExtendedPictographic,
  kConsonant,      // InCB=Consonant
  kHangulSyllable  // only in the table: LV or LVT, told apart by arithmetic
};

struct GraphemeRange {
  char32_t first;
  char32_t last;
  GraphemeProperty property;
};

#include "tokenizer/grapheme_tables.inc"

constexpr char32_t kHangulSyllableFirst = 0xAC00;
constexpr char32_t kHangulTrailingCount = 28;  // T count of Unicode ch. 3.12

constexpr CodePointRanges kGraphemeIndex(kGraphemeRanges);

GraphemeProperty PropertyOf(char32_t code_point) {
  // ASCII, common next to non-ASCII text too, holds only controls and Other.
  if (code_point < 0x80) {
    if (code_point >= 0x20 && code_point < 0x7F) return kOther;
    if (code_point == '\r') return kCR;
    return code_point == '\n' ? kLF : kControl;
  }
  const GraphemeRange* range = kGraphemeIndex.Find(code_point);
  if (range == nullptr) return kOther;
  if (range->property != kHangulSyllable) return range->property;
  return (code_point - kHangulSyllableFirst) % kHangulTrailingCount == 0 ? kLV : kLVT;
}

bool IsExtendOrZwj(GraphemeProperty p) {
  return p == kExtend || p == kLinker || p == kExtendNoInCB || p == kZWJ;
}

bool IsControl(GraphemeProperty p) { return p == kCR || p == kLF || p == kControl; }

// What GB9c, GB11 and GB12/GB13 need to know about the text before a candidate boundary;
// the other rules only look at the two code points around it. Each field describes a suffix
// of the text consumed so far, so it never needs resetting at a boundary.
struct Context {
  bool odd_regional_indicators = false;  // an odd-length run of RI ends here (GB12/GB13)
  bool pictographic = false;             // ExtPict Extend* ends here (GB11)
  bool pictographic_zwj = false;         // ExtPict Extend* ZWJ ends here (GB11)
  bool conjunct = false;                 // Consonant [InCB Extend|Linker]* ends here (GB9c)
  bool conjunct_linked = false;          // ...and that tail holds a Linker (GB9c)
};

Context Advance(const Context& context, GraphemeProperty consumed) {
  Context next;
  switch (consumed) {
    case kExtend:
      next.pictographic = context.pictographic;
      next.conjunct = context.conjunct;
      next.conjunct_linked = context.conjunct_linked;
      break;
    case kLinker:
      next.pictographic = context.pictographic;
      next.conjunct = context.conjunct;
      next.conjunct_linked = context.conjunct;
      break;
    case kExtendNoInCB:
      // ZWNJ is Extend for GB9/GB11 but InCB=None, so it ends a conjunct.
      next.pictographic = context.pictographic;
      break;
    case kZWJ:
      next.pictographic_zwj = context.pictographic;
      next.conjunct = context.conjunct;
      next.conjunct_linked = context.conjunct_linked;
      break;
    case kExtendedPictographic:
      next.pictographic = true;
      break;
    case kRegionalIndicator:
      next.odd_regional_indicators = !context.odd_regional_indicators;
      break;
    case kConsonant:
      next.conjunct = true;
      break;
    default:
      break;
  }
  return next;
}

// `context` already includes `before`. The order of the tests is the order of the rules.
bool IsBoundary(GraphemeProperty before, GraphemeProperty after, const Context& context) {
  if (before == kCR && after == kLF) return false;         // GB3
  if (IsControl(before) || IsControl(after)) return true;  // GB4, GB5
  switch (before) {
    case kL:  // GB6
      if (after == kL || after == kV || after == kLV || after == kLVT) return false;
      break;
    case kLV:
    case kV:  // GB7
      if (after == kV || after == kT) return false;
      break;
    case kLVT:
    case kT:  // GB8
      if (after == kT) return false;
      break;
    default:
      break;
  }
  if (IsExtendOrZwj(after) || after == kSpacingMark) return false;       // GB9, GB9a
  if (before == kPrepend) return false;                                  // GB9b
  if (after == kConsonant) return !context.conjunct_linked;              // GB9c
  if (after == kExtendedPictographic) return !context.pictographic_zwj;  // GB11
  if (after == kRegionalIndicator && before == kRegionalIndicator) {     // GB12, GB13
    return !context.odd_regional_indicators;
  }
  return true;  // GB999
}

}  // namespace

namespace grapheme_internal {

size_t NextGraphemeLengthSlow(std::string_view text, size_t position) {
  if (position >= text.size()) return 0;
  const utf8::Decoded first = utf8::Decode(text, position);
  GraphemeProperty before = PropertyOf(first.code_point);
  Context context = Advance(Context(), before);
  size_t end = position + first.length;
  while (end < text.size()) {
    const utf8::Decoded next = utf8::Decode(text, end);
    const GraphemeProperty after = PropertyOf(next.code_point);
    if (IsBoundary(before, after, context)) break;
    context = Advance(context, after);
    before = after;
    end += next.length;
  }
  return end - position;
}

}  // namespace grapheme_internal
}  // namespace stamen::tokenizer
