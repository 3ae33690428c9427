// Hugging Face's normalizers as they behave on text (Precompiled per grapheme cluster,
// Replace, Strip, Prepend), each tracking where every output byte came from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/huggingface_config.h"
#include "tokenizer/offset_map.h"

namespace stamen::tokenizer {

// Normalizes `text` through `steps` into `normalized`; when `offsets` is enabled, its entry
// i is the input offset (plus `base_offset`) of the character that produced normalized
// byte i. `work` and `work_offsets` are scratch.
void NormalizeHuggingFace(const std::vector<NormalizerStep>& steps, std::string_view text,
                          uint32_t base_offset, std::string* normalized, OffsetMap* offsets,
                          std::string* work, OffsetMap* work_offsets);

}  // namespace stamen::tokenizer
