// libFuzzer target: arbitrary bytes as a torch.save file (a zip archive whose data.pkl is a
// pickle). It opens or errors with a message; what opens holds F32 tensors only, each found again
// by its name; no input makes it run anything (only a state dict's globals are known).
#include <cstddef>
#include <cstdint>

#include "engine/torch_file.h"
#include "fuzz/fuzz_checks.h"
#include "fuzz/fuzz_files.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace stamen;
  static const std::string path = fuzz::ScratchFolder() + "/heads.pt";
  fuzz::WriteFile(path, std::string_view(reinterpret_cast<const char*>(data), size));
  auto opened = engine::TorchStateDict::Open(path);
  if (!opened.ok()) {
    fuzz::Require(!opened.status().message().empty(), "an open error has a message");
    return 0;
  }
  for (const std::string& name : opened->Names()) {
    auto tensor = opened->Get(name);
    fuzz::Require(tensor.ok(), "every listed tensor is found by its name");
    fuzz::Require(tensor->dtype() == engine::DataType::kF32, "tensors are read as F32");
  }
  return 0;
}
