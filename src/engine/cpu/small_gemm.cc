// The packed small-m GEMM (see small_gemm.h): outer-product tiles over fp32 or bf16 panels and
// their epilogue (bias, activation, accumulation). Two tile shapes, picked at run time:
//   - AVX2 + FMA (the x86-64-v3 baseline): 6 rows × one panel of 16 columns, 12 ymm sums;
//   - AVX-512 (cpu_path.h): 8 rows × three panels, 24 zmm sums of the 32 registers. Per depth
//     step three panel loads and eight broadcasts feed 24 FMAs of 16 lanes, twice the AVX2
//     tile's lanes per instruction. (12 rows × two panels does the same FMAs for 14 loads and
//     ran MiniLM's 16- and 48-token steps 2–4% slower.)
//   - AVX512-BF16, in bf16: the AVX-512 tile's shape over panels of depth pairs, one vdpbf16ps
//     per two depth steps (PairTile). Without those instructions bf16 panels are widened to
//     fp32 in registers and multiplied by the tiles above.
// The AVX-512 functions carry STAMEN_AVX512_TARGET, the bf16 ones STAMEN_AVX512_BF16_TARGET
// (cpu_path.h).
#include "engine/cpu/small_gemm.h"

#include "engine/cpu/cpu_path.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/panel_tile.h"
#include "engine/cpu/prepared_weights.h"
#include "engine/cpu/thread_pool.h"
#include "engine/cpu/vector_activation.h"

#include <immintrin.h>

// GCC 12 reports the deliberately undefined vectors inside its own AVX-512 intrinsics
// (_mm512_undefined_*, used by casts and masked forms) as uninitialised once they are inlined
// here: false alarms, 144 of them, that would hide a real warning in this file.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <utility>
#include <vector>

namespace stamen::engine::cpu {
namespace {

constexpr int64_t kPanelWidth = kPanelColumns;  // output columns per panel: two ymm registers, one zmm
constexpr int kNarrowRows = 6;                   // AVX2 tile rows: 15 of the 16 ymm registers (panel_tile.h)
constexpr int kWideRows = 8;                     // AVX-512 tile rows and panels: 24 sums + 3 panel steps
constexpr int kWidePanels = 3;                   // + 1 broadcast of the 32 zmm registers

// Cache lines of the thread's next panels for a tile to fetch into L2 while it computes
// (MultiplyPanels).
struct Prefetch {
  const char* lines = nullptr;
  int64_t count = 0;
};

// The wide tiles load kLines panel lines per depth step and fetch as many: the steps that
// fetch, and one step's fetches. The last step may fetch up to kLines - 1 lines past
// `count`, which is harmless: a prefetch never faults.
template <int kLines>
[[gnu::always_inline]] inline int64_t PrefetchSteps(const Prefetch& prefetch, int64_t depth) {
  return std::min(depth, (prefetch.count + kLines - 1) / kLines);
}
template <int kLines>
[[gnu::always_inline]] inline void PrefetchStep(const Prefetch& prefetch, int64_t step) {
#pragma GCC unroll 3
  for (int line = 0; line < kLines; ++line) _mm_prefetch(prefetch.lines + (step * kLines + line) * 64, _MM_HINT_T1);
}

struct Epilogue {
  // Whether the sums go through an activation (never when they are added to the output).
  bool Activates() const { return !accumulate && activation != ops::Activation::kIdentity; }

  const float* bias = nullptr;  // the tile's first column's, or null
  ops::Activation activation = ops::Activation::kIdentity;
  bool accumulate = false;
};

// One row of an AVX2 tile, its sums with the bias added and activated: added to what
// `target` holds, or stored; the first `columns` only.
template <int kWidth>
[[gnu::always_inline]] inline void FinishRow(const float* values, int64_t columns, bool accumulate, float* target) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
#pragma GCC unroll 4
  for (int c = 0; c < kWidth; c += 8) {
    __m256 value = _mm256_load_ps(values + c);
    if (columns >= c + 8) {
      if (accumulate) value = _mm256_add_ps(_mm256_loadu_ps(target + c), value);
      _mm256_storeu_ps(target + c, value);
    } else if (columns > c) {
      // Masked only where a partial last panel ends, so that it touches none of the columns
      // past its own: on AMD Zen a masked store (vmaskmovps) takes ~12 cycles against a plain
      // store's one, and twelve per tile cost 6% of a 384-deep tile's time.
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(columns - c)), lanes);
      if (accumulate) value = _mm256_add_ps(_mm256_maskload_ps(target + c, mask), value);
      _mm256_maskstore_ps(target + c, mask, value);
    }
  }
}

// The tile's bias, zero-padded to kWidth.
template <int kWidth>
[[gnu::always_inline]] inline void LoadBias(const Epilogue& epilogue, int64_t columns, float (&bias)[kWidth]) {
  std::fill(bias, bias + kWidth, 0.0f);
  if (epilogue.bias != nullptr) std::copy(epilogue.bias, epilogue.bias + columns, bias);
}

// ---- AVX2: rows [0, kRows) of input (k values each) times one panel → output (stride ldc).

template <int kRows, typename PanelElement>
void NarrowTile(const float* input, const PanelElement* panel, int64_t k, float* output, int64_t ldc, int64_t columns,
                const Epilogue& epilogue, const Prefetch& prefetch) {
  __m256 low[kRows], high[kRows];
  MultiplyPanel<kRows>(input, k, panel, k, low, high, prefetch.lines, prefetch.count);
  alignas(32) float bias[kPanelWidth];
  LoadBias(epilogue, columns, bias);
  const __m256 bias_low = _mm256_load_ps(bias), bias_high = _mm256_load_ps(bias + 8);
  // The whole tile's sums as one block, activated in one call, so that its rows' activations
  // overlap.
  alignas(32) float values[kRows][kPanelWidth];
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    _mm256_store_ps(values[r], _mm256_add_ps(low[r], bias_low));
    _mm256_store_ps(values[r] + 8, _mm256_add_ps(high[r], bias_high));
  }
  if (epilogue.Activates()) {
    ActivateVectors(epilogue.activation, values[0], values[0], kRows * kPanelWidth);
  }
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) FinishRow<kPanelWidth>(values[r], columns, epilogue.accumulate, output + r * ldc);
}

// ---- AVX-512: rows [0, kRows) times kPanels (1 to 3) adjacent panels.

// One depth step of a panel as 16 fp32 lanes. bf16 panels keep their values in
// BFloat16PanelSlot order (the AVX2 tile's); widened here in that order, the sums come out
// permuted, and StoreWideSums puts them back.
[[STAMEN_AVX512_TARGET, gnu::always_inline]] inline __m512 LoadWideStep(const float* step) { return _mm512_load_ps(step); }
[[STAMEN_AVX512_TARGET, gnu::always_inline]] inline __m512 LoadWideStep(const uint16_t* step) {
  const __m256i values = _mm256_load_si256(reinterpret_cast<const __m256i*>(step));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(values), 16));
}

// One panel's sums in column order.
template <typename PanelElement>
[[STAMEN_AVX512_TARGET, gnu::always_inline]] inline __m512 InColumnOrder(__m512 sums) {
  if constexpr (sizeof(PanelElement) == 2) {
    // Lane i holds the column whose slot is i: gather column c from lane BFloat16PanelSlot(c).
    sums = _mm512_permutexvar_ps(_mm512_loadu_si512(kBFloat16PanelSlots), sums);
  }
  return sums;
}

// A wide tile's sums (in column order) through the epilogue into rows [0, kRows) of the
// output: each panel's columns, a mask for the last, partial one. Without an activation the
// sums stay in registers (a copy through memory per row cost a tenth of a 16-token step);
// with one, the tile's block of sums is activated in one call, so that its vectors'
// activations overlap.
template <int kRows, int kPanels>
[[STAMEN_AVX512_TARGET, gnu::always_inline]] inline void FinishWideTile(__m512 (&sums)[kPanels][kRows], float* output,
                                                                       int64_t ldc, int64_t columns,
                                                                       const Epilogue& epilogue) {
  __mmask16 masks[kPanels];
  __m512 bias[kPanels];
  for (int p = 0; p < kPanels; ++p) {
    const int64_t in_panel = std::clamp<int64_t>(columns - p * kPanelWidth, 0, kPanelWidth);
    masks[p] = static_cast<__mmask16>((1u << in_panel) - 1);
    bias[p] = epilogue.bias == nullptr ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(masks[p], epilogue.bias + p * kPanelWidth);
  }
  if (epilogue.Activates()) {
    alignas(64) float values[kRows][kPanels][kPanelWidth];
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
      for (int p = 0; p < kPanels; ++p) _mm512_store_ps(values[r][p], _mm512_add_ps(sums[p][r], bias[p]));
    }
    ActivateVectors(epilogue.activation, values[0][0], values[0][0], kRows * kPanels * kPanelWidth);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
      for (int p = 0; p < kPanels; ++p) {
        _mm512_mask_storeu_ps(output + r * ldc + p * kPanelWidth, masks[p], _mm512_load_ps(values[r][p]));
      }
    }
    return;
  }
#pragma GCC unroll 12
  for (int r = 0; r < kRows; ++r) {
#pragma GCC unroll 3
    for (int p = 0; p < kPanels; ++p) {
      float* target = output + r * ldc + p * kPanelWidth;
      __m512 value = _mm512_add_ps(sums[p][r], bias[p]);
      if (epilogue.accumulate) value = _mm512_add_ps(_mm512_maskz_loadu_ps(masks[p], target), value);
      _mm512_mask_storeu_ps(target, masks[p], value);
    }
  }
}

template <int kRows, int kPanels, typename PanelElement>
[[STAMEN_AVX512_TARGET]] void WideTile(const float* input, const PanelElement* panel, int64_t k, float* output, int64_t ldc,
                                int64_t columns, const Epilogue& epilogue, const Prefetch& prefetch) {
  __m512 sums[kPanels][kRows];
#pragma GCC unroll 3
  for (int p = 0; p < kPanels; ++p) {
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) sums[p][r] = _mm512_setzero_ps();
  }
  const int64_t fetching = PrefetchSteps<kPanels>(prefetch, k);
  for (int64_t t = 0; t < k; ++t) {
    if (t < fetching) PrefetchStep<kPanels>(prefetch, t);
    __m512 steps[kPanels];
#pragma GCC unroll 3
    for (int p = 0; p < kPanels; ++p) steps[p] = LoadWideStep(panel + (p * k + t) * kPanelWidth);
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      const __m512 value = _mm512_set1_ps(input[r * k + t]);
#pragma GCC unroll 3
      for (int p = 0; p < kPanels; ++p) sums[p][r] = _mm512_fmadd_ps(value, steps[p], sums[p][r]);
    }
  }
#pragma GCC unroll 3
  for (int p = 0; p < kPanels; ++p) {
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) sums[p][r] = InColumnOrder<PanelElement>(sums[p][r]);
  }
  FinishWideTile<kRows, kPanels>(sums, output, ldc, columns, epilogue);
}

// ---- AVX512-BF16: the wide tile over pair panels (prepared_weights.h). vdpbf16ps adds to each
// fp32 lane the products of its two adjacent bf16 values, so one instruction takes two depth
// steps: per pair, three panel loads and eight broadcasts of the input's bf16 pair feed 24 dot
// products, half the instructions of the fp32 tile for the same sums. Each product of two bf16
// values is exact in fp32, so this sums what the widening kernels sum, in another order.
// `input` holds the tile's rows packed as [pair][kRows][2] (MultiplyBFloat16Pairs), so each
// step's broadcasts read adjacent words at fixed offsets from one pointer (read row by row,
// the eight row pointers spilled from registers).

template <int kRows, int kPanels>
[[STAMEN_AVX512_BF16_TARGET]] void PairTile(const uint16_t* input, const uint16_t* panel, int64_t pairs, float* output,
                                     int64_t ldc, int64_t columns, const Epilogue& epilogue, const Prefetch& prefetch) {
  __m512 sums[kPanels][kRows];
#pragma GCC unroll 3
  for (int p = 0; p < kPanels; ++p) {
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) sums[p][r] = _mm512_setzero_ps();
  }
  const int64_t fetching = PrefetchSteps<kPanels>(prefetch, pairs);
  for (int64_t q = 0; q < pairs; ++q) {
    if (q < fetching) PrefetchStep<kPanels>(prefetch, q);
    __m512bh steps[kPanels];
#pragma GCC unroll 3
    for (int p = 0; p < kPanels; ++p) {
      steps[p] = (__m512bh)_mm512_load_si512(panel + (p * pairs + q) * kPanelWidth * 2);
    }
    const uint16_t* step_input = input + q * kRows * 2;
#pragma GCC unroll 12
    for (int r = 0; r < kRows; ++r) {
      int32_t pair;
      std::memcpy(&pair, step_input + r * 2, sizeof(pair));
      const __m512bh value = (__m512bh)_mm512_set1_epi32(pair);
#pragma GCC unroll 3
      for (int p = 0; p < kPanels; ++p) sums[p][r] = _mm512_dpbf16_ps(sums[p][r], value, steps[p]);
    }
  }
  FinishWideTile<kRows, kPanels>(sums, output, ldc, columns, epilogue);
}

// ---- The tiles by row and panel count, and the loop over them.

template <typename InputElement, typename PanelElement>
using TileFunction = void (*)(const InputElement*, const PanelElement*, int64_t, float*, int64_t, int64_t,
                              const Epilogue&, const Prefetch&);

// One kernel's tiles: tiles[panels][rows] for 1 to most_panels panels and 1 to most_rows rows;
// each step of a tile's depth loop takes step_elements elements of an input row and of a
// panel column (2 for the pair panels).
template <typename InputElement, typename PanelElement>
struct TileSet {
  using Row = std::array<TileFunction<InputElement, PanelElement>, kWideRows + 1>;
  int64_t most_rows;
  int64_t most_panels;
  int64_t step_elements;
  std::array<Row, kWidePanels + 1> tiles;
};

// From this many tiles of rows per task on (7 rows for the AVX2 tiles, 9 for the AVX-512
// ones), the tiles fetch the thread's next panels while they work (MultiplyPanels).
constexpr int64_t kPrefetchFromRowTiles = 2;

template <typename PanelElement, int... kRows>
constexpr auto NarrowTiles(std::integer_sequence<int, kRows...>) {
  using Set = TileSet<float, PanelElement>;
  return Set{kNarrowRows, 1, 1, {typename Set::Row{}, typename Set::Row{nullptr, NarrowTile<kRows + 1, PanelElement>...}}};
}
template <typename PanelElement, int... kRows>
constexpr auto WideTiles(std::integer_sequence<int, kRows...>) {
  using Set = TileSet<float, PanelElement>;
  return Set{kWideRows, kWidePanels, 1,
             {typename Set::Row{}, typename Set::Row{nullptr, WideTile<kRows + 1, 1, PanelElement>...},
              typename Set::Row{nullptr, WideTile<kRows + 1, 2, PanelElement>...},
              typename Set::Row{nullptr, WideTile<kRows + 1, 3, PanelElement>...}}};
}
template <int... kRows>
constexpr auto PairTiles(std::integer_sequence<int, kRows...>) {
  using Set = TileSet<uint16_t, uint16_t>;
  return Set{kWideRows, kWidePanels, 2,
             {Set::Row{}, Set::Row{nullptr, PairTile<kRows + 1, 1>...}, Set::Row{nullptr, PairTile<kRows + 1, 2>...},
              Set::Row{nullptr, PairTile<kRows + 1, 3>...}}};
}

// Rows per tile: m split evenly over the fewest tiles, 16 rows as 8 + 8 rather than 12 + 4,
// since a short tile does few FMAs for each panel step it loads (the last tile may have fewer).
int64_t TileRows(int64_t m, int64_t most_rows) {
  const int64_t tiles_down = (m + most_rows - 1) / most_rows;
  return (m + tiles_down - 1) / tiles_down;
}

// The product over all panels with one kernel's tiles: `input()` gives the input as the
// tiles want it, m rows of depth · step_elements elements, to the thread that calls it (each
// task calls it once).
template <typename InputElement, typename PanelElement, typename Input>
void MultiplyPanels(const TileSet<InputElement, PanelElement>& set, const Input& input, const PanelElement* panels,
                    const float* bias_data, int64_t m, int64_t n, int64_t depth, float* c,
                    const ops::GemmOptions& options) {
  const int64_t panel_count = (n + kPanelWidth - 1) / kPanelWidth;
  const int64_t row_elements = depth * set.step_elements;
  const int64_t panel_elements = row_elements * kPanelWidth;
  // Each task is the panels one tile spans; threads claim tasks, and a task's panels stay in
  // its thread's cache while every row block of the input passes over them. Worth threads
  // only when there is work for them.
  const int64_t task_count = (panel_count + set.most_panels - 1) / set.most_panels;
  const int64_t tile_rows = TileRows(m, set.most_rows);
  const auto multiply_task = [&](int64_t task) {
    const InputElement* a = input();
    const int64_t panel = task * set.most_panels;
    const int64_t first = panel * kPanelWidth;
    const Epilogue epilogue{.bias = bias_data == nullptr ? nullptr : bias_data + first,
                            .activation = options.activation,
                            .accumulate = options.accumulate};
    const int64_t task_panels = std::min(set.most_panels, panel_count - panel);
    const int64_t columns = std::min(task_panels * kPanelWidth, n - first);
    // The first tile of rows streams the task's panels from memory, the later ones find them
    // in L1 or L2 and leave the memory idle. Where a weight does not stay in the L3 between
    // steps (MiniLM's 42 MB in fp32), the tiles fetch the next task's panels (the thread's
    // next task, as ranges hand them out: thread_pool.h) into L2 while they work: each later
    // tile takes a share, as many lines per depth step as it loads, so that the fetches
    // overlap its FMAs. Issued as one burst before each tile they changed nothing at 16 rows
    // (the AVX-512 tiles ran 0–16% slower); spread over the steps, MiniLM's 16-token step ran
    // 3.2–3.5 ms → 2.3–3.3 ms on a Zen 4 held to AVX2, and 2.35 → 2.14 ms (fp32) and
    // 1.58 → 1.36 ms (bf16) with its AVX-512 tiles (docs/BENCHMARKS.md).
    const int64_t row_tiles = (m + tile_rows - 1) / tile_rows;
    const int64_t next_panels = std::min(set.most_panels, panel_count - panel - task_panels);
    const char* next = reinterpret_cast<const char*>(panels + (panel + task_panels) * panel_elements);
    const int64_t next_lines = row_tiles >= kPrefetchFromRowTiles && next_panels > 0
                                   ? next_panels * panel_elements * static_cast<int64_t>(sizeof(PanelElement)) / 64
                                   : 0;
    for (int64_t row = 0, tile = 0; row < m; row += tile_rows, ++tile) {
      const int64_t rows = std::min(tile_rows, m - row);
      Prefetch prefetch;
      if (next_lines > 0 && tile > 0) {
        const int64_t begin = next_lines * (tile - 1) / (row_tiles - 1), end = next_lines * tile / (row_tiles - 1);
        prefetch = {.lines = next + begin * 64, .count = end - begin};
      }
      set.tiles[task_panels][rows](a + row * row_elements, panels + panel * panel_elements, depth,
                                   c + row * n + first, n, columns, epilogue, prefetch);
    }
  };
  ParallelFor(task_count, multiply_task, m * n * row_elements >= (1 << 18) ? LoopThreads() : 1);
}

// The kernel of this machine for panels of PanelElement over fp32 input (the AVX2 or the
// AVX-512 tiles).
template <typename PanelElement>
const TileSet<float, PanelElement>& FloatInputTiles() {
  static constexpr auto kNarrow = NarrowTiles<PanelElement>(std::make_integer_sequence<int, kNarrowRows>());
  static constexpr auto kWide = WideTiles<PanelElement>(std::make_integer_sequence<int, kWideRows>());
  return DetectCpuPath().avx512 ? kWide : kNarrow;
}

// bf16 with AVX512-BF16: the input rounded to bf16 and packed per tile of rows as its depth
// pairs, [pair][row][2] (an odd k's last pair padded with zero), so that a tile reads one
// pair of all its rows from adjacent words at fixed offsets; times the pair panels.
// Every thread that takes a task packs the whole input for itself, on its first task of the
// product. Packed once by the caller for all, the copy's lines were read by the other threads'
// tiles and had to be taken back from their caches when the next product rewrote them: the
// packing then took 5% of MiniLM's 48-token step, all on the caller while the others waited.
void MultiplyBFloat16Pairs(const float* a, const uint16_t* panels, const float* bias_data, int64_t m, int64_t n,
                           int64_t k, float* c, const ops::GemmOptions& options) {
  static constexpr auto kPairs = PairTiles(std::make_integer_sequence<int, kWideRows>());
  static std::atomic<uint64_t> products{0};
  struct PackedInput {
    uint64_t product = 0;          // the product this copy is for
    std::vector<uint16_t> pairs;  // at most 256 rows: under 1 MB per thread
  };
  const uint64_t product = ++products;
  const int64_t pairs = BFloat16Pairs(k);
  const int64_t tile_rows = TileRows(m, kPairs.most_rows);
  const auto packed_input = [&]() -> const uint16_t* {
    thread_local PackedInput packed;
    if (packed.product != product) {
      packed.pairs.resize(static_cast<size_t>(m * pairs * 2));
      for (int64_t first = 0; first < m; first += tile_rows) {
        PackBFloat16RowPairs(a + first * k, k, std::min(tile_rows, m - first), k, packed.pairs.data() + first * pairs * 2);
      }
      packed.product = product;
    }
    return packed.pairs.data();
  };
  MultiplyPanels(kPairs, packed_input, panels, bias_data, m, n, pairs, c, options);
}

// Whether this thread's products take the AVX512-BF16 pair tiles.
bool TakesPairTiles() {
  const CpuPath& path = DetectCpuPath();
  return CurrentMatrixPrecision() == MatrixPrecision::kBFloat16 && path.avx512 && path.bfloat16_instructions;
}

}  // namespace

int64_t SmallGemmMaxRows() {
  if (TakesPairTiles()) return kSmallGemmMaxRowsBFloat16Pairs;
  return DetectCpuPath().avx512 ? kSmallGemmMaxRowsAvx512 : kSmallGemmMaxRowsAvx2;
}

bool SmallGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
               const ops::GemmOptions& options) {
  const int64_t m = input.dim(0), k = input.dim(1), n = weight.dim(0);
  if (m > SmallGemmMaxRows()) return false;
  const float* a = input.data<float>();
  float* c = output.data<float>();
  const float* bias_data = bias.empty() ? nullptr : bias.data<float>();
  if (CurrentMatrixPrecision() == MatrixPrecision::kFloat32) {
    const void* panels = FindPreparedWeight(weight, WeightForm::kPanelsFloat32);
    if (panels == nullptr) return false;
    MultiplyPanels(FloatInputTiles<float>(), [a] { return a; }, static_cast<const float*>(panels), bias_data, m, n, k, c,
                   options);
    return true;
  }
  if (TakesPairTiles()) {
    const void* panels = FindPreparedWeight(weight, WeightForm::kPanelsBFloat16Pairs);
    if (panels == nullptr) return false;
    MultiplyBFloat16Pairs(a, static_cast<const uint16_t*>(panels), bias_data, m, n, k, c, options);
    return true;
  }
  const void* panels = FindPreparedWeight(weight, WeightForm::kPanelsBFloat16);
  if (panels == nullptr) return false;
  // The input rounded to bf16 as the weights are (at most 64 rows: tens of KB per thread).
  thread_local std::vector<float> rounded;
  rounded.resize(static_cast<size_t>(m * k));
  RoundFloatsToBFloat16(a, m * k, rounded.data());
  // The pointer taken here: named inside the lambda, `rounded` would be each worker's own.
  const float* rounded_input = rounded.data();
  MultiplyPanels(FloatInputTiles<uint16_t>(), [rounded_input] { return rounded_input; },
                 static_cast<const uint16_t*>(panels), bias_data, m, n, k, c, options);
  return true;
}

}  // namespace stamen::engine::cpu
