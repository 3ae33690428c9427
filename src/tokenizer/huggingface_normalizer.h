// Hugging Face's normalizers as they behave on text (Precompiled per grapheme cluster,
// Replace, Strip, Prepend), each tracking where every output byte came from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/huggingface_config.h"

namespace stamen::tokenizer {

// Normalizes `text` through `steps` into `normalized`; `offsets[i]` is the input offset
// (plus `base_offset`) of the character that produced normalized byte i. `work` and
// `work_offsets` are scratch.
void NormalizeHuggingFace(const std::vector<NormalizerStep>& steps, std::string_view text,
                          uint32_t base_offset, std::string* normalized, std::vector<uint32_t>* offsets,
                          std::string* work, std::vector<uint32_t>* work_offsets);

}  // namespace stamen::tokenizer
