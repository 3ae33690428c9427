// The cache of prepared weight copies (see prepared_weights.h) and how each form is made.
#include "engine/cpu/prepared_weights.h"

#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "engine/cpu/amx_gemm.h"
#include "engine/cpu/blocked_weights.h"
#include "engine/cpu/matrix_precision.h"
#include "engine/cpu/panel_tile.h"

namespace stamen::engine::cpu {
namespace {

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

struct PreparedWeight {
  std::weak_ptr<const void> owner;  // the weight's memory: expired ⇒ this copy is stale
  std::unique_ptr<void, AlignedFree> data;
  size_t bytes = 0;
};

// A weight by its address, shape and form: two views of one memory with different shapes are
// two weights, so an entry is only ever dropped once its memory is gone (never while in use).
struct WeightKey {
  const void* data;
  int64_t n, k;
  WeightForm form;
  bool operator==(const WeightKey&) const = default;
};
struct WeightKeyHash {
  size_t operator()(const WeightKey& key) const {
    return std::hash<const void*>()(key.data) ^
           (std::hash<int64_t>()((key.n * 1000003 + key.k) * 4 + static_cast<int64_t>(key.form)) << 1);
  }
};

bool SameOwner(const std::weak_ptr<const void>& a, const std::shared_ptr<const void>& b) {
  return !a.owner_before(b) && !b.owner_before(a);
}

size_t FormBytes(WeightForm form, int64_t n, int64_t k) {
  const int64_t panels = (n + kPanelColumns - 1) / kPanelColumns;
  switch (form) {
    case WeightForm::kPanelsFloat32: return static_cast<size_t>(panels * kPanelColumns * k) * sizeof(float);
    case WeightForm::kPanelsBFloat16: return static_cast<size_t>(panels * kPanelColumns * k) * sizeof(uint16_t);
    case WeightForm::kPanelsBFloat16Pairs:
      return static_cast<size_t>(panels * kPanelColumns * BFloat16Pairs(k) * 2) * sizeof(uint16_t);
    case WeightForm::kTilesBFloat16: return static_cast<size_t>(panels * kPanelColumns * TilePairs(k) * 2) * sizeof(uint16_t);
    case WeightForm::kRowsBFloat16: return static_cast<size_t>(n * k) * sizeof(uint16_t);
    case WeightForm::kRowsRoundedFloat32: return static_cast<size_t>(n * k) * sizeof(float);
    case WeightForm::kBlockedFloat32: return BlockedWeightBytes(n, k);
  }
  return 0;
}

// Panels: column c of panel p is weight row p·16 + c, stored along k with stride 16 (at its
// BFloat16PanelSlot in the bf16 form, rounded first); columns past n are zero.
template <typename Element>
void Pack(const float* weight, int64_t n, int64_t k, Element* target) {
  const int64_t panels = (n + kPanelColumns - 1) / kPanelColumns;
  std::vector<Element> row(k);
  for (int64_t panel = 0; panel < panels; ++panel) {
    Element* panel_target = target + panel * k * kPanelColumns;
    for (int64_t column = 0; column < kPanelColumns; ++column) {
      const int64_t source_row = panel * kPanelColumns + column;
      const int64_t slot = sizeof(Element) == 2 ? BFloat16PanelSlot(column) : column;
      if (source_row >= n) {
        for (int64_t i = 0; i < k; ++i) panel_target[i * kPanelColumns + slot] = Element{};
        continue;
      }
      if constexpr (sizeof(Element) == 2) {
        FloatsToBFloat16(weight + source_row * k, k, row.data());
      } else {
        std::copy(weight + source_row * k, weight + (source_row + 1) * k, row.data());
      }
      for (int64_t i = 0; i < k; ++i) panel_target[i * kPanelColumns + slot] = row[i];
    }
  }
}

void Prepare(WeightForm form, const float* weight, int64_t n, int64_t k, void* target) {
  switch (form) {
    case WeightForm::kPanelsFloat32: return Pack(weight, n, k, static_cast<float*>(target));
    case WeightForm::kPanelsBFloat16: return Pack(weight, n, k, static_cast<uint16_t*>(target));
    case WeightForm::kPanelsBFloat16Pairs:
      return PackBFloat16PairPanels(weight, k, n, k, BFloat16Pairs(k), (n + kPanelColumns - 1) / kPanelColumns,
                                    static_cast<uint16_t*>(target));
    case WeightForm::kTilesBFloat16:
      return PackBFloat16PairPanels(weight, k, n, k, TilePairs(k), (n + kPanelColumns - 1) / kPanelColumns,
                                    static_cast<uint16_t*>(target));
    case WeightForm::kRowsBFloat16: return FloatsToBFloat16(weight, n * k, static_cast<uint16_t*>(target));
    case WeightForm::kRowsRoundedFloat32: return RoundFloatsToBFloat16(weight, n * k, static_cast<float*>(target));
    case WeightForm::kBlockedFloat32: return ReorderToBlocked(weight, n, k, target);
  }
}

class PreparedWeights {
 public:
  static PreparedWeights& Get() {
    static PreparedWeights* weights = new PreparedWeights();  // never destroyed: used until exit
    return *weights;
  }

  const void* Find(const Tensor& weight, WeightForm form) {
    const std::shared_ptr<const void>& owner = weight.keep_alive();
    if (owner == nullptr) return nullptr;
    const int64_t n = weight.dim(0), k = weight.dim(1);
    const WeightKey key{weight.raw_data(), n, k, form};
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = prepared_.find(key);
    if (it != prepared_.end()) {
      const PreparedWeight& found = it->second;
      if (!found.owner.expired() && SameOwner(found.owner, owner)) return found.data.get();
      bytes_ -= found.bytes;  // an earlier weight's copy whose memory is gone: stale
      prepared_.erase(it);
    }
    if (prepared_.size() % 64 == 63) DropExpiredLocked();
    const size_t bytes = FormBytes(form, n, k);
    if (bytes == 0) return nullptr;  // a form this weight has none of here
    if (bytes_ + bytes > kPreparedWeightBytesLimit) {
      DropExpiredLocked();
      if (bytes_ + bytes > kPreparedWeightBytesLimit) return nullptr;
    }
    // aligned_alloc wants a size that is a multiple of the alignment.
    constexpr size_t kAlign = Tensor::kAlignment;
    void* memory = std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    if (memory == nullptr) return nullptr;
    Prepare(form, weight.data<float>(), n, k, memory);
    PreparedWeight& entry = prepared_[key];
    entry.owner = owner;
    entry.data.reset(memory);
    entry.bytes = bytes;
    bytes_ += bytes;
    return memory;
  }

  size_t bytes() {
    std::lock_guard<std::mutex> lock(mutex_);
    return bytes_;
  }

 private:
  void DropExpiredLocked() {
    for (auto it = prepared_.begin(); it != prepared_.end();) {
      if (it->second.owner.expired()) {
        bytes_ -= it->second.bytes;
        it = prepared_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::mutex mutex_;
  std::unordered_map<WeightKey, PreparedWeight, WeightKeyHash> prepared_;
  size_t bytes_ = 0;
};

}  // namespace

const void* FindPreparedWeight(const Tensor& weight, WeightForm form) { return PreparedWeights::Get().Find(weight, form); }

size_t PreparedWeightBytes() { return PreparedWeights::Get().bytes(); }

}  // namespace stamen::engine::cpu
