// Reads WordPiece tokenizers with simdjson's DOM API: tokenizer.json, or vocab.txt plus
// tokenizer_config.json the way transformers turns them into a fast tokenizer.
#include "tokenizer/wordpiece_config.h"

#include <simdjson.h>

#include <algorithm>
#include <cstdlib>
#include <unordered_map>

#include "tokenizer/json_fields.h"

namespace stamen::tokenizer {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// `strip_accents: null` (or absent) means "as lowercase", in both BertNormalizer and
// BertTokenizer.
bool StripAccents(element parent, bool lowercase) {
  bool value = false;
  return parent["strip_accents"].get(value) == simdjson::SUCCESS ? value : lowercase;
}

Status ParseNormalizer(element node, BertNormalizerOptions* options) {
  if (node.is_null()) {
    *options = {false, false, false, false};
    return Status();
  }
  const std::string_view type = StringOr(node, "type", "");
  if (type != "BertNormalizer") {
    return Status::Error("normalizer \"" + std::string(type) + "\" is not supported with a WordPiece model "
                         "(supported: BertNormalizer or none)");
  }
  options->clean_text = BoolOr(node, "clean_text", true);
  options->handle_chinese_chars = BoolOr(node, "handle_chinese_chars", true);
  options->lowercase = BoolOr(node, "lowercase", true);
  options->strip_accents = StripAccents(node, options->lowercase);
  return Status();
}

Status ParsePreTokenizer(element node, bool* bert_pre_tokenizer) {
  *bert_pre_tokenizer = !node.is_null();
  if (node.is_null()) return Status();
  const std::string_view type = StringOr(node, "type", "");
  if (type != "BertPreTokenizer") {
    return Status::Error("pre_tokenizer \"" + std::string(type) + "\" is not supported with a WordPiece model "
                         "(supported: BertPreTokenizer or none)");
  }
  return Status();
}

Status ParseModel(element model, WordPieceConfig* config) {
  object vocabulary;
  if (model["vocab"].get(vocabulary) != simdjson::SUCCESS) {
    return Status::Error("WordPiece model without a vocab object");
  }
  STAMEN_RETURN_IF_ERROR(ReadPieceIds(vocabulary, "WordPiece vocab", &config->vocabulary));
  config->unknown_token = std::string(StringOr(model, "unk_token", "[UNK]"));
  config->continuing_subword_prefix = std::string(StringOr(model, "continuing_subword_prefix", "##"));
  int64_t max_chars = 100;
  element value;
  if (model["max_input_chars_per_word"].get(value) == simdjson::SUCCESS &&
      (value.get(max_chars) != simdjson::SUCCESS || max_chars < 0)) {
    return Status::Error("WordPiece max_input_chars_per_word is not a non-negative number");
  }
  config->max_input_chars_per_word = static_cast<size_t>(max_chars);
  return Status();
}

// A special-token setting of tokenizer_config.json: "[CLS]" or {"content": "[CLS]", ...}.
std::string_view TokenContent(element node) {
  std::string_view content;
  if (node.get(content) == simdjson::SUCCESS) return content;
  return StringOr(node, "content", "");
}

}  // namespace

StatusOr<WordPieceConfig> ParseWordPieceJson(std::string_view json) {
  WordPieceConfig config;
  config.format = "huggingface";
  Status status = ReadTokenizerJson(json, "WordPiece", [&config](element root, element model) {
    STAMEN_RETURN_IF_ERROR(ParseModel(model, &config));
    // An absent normalizer or pre-tokenizer is the same as null: none.
    element part;
    if (root["normalizer"].get(part) == simdjson::SUCCESS) {
      STAMEN_RETURN_IF_ERROR(ParseNormalizer(part, &config.normalizer));
    } else {
      config.normalizer = {false, false, false, false};
    }
    if (root["pre_tokenizer"].get(part) == simdjson::SUCCESS) {
      STAMEN_RETURN_IF_ERROR(ParsePreTokenizer(part, &config.bert_pre_tokenizer));
    } else {
      config.bert_pre_tokenizer = false;
    }
    STAMEN_RETURN_IF_ERROR(ParseHuggingFaceSharedSections(root, &config.added_tokens, &config.post_processor));
    // Only Decode depends on the decoder; another kind falls back to joining with spaces.
    if (root["decoder"].get(part) == simdjson::SUCCESS && !part.is_null() && StringOr(part, "type", "") == "WordPiece") {
      config.decoder_is_wordpiece = true;
      config.decoder_prefix = std::string(StringOr(part, "prefix", "##"));
      config.decoder_cleanup = BoolOr(part, "cleanup", true);
    }
    return Status();
  });
  if (!status.ok()) return status;
  return config;
}

StatusOr<WordPieceConfig> ParseWordPieceVocabulary(std::string_view vocab_txt, std::string_view tokenizer_config_json) {
  WordPieceConfig config;
  config.format = "vocab.txt";
  config.decoder_is_wordpiece = true;
  // transformers reads vocab.txt in Python's text mode: lines end at \n, \r\n or \r, and
  // nothing else is stripped; a later duplicate of a piece takes over its id.
  std::unordered_map<std::string_view, int32_t> ids;
  for (size_t position = 0; position < vocab_txt.size();) {
    size_t end = vocab_txt.find_first_of("\r\n", position);
    if (end == std::string_view::npos) end = vocab_txt.size();
    config.vocabulary.emplace_back(std::string(vocab_txt.substr(position, end - position)),
                                   static_cast<int32_t>(config.vocabulary.size()));
    position = end + (vocab_txt.substr(end, 2) == "\r\n" ? 2 : 1);
  }
  if (config.vocabulary.empty()) return Status::Error("vocab.txt is empty");
  for (const auto& [piece, id] : config.vocabulary) ids[piece] = id;

  simdjson::dom::parser parser;
  element root;
  const simdjson::padded_string padded(tokenizer_config_json.empty() ? std::string_view("{}") : tokenizer_config_json);
  Status status = ParseJson(padded, &parser, &root);
  if (!status.ok()) return Status::Error("tokenizer_config.json: " + status.message());
  config.normalizer.clean_text = true;
  config.normalizer.handle_chinese_chars = BoolOr(root, "tokenize_chinese_chars", true);
  config.normalizer.lowercase = BoolOr(root, "do_lower_case", true);
  config.normalizer.strip_accents = StripAccents(root, config.normalizer.lowercase);

  // Added tokens: the ones tokenizer_config.json lists with their flags, then the named
  // special tokens (special, matched verbatim); a token not in vocab.txt gets the next id.
  auto next_id = static_cast<int32_t>(config.vocabulary.size());
  std::unordered_map<std::string, int32_t> added_ids;
  status = ReadAddedTokensDecoder(root, &config.added_tokens);
  if (!status.ok()) return status;
  for (const AddedToken& token : config.added_tokens) {
    next_id = std::max(next_id, token.id + 1);
    added_ids[token.content] = token.id;
  }
  std::string names[5];  // unk, sep, pad, cls, mask: BertTokenizer's defaults
  const char* keys[5] = {"unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};
  const char* defaults[5] = {"[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
  for (int i = 0; i < 5; ++i) {
    element node;
    names[i] = root[keys[i]].get(node) == simdjson::SUCCESS ? std::string(TokenContent(node)) : defaults[i];
    if (names[i].empty() || added_ids.count(names[i]) != 0) continue;
    AddedToken token;
    token.content = names[i];
    token.special = true;
    const auto found = ids.find(names[i]);
    token.id = found != ids.end() ? found->second : next_id++;
    added_ids[token.content] = token.id;
    config.added_tokens.push_back(std::move(token));
  }
  config.unknown_token = names[0];
  // `[CLS] A [SEP]` and `[CLS] A [SEP] B [SEP]` with type ids 0 / 1, as BertConverter sets up.
  auto special = [&](const std::string& piece, uint8_t type_id) {
    TemplateItem item;
    item.special_ids = {added_ids.at(piece)};
    item.special_pieces = {piece};
    item.type_id = type_id;
    return item;
  };
  auto sequence = [](int which, uint8_t type_id) {
    TemplateItem item;
    item.is_sequence = true;
    item.sequence = which;
    item.type_id = type_id;
    return item;
  };
  if (names[3].empty() || names[1].empty()) return Status::Error("tokenizer_config.json: empty cls_token or sep_token");
  config.post_processor.single = {special(names[3], 0), sequence(0, 0), special(names[1], 0)};
  config.post_processor.pair = {special(names[3], 0), sequence(0, 0), special(names[1], 0), sequence(1, 1),
                                special(names[1], 1)};
  return config;
}

}  // namespace stamen::tokenizer
