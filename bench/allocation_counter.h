// Counts heap allocations made through global operator new, so benchmarks and tests can
// prove that steady-state encoding allocates nothing. Linking allocation_counter.cc
// replaces the global allocation functions of the program.
#pragma once

#include <cstdint>

namespace stamen::bench {

// Allocations made by the whole process so far.
uint64_t AllocationCount();
// Bytes those allocations asked for.
uint64_t AllocatedBytes();

}  // namespace stamen::bench
