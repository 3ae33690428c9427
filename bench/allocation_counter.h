// Counts heap allocations made through global operator new, so benchmarks and tests can
// prove that steady-state encoding allocates nothing. Linking allocation_counter.cc
// replaces the global allocation functions of the program.
// Under AddressSanitizer (the debug preset) the counting operators allocate with malloc and
// free, which ASan intercepts: heap overflows, use-after-free and leaks are still reported,
// and the counts are the same as in release. What a program linking this loses under ASan is
// only the new/delete pairing checks (new-delete-type-mismatch, new[] freed by delete).
#pragma once

#include <cstdint>

namespace stamen::bench {

// Allocations made by the whole process so far.
uint64_t AllocationCount();
// Bytes those allocations asked for.
uint64_t AllocatedBytes();

}  // namespace stamen::bench
