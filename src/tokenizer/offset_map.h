// Where each byte of a derived text (normalized, pre-tokenized) came from in the input.
// Tracking costs as much as normalizing itself, so it is switched off when the caller did
// not ask for pieces and offsets; then every call is a no-op.
#pragma once

#include <cstdint>
#include <vector>

namespace stamen::tokenizer {

class OffsetMap {
 public:
  void Reset(bool enabled) {
    enabled_ = enabled;
    offsets_.clear();
  }
  bool enabled() const { return enabled_; }
  // `count` bytes that all came from input offset `origin`.
  void Append(size_t count, uint32_t origin) {
    if (enabled_) offsets_.insert(offsets_.end(), count, origin);
  }
  void Append(uint32_t origin) {
    if (enabled_) offsets_.push_back(origin);
  }
  // Bytes that came from `count` consecutive input bytes starting at `origin`.
  void AppendSequence(size_t count, uint32_t origin) {
    if (!enabled_) return;
    for (size_t i = 0; i < count; ++i) offsets_.push_back(origin + static_cast<uint32_t>(i));
  }
  void AppendRange(const OffsetMap& from, size_t begin, size_t end) {
    if (enabled_) {
      offsets_.insert(offsets_.end(), from.offsets_.begin() + static_cast<std::ptrdiff_t>(begin),
                      from.offsets_.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  void Resize(size_t size) {
    if (enabled_) offsets_.resize(size);
  }
  // Origin of byte `index`, or `fallback` when not tracking.
  uint32_t At(size_t index, uint32_t fallback = 0) const { return enabled_ ? offsets_[index] : fallback; }
  const uint32_t* data() const { return offsets_.data(); }
  void Swap(OffsetMap& other) {
    offsets_.swap(other.offsets_);
    std::swap(enabled_, other.enabled_);
  }

 private:
  std::vector<uint32_t> offsets_;
  bool enabled_ = true;
};

}  // namespace stamen::tokenizer
