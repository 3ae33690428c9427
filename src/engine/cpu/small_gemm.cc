// The packed small-m GEMM (see small_gemm.h): the 6 × 16 kernel over fp32 or bf16 panels and
// its epilogue (bias, activation, accumulation), all AVX2 + FMA, the x86-64-v3 baseline.
#include "engine/cpu/small_gemm.h"

#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/panel_tile.h"
#include "engine/cpu/prepared_weights.h"
#include "engine/cpu/vector_activation.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

namespace stamen::engine::cpu {
namespace {

constexpr int64_t kPanelWidth = kPanelColumns;  // output columns per panel: two ymm registers
constexpr int kTileRows = 6;                     // rows per tile: 15 of the 16 ymm registers (panel_tile.h)

struct Epilogue {
  const float* bias = nullptr;  // this panel's 16 (padded: see Tile), or null
  ops::Activation activation = ops::Activation::kIdentity;
  bool accumulate = false;
};

// Rows [0, kRows) of input (k values each) times one panel → output (stride ldc), `columns` ≤ 16
// of them stored.
template <int kRows, typename PanelElement>
void Tile(const float* input, const PanelElement* panel, int64_t k, float* output, int64_t ldc, int64_t columns,
          const Epilogue& epilogue) {
  __m256 low[kRows], high[kRows];
  MultiplyPanel<kRows>(input, k, panel, k, low, high);
  alignas(32) float bias[kPanelWidth] = {};
  if (epilogue.bias != nullptr) std::copy(epilogue.bias, epilogue.bias + columns, bias);
  const __m256 bias_low = _mm256_load_ps(bias), bias_high = _mm256_load_ps(bias + 8);
#pragma GCC unroll 6
  for (int r = 0; r < kRows; ++r) {
    alignas(32) float row[kPanelWidth];
    float* target = output + r * ldc;
    if (epilogue.accumulate) {
      std::copy(target, target + columns, row);
      _mm256_store_ps(row, _mm256_add_ps(_mm256_add_ps(low[r], bias_low), _mm256_load_ps(row)));
      _mm256_store_ps(row + 8, _mm256_add_ps(_mm256_add_ps(high[r], bias_high), _mm256_load_ps(row + 8)));
    } else {
      _mm256_store_ps(row, ActivateEight(epilogue.activation, _mm256_add_ps(low[r], bias_low)));
      _mm256_store_ps(row + 8, ActivateEight(epilogue.activation, _mm256_add_ps(high[r], bias_high)));
    }
    std::copy(row, row + columns, target);
  }
}

template <typename PanelElement>
using TileFunction = void (*)(const float*, const PanelElement*, int64_t, float*, int64_t, int64_t, const Epilogue&);
template <typename PanelElement>
constexpr TileFunction<PanelElement> kTiles[kTileRows + 1] = {
    nullptr,
    Tile<1, PanelElement>,
    Tile<2, PanelElement>,
    Tile<3, PanelElement>,
    Tile<4, PanelElement>,
    Tile<5, PanelElement>,
    Tile<6, PanelElement>};

// The product over all panels; `a` is the input as the panels' precision wants it.
template <typename PanelElement>
void MultiplyPanels(const float* a, const PanelElement* panels, const float* bias_data, int64_t m, int64_t n,
                    int64_t k, float* c, const ops::GemmOptions& options) {
  const int64_t panel_count = (n + kPanelWidth - 1) / kPanelWidth;
  // Panels split across threads; each thread's panels stay in its cache while every row block
  // of the input passes over them. Worth threads only when there is work for them.
#pragma omp parallel for schedule(static) if (panel_count > 1 && m * n * k >= (1 << 18))
  for (int64_t panel = 0; panel < panel_count; ++panel) {
    const int64_t first = panel * kPanelWidth;
    const Epilogue epilogue{.bias = bias_data == nullptr ? nullptr : bias_data + first,
                            .activation = options.activation,
                            .accumulate = options.accumulate};
    const int64_t columns = std::min(kPanelWidth, n - first);
    for (int64_t row = 0; row < m; row += kTileRows) {
      const int64_t rows = std::min<int64_t>(kTileRows, m - row);
      kTiles<PanelElement>[rows](a + row * k, panels + panel * k * kPanelWidth, k, c + row * n + first, n, columns,
                                 epilogue);
    }
  }
}

}  // namespace

bool SmallGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
               const ops::GemmOptions& options) {
  const int64_t m = input.dim(0), k = input.dim(1), n = weight.dim(0);
  if (m > kSmallGemmMaxRows) return false;
  const float* a = input.data<float>();
  float* c = output.data<float>();
  const float* bias_data = bias.empty() ? nullptr : bias.data<float>();
  if (CurrentMatrixPrecision() == MatrixPrecision::kFloat32) {
    const void* panels = FindPreparedWeight(weight, WeightForm::kPanelsFloat32);
    if (panels == nullptr) return false;
    MultiplyPanels(a, static_cast<const float*>(panels), bias_data, m, n, k, c, options);
    return true;
  }
  const void* panels = FindPreparedWeight(weight, WeightForm::kPanelsBFloat16);
  if (panels == nullptr) return false;
  // The input rounded to bf16 as the weights are (at most 24 rows: a few KB per thread).
  thread_local std::vector<float> rounded;
  rounded.resize(static_cast<size_t>(m * k));
  RoundFloatsToBFloat16(a, m * k, rounded.data());
  MultiplyPanels(rounded.data(), static_cast<const uint16_t*>(panels), bias_data, m, n, k, c, options);
  return true;
}

}  // namespace stamen::engine::cpu
