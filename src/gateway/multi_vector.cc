#include "gateway/multi_vector.h"

#include <algorithm>
#include <string>

#include "gateway/least_tokens.h"

namespace stamen::gateway {
namespace {

// The id of the first of `pieces` the vocabulary holds (added tokens included), else -1.
int32_t FirstKnown(const tokenizer::Tokenizer& tokenizer, std::initializer_list<std::string_view> pieces) {
  for (std::string_view piece : pieces) {
    const int32_t id = tokenizer.PieceToId(piece);
    if (id >= 0) return id;
  }
  return -1;
}

}  // namespace

StatusOr<MultiVectorInputs> MultiVectorInputs::Resolve(const engine::MultiVectorConfig& config,
                                                       const engine::ModelTokenizer& model_tokenizer) {
  const tokenizer::Tokenizer& tokenizer = model_tokenizer.tokenizer();
  MultiVectorInputs inputs;
  inputs.config_ = config;
  for (auto [prefix, id] : {std::pair{&config.query_prefix, &inputs.query_prefix_id_},
                            std::pair{&config.document_prefix, &inputs.document_prefix_id_}}) {
    if (prefix->empty()) continue;
    // PyLate adds the prefix as a token of its own (tokenizer.add_tokens) and inserts its id.
    *id = tokenizer.PieceToId(*prefix);
    if (*id < 0) return Status::Error("the tokenizer has no token \"" + *prefix + "\" (the multi-vector model's prefix)");
  }
  // PyLate pads queries with the mask token (a masked-LM tokenizer's), else the end token.
  inputs.mask_id_ = FirstKnown(tokenizer, {"[MASK]", "<mask>"});
  if (inputs.mask_id_ < 0 && config.do_query_expansion) {
    return Status::Error("the tokenizer has no mask token ([MASK] or <mask>) to expand queries with");
  }
  const int32_t unknown = FirstKnown(tokenizer, {"[UNK]", "<unk>"});
  for (const std::string& word : config.skiplist_words) {
    const int32_t id = tokenizer.PieceToId(word);
    const int32_t skipped = id >= 0 ? id : unknown;
    if (skipped >= 0 && std::find(inputs.skiplist_ids_.begin(), inputs.skiplist_ids_.end(), skipped) == inputs.skiplist_ids_.end()) {
      inputs.skiplist_ids_.push_back(skipped);
    }
  }
  return inputs;
}

int32_t MultiVectorInputs::Encode(engine::ModelTokenizer& tokenizer, std::string_view text, bool query,
                                  std::vector<int32_t>* ids) const {
  const int32_t prefix = query ? query_prefix_id_ : document_prefix_id_;
  const int64_t length = query ? config_.query_length : config_.document_length;
  const size_t most = static_cast<size_t>(prefix >= 0 ? length - 1 : length);
  tokenizer.Encode(text, most, ids);
  const int32_t unpadded = static_cast<int32_t>(ids->size()) + (prefix >= 0 ? 1 : 0);
  if (query && config_.do_query_expansion) ids->resize(most, mask_id_);
  if (prefix >= 0) ids->insert(ids->begin() + std::min<size_t>(1, ids->size()), prefix);
  const bool unattended = query && config_.do_query_expansion && !config_.attend_to_expansion_tokens;
  return unattended ? unpadded : 0;
}

int64_t MultiVectorInputs::LeastTokens(std::string_view text, bool query) const {
  if (query && config_.do_query_expansion) return config_.query_length;
  return gateway::LeastTokens(text, query ? config_.query_length : config_.document_length);
}

}  // namespace stamen::gateway
