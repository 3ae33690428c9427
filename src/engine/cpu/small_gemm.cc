// The packed small-m GEMM (see small_gemm.h): the weight cache, the 6 × 16 kernel and its
// epilogue (bias, activation, accumulation), all AVX2 + FMA, the x86-64-v3 baseline.
#include "engine/cpu/small_gemm.h"

#include "engine/cpu/panel_tile.h"
#include "engine/cpu/vector_activation.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace stamen::engine::cpu {
namespace {

constexpr int64_t kPanelWidth = kPanelColumns;  // output columns per panel: two ymm registers
constexpr int kTileRows = 6;                     // rows per tile: 15 of the 16 ymm registers (panel_tile.h)

// ---- Packed weights ---------------------------------------------------------------------

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};

struct PackedWeight {
  std::weak_ptr<const void> owner;  // the weight's memory: expired ⇒ this copy is stale
  std::unique_ptr<float[], AlignedFree> panels;  // [ceil(n / 16)][k][16]
  size_t bytes = 0;
};

// A weight by its address and shape: two views of one memory with different shapes are two
// weights, so an entry is only ever dropped once its memory is gone (never while in use).
struct WeightKey {
  const void* data;
  int64_t n, k;
  bool operator==(const WeightKey&) const = default;
};
struct WeightKeyHash {
  size_t operator()(const WeightKey& key) const {
    return std::hash<const void*>()(key.data) ^ (std::hash<int64_t>()(key.n * 1000003 + key.k) << 1);
  }
};

bool SameOwner(const std::weak_ptr<const void>& a, const std::shared_ptr<const void>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

class PackedWeights {
 public:
  static PackedWeights& Get() {
    static PackedWeights* weights = new PackedWeights();  // never destroyed: used until exit
    return *weights;
  }

  // The panels of `weight`, packed on first use; null when it cannot be (no owner, the cap).
  const float* Find(const Tensor& weight) {
    const std::shared_ptr<const void>& owner = weight.keep_alive();
    if (owner == nullptr) return nullptr;
    const int64_t n = weight.dim(0), k = weight.dim(1);
    const WeightKey key{weight.raw_data(), n, k};
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = packed_.find(key);
    if (it != packed_.end()) {
      const PackedWeight& found = it->second;
      if (!found.owner.expired() && SameOwner(found.owner, owner)) return found.panels.get();
      bytes_ -= found.bytes;  // an earlier weight's copy whose memory is gone: stale
      packed_.erase(it);
    }
    if (packed_.size() % 64 == 63) DropExpiredLocked();
    const int64_t panels = (n + kPanelWidth - 1) / kPanelWidth;
    const size_t bytes = static_cast<size_t>(panels * k * kPanelWidth) * sizeof(float);
    if (bytes_ + bytes > kSmallGemmPackedBytesLimit) {
      DropExpiredLocked();
      if (bytes_ + bytes > kSmallGemmPackedBytesLimit) return nullptr;
    }
    // aligned_alloc wants a size that is a multiple of the alignment.
    constexpr size_t kAlign = Tensor::kAlignment;
    auto* memory = static_cast<float*>(std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign));
    if (memory == nullptr) return nullptr;
    PackedWeight& entry = packed_[key];
    entry.owner = owner;
    entry.panels.reset(memory);
    entry.bytes = bytes;
    bytes_ += bytes;
    const float* source = weight.data<float>();
    for (int64_t panel = 0; panel < panels; ++panel) {
      float* target = memory + panel * k * kPanelWidth;
      for (int64_t column = 0; column < kPanelWidth; ++column) {
        const int64_t row = panel * kPanelWidth + column;
        for (int64_t i = 0; i < k; ++i) target[i * kPanelWidth + column] = row < n ? source[row * k + i] : 0.0f;
      }
    }
    return memory;
  }

  size_t bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

 private:
  void DropExpiredLocked() {
    for (auto it = packed_.begin(); it != packed_.end();) {
      if (it->second.owner.expired()) {
        bytes_ -= it->second.bytes;
        it = packed_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::mutex mutex_;
  std::unordered_map<WeightKey, PackedWeight, WeightKeyHash> packed_;
  size_t bytes_ = 0;
};

// ---- The kernel -------------------------------------------------------------------------

struct Epilogue {
  const float* bias = nullptr;  // this panel's 16 (padded: see Tile), or null
  ops::Activation activation = ops::Activation::kIdentity;
  bool accumulate = false;
};

// Rows [0, kRows) of input (stride lda) times one panel → output (stride ldc), `columns` ≤ 16
// of them stored.
template <int kRows>
void Tile(const float* input, int64_t lda, const float* panel, int64_t k, float* output, int64_t ldc,
          int64_t columns, const Epilogue& epilogue) {
  __m256 low[kRows], high[kRows];
  MultiplyPanel<kRows>(input, lda, panel, k, low, high);
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

using TileFunction = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t,
                              const Epilogue&);
constexpr TileFunction kTiles[kTileRows + 1] = {nullptr, Tile<1>, Tile<2>, Tile<3>, Tile<4>, Tile<5>, Tile<6>};

}  // namespace

bool SmallGemm(const Tensor& input, const Tensor& weight, const Tensor& bias, Tensor& output,
               const ops::GemmOptions& options) {
  const int64_t m = input.dim(0), k = input.dim(1), n = weight.dim(0);
  if (m > kSmallGemmMaxRows) return false;
  const float* panels = PackedWeights::Get().Find(weight);
  if (panels == nullptr) return false;
  const float* a = input.data<float>();
  float* c = output.data<float>();
  const float* bias_data = bias.empty() ? nullptr : bias.data<float>();
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
      kTiles[rows](a + row * k, k, panels + panel * k * kPanelWidth, k, c + row * n + first, n, columns, epilogue);
    }
  }
  return true;
}

size_t SmallGemmPackedBytes() { return PackedWeights::Get().bytes(); }

}  // namespace stamen::engine::cpu
