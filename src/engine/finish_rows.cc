// Truncating and normalising a step's rows (see finish_rows.h).
#include "engine/finish_rows.h"

#include <cstring>
#include <span>
#include <string>

#include "engine/ops/pooling.h"
#include "engine/tensor.h"

namespace stamen::engine {

Status FinishRows(const LazyResult& result, int64_t first_row, int64_t rows, int64_t columns, bool normalize,
                  float* destination) {
  for (int64_t k = 0; k < rows; ++k) {
    const std::span<const float> row = result.Row(first_row + k);
    if (static_cast<int64_t>(row.size()) < columns) {
      return Status::Error("a row of " + std::to_string(row.size()) + " values cannot give " + std::to_string(columns));
    }
    std::memcpy(destination + k * columns, row.data(), static_cast<size_t>(columns) * sizeof(float));
  }
  if (!normalize || rows == 0) return Status();
  // The engine's op over the finished rows, in place.
  Tensor finished = Tensor::Wrap(destination, DataType::kF32, Shape{rows, columns});
  return ops::L2Normalize(finished, finished);
}

}  // namespace stamen::engine
