// libFuzzer target: arbitrary bytes as a .safetensors file (8-byte header length, JSON header,
// data). What opens must describe tensors inside the data area, and each must load.
#include <cstddef>
#include <cstdint>

#include "engine/safetensors.h"
#include "fuzz/fuzz_checks.h"
#include "fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stamen;
  static const std::string path = fuzz::ScratchFolder() + "/model.safetensors";
  fuzz::WriteFile(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto opened = engine::SafetensorsFile::Open(path);
  if (!opened.ok()) {
    fuzz::Require(!opened.status().message().empty(), "an open error has a message");
    return 0;
  }
  const engine::SafetensorsFile& file = **opened;
  fuzz::Require(size >= 8, "an open file has its 8-byte header length");
  for (const engine::SafetensorsEntry& entry : file.entries()) {
    fuzz::Require(entry.begin <= entry.end && entry.end <= size, "a tensor's bytes lie inside the file");
    fuzz::Require(file.Find(entry.name) == &entry, "Find gives each entry back");
    if (!entry.dtype) continue;
    // Loading converts (copies) or views; keep the copies small.
    if (entry.end - entry.begin > (1u << 20)) continue;
    auto as_is = file.Load(entry, *entry.dtype);
    fuzz::Require(as_is.ok(), "a validated entry loads as its own dtype");
    (void)file.Load(entry, engine::DataType::kF32);
  }
  return 0;
}
