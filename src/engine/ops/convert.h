// Convert: copy a tensor into another of the same shape, changing between F32, F16 and BF16.
#pragma once

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine::ops {

// `output` = `input` in output's dtype (round to nearest even when narrowing). Identity
// copies are allowed for every dtype; `input` may be unaligned (a view into a file).
Status Convert(const Tensor& input, Tensor& output);

// Sets every byte of `tensor` to zero (any dtype, any device).
Status Zero(Tensor& tensor);

}  // namespace stamen::engine::ops
