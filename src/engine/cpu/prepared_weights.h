// Copies of a dense layer's weight in the forms the CPU GEMM multiplies fastest: made once,
// on the weight's first use in that form, and kept beside the weight for as long as its
// memory lives. A copy is found again by the weight's address, shape and form, and holds the
// weight's memory owner weakly (Tensor::keep_alive), so a later weight at a reused address is
// prepared afresh. Copies are capped in total (kPreparedWeightBytesLimit); a weight beyond the
// cap, or one whose memory has no owner, gets none and its caller takes another path.
// The weight must not change while its memory lives: a copy is never refreshed.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/tensor.h"

namespace stamen::engine::cpu {

enum class WeightForm : uint8_t {
  // Panels of 16 output columns, [ceil(n / 16)][k][16], zero-padded: the small-m kernel's.
  kPanelsFloat32,
  // The same panels in bf16, each depth step's 16 values in BFloat16PanelSlot order (the bf16
  // small-m kernel widens them while multiplying).
  kPanelsBFloat16,
  // Panels of 16 columns over pairs of depth steps, [ceil(n / 16)][ceil(k / 2)][16][2] bf16,
  // zero-padded (an odd k's last pair too): AVX512-BF16's dot product multiplies each fp32
  // lane's two adjacent bf16 values, so column c's two weights of a pair sit side by side.
  kPanelsBFloat16Pairs,
  // The pair panels with each panel's pairs padded to whole AMX tiles,
  // [ceil(n / 16)][TilePairs(k)][16][2] bf16 (amx_gemm.h): 16 pairs of a panel are one tile.
  kTilesBFloat16,
  // The weight [n, k] as bf16 bit patterns, for oneDNN's bf16 matmul.
  kRowsBFloat16,
  // The weight [n, k] rounded to bf16 and kept as fp32: bf16 on a CPU without bf16 compute.
  kRowsRoundedFloat32,
  // The fp32 weight in oneDNN's blocked brgemm layout (blocked_weights.h); none where that
  // layout does not exist on this CPU.
  kBlockedFloat32,
};

// Total bytes of copies in one process: 2 GiB holds a 0.6B-parameter model's weights in both
// bf16 forms, or a BERT-large's fp32 panels.
constexpr size_t kPreparedWeightBytesLimit = size_t{2} << 30;

// The copy of `weight` (F32 [n, k]) in `form`, made on first use; null when it cannot be (no
// owner, the cap reached, out of memory).
const void* FindPreparedWeight(const Tensor& weight, WeightForm form);

// Bytes of copies held now (for tests and logs).
size_t PreparedWeightBytes();

}  // namespace stamen::engine::cpu
