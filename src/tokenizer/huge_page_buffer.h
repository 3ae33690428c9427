// Memory for large read-mostly tables, placed on 2 MB pages when the system allows it:
// the trie's node array is touched at random, and huge pages cut its TLB misses.
#pragma once

#include <cstddef>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

class HugePageBuffer {
 public:
  HugePageBuffer() = default;
  // Zero-filled memory of at least `bytes`; tries MAP_HUGETLB (the reserved pool), then
  // transparent huge pages (madvise), then normal pages. Returns an empty buffer on failure.
  // The environment variable STAMEN_HUGE_PAGES=0 forces normal pages (for measurements).
  static HugePageBuffer Allocate(size_t bytes);
  ~HugePageBuffer();
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  PageKind kind() const { return kind_; }

 private:
  void Release();
  void* data_ = nullptr;
  size_t size_ = 0;  // bytes mapped
  PageKind kind_ = PageKind::kNormal;
};

}  // namespace stamen::tokenizer
