// Reader for PyTorch's torch.save files holding a state dict of tensors (a zip archive with
// `<name>/data.pkl` and one `<name>/data/<key>` entry per storage), without Python: the pickle
// is interpreted by a small machine that knows only the opcodes and globals such a state dict
// needs and refuses every other global by name, so nothing in the file is ever executed.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"
#include "engine/tensor.h"

namespace stamen::engine {

// A state dict read from a torch.save file: each tensor as a contiguous F32 copy (F32, F16 and
// BF16 storages are read; strides and storage offsets are honoured).
class TorchStateDict {
 public:
  // Reads `path`. Refuses, naming the file and what was found: a global other than
  // collections.OrderedDict, torch._utils._rebuild_tensor_v2 / _rebuild_parameter and the
  // torch.{Float,Half,BFloat16}Storage types (any other class or function a pickle could call),
  // a value that is not a tensor, a storage of another dtype, big-endian data, compressed
  // entries, and indices outside a storage.
  static StatusOr<TorchStateDict> Open(const std::string& path);

  const std::string& path() const { return path_; }
  // Every key, in key order.
  std::vector<std::string> Names() const;
  // The tensor `name`, F32; an error naming the file when there is none.
  StatusOr<Tensor> Get(std::string_view name) const;
  // As Get, and fails unless its shape is exactly `expected`.
  StatusOr<Tensor> Get(std::string_view name, const Shape& expected) const;

 private:
  std::string path_;
  std::map<std::string, Tensor, std::less<>> tensors_;
};

}  // namespace stamen::engine
