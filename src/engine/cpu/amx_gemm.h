// Dense layers in bf16 on Intel's AMX tiles (Sapphire Rapids and later): one tdpbf16ps
// multiplies a 16 × 32 bf16 tile of the input by a 32 × 16 bf16 tile of the weight into a 16 × 16
// fp32 tile, 8,192 multiply-adds per instruction, against 16 · 2 for AVX512-BF16's vdpbf16ps.
//
// The weight is packed once (prepared_weights.h, WeightForm::kTilesBFloat16) in the pair panels
// the AVX512-BF16 tiles read, [panel][pair][16 columns][2], with the pairs of each panel padded
// to a multiple of 16: one panel's 16 pairs are then one weight tile, 1 KiB contiguous. The input
// is rounded to bf16 per call into rows of whole tiles (zero past k and past the last row).
// Products are summed in fp32, as the other bf16 paths sum them; each product of two bf16
// values is exact in fp32, so this sums what they sum, in another order.
//
// Every row count takes this path in bf16 where the CPU has AMX (cpu_path.h: CpuPath::amx):
// oneDNN 2.6's own AMX kernels (brgemm) are reached only by primitives made for a fixed row
// count, and at small row counts its runtime-row kernel (gemm:jit) is 10× slower
// (docs/BENCHMARKS.md, "Intel Xeon with AMX").
#pragma once

#include <cstdint>

#include "engine/ops/gemm.h"
#include "engine/tensor.h"

namespace stamen::engine::cpu {

// Depth steps in one tile: 16 rows of 64 bytes hold 16 rows × 32 bf16 of the input, and 16
// pairs × 16 columns of the weight.
inline constexpr int64_t kTileDepth = 32;
inline constexpr int64_t kTileRows = 16;

// Pairs a weight of depth k is padded to in its tile form: a whole number of tiles.
constexpr int64_t TilePairs(int64_t k) { return (k + kTileDepth - 1) / kTileDepth * (kTileDepth / 2); }

// Asks Linux once per process for the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM with
// XFEATURE_XTILEDATA): without it the first tile instruction kills the process with SIGILL.
// True when the CPU has AMX-BF16 and the kernel granted it.
bool RequestAmxTiles();

// output = act(input · weightᵀ + bias) (or added to output), in bf16 on AMX tiles, and true;
// false, computing nothing, when the weight gets no tile copy (no owner, the cap reached).
// Callers check CpuPath::amx first. Shapes are the caller's to check (ops::Gemm does).
bool AmxGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
             const ops::GemmOptions& options);

// down(act(up(input))) (added to output when `accumulate`), in bf16 on AMX tiles, and true: a
// thread takes a block of rows through both products, the up product's activated output
// rounded to bf16 into its own buffer, which the down product reads from the cache. The result
// is AmxGemm's for the two products, bit for bit. False, computing nothing, when a weight has
// no tile copy or the input is too short to give every thread blocks of its own.
bool AmxFeedForward(const Tensor& input, const Tensor& up_weight, const Tensor& up_bias, ops::Activation activation,
                    const Tensor& down_weight, const Tensor& down_bias, Tensor& output, bool accumulate);

// The tile product under AmxGemm, shared with the attention (amx_attention.cc):
//   sums[r, c] = Σ_t input[r, t] · panel column c at depth t
// for row_tiles (1 or 2) × 16 rows of `input` (bf16, rows `lda` elements apart, depth_tiles · 32
// deep) and `panels` (1 or 2) pair panels of 16 columns (`panel_elements` apart, each
// [depth_tiles · 16 pairs][16][2]), into fp32 `sums`, rows `ldc` floats apart. The calling thread
// must have loaded the tile configuration (LoadAmxTileConfig) since it last ran other tile code.
void MultiplyAmxTiles(int64_t row_tiles, int64_t panels, const uint16_t* input, int64_t lda, const uint16_t* panel,
                      int64_t panel_elements, int64_t depth_tiles, float* sums, int64_t ldc);
// Every tile 16 rows × 64 bytes, for the calling thread.
void LoadAmxTileConfig();

}  // namespace stamen::engine::cpu
