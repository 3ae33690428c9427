// What a finished job gives the writer of its answer: the workers' rows of floats, which rows
// are each input's, and the token ids each input ran as. A read-only view, so that the response
// writers (api.cc, tei_api.cc, cohere_api.cc, …) are pure functions of a parsed call and these
// rows: tests build one by hand, and the handlers never read the gateway–worker job
// (server::WorkRequest) itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace stamen::gateway {

struct FinishedRows {
  const float* values = nullptr;         // every row, `columns` floats each, end to end
  size_t columns = 0;
  std::span<const int64_t> row_offsets;  // first row of each input, plus the end
  std::span<const int32_t> token_ids;    // every input's tokens, end to end
  std::span<const int32_t> lengths;      // tokens per input

  size_t inputs() const { return lengths.size(); }
  size_t total_tokens() const { return token_ids.size(); }
  const float* Row(int64_t row) const { return values + row * static_cast<int64_t>(columns); }
  // Input `input`'s first row and its number of rows.
  const float* RowsOf(size_t input) const { return Row(row_offsets[input]); }
  size_t RowCount(size_t input) const { return static_cast<size_t>(row_offsets[input + 1] - row_offsets[input]); }
};

}  // namespace stamen::gateway
