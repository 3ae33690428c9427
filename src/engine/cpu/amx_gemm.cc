// The AMX bf16 GEMM (see amx_gemm.h). Eight tile registers: four 16 × 16 fp32 sums (two tiles
// of rows × two panels of 16 columns), two input tiles and two weight tiles, so each depth step
// of 32 loads four tiles for four tdpbf16ps. The sums go through a 4 KiB buffer of the thread
// to the epilogue (bias, activation, accumulation), which writes only the rows and columns
// that exist.
#include "engine/cpu/amx_gemm.h"

#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <vector>

#include "engine/cpu/avx512_math.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/prepared_weights.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vector_activation.h"

// GCC 12's false alarms on its own AVX-512 intrinsics once inlined (see small_gemm.cc).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#define STAMEN_AMX_TARGET gnu::target("amx-tile,amx-bf16,avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")

namespace stamen::engine::cpu {
namespace {

constexpr int64_t kPanelWidth = 16;          // output columns per weight tile
constexpr int64_t kTileBytes = 64;           // bytes per tile row
constexpr int64_t kRowBlockTiles = 16;       // tiles of rows per task: 256 rows
constexpr int64_t kTilePairBytes = kTileRows * kTileBytes;  // one weight tile, 1 KiB
constexpr int64_t kStreamedOutputBytes = int64_t{32} << 20;
constexpr int64_t kPrefetchedRows = 128;

// The tile configuration every product uses: all eight tiles 16 rows × 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

constexpr TileConfig MakeTileConfig() {
  TileConfig config;
  for (int tile = 0; tile < 8; ++tile) {
    config.bytes_per_row[tile] = kTileBytes;
    config.rows[tile] = kTileRows;
  }
  return config;
}

// A constant in memory: GCC 12's _tile_loadconfig tells the compiler that it reads 8 bytes of
// its operand, so the stores that fill a configuration on the stack were dropped as dead.
constexpr TileConfig kTileConfig = MakeTileConfig();

[[STAMEN_AMX_TARGET]] void LoadTileConfig() { _tile_loadconfig(&kTileConfig); }

// Rows [first, first + rows) of the input rounded to bf16 into `packed` (lda elements apart),
// zero past k and in the rows up to the next whole tile.
[[STAMEN_AMX_TARGET]] void PackRows(const float* input, int64_t k, int64_t first, int64_t rows, int64_t tile_rows,
                                    int64_t lda, uint16_t* packed) {
  const int64_t depth = lda / kTileDepth * kTileDepth;
  for (int64_t r = first; r < first + tile_rows; ++r) {
    uint16_t* target = packed + r * lda;
    if (r >= first + rows) {
      std::memset(target, 0, depth * sizeof(uint16_t));
      continue;
    }
    const float* row = input + r * k;
    for (int64_t t = 0; t < depth; t += kTileDepth) {
      const int64_t left = k - t;
      const __mmask16 low = static_cast<__mmask16>(left >= 16 ? 0xFFFF : left <= 0 ? 0 : (1u << left) - 1);
      const __mmask16 high =
          static_cast<__mmask16>(left >= 32 ? 0xFFFF : left <= 16 ? 0 : (1u << (left - 16)) - 1);
      const __m512 first_half = _mm512_maskz_loadu_ps(low, row + t);
      const __m512 second_half = _mm512_maskz_loadu_ps(high, row + t + 16);
      _mm512_storeu_si512(target + t, (__m512i)_mm512_cvtne2ps_pbh(second_half, first_half));
    }
  }
}

// The 16 cache lines of each tile that the next depth step loads, requested into L1 now. A tile
// load that misses L1 stalls the tile unit, and neither the input's 16 strided rows nor the
// panels were in L1 at the shapes that matter (a row block's input and a panel pair for 1536-deep
// products exceed it). Both operands prefetched one step ahead, measured in a bare tile loop on
// one core of a Xeon with AMX: 650 → 790 GFLOP/s at depth 384, 710 → 950 at depth 1536; the
// input's alone gave most of it, the panels' alone nothing, two or four steps ahead less.
template <int kRowTiles, int kPanels>
[[STAMEN_AMX_TARGET, gnu::always_inline]] inline void PrefetchStep(const uint16_t* input, int64_t lda,
                                                                   const uint16_t* weight, int64_t panel_elements) {
  constexpr int64_t kLineElements = kTileBytes / sizeof(uint16_t);
  for (int64_t line = 0; line < kTileRows; ++line) {
    _mm_prefetch(reinterpret_cast<const char*>(input + line * lda), _MM_HINT_T0);
    if constexpr (kRowTiles == 2) _mm_prefetch(reinterpret_cast<const char*>(input + (kTileRows + line) * lda), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(weight + line * kLineElements), _MM_HINT_T0);
    if constexpr (kPanels == 2) {
      _mm_prefetch(reinterpret_cast<const char*>(weight + panel_elements + line * kLineElements), _MM_HINT_T0);
    }
  }
}

// The tile product of up to 2 × 16 rows and 2 panels into `sums`, calling between(step,
// depth_tiles) after each depth step's tile instructions are issued: the tile unit works through
// them while the caller's vector code runs (MultiplyGroups finishes the previous product there).
template <int kRowTiles, int kPanels, typename BetweenSteps>
[[STAMEN_AMX_TARGET, gnu::always_inline]] inline void MultiplyTilesWhile(const uint16_t* input, int64_t lda,
                                                                         const uint16_t* panel, int64_t panel_elements,
                                                                         int64_t depth_tiles, float* sums, int64_t ldc,
                                                                         bool prefetch, const BetweenSteps& between) {
  _tile_zero(0);
  if constexpr (kPanels == 2) _tile_zero(1);
  if constexpr (kRowTiles == 2) _tile_zero(2);
  if constexpr (kRowTiles == 2 && kPanels == 2) _tile_zero(3);
  const int64_t input_stride = lda * sizeof(uint16_t);
  for (int64_t t = 0; t < depth_tiles; ++t) {
    const uint16_t* weight = panel + t * kTilePairBytes / sizeof(uint16_t);
    // Past the last step these name lines beyond the operands: prefetches never fault.
    if (prefetch) PrefetchStep<kRowTiles, kPanels>(input + (t + 1) * kTileDepth, lda, weight + kTilePairBytes / sizeof(uint16_t),
                                     panel_elements);
    _tile_loadd(4, input + t * kTileDepth, input_stride);
    _tile_loadd(6, weight, kTileBytes);
    _tile_dpbf16ps(0, 4, 6);
    if constexpr (kPanels == 2) {
      _tile_loadd(7, weight + panel_elements, kTileBytes);
      _tile_dpbf16ps(1, 4, 7);
    }
    if constexpr (kRowTiles == 2) {
      _tile_loadd(5, input + kTileRows * lda + t * kTileDepth, input_stride);
      _tile_dpbf16ps(2, 5, 6);
      if constexpr (kPanels == 2) _tile_dpbf16ps(3, 5, 7);
    }
    between(t, depth_tiles);
  }
  const int64_t sums_stride = ldc * sizeof(float);
  _tile_stored(0, sums, sums_stride);
  if constexpr (kPanels == 2) _tile_stored(1, sums + kPanelWidth, sums_stride);
  if constexpr (kRowTiles == 2) _tile_stored(2, sums + kTileRows * ldc, sums_stride);
  if constexpr (kRowTiles == 2 && kPanels == 2) _tile_stored(3, sums + kTileRows * ldc + kPanelWidth, sums_stride);
}

template <int kRowTiles, int kPanels>
[[STAMEN_AMX_TARGET]] void MultiplyTiles(const uint16_t* input, int64_t lda, const uint16_t* panel,
                                         int64_t panel_elements, int64_t depth_tiles, float* sums, int64_t ldc) {
  MultiplyTilesWhile<kRowTiles, kPanels>(input, lda, panel, panel_elements, depth_tiles, sums, ldc, false,
                                         [](int64_t, int64_t) {});
}

using TileProduct = void (*)(const uint16_t*, int64_t, const uint16_t*, int64_t, int64_t, float*, int64_t);
// kProducts[row tiles − 1][panels − 1]
constexpr TileProduct kProducts[2][2] = {{MultiplyTiles<1, 1>, MultiplyTiles<1, 2>},
                                         {MultiplyTiles<2, 1>, MultiplyTiles<2, 2>}};

struct Epilogue {
  const float* bias;  // the block's first column's, or null
  ops::Activation activation;
  bool accumulate;
  bool streams;  // whole, aligned vectors written past the caches (Multiply says when)
};

// One vector of sums activated: GELU (BERT's) on sixteen lanes; the rarer activations on two
// halves of eight (vector_activation.h), the same function per lane.
[[STAMEN_AMX_TARGET, gnu::always_inline]] inline __m512 Activate(ops::Activation activation, __m512 value) {
  if (activation == ops::Activation::kGeluErf) return GeluErfSixteen(value);
  const __m256 low = ActivateEight(activation, _mm512_castps512_ps256(value));
  const __m256 high = ActivateEight(activation, _mm512_extractf32x8_ps(value, 1));
  return _mm512_insertf32x8(_mm512_castps256_ps512(low), high, 1);
}

// `rows` rows of sums (`width` floats apart) plus bias, activated, stored or added into the
// output's first `columns` columns, in one pass over the sums.
[[STAMEN_AMX_TARGET]] void Finish(const float* sums, int64_t rows, int64_t width, int64_t columns,
                                  const Epilogue& epilogue, float* output, int64_t ldc) {
  const bool activates = !epilogue.accumulate && epilogue.activation != ops::Activation::kIdentity;
  for (int64_t c = 0; c < width; c += 16) {
    const int64_t in_vector = std::clamp<int64_t>(columns - c, 0, 16);
    if (in_vector == 0) break;
    const __mmask16 mask = static_cast<__mmask16>((1u << in_vector) - 1);
    const __m512 bias = epilogue.bias == nullptr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mask, epilogue.bias + c);
    for (int64_t r = 0; r < rows; ++r) {
      float* target = output + r * ldc + c;
      __m512 value = _mm512_add_ps(_mm512_load_ps(sums + r * width + c), bias);
      if (activates) value = Activate(epilogue.activation, value);
      if (epilogue.accumulate) value = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, target), value);
      if (epilogue.streams && in_vector == 16 && reinterpret_cast<uintptr_t>(target) % 64 == 0) {
        _mm512_stream_ps(target, value);
      } else {
        _mm512_mask_storeu_ps(target, mask, value);
      }
    }
  }
}

// `rows` rows of sums (`width` floats apart: 16 or 32 columns) plus bias, activated and rounded
// to bf16 into 32 columns of a tile copy (`output`, rows `lda` elements apart) that the next
// product reads as its input: the columns past `columns` become zeros, as PackRows writes
// them. The rounding is PackRows' (round to nearest even), so the next product reads what it
// would have read from an fp32 output packed afterwards.
[[STAMEN_AMX_TARGET]] void FinishToTiles(const float* sums, int64_t rows, int64_t width, int64_t columns,
                                         const float* bias_columns, ops::Activation activation, uint16_t* output,
                                         int64_t lda) {
  const int64_t low_columns = std::clamp<int64_t>(columns, 0, 16);
  const int64_t high_columns = std::clamp<int64_t>(columns - 16, 0, 16);
  const __mmask16 low_mask = static_cast<__mmask16>((1u << low_columns) - 1);
  const __mmask16 high_mask = static_cast<__mmask16>((1u << high_columns) - 1);
  const bool has_high = width > 16;
  const __m512 low_bias =
      bias_columns == nullptr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(low_mask, bias_columns);
  const __m512 high_bias =
      bias_columns == nullptr || !has_high ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(high_mask, bias_columns + 16);
  const bool activates = activation != ops::Activation::kIdentity;
  for (int64_t r = 0; r < rows; ++r) {
    __m512 low = _mm512_add_ps(_mm512_load_ps(sums + r * width), low_bias);
    __m512 high = has_high ? _mm512_add_ps(_mm512_load_ps(sums + r * width + 16), high_bias) : _mm512_setzero_ps();
    if (activates) {
      low = Activate(activation, low);
      high = Activate(activation, high);
    }
    low = _mm512_maskz_mov_ps(low_mask, low);
    high = _mm512_maskz_mov_ps(high_mask, high);
    _mm512_store_si512(output + r * lda, (__m512i)_mm512_cvtne2ps_pbh(high, low));
  }
}

// The tile copy's row stride in elements: k in whole tiles, plus one tile row where a stride
// of a multiple of 4 KiB would put all 16 rows of a tile into one set of the L1 cache.
int64_t InputStride(int64_t k) {
  int64_t lda = (k + kTileDepth - 1) / kTileDepth * kTileDepth;
  if (lda * static_cast<int64_t>(sizeof(uint16_t)) % 4096 == 0) lda += kTileDepth;
  return lda;
}

// What MultiplyBlock reads of one product.
struct Product {
  const uint16_t* panels;
  const float* bias;
  int64_t n;
  float* output;
  ops::GemmOptions options;
  uint64_t id;           // this product's number: a thread loads the tile configuration once per product
  int64_t lda;           // InputStride(k)
  int64_t depth_tiles;   // TilePairs(k) / 16
  int64_t panel_elements;
  int64_t panel_count;
  // An output past kStreamedOutputBytes would not stay in the cache for the next layer to read:
  // its lines are written without being read first (non-temporal stores), half the traffic.
  bool streams;
};

// 64-byte aligned room for `elements` in a buffer of the calling thread: a tile row is then one
// cache line.
// `slot` 0 holds a product's input, slot 1 the intermediate of a fused feed-forward.
uint16_t* PackingBuffer(int64_t elements, int slot = 0) {
  thread_local std::vector<uint16_t> buffers[2];
  std::vector<uint16_t>& buffer = buffers[slot];
  if (buffer.size() < static_cast<size_t>(elements + kTileDepth)) buffer.resize(elements + kTileDepth);
  return reinterpret_cast<uint16_t*>((reinterpret_cast<uintptr_t>(buffer.data()) + 63) & ~uintptr_t{63});
}

void ConfigureTiles(uint64_t product) {
  thread_local uint64_t configured_for = 0;
  if (configured_for != product) {
    LoadTileConfig();
    configured_for = product;
  }
}

// One product of up to 2 × 16 rows and 32 columns whose sums wait to be finished.
struct WaitingSums {
  const float* sums;
  int64_t row, rows, width, first_column, columns;
};

// The tile product of `row_tiles` × `panels` tiles, finishing `waiting`'s rows a share at a time
// between its depth steps (all of them by its end), in pieces of at least 8 rows: a piece of one
// or two rows cost more in the epilogue's setup than its overlap won.
template <typename FinishSums>
[[STAMEN_AMX_TARGET]] void MultiplyWhileFinishing(int64_t row_tiles, int64_t panels, const uint16_t* input,
                                                  int64_t lda, const uint16_t* panel, int64_t panel_elements,
                                                  int64_t depth_tiles, float* sums, int64_t ldc, bool prefetch,
                                                  const WaitingSums& waiting, const FinishSums& finish) {
  const auto between = [&](int64_t step, int64_t steps) {
    const auto cut = [&](int64_t done) {
      return done == steps ? waiting.rows : std::min(waiting.rows, waiting.rows * done / steps / 8 * 8);
    };
    const int64_t begin = cut(step), end = cut(step + 1);
    if (end > begin) {
      finish(waiting.sums + begin * waiting.width, waiting.row + begin, end - begin, waiting.width,
             waiting.first_column, waiting.columns);
    }
  };
  if (row_tiles == 2 && panels == 2) {
    MultiplyTilesWhile<2, 2>(input, lda, panel, panel_elements, depth_tiles, sums, ldc, prefetch, between);
  } else if (row_tiles == 2) {
    MultiplyTilesWhile<2, 1>(input, lda, panel, panel_elements, depth_tiles, sums, ldc, prefetch, between);
  } else if (panels == 2) {
    MultiplyTilesWhile<1, 2>(input, lda, panel, panel_elements, depth_tiles, sums, ldc, prefetch, between);
  } else {
    MultiplyTilesWhile<1, 1>(input, lda, panel, panel_elements, depth_tiles, sums, ldc, prefetch, between);
  }
}

// Rows [0, rows) of `packed` (tiles of rows) times the column groups [first_group, end_group) of
// two panels each: for every product of up to 2 × 16 rows and 32 columns, finish(sums, row,
// rows there, width of sums, first column, columns that exist) writes it where it goes.
// Software-pipelined: each product's sums are finished during the next product's tile
// instructions, from the other of two buffers. Finished right after its own product, the
// epilogue first waited for the tile unit to drain, and the tiles then stood idle through it
// (perf: the epilogue's first load of the sums was its hottest instruction).
template <typename FinishSums>
void MultiplyGroups(const Product& product, const uint16_t* packed, int64_t rows, int64_t first_group,
                    int64_t end_group, const FinishSums& finish) {
  constexpr int64_t kSumsElements = 2 * kTileRows * 2 * kPanelWidth;
  alignas(64) float sums[2][kSumsElements];
  WaitingSums waiting{sums[1], 0, 0, 0, 0, 0};  // nothing waits before the first product
  // Tiles prefetched (PrefetchStep) only for inputs of kPrefetchedRows or more: those of fewer
  // stay in L1 between the column groups, and 48 × 1 on MiniLM was 2.5% slower with them, 16 × 1
  // 5%, where 128 × 1 was 8% faster and 16 × 32 5% (alternated rounds, Xeon with AMX).
  const bool prefetch = rows >= kPrefetchedRows;
  int buffer = 0;
  for (int64_t group = first_group; group < end_group; ++group) {
    const int64_t panel = group * 2;
    const int64_t task_panels = std::min<int64_t>(2, product.panel_count - panel);
    const int64_t first_column = panel * kPanelWidth;
    const int64_t columns = std::min(task_panels * kPanelWidth, product.n - first_column);
    for (int64_t row = 0; row < rows; row += 2 * kTileRows) {
      const int64_t tiles = std::min<int64_t>(2, (rows - row + kTileRows - 1) / kTileRows);
      MultiplyWhileFinishing(tiles, task_panels, packed + row * product.lda, product.lda,
                             product.panels + panel * product.panel_elements, product.panel_elements,
                             product.depth_tiles, sums[buffer], task_panels * kPanelWidth, prefetch, waiting, finish);
      waiting = {sums[buffer], row, std::min(tiles * kTileRows, rows - row), task_panels * kPanelWidth, first_column,
                 columns};
      buffer = 1 - buffer;
    }
  }
  if (waiting.rows > 0) {
    finish(waiting.sums, waiting.row, waiting.rows, waiting.width, waiting.first_column, waiting.columns);
  }
}

// Rows [first_row, first_row + rows) (packed from `packed` on, as tiles of rows) times the column
// groups [first_group, end_group) of two panels each, into the output.
void MultiplyBlock(const Product& product, const uint16_t* packed, int64_t first_row, int64_t rows,
                   int64_t first_group, int64_t end_group) {
  MultiplyGroups(product, packed, rows, first_group, end_group,
                 [&](const float* sums, int64_t row, int64_t tile_rows, int64_t width, int64_t first_column,
                     int64_t columns) {
                   const Epilogue epilogue{product.bias == nullptr ? nullptr : product.bias + first_column,
                                           product.options.activation, product.options.accumulate, product.streams};
                   Finish(sums, tile_rows, width, columns, epilogue,
                          product.output + (first_row + row) * product.n + first_column, product.n);
                 });
  // Non-temporal stores are weakly ordered: make them visible before the loop's end is.
  if (product.streams) _mm_sfence();
}

// Rows [first, first + rows) of a fused feed-forward, their input packed in `packed`: the up
// product's activated output, rounded to bf16, goes straight into `intermediate`, the tile copy
// the down product then reads, without a round trip through memory in fp32.
void MultiplyFeedForwardBlock(const Product& up, const Product& down, const uint16_t* packed, int64_t first,
                              int64_t rows, uint16_t* intermediate) {
  MultiplyGroups(up, packed, rows, 0, (up.panel_count + 1) / 2,
                 [&](const float* sums, int64_t row, int64_t tile_rows, int64_t width, int64_t first_column,
                     int64_t columns) {
                   FinishToTiles(sums, tile_rows, width, columns, up.bias == nullptr ? nullptr : up.bias + first_column,
                                 up.options.activation, intermediate + row * down.lda + first_column, down.lda);
                 });
  MultiplyBlock(down, intermediate, first, rows, 0, (down.panel_count + 1) / 2);
}

uint64_t NextProductId() {
  static std::atomic<uint64_t> products{0};
  return ++products;
}

Product MakeProduct(const uint16_t* panels, const float* bias, int64_t m, int64_t n, int64_t k, float* output,
                    const ops::GemmOptions& options, uint64_t id) {
  return Product{panels, bias, n, output, options, id, InputStride(k), TilePairs(k) / kTileRows,
                 TilePairs(k) * kPanelWidth * 2, (n + kPanelWidth - 1) / kPanelWidth,
                 !options.accumulate && m * n * static_cast<int64_t>(sizeof(float)) >= kStreamedOutputBytes};
}

void Multiply(const float* input, const uint16_t* panels, const float* bias, int64_t m, int64_t n, int64_t k,
              float* output, const ops::GemmOptions& options) {
  const Product product = MakeProduct(panels, bias, m, n, k, output, options, NextProductId());
  const int64_t panel_count = product.panel_count;
  const int64_t lda = product.lda;
  const int64_t row_tiles = (m + kTileRows - 1) / kTileRows;
  const int64_t block_rows = kRowBlockTiles * kTileRows;
  const int64_t row_blocks = (m + block_rows - 1) / block_rows;
  const int64_t column_groups = (panel_count + 1) / 2;
  const int threads = m * n * k >= (1 << 18) ? LoopThreads() : 1;

  if (row_blocks >= 4 * threads) {
    // A long input: a task per block of 256 rows, which its thread rounds into a buffer of its
    // own (it stays in L2) and multiplies by every panel. Packed in one pass before the
    // products, the bf16 copy went to memory and came back (MiniLM's 512 × 32 step: 10% of it).
    ParallelFor(row_blocks, [&](int64_t block) {
      ConfigureTiles(product.id);
      const int64_t first = block * block_rows, rows = std::min(block_rows, m - first);
      uint16_t* packed = PackingBuffer(block_rows * lda);
      PackRows(input + first * k, k, 0, rows, (rows + kTileRows - 1) / kTileRows * kTileRows, lda, packed);
      MultiplyBlock(product, packed, first, rows, 0, column_groups);
    }, threads);
    return;
  }
  // A short input: packed once, by tiles of rows across the threads, then a task per block of
  // rows × two panels, the blocks outermost (for up to 256 rows, one block: every panel is read
  // once, as the threads split the panels).
  uint16_t* packed = PackingBuffer(row_tiles * kTileRows * lda);
  ParallelFor(
      row_tiles,
      [&](int64_t tile) {
        const int64_t first = tile * kTileRows;
        PackRows(input, k, first, std::min(kTileRows, m - first), kTileRows, lda, packed);
      },
      row_tiles >= 4 ? threads : 1);
  ParallelFor(row_blocks * column_groups, [&](int64_t index) {
    ConfigureTiles(product.id);
    const int64_t block = index / column_groups, group = index % column_groups;
    const int64_t first = block * block_rows;
    MultiplyBlock(product, packed + first * lda, first, std::min(block_rows, m - first), group, group + 1);
  }, threads);
}

}  // namespace

void LoadAmxTileConfig() { LoadTileConfig(); }

void MultiplyAmxTiles(int64_t row_tiles, int64_t panels, const uint16_t* input, int64_t lda, const uint16_t* panel,
                      int64_t panel_elements, int64_t depth_tiles, float* sums, int64_t ldc) {
  kProducts[row_tiles - 1][panels - 1](input, lda, panel, panel_elements, depth_tiles, sums, ldc);
}

bool RequestAmxTiles() {
  static const bool granted = [] {
    unsigned int eax = 0, ebx = 0, ecx = 0, edx = 0;
    if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
    const bool amx_bf16 = (edx >> 22) & 1, amx_tile = (edx >> 24) & 1;
    if (!amx_bf16 || !amx_tile || !__builtin_cpu_supports("avx512bf16")) return false;
    constexpr long kRequestPermission = 0x1023;  // ARCH_REQ_XCOMP_PERM
    constexpr long kTileData = 18;               // XFEATURE_XTILEDATA
    return syscall(SYS_arch_prctl, kRequestPermission, kTileData) == 0;
  }();
  return granted;
}

bool AmxGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
             const ops::GemmOptions& options) {
  const void* panels = FindPreparedWeight(weight, WeightForm::kTilesBFloat16);
  if (panels == nullptr) return false;
  Multiply(input.data<float>(), static_cast<const uint16_t*>(panels), bias.empty() ? nullptr : bias.data<float>(),
           input.dim(0), weight.dim(0), input.dim(1), output.data<float>(), options);
  return true;
}

bool AmxFeedForward(const Tensor& input, const Tensor& up_weight, const Tensor& up_bias, ops::Activation activation,
                    const Tensor& down_weight, const Tensor& down_bias, Tensor& output, bool accumulate) {
  const auto* up_panels = static_cast<const uint16_t*>(FindPreparedWeight(up_weight, WeightForm::kTilesBFloat16));
  const auto* down_panels = static_cast<const uint16_t*>(FindPreparedWeight(down_weight, WeightForm::kTilesBFloat16));
  if (up_panels == nullptr || down_panels == nullptr) return false;
  const int64_t m = input.dim(0), k = input.dim(1), width = up_weight.dim(0), n = down_weight.dim(0);
  // Blocks of 256 rows, as a long input's (128 and 64 measured the same at MiniLM's 512 × 32),
  // at least one per thread: fewer rows go through the two products, the panels split across
  // the threads, where each thread reads only part of the weights.
  const int threads = LoopThreads();
  const int64_t block_rows = kRowBlockTiles * kTileRows;
  const int64_t row_blocks = (m + block_rows - 1) / block_rows;
  if (row_blocks < threads) return false;
  const uint64_t id = NextProductId();
  const Product up = MakeProduct(up_panels, up_bias.empty() ? nullptr : up_bias.data<float>(), m, width, k, nullptr,
                                 {.activation = activation}, id);
  const Product down = MakeProduct(down_panels, down_bias.empty() ? nullptr : down_bias.data<float>(), m, n, width,
                                   output.data<float>(), {.accumulate = accumulate}, id);
  const float* rows_in = input.data<float>();
  ParallelFor(row_blocks, [&](int64_t block) {
    ConfigureTiles(id);
    const int64_t first = block * block_rows, rows = std::min(block_rows, m - first);
    uint16_t* packed = PackingBuffer(block_rows * up.lda);
    PackRows(rows_in + first * k, k, 0, rows, (rows + kTileRows - 1) / kTileRows * kTileRows, up.lda, packed);
    MultiplyFeedForwardBlock(up, down, packed, first, rows, PackingBuffer(block_rows * down.lda, 1));
  }, threads);
  return true;
}

}  // namespace stamen::engine::cpu
