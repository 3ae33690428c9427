#include "common/heap_release.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace stamen {

int64_t ReleaseFreeHeapMemory(int64_t worth_bytes) {
#if defined(__GLIBC__)
  const struct mallinfo2 info = mallinfo2();
  // fordblks: free bytes inside the arenas (mmapped chunks are unmapped when freed anyway).
  const auto free_bytes = static_cast<int64_t>(info.fordblks);
  if (free_bytes < worth_bytes) return 0;
  malloc_trim(0);
  return free_bytes;
#else
  (void)worth_bytes;
  return 0;
#endif
}

}  // namespace stamen
