#include "server/max_sim.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace stamen::server {

float MaxSim(const float* query, int64_t query_rows, const float* document, int64_t document_rows, int64_t columns) {
  if (document_rows == 0) return 0.0f;
  double total = 0.0;
  for (int64_t q = 0; q < query_rows; ++q) {
    const float* query_row = query + q * columns;
    float best = -std::numeric_limits<float>::infinity();
    for (int64_t d = 0; d < document_rows; ++d) {
      const float* document_row = document + d * columns;
      // Four partial sums: the loop vectorises without reordering one chain of float adds.
      float sums[4] = {0.0f, 0.0f, 0.0f, 0.0f};
      int64_t k = 0;
      for (; k + 4 <= columns; k += 4) {
        for (int lane = 0; lane < 4; ++lane) sums[lane] += query_row[k + lane] * document_row[k + lane];
      }
      for (; k < columns; ++k) sums[0] += query_row[k] * document_row[k];
      best = std::max(best, (sums[0] + sums[1]) + (sums[2] + sums[3]));
    }
    total += best;
  }
  return static_cast<float>(total);
}

}  // namespace stamen::server
