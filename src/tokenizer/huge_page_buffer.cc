// mmap-based allocation with the huge-page fallbacks described in huge_page_buffer.h.
#include "tokenizer/huge_page_buffer.h"

#include <sys/mman.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>

namespace stamen::tokenizer {
namespace {

constexpr size_t kHugePageBytes = 2u << 20;

size_t RoundUp(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

// madvise(MADV_HUGEPAGE) only helps when the kernel's THP mode is "always" or "madvise".
bool TransparentHugePagesEnabled() {
  std::ifstream file("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(file, mode);
  return mode.find("[always]") != std::string::npos || mode.find("[madvise]") != std::string::npos;
}

}  // namespace

HugePageBuffer HugePageBuffer::Allocate(size_t bytes) {
  HugePageBuffer buffer;
  if (bytes == 0) return buffer;
  const size_t size = RoundUp(bytes, kHugePageBytes);
  // STAMEN_HUGE_PAGES=0 keeps normal pages, to measure what huge pages buy.
  const char* setting = std::getenv("STAMEN_HUGE_PAGES");
  const bool huge_pages_allowed = setting == nullptr || std::string_view(setting) != "0";
  void* memory = huge_pages_allowed ? mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0)
                                    : MAP_FAILED;
  if (memory != MAP_FAILED) {
    buffer.data_ = memory;
    buffer.size_ = size;
    buffer.kind_ = PageKind::kHugeTlb;
    return buffer;
  }
  // Over-allocate so the start can be aligned to 2 MB, which THP needs to back it fully.
  const size_t padded = size + kHugePageBytes;
  memory = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return buffer;
  auto* start = static_cast<char*>(memory);
  auto* aligned = reinterpret_cast<char*>(RoundUp(reinterpret_cast<size_t>(start), kHugePageBytes));
  if (aligned > start) munmap(start, aligned - start);
  const size_t tail = (start + padded) - (aligned + size);
  if (tail > 0) munmap(aligned + size, tail);
  buffer.data_ = aligned;
  buffer.size_ = size;
  if (!huge_pages_allowed) madvise(aligned, size, MADV_NOHUGEPAGE);  // also under THP "always"
  buffer.kind_ = (huge_pages_allowed && TransparentHugePagesEnabled() && madvise(aligned, size, MADV_HUGEPAGE) == 0)
                     ? PageKind::kTransparentHuge
                     : PageKind::kNormal;
  return buffer;
}

void HugePageBuffer::Release() {
  if (data_ != nullptr) munmap(data_, size_);
  data_ = nullptr;
  size_ = 0;
}

HugePageBuffer::~HugePageBuffer() { Release(); }

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept { *this = std::move(other); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    kind_ = other.kind_;
  }
  return *this;
}

}  // namespace stamen::tokenizer
