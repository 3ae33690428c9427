// Each step reads (text, offsets) and writes the next (text, offsets); the two buffers swap.
#include "tokenizer/huggingface_normalizer.h"

#include "tokenizer/grapheme.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

struct Buffer {
  std::string* text;
  std::vector<uint32_t>* offsets;
  void Clear() {
    text->clear();
    offsets->clear();
  }
  void Append(std::string_view bytes, uint32_t offset) {
    text->append(bytes);
    offsets->insert(offsets->end(), bytes.size(), offset);
  }
  void Copy(const Buffer& from, size_t begin, size_t end) {
    text->append(*from.text, begin, end - begin);
    offsets->insert(offsets->end(), from.offsets->begin() + static_cast<std::ptrdiff_t>(begin),
                    from.offsets->begin() + static_cast<std::ptrdiff_t>(end));
  }
};

size_t CharLength(std::string_view text, size_t position) {
  return utf8::LengthFromLeadByte(static_cast<unsigned char>(text[position]));
}

// spm_precompiled's rule, which Hugging Face documents as deliberate: a grapheme cluster
// shorter than 6 bytes is replaced whole by the replacement of the shortest rule that
// prefixes it; otherwise each of its characters is looked up on its own.
void ApplyPrecompiled(const Charsmap& charsmap, const Buffer& in, Buffer* out) {
  const std::string_view text = *in.text;
  std::string_view replacement;
  for (size_t position = 0; position < text.size();) {
    const size_t cluster_length = NextGraphemeLength(text, position);
    const std::string_view cluster = text.substr(position, cluster_length);
    const uint32_t offset = (*in.offsets)[position];
    if (cluster_length < 6 && charsmap.ShortestMatch(cluster, &replacement)) {
      out->Append(replacement, offset);
    } else {
      for (size_t i = 0; i < cluster_length;) {
        const size_t length = std::min(CharLength(cluster, i), cluster_length - i);
        if (charsmap.ShortestMatch(cluster.substr(i, length), &replacement)) {
          out->Append(replacement, (*in.offsets)[position + i]);
        } else {
          out->Copy(in, position + i, position + i + length);
        }
        i += length;
      }
    }
    position += cluster_length;
  }
}

void ApplyReplace(const ReplaceRule& rule, const Buffer& in, Buffer* out) {
  const std::string_view text = *in.text;
  const std::string_view pattern = rule.pattern;
  size_t copied = 0;
  for (size_t position = 0; position < text.size();) {
    size_t match_end = position;
    if (rule.minimum_repeats == 0) {
      if (text.substr(position, pattern.size()) == pattern) match_end = position + pattern.size();
    } else {
      size_t repeats = 0;
      while (text.substr(match_end, pattern.size()) == pattern) {
        match_end += pattern.size();
        ++repeats;
      }
      if (repeats < rule.minimum_repeats) match_end = position;
    }
    if (match_end == position) {
      ++position;
      continue;
    }
    out->Copy(in, copied, position);
    out->Append(rule.content, (*in.offsets)[position]);
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

}  // namespace

void NormalizeHuggingFace(const std::vector<NormalizerStep>& steps, std::string_view text,
                          uint32_t base_offset, std::string* normalized, std::vector<uint32_t>* offsets,
                          std::string* work, std::vector<uint32_t>* work_offsets) {
  Buffer current{normalized, offsets};
  Buffer next{work, work_offsets};
  current.Clear();
  current.text->append(text);
  for (uint32_t i = 0; i < text.size(); ++i) current.offsets->push_back(base_offset + i);
  for (const NormalizerStep& step : steps) {
    next.Clear();
    switch (step.kind) {
      case NormalizerStep::Kind::kPrecompiled:
        if (step.charsmap.empty()) continue;
        ApplyPrecompiled(step.charsmap, current, &next);
        break;
      case NormalizerStep::Kind::kReplace:
        ApplyReplace(step.replace, current, &next);
        break;
      case NormalizerStep::Kind::kStrip:
        ApplyStrip(step.strip_left, step.strip_right, current, &next);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (!current.text->empty()) next.Append(step.prepend, current.offsets->front());
        next.Copy(current, 0, current.text->size());
        break;
    }
    std::swap(current, next);
  }
  if (current.text != normalized) {
    normalized->swap(*current.text);
    offsets->swap(*current.offsets);
  }
}

}  // namespace stamen::tokenizer
