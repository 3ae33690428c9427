// libFuzzer target: arbitrary bytes as a Hugging Face `tokenizer.json`; what loads must encode.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stamen::fuzz::LoadAndEncodeSamples(data, size, /*is_json=*/true);
  return 0;
}
