// Gives the heap's free memory back to the operating system.
#pragma once

#include <cstdint>

namespace stamen {

// glibc keeps what a burst of requests freed (500 kB bodies, their parsed copies, the token
// ids) in its arenas, where it counts in the process's RSS until it is reused: after 256
// overloading clients, 200 MB over idle. This returns the free pages of every arena to the
// system (malloc_trim) when at least `worth_bytes` are free, and tells how many bytes were free
// before (0 when it did nothing, or on a C library without malloc_trim). Takes a few
// milliseconds on a large heap: call it when the process is idle.
int64_t ReleaseFreeHeapMemory(int64_t worth_bytes);

}  // namespace stamen
