// Template assembly with Hugging Face's truncation arithmetic.
#include "tokenizer/post_processor.h"

#include <algorithm>

namespace stamen::tokenizer {
namespace {

template <typename T>
void KeepRange(std::vector<T>* values, size_t length, TruncationSide side) {
  if (values->size() <= length) return;
  if (side == TruncationSide::kRight) {
    values->resize(length);
  } else {
    values->erase(values->begin(), values->end() - static_cast<std::ptrdiff_t>(length));
  }
}

void AppendContent(const Encoding& content, uint8_t type_id, bool with_pieces, Encoding* out) {
  out->ids.insert(out->ids.end(), content.ids.begin(), content.ids.end());
  out->type_ids.insert(out->type_ids.end(), content.ids.size(), type_id);
  if (!with_pieces) return;
  out->pieces.insert(out->pieces.end(), content.pieces.begin(), content.pieces.end());
  out->offsets.insert(out->offsets.end(), content.offsets.begin(), content.offsets.end());
}

}  // namespace

void TruncateEncoding(Encoding* encoding, size_t length, TruncationSide side) {
  KeepRange(&encoding->ids, length, side);
  KeepRange(&encoding->type_ids, length, side);
  KeepRange(&encoding->pieces, length, side);
  KeepRange(&encoding->offsets, length, side);
}

size_t PostProcessor::SpecialCount(bool is_pair) const {
  size_t count = 0;
  for (const TemplateItem& item : is_pair ? pair : single) count += item.special_ids.size();
  return count;
}

void PostProcessor::Assemble(Encoding* first, Encoding* second, const EncodeOptions& options,
                             Encoding* out) const {
  const bool is_pair = second != nullptr;
  const size_t specials = options.add_special_tokens ? SpecialCount(is_pair) : 0;
  // Like Hugging Face, a limit below the template's own special tokens truncates nothing.
  if (options.max_length > 0 && options.max_length >= specials) {
    const size_t budget = options.max_length - specials;
    if (!is_pair) {
      TruncateEncoding(first, budget, options.truncation_side);
    } else if (first->ids.size() + second->ids.size() > budget) {
      // Hugging Face's longest-first: cut only the longer text if that suffices, else
      // split the budget evenly (the odd token to the longer one).
      size_t shorter = std::min(first->ids.size(), second->ids.size());
      size_t longer = shorter > budget ? shorter : std::max(shorter, budget - shorter);
      if (shorter + longer > budget) {
        shorter = budget / 2;
        longer = shorter + budget % 2;
      }
      const bool first_is_longer = first->ids.size() > second->ids.size();
      TruncateEncoding(first, first_is_longer ? longer : shorter, options.truncation_side);
      TruncateEncoding(second, first_is_longer ? shorter : longer, options.truncation_side);
    }
  }

  out->Clear();
  const std::vector<TemplateItem>& items = is_pair ? pair : single;
  if (!options.add_special_tokens || items.empty()) {
    AppendContent(*first, 0, options.with_pieces, out);
    if (is_pair) AppendContent(*second, 1, options.with_pieces, out);
    return;
  }
  for (const TemplateItem& item : items) {
    if (item.is_sequence) {
      AppendContent(item.sequence == 0 ? *first : *second, item.type_id, options.with_pieces, out);
      continue;
    }
    out->ids.insert(out->ids.end(), item.special_ids.begin(), item.special_ids.end());
    out->type_ids.insert(out->type_ids.end(), item.special_ids.size(), item.type_id);
    if (options.with_pieces) {
      out->pieces.insert(out->pieces.end(), item.special_pieces.begin(), item.special_pieces.end());
      out->offsets.insert(out->offsets.end(), item.special_ids.size(), {0u, 0u});
    }
  }
}

}  // namespace stamen::tokenizer
