// Reading tokenizer.json and tokenizer_config.json with simdjson's DOM, shared by the Unigram,
// BPE and WordPiece readers: optional fields (a missing or mistyped one yields the given
// default), parsing with the error message they all give, and tokenizer_config.json's added
// tokens.
#pragma once

#include <simdjson.h>

#include <climits>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/huggingface_config.h"

namespace stamen::tokenizer {

inline std::string_view StringOr(simdjson::dom::element parent, const char* key, std::string_view fallback) {
  std::string_view value;
  return parent[key].get(value) == simdjson::SUCCESS ? value : fallback;
}

inline bool BoolOr(simdjson::dom::element parent, const char* key, bool fallback) {
  bool value = false;
  return parent[key].get(value) == simdjson::SUCCESS ? value : fallback;
}

// Parses `json` into `*root`, which lives as long as `parser` (and `json`).
inline Status ParseJson(const simdjson::padded_string& json, simdjson::dom::parser* parser,
                        simdjson::dom::element* root) {
  if (auto error = parser->parse(json).get(*root); error != simdjson::SUCCESS) {
    return Status::Error(std::string("not valid JSON: ") + simdjson::error_message(error));
  }
  return Status();
}

// `json` with each integer too large for 64 bits written as a float ("…656" → "…656.0"):
// transformers writes `"model_max_length": 1000000000000000019884624838656` (int(1e30)) into
// tokenizer_config.json when a model sets no limit, and simdjson refuses such an integer.
inline std::string WithBigIntegersAsFloats(std::string_view json) {
  std::string result;
  result.reserve(json.size() + 8);
  bool in_string = false;
  for (size_t i = 0; i < json.size();) {
    const char c = json[i];
    if (in_string) {
      result += c;
      if (c == '\\' && i + 1 < json.size()) result += json[++i];
      else if (c == '"') in_string = false;
      ++i;
      continue;
    }
    if (c == '"') in_string = true;
    if (c < '0' || c > '9') {
      result += c;
      ++i;
      continue;
    }
    size_t end = i;
    while (end < json.size() && json[end] >= '0' && json[end] <= '9') ++end;
    result.append(json, i, end - i);
    const bool fraction_follows = end < json.size() && (json[end] == '.' || json[end] == 'e' || json[end] == 'E');
    if (end - i > 19 && !fraction_follows) result += ".0";
    i = end;
  }
  return result;
}

// The `model.type` of a tokenizer.json ("Unigram", "BPE", "WordPiece"); empty when `json` is
// not valid JSON or names none. Loading asks it once and picks the reader by it: each reader
// parses the whole file, which for a 250k vocabulary is most of the load time.
inline std::string TokenizerJsonModelType(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const simdjson::padded_string padded(json);
  if (!ParseJson(padded, &parser, &root).ok()) return std::string();
  std::string_view model_type;
  if (root["model"]["type"].get(model_type) != simdjson::SUCCESS) return std::string();
  return std::string(model_type);
}

// Opens a tokenizer.json once for the reader of one model type: parses `json` and hands `read`
// the root and its "model" section, whose "type" must be `model_type` (empty: any, the reader
// checks). The elements live only during `read`. The one opening the Unigram, BPE and
// WordPiece readers share; each then reads its sections from the same parse.
template <typename Read>
Status ReadTokenizerJson(std::string_view json, std::string_view model_type, Read read) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  const simdjson::padded_string padded(json);
  STAMEN_RETURN_IF_ERROR(ParseJson(padded, &parser, &root));
  simdjson::dom::element model;
  const bool has_model = root["model"].get(model) == simdjson::SUCCESS;
  if (model_type.empty() && !has_model) return Status::Error("no \"model\" section");
  if (!model_type.empty() && (!has_model || StringOr(model, "type", "") != model_type)) {
    return Status::Error("the model is not " + std::string(model_type));
  }
  return read(root, model);
}

// A `"type": "Sequence"` node of tokenizer.json: each child of its `list_key` list
// ("normalizers", "pretokenizers", "processors") read by `read_child`, in order. `what` names
// the section in the error of a Sequence without its list.
template <typename ReadChild>
Status ReadSequence(simdjson::dom::element node, const char* list_key, std::string_view what, ReadChild read_child) {
  simdjson::dom::array children;
  if (node[list_key].get(children) != simdjson::SUCCESS) {
    return Status::Error(std::string(what) + " Sequence without a list");
  }
  for (simdjson::dom::element child : children) STAMEN_RETURN_IF_ERROR(read_child(child));
  return Status();
}

// Appends the entries of a `{"piece": id, …}` vocabulary object (the "vocab" of a BPE or
// WordPiece tokenizer.json, a vocab.json) to `vocabulary` in the file's order; `what` names the
// vocabulary in the error of an entry whose id is not a number from 0 to INT32_MAX.
inline Status ReadPieceIds(simdjson::dom::object object, std::string_view what,
                           std::vector<std::pair<std::string, int32_t>>* vocabulary) {
  vocabulary->reserve(vocabulary->size() + object.size());
  for (auto [piece, value] : object) {
    int64_t id = 0;
    if (value.get(id) != simdjson::SUCCESS || id < 0 || id > INT32_MAX) {
      return Status::Error(std::string(what) + " entry \"" + std::string(piece) + "\" has no valid id");
    }
    vocabulary->emplace_back(std::string(piece), static_cast<int32_t>(id));
  }
  return Status();
}

// The sections of a tokenizer.json `root` that do not depend on the model type,
// `added_tokens` and `post_processor` (the BPE and WordPiece readers read the rest
// themselves); defined in huggingface_config.cc.
Status ParseHuggingFaceSharedSections(simdjson::dom::element root, std::vector<AddedToken>* added_tokens,
                                      PostProcessor* post_processor);

// Appends the steps of one Hugging Face normalizer node (Precompiled, Replace, Strip, Prepend,
// or a Sequence of them) to `steps`; defined in huggingface_config.cc, shared with the BPE
// reader. Errors name the unsupported normalizer or regex.
Status ParseHuggingFaceNormalizer(simdjson::dom::element node, std::vector<NormalizerStep>* steps);

// The flags of an added token entry, in tokenizer.json's `added_tokens` or tokenizer_config.json's
// `added_tokens_decoder`; `normalized` defaults to "not special", as in transformers.
inline void ReadAddedTokenFlags(simdjson::dom::element entry, AddedToken* token) {
  token->single_word = BoolOr(entry, "single_word", false);
  token->lstrip = BoolOr(entry, "lstrip", false);
  token->rstrip = BoolOr(entry, "rstrip", false);
  token->special = BoolOr(entry, "special", false);
  token->normalized = BoolOr(entry, "normalized", !token->special);
}

// Appends the tokens of tokenizer_config.json's `added_tokens_decoder` ({"id": {"content": …,
// flags}}) in the file's order; `normalized` defaults to "not special", as in transformers.
inline Status ReadAddedTokensDecoder(simdjson::dom::element root, std::vector<AddedToken>* added_tokens) {
  simdjson::dom::object decoder;
  if (root["added_tokens_decoder"].get(decoder) != simdjson::SUCCESS) return Status();
  for (auto [key, entry] : decoder) {
    AddedToken token;
    token.id = static_cast<int32_t>(std::strtol(std::string(key).c_str(), nullptr, 10));
    token.content = std::string(StringOr(entry, "content", ""));
    if (token.content.empty()) {
      return Status::Error("tokenizer_config.json: added token " + std::string(key) + " has no content");
    }
    ReadAddedTokenFlags(entry, &token);
    added_tokens->push_back(std::move(token));
  }
  return Status();
}

}  // namespace stamen::tokenizer
