// Loads a model folder's tokenizer and maps its ids to the model's (see model_tokenizer.h).
#include "model_folder/model_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "common/files.h"
#include "model_folder/json_document.h"

namespace stamen::engine {
namespace {

namespace fs = std::filesystem;

// Unicode code points of UTF-8 text (Python's len of the str).
size_t CodePoints(std::string_view text) {
  size_t count = 0;
  for (const char byte : text) count += (static_cast<unsigned char>(byte) & 0xC0) != 0x80;
  return count;
}

// The first `limit` code points of UTF-8 text (Python's text[:limit]).
std::string_view FirstCodePoints(std::string_view text, size_t limit) {
  size_t seen = 0;
  for (size_t at = 0; at < text.size(); ++at) {
    if ((static_cast<unsigned char>(text[at]) & 0xC0) != 0x80 && seen++ == limit) return text.substr(0, at);
  }
  return text;
}

// The unknown token model2vec drops: the tokenizer model's unk_token (WordPiece, BPE,
// WordLevel) as an id, or a Unigram model's unk_id; -1 when it has none.
StatusOr<int32_t> UnknownTokenId(const std::string& tokenizer_path, const tokenizer::Tokenizer& tokenizer) {
  auto document = JsonDocument::Load(tokenizer_path);
  if (!document.ok()) return document.status();
  JsonObject model = document.value()->root();
  bool has_model = false;
  STAMEN_RETURN_IF_ERROR(document.value()->root().OptionalObject("model", &model, &has_model));
  if (!has_model) return Status::Error(tokenizer_path + ": no \"model\"");
  std::string type;
  STAMEN_RETURN_IF_ERROR(model.Optional("type", &type));
  if (type == "Unigram") {
    int64_t unk_id = -1;
    STAMEN_RETURN_IF_ERROR(model.Optional("unk_id", &unk_id));
    return static_cast<int32_t>(unk_id);
  }
  std::string unk_token;
  STAMEN_RETURN_IF_ERROR(model.Optional("unk_token", &unk_token));
  return unk_token.empty() ? -1 : tokenizer.PieceToId(unk_token);
}

}  // namespace

StatusOr<ModelTokenizer::StaticRules> ModelTokenizer::ReadStaticRules(const ModelConfig& config,
                                                                      const tokenizer::Tokenizer& tokenizer,
                                                                      const std::string& tokenizer_path) {
  StaticRules rules;
  rules.enabled = true;
  rules.empty_bag_id = static_cast<int32_t>(config.static_embedding.empty_bag_id());
  rules.token_limit = static_cast<size_t>(config.static_embedding.max_length);
  if (!config.static_embedding.model2vec_rules) return rules;
  auto unknown = UnknownTokenId(tokenizer_path, tokenizer);
  if (!unknown.ok()) return unknown.status();
  rules.unknown_id = *unknown;
  if (rules.token_limit > 0) {
    // StaticModel's median_token_length: int(np.median(len(piece) for every piece by id)).
    std::vector<size_t> lengths(tokenizer.VocabularySize());
    for (size_t id = 0; id < lengths.size(); ++id) lengths[id] = CodePoints(tokenizer.IdToPiece(static_cast<int32_t>(id)));
    std::sort(lengths.begin(), lengths.end());
    const size_t middle = lengths.size() / 2;
    const size_t median = lengths.empty() ? 0
                          : lengths.size() % 2 == 1 ? lengths[middle]
                                                    : (lengths[middle - 1] + lengths[middle]) / 2;  // int() of the mean
    // A median of 0 cuts every text to nothing, as model2vec does.
    rules.character_limit = rules.token_limit * median;
    rules.cut_characters = true;
  }
  return rules;
}

int64_t MaxSequenceLength(const ModelConfig& config, const SentenceTransformersConfig& sentence_transformers) {
  int64_t limit = config.max_position_embeddings;
  // Positions that start past 0 (RoBERTa's and MPNet's pad_token_id + 1) leave that many fewer
  // for tokens, as the engine's models count them.
  if (limit > 0) limit -= config.position_offset;
  if (limit < 0) limit = 0;
  // A multi-vector model's texts are cut to its query and document lengths (PyLate sets the
  // Transformer's max_seq_length from them at every tokenize, so the saved one is stale).
  const MultiVectorConfig& multi_vector = sentence_transformers.multi_vector;
  const int64_t st = multi_vector.enabled ? std::max(multi_vector.query_length, multi_vector.document_length)
                                          : sentence_transformers.max_seq_length;
  if (st > 0 && (limit == 0 || st < limit)) limit = st;
  return limit;
}

std::pair<size_t, size_t> LongestFirstLengths(size_t first, size_t second, size_t budget) {
  if (first + second <= budget) return {first, second};
  // transformers (tokenizers' truncate_encodings): with n1 ≤ n2, keep n1 and cut n2 to
  // budget - n1 when that leaves n2 ≥ n1, else give each half the budget (the odd one to n2).
  const bool swap = first > second;
  size_t n1 = swap ? second : first;
  size_t n2;
  if (n1 > budget) {
    n2 = n1;
  } else {
    n2 = std::max(n1, budget - n1);
  }
  if (n1 + n2 > budget) {
    n1 = budget / 2;
    n2 = n1 + budget % 2;
  }
  if (swap) std::swap(n1, n2);
  return {std::min(n1, first), std::min(n2, second)};
}

StatusOr<std::unique_ptr<ModelTokenizer>> ModelTokenizer::Load(const std::string& model_dir, const ModelConfig& config) {
  const fs::path folder(model_dir);
  std::unique_ptr<ModelTokenizer> result(new ModelTokenizer());
  std::string path = model_dir;
  const fs::path json = folder / "tokenizer.json";
  const fs::path sentencepiece = folder / "sentencepiece.bpe.model";
  if (config.family == ModelFamily::kStaticEmbedding) {
    path = (fs::path(config.static_embedding.folder) / "tokenizer.json").string();
  } else if (IsFile(json)) {
    path = json.string();
  } else if (config.family == ModelFamily::kRoberta && IsFile(sentencepiece)) {
    path = sentencepiece.string();
    result->kind_ = Kind::kFairseqSentencePiece;
  } else if (IsFile(folder / "spm.model")) {
    // DeBERTa-v2/v3 without tokenizer.json: the tokenizer library converts spm.model with the
    // JSON files beside it as transformers does; its ids are the model's as they are.
    path = (folder / "spm.model").string();
  }
  auto loaded = tokenizer::Tokenizer::Load(path);
  if (!loaded.ok()) {
    std::string message = loaded.status().message();
    if (path == model_dir) {
      message = model_dir + ": no tokenizer could be loaded (looked for tokenizer.json, " +
                (config.family == ModelFamily::kRoberta ? std::string("sentencepiece.bpe.model, ") : std::string()) +
                "spm.model, or what the tokenizer library reads from a folder): " + message;
    }
    return Status::Error(message);
  }
  result->tokenizer_ = std::move(loaded.value());
  result->source_ = path;
  if (config.family == ModelFamily::kStaticEmbedding) {
    auto rules = ReadStaticRules(config, *result->tokenizer_, path);
    if (!rules.ok()) return rules.status();
    result->static_rules_ = *rules;
  }
  if (result->kind_ == Kind::kFairseqSentencePiece) {
    const tokenizer::Tokenizer& spm = *result->tokenizer_;
    if (spm.VocabularySize() < 3 || spm.IdToPiece(0) != "<unk>" || spm.IdToPiece(1) != "<s>" ||
        spm.IdToPiece(2) != "</s>") {
      return Status::Error(path + ": expected the XLM-R layout <unk>, <s>, </s> as pieces 0, 1, 2 (found '" +
                           std::string(spm.IdToPiece(0)) + "', '" + std::string(spm.IdToPiece(1)) + "', '" +
                           std::string(spm.IdToPiece(2)) + "')");
    }
  }
  return result;
}

std::unique_ptr<ModelTokenizer> ModelTokenizer::ShareWithNewScratch() const {
  std::unique_ptr<ModelTokenizer> copy(new ModelTokenizer());
  copy->kind_ = kind_;
  copy->source_ = source_;
  copy->tokenizer_ = tokenizer_;
  copy->static_rules_ = static_rules_;
  return copy;
}

size_t ModelTokenizer::VocabularySize() const {
  // fairseq: <s> <pad> </s> <unk>, the spm pieces from 3 on, then <mask>.
  return kind_ == Kind::kFairseqSentencePiece ? tokenizer_->VocabularySize() + 2 : tokenizer_->VocabularySize();
}

std::string ModelTokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  if (kind_ == Kind::kTokenizer) return tokenizer_->Decode(ids, skip_special_tokens);
  // As the model's tokenizer.json decodes (its Metaspace decoder): pieces with ▁ as spaces,
  // the first token's leading space dropped, special tokens written as their names.
  static constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁
  const int32_t mask = static_cast<int32_t>(VocabularySize()) - 1;
  std::string text;
  bool first = true;
  for (const int32_t id : ids) {
    if (id < 0 || id > mask) continue;
    std::string token;
    if (id == kFairseqBos || id == kFairseqPad || id == kFairseqEos || id == kFairseqUnk || id == mask) {
      if (skip_special_tokens) continue;
      token = id == kFairseqBos ? "<s>" : id == kFairseqPad ? "<pad>" : id == kFairseqEos ? "</s>" : id == kFairseqUnk ? "<unk>" : "<mask>";
    } else {
      const std::string_view piece = tokenizer_->IdToPiece(id - 1);  // the inverse of FairseqId for pieces
      for (size_t at = 0; at < piece.size();) {
        if (piece.substr(at, kSpace.size()) == kSpace) {
          token += ' ';
          at += kSpace.size();
        } else {
          token += piece[at++];
        }
      }
      if (first && !token.empty() && token.front() == ' ') token.erase(0, 1);
    }
    first = false;
    text += token;
  }
  return text;
}

void ModelTokenizer::EncodeContent(std::string_view text, std::vector<int32_t>* ids) {
  tokenizer::EncodeOptions options;
  options.add_special_tokens = false;
  tokenizer_->Encode(text, options, &encoding_, &scratch_);
  ids->resize(encoding_.ids.size());
  for (size_t i = 0; i < encoding_.ids.size(); ++i) (*ids)[i] = FairseqId(encoding_.ids[i]);
}

void ModelTokenizer::EncodeStatic(std::string_view text, size_t max_length, std::vector<int32_t>* ids,
                                  tokenizer::TruncationSide side) {
  const StaticRules& rules = static_rules_;
  // StaticModel.encode: the text cut by characters, tokenized without special tokens and cut
  // to max_length tokens, then the unknown token dropped (so that it weighs nothing in the mean).
  if (rules.cut_characters) text = FirstCodePoints(text, rules.character_limit);
  tokenizer::EncodeOptions options;
  options.add_special_tokens = false;
  options.max_length = rules.token_limit;
  if (max_length > 0 && (options.max_length == 0 || max_length < options.max_length)) options.max_length = max_length;
  options.truncation_side = side;
  tokenizer_->Encode(text, options, &encoding_, &scratch_);
  ids->clear();
  for (const int32_t id : encoding_.ids) {
    if (id != rules.unknown_id) ids->push_back(id);
  }
  if (ids->empty()) ids->push_back(rules.empty_bag_id);
}

void ModelTokenizer::Encode(std::string_view text, size_t max_length, std::vector<int32_t>* ids,
                            tokenizer::TruncationSide side) {
  if (static_rules_.enabled) return EncodeStatic(text, max_length, ids, side);
  if (kind_ == Kind::kTokenizer) {
    tokenizer::EncodeOptions options;
    options.max_length = max_length;
    options.truncation_side = side;
    tokenizer_->Encode(text, options, &encoding_, &scratch_);
    ids->assign(encoding_.ids.begin(), encoding_.ids.end());
    return;
  }
  EncodeContent(text, &first_);
  size_t keep = first_.size();
  if (max_length > 0) keep = std::min(keep, max_length > 2 ? max_length - 2 : 0);
  const auto begin = side == tokenizer::TruncationSide::kRight
                         ? first_.begin()
                         : first_.end() - static_cast<std::ptrdiff_t>(keep);
  ids->clear();
  ids->push_back(kFairseqBos);
  ids->insert(ids->end(), begin, begin + static_cast<std::ptrdiff_t>(keep));
  ids->push_back(kFairseqEos);
}

void ModelTokenizer::EncodeYesNoPair(const YesNoTemplate& prompt, std::string_view query, std::string_view document,
                                     size_t max_length, std::vector<int32_t>* ids) {
  tokenizer::EncodeOptions options;
  options.add_special_tokens = false;
  const auto encode = [&](const std::string& text, std::vector<int32_t>* out) {
    tokenizer_->Encode(text, options, &encoding_, &scratch_);
    out->assign(encoding_.ids.begin(), encoding_.ids.end());
  };
  const auto variable = [](const YesNoPartKind& kind) { return kind.query || kind.document; };
  const size_t count = prompt.parts.size();
  if (yes_no_parts_ != prompt.parts || yes_no_instruction_ != prompt.instruction || yes_no_ids_.size() != count) {
    yes_no_parts_ = prompt.parts;
    yes_no_instruction_ = prompt.instruction;
    yes_no_kinds_.resize(count);
    yes_no_ids_.assign(count, {});
    for (size_t i = 0; i < count; ++i) {
      yes_no_kinds_[i] = KindOfYesNoPart(prompt.parts[i]);
      // A part with the instruction alone is left out when there is none (its ids stay empty).
      if (variable(yes_no_kinds_[i]) || (yes_no_kinds_[i].instruction && prompt.instruction.empty())) continue;
      encode(FormatYesNoPart(prompt.parts[i], prompt.instruction, "", ""), &yes_no_ids_[i]);
    }
  }
  size_t fixed = 0;
  for (size_t i = 0; i < count; ++i) {
    if (variable(yes_no_kinds_[i])) {
      encode(FormatYesNoPart(prompt.parts[i], prompt.instruction, query, document), &yes_no_ids_[i]);
    } else {
      fixed += yes_no_ids_[i].size();
    }
  }
  if (max_length > 0) {
    const size_t budget = max_length > fixed ? max_length - fixed : 1;
    // Takes up to `excess` ids from the ends of the parts `select` picks, the last part first;
    // returns what is still to take.
    const auto cut = [&](size_t excess, auto select) {
      for (size_t i = count; i-- > 0 && excess > 0;) {
        if (!select(yes_no_kinds_[i])) continue;
        const size_t taken = std::min(excess, yes_no_ids_[i].size());
        yes_no_ids_[i].resize(yes_no_ids_[i].size() - taken);
        excess -= taken;
      }
      return excess;
    };
    const auto query_only = [](const YesNoPartKind& kind) { return kind.query && !kind.document; };
    const auto document_only = [](const YesNoPartKind& kind) { return kind.document && !kind.query; };
    const auto both = [](const YesNoPartKind& kind) { return kind.query && kind.document; };
    size_t query_length = 0, total = 0;
    bool separate_document = false;
    for (size_t i = 0; i < count; ++i) {
      if (!variable(yes_no_kinds_[i])) continue;
      total += yes_no_ids_[i].size();
      if (query_only(yes_no_kinds_[i])) query_length += yes_no_ids_[i].size();
      separate_document = separate_document || document_only(yes_no_kinds_[i]);
    }
    // A query beside a separate document keeps at most 3/4 of the room (mxbai-rerank,
    // FlagEmbedding), whatever the document's length.
    const size_t query_room = budget * 3 / 4;
    if (separate_document && query_length > query_room) {
      cut(query_length - query_room, query_only);
      total -= query_length - query_room;
    }
    if (total > budget) cut(cut(cut(total - budget, document_only), query_only), both);
  }
  ids->clear();
  for (const std::vector<int32_t>& part : yes_no_ids_) ids->insert(ids->end(), part.begin(), part.end());
}

std::vector<ModelTokenizer::Token> ModelTokenizer::Tokenize(std::string_view text, bool add_special_tokens) {
  tokenizer::EncodeOptions options;
  options.with_pieces = true;
  options.add_special_tokens = false;
  tokenizer_->Encode(text, options, &encoding_, &scratch_);
  std::vector<Token> content;
  for (size_t i = 0; i < encoding_.ids.size(); ++i) {
    const int32_t id = kind_ == Kind::kTokenizer ? encoding_.ids[i] : FairseqId(encoding_.ids[i]);
    if (static_rules_.enabled && id == static_rules_.unknown_id) continue;  // as EncodeStatic drops it
    content.push_back({id, encoding_.pieces[i], encoding_.offsets[i].first, encoding_.offsets[i].second, false});
  }
  // A static model's texts never carry special tokens.
  if (!add_special_tokens || static_rules_.enabled) return content;
  // The special tokens are what the full encoding adds around the content.
  std::vector<int32_t> full;
  Encode(text, 0, &full);
  std::vector<Token> tokens;
  size_t leading = 0;
  while (leading < full.size() && (content.empty() || full[leading] != content.front().id) &&
         full.size() - leading > content.size()) {
    ++leading;
  }
  for (size_t i = 0; i < full.size(); ++i) {
    if (i >= leading && i < leading + content.size()) {
      tokens.push_back(content[i - leading]);
    } else {
      const std::string piece = kind_ == Kind::kTokenizer ? std::string(tokenizer_->IdToPiece(full[i]))
                                : full[i] == kFairseqBos    ? "<s>"
                                                            : "</s>";
      tokens.push_back({full[i], piece, 0, 0, true});
    }
  }
  return tokens;
}

void ModelTokenizer::EncodePair(std::string_view first, std::string_view second, size_t max_length,
                                std::vector<int32_t>* ids, std::vector<int32_t>* type_ids) {
  if (kind_ == Kind::kTokenizer) {
    tokenizer::EncodeOptions options;
    options.max_length = max_length;
    tokenizer_->EncodePair(first, second, options, &encoding_, &scratch_);
    ids->assign(encoding_.ids.begin(), encoding_.ids.end());
    type_ids->assign(encoding_.type_ids.begin(), encoding_.type_ids.end());
    if (type_ids->size() != ids->size()) type_ids->assign(ids->size(), 0);
    return;
  }
  EncodeContent(first, &first_);
  EncodeContent(second, &second_);
  size_t keep_first = first_.size();
  size_t keep_second = second_.size();
  if (max_length > 0) {
    const size_t budget = max_length > 4 ? max_length - 4 : 0;
    std::tie(keep_first, keep_second) = LongestFirstLengths(first_.size(), second_.size(), budget);
  }
  // <s> A </s></s> B </s>; RoBERTa takes no token types, so all are segment 0.
  ids->clear();
  ids->push_back(kFairseqBos);
  ids->insert(ids->end(), first_.begin(), first_.begin() + static_cast<std::ptrdiff_t>(keep_first));
  ids->push_back(kFairseqEos);
  ids->push_back(kFairseqEos);
  ids->insert(ids->end(), second_.begin(), second_.begin() + static_cast<std::ptrdiff_t>(keep_second));
  ids->push_back(kFairseqEos);
  type_ids->assign(ids->size(), 0);
}

}  // namespace stamen::engine
