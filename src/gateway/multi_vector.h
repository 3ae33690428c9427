// A multi-vector (ColBERT) model's inputs as PyLate's ColBERT.tokenize builds them: the ids of
// its prefixes, mask and skiplist resolved once in the model's vocabulary, then per text the
// query or document ids and the keys they attend to.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "model_folder/model_config.h"
#include "model_folder/model_tokenizer.h"

namespace stamen::gateway {

class MultiVectorInputs {
 public:
  // The prefixes' and the mask's ids (an empty prefix adds no token) and the skiplist words'
  // ids as PyLate's convert_tokens_to_ids gives them: a word that is no token of the vocabulary
  // stands for the unknown token. Errors name what the vocabulary lacks.
  static StatusOr<MultiVectorInputs> Resolve(const engine::MultiVectorConfig& config, const engine::ModelTokenizer& tokenizer);

  // PyLate's ids of `text` as a query or a document: the text with its special tokens cut to
  // the length (query_length or document_length) less the prefix token, the prefix after the
  // first token, a query padded with the mask token to query_length when do_query_expansion.
  // Returns the keys the tokens attend to: the unpadded tokens when the expansion tokens are
  // unattended, else 0 (all).
  int32_t Encode(engine::ModelTokenizer& tokenizer, std::string_view text, bool query, std::vector<int32_t>* ids) const;

  // A lower bound of the tokens Encode makes of `text`, from its bytes (least_tokens.h), so that
  // admission control can refuse a body under overload before it is tokenized: an expanded query
  // is always query_length tokens.
  int64_t LeastTokens(std::string_view text, bool query) const;

  // The ids whose vectors a document leaves out.
  const std::vector<int32_t>& skiplist_ids() const { return skiplist_ids_; }
  const engine::MultiVectorConfig& config() const { return config_; }

 private:
  engine::MultiVectorConfig config_;
  int32_t query_prefix_id_ = -1;  // -1: no prefix token
  int32_t document_prefix_id_ = -1;
  int32_t mask_id_ = -1;
  std::vector<int32_t> skiplist_ids_;
};

}  // namespace stamen::gateway
