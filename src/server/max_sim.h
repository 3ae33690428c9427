// MaxSim, the late-interaction score of ColBERT models (PyLate's colbert_scores): for each query
// vector, the largest dot product with any document vector, summed over the query's vectors.
#pragma once

#include <cstdint>

namespace stamen::server {

// `query` [query_rows, columns] and `document` [document_rows, columns], row-major F32; the sum
// is accumulated in double. A document without rows scores 0.
float MaxSim(const float* query, int64_t query_rows, const float* document, int64_t document_rows, int64_t columns);

}  // namespace stamen::server
