// Each step reads (text, offsets) and writes the next (text, offsets); the two buffers swap.
#include "tokenizer/huggingface_normalizer.h"

#include <algorithm>

#include "tokenizer/bpe_text.h"
#include "tokenizer/grapheme.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

struct Buffer {
  std::string* text;
  OffsetMap* offsets;
  void Clear() {
    text->clear();
    offsets->Reset(offsets->enabled());
  }
  void Append(std::string_view bytes, uint32_t offset) {
    text->append(bytes);
    offsets->Append(bytes.size(), offset);
  }
  void Copy(const Buffer& from, size_t begin, size_t end) {
    text->append(*from.text, begin, end - begin);
    offsets->AppendRange(*from.offsets, begin, end);
  }
  uint32_t OffsetAt(size_t index) const { return offsets->At(index); }
};

size_t CharLength(std::string_view text, size_t position) {
  return utf8::LengthFromLeadByte(static_cast<unsigned char>(text[position]));
}

// spm_precompiled's rule, which Hugging Face documents as deliberate: a grapheme cluster
// shorter than 6 bytes is replaced whole by the replacement of the shortest rule that
// prefixes it; otherwise each of its characters is looked up on its own.
void ApplyPrecompiled(const NormalizerStep& step, const Buffer& in, Buffer* out) {
  const Charsmap& charsmap = step.charsmap;
  const std::string_view text = *in.text;
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  std::string_view replacement;
  for (size_t position = 0; position < text.size();) {
    // Fast path: ASCII characters that are their own one-byte cluster and have no rule.
    size_t run_end = position;
    while (run_end < text.size() && bytes[run_end] < 0x80 && step.ascii_unchanged[bytes[run_end]] &&
           (run_end + 1 == text.size() || bytes[run_end + 1] < 0x80)) {
      ++run_end;
    }
    if (run_end > position) {
      out->Copy(in, position, run_end);
      position = run_end;
      continue;
    }
    const size_t cluster_length = NextGraphemeLength(text, position);
    const std::string_view cluster = text.substr(position, cluster_length);
    const uint32_t offset = in.OffsetAt(position);
    if (cluster_length < 6 && charsmap.ShortestMatch(cluster, &replacement)) {
      out->Append(replacement, offset);
    } else {
      for (size_t i = 0; i < cluster_length;) {
        const size_t length = std::min(CharLength(cluster, i), cluster_length - i);
        if (charsmap.ShortestMatch(cluster.substr(i, length), &replacement)) {
          out->Append(replacement, in.OffsetAt(position + i));
        } else {
          out->Copy(in, position + i, position + i + length);
        }
        i += length;
      }
    }
    position += cluster_length;
  }
}

// The end of the first alternative of `rule` matching at `position`, or `position`.
size_t MatchRegex(const ReplaceRule& rule, std::string_view text, size_t position) {
  for (const ReplaceAlternative& alternative : rule.alternatives) {
    if (alternative.at_start && position != 0) continue;
    size_t end = position;
    size_t repeats = 0;
    while (end < text.size() && (alternative.maximum_repeats == 0 || repeats < alternative.maximum_repeats)) {
      const utf8::Decoded decoded = utf8::Decode(text, end);
      const bool member = (alternative.whitespace && bpe::IsRegexSpace(decoded.code_point)) ||
                          std::find(alternative.characters.begin(), alternative.characters.end(), decoded.code_point) !=
                              alternative.characters.end();
      if (!member) break;
      end += decoded.length;
      ++repeats;
    }
    // Greedy repeats of one set: a shorter run cannot reach the end when the longest did not.
    if (repeats < alternative.minimum_repeats || (alternative.at_end && end != text.size())) continue;
    return end;
  }
  return position;
}

void ApplyReplace(const ReplaceRule& rule, const Buffer& in, Buffer* out) {
  const std::string_view text = *in.text;
  const std::string_view pattern = rule.pattern;
  size_t copied = 0;
  for (size_t position = 0; position < text.size();) {
    size_t match_end = position;
    if (!pattern.empty()) {
      if (text.substr(position, pattern.size()) == pattern) match_end = position + pattern.size();
    } else {
      match_end = MatchRegex(rule, text, position);
    }
    if (match_end == position) {
      // Regexes step by character; a literal (valid UTF-8) can only match at a character
      // boundary, so stepping by byte finds the same matches.
      position += pattern.empty() ? CharLength(text, position) : 1;
      continue;
    }
    out->Copy(in, copied, position);
    out->Append(rule.content, in.OffsetAt(position));
    copied = position = match_end;
  }
  out->Copy(in, copied, text.size());
}

void ApplyStrip(bool left, bool right, const Buffer& in, Buffer* out) {
  const std::string_view text = *in.text;
  size_t begin = 0;
  size_t end = text.size();
  while (left && begin < end) {
    const utf8::Decoded decoded = utf8::Decode(text, begin);
    if (!utf8::IsWhitespace(decoded.code_point)) break;
    begin += decoded.length;
  }
  while (right && end > begin) {
    size_t start = end - 1;
    while (start > begin && (static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) --start;
    if (!utf8::IsWhitespace(utf8::Decode(text, start).code_point)) break;
    end = start;
  }
  out->Copy(in, begin, end);
}

// NFC as tokenizers applies it (the BPE path's implementation); text NFC cannot change is copied.
void ApplyNfc(const Buffer& in, Buffer* out) {
  const std::string_view text = *in.text;
  if (bpe::IsNfcQuick(text)) {
    out->Copy(in, 0, text.size());
    return;
  }
  // Rare (text with characters NFC may change): scratch allocated here is accepted.
  OffsetMap positions;
  positions.Reset(in.offsets->enabled());
  std::vector<char32_t> points;
  bpe::AppendNfc(text, 0, out->text, &positions, &points);
  if (!in.offsets->enabled()) return;
  for (size_t i = 0; i < out->text->size(); ++i) out->offsets->Append(1, in.OffsetAt(positions.At(i)));
}

}  // namespace

void NormalizeHuggingFace(const std::vector<NormalizerStep>& steps, std::string_view text,
                          uint32_t base_offset, std::string* normalized, OffsetMap* offsets,
                          std::string* work, OffsetMap* work_offsets) {
  work_offsets->Reset(offsets->enabled());
  Buffer current{normalized, offsets};
  Buffer next{work, work_offsets};
  current.Clear();
  current.text->append(text);
  current.offsets->AppendSequence(text.size(), base_offset);
  for (const NormalizerStep& step : steps) {
    next.Clear();
    switch (step.kind) {
      case NormalizerStep::Kind::kPrecompiled:
        if (step.charsmap.empty()) continue;
        ApplyPrecompiled(step, current, &next);
        break;
      case NormalizerStep::Kind::kReplace:
        ApplyReplace(step.replace, current, &next);
        break;
      case NormalizerStep::Kind::kStrip:
        ApplyStrip(step.strip_left, step.strip_right, current, &next);
        break;
      case NormalizerStep::Kind::kNfc:
        ApplyNfc(current, &next);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!current.text->empty()) next.Append(step.prepend, current.OffsetAt(0));
        next.Copy(current, 0, current.text->size());
        break;
    }
    std::swap(current, next);
  }
  if (current.text != normalized) {
    normalized->swap(*current.text);
    offsets->Swap(*current.offsets);
  }
}

}  // namespace stamen::tokenizer
