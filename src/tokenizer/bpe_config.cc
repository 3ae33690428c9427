// Reads BPE tokenizers with simdjson's DOM API: tokenizer.json, or vocab.json + merges.txt
// (+ tokenizer_config.json) with Qwen2's settings.
#include "tokenizer/bpe_config.h"

#include <simdjson.h>

#include <cstdlib>

#include "tokenizer/json_fields.h"

namespace stamen::tokenizer {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

Status ParseNormalizer(element node, BpeConfig* config) {
  if (node.is_null()) return Status();
  const std::string_view type = StringOr(node, "type", "");
  if (type == "Sequence") {
    return ReadSequence(node, "normalizers", "normalizer", [config](element child) { return ParseNormalizer(child, config); });
  }
  if (type != "NFC" && type != "Replace" && type != "Strip" && type != "Prepend" && type != "Precompiled") {
    return Status::Error("normalizer \"" + std::string(type) + "\" is not supported with a BPE model (supported: NFC, "
                         "Replace, Strip, Prepend, Precompiled, a Sequence of them, or none)");
  }
  if (type == "NFC") {
    config->nfc = true;
  } else {
    Status status = ParseHuggingFaceNormalizer(node, &config->normalizers);
    if (!status.ok()) return status;
  }
  // The NFC pass and the other steps keep offsets in different ways; no real file mixes them.
  if (config->nfc && !config->normalizers.empty()) {
    return Status::Error("normalizer NFC together with Replace, Strip, Prepend or Precompiled is not supported with a "
                         "BPE model");
  }
  return Status();
}

// Split with a String pattern: a literal delimiter.
Status ParseLiteralSplit(element node, std::string_view literal, BpeConfig* config) {
  if (literal.empty()) return Status::Error("pre_tokenizer Split with an empty String pattern");
  LiteralSplit split;
  split.pattern = std::string(literal);
  const std::string_view behavior = StringOr(node, "behavior", "");
  if (behavior == "Isolated") split.behavior = LiteralSplit::Behavior::kIsolated;
  else if (behavior == "MergedWithPrevious") split.behavior = LiteralSplit::Behavior::kMergedWithPrevious;
  else if (behavior == "MergedWithNext") split.behavior = LiteralSplit::Behavior::kMergedWithNext;
  else if (behavior == "Removed") split.behavior = LiteralSplit::Behavior::kRemoved;
  else {
    return Status::Error("pre_tokenizer Split with a String pattern and behavior \"" + std::string(behavior) +
                         "\" is not supported (supported: Isolated, MergedWithPrevious, MergedWithNext, Removed)");
  }
  if (BoolOr(node, "invert", false)) return Status::Error("pre_tokenizer Split with invert is not supported");
  config->literal_split = std::move(split);
  return Status();
}

Status ParsePreTokenizer(element node, BpeConfig* config) {
  if (node.is_null()) return Status();
  const std::string_view type = StringOr(node, "type", "");
  if (type == "Sequence") {
    return ReadSequence(node, "pretokenizers", "pre_tokenizer",
                        [config](element child) { return ParsePreTokenizer(child, config); });
  }
  if (type == "ByteLevel") {
    if (config->byte_level) return Status::Error("pre_tokenizer with two ByteLevel steps is not supported");
    config->byte_level = true;
    config->byte_level_add_prefix_space = BoolOr(node, "add_prefix_space", true);
    config->byte_level_use_regex = BoolOr(node, "use_regex", true);
    return Status();
  }
  if (type == "Split") {
    if (config->split || config->literal_split || config->byte_level) {
      return Status::Error("pre_tokenizer Split is supported once, before ByteLevel");
    }
    std::string_view literal;
    if (node["pattern"]["String"].get(literal) == simdjson::SUCCESS) return ParseLiteralSplit(node, literal, config);
    std::string_view regex;
    if (node["pattern"]["Regex"].get(regex) != simdjson::SUCCESS) {
      return Status::Error("pre_tokenizer Split without a String or Regex pattern");
    }
    bpe::SplitPattern pattern;
    if (!bpe::RecognizeSplitPattern(regex, &pattern)) {
      return Status::Error("pre_tokenizer Split pattern \"" + std::string(regex) +
                           "\" is not supported (supported: the GPT-2, Qwen2 and cl100k/Llama-3 patterns)");
    }
    const std::string_view behavior = StringOr(node, "behavior", "");
    if (behavior != "Isolated" || BoolOr(node, "invert", false)) {
      return Status::Error("pre_tokenizer Split with behavior \"" + std::string(behavior) +
                           "\" is not supported (supported: Isolated, not inverted)");
    }
    config->split = pattern;
    return Status();
  }
  return Status::Error("pre_tokenizer \"" + std::string(type) +
                       "\" is not supported with a BPE model (supported: Split, ByteLevel, a Sequence of them)");
}

Status ReadMerge(element entry, size_t index, std::pair<std::string, std::string>* merge) {
  std::string_view text;
  if (entry.get(text) == simdjson::SUCCESS) {
    const size_t space = text.find(' ');
    if (space == std::string_view::npos || text.find(' ', space + 1) != std::string_view::npos) {
      return Status::Error("BPE merge " + std::to_string(index) + " \"" + std::string(text) + "\" is not \"a b\"");
    }
    *merge = {std::string(text.substr(0, space)), std::string(text.substr(space + 1))};
    return Status();
  }
  array pair;
  std::string_view left, right;
  if (entry.get(pair) != simdjson::SUCCESS || pair.size() != 2 || pair.at(0).get(left) != simdjson::SUCCESS ||
      pair.at(1).get(right) != simdjson::SUCCESS) {
    return Status::Error("BPE merge " + std::to_string(index) + " is neither \"a b\" nor [a, b]");
  }
  *merge = {std::string(left), std::string(right)};
  return Status();
}

Status ReadVocabulary(element node, const char* what, BpeConfig* config) {
  object vocabulary;
  if (node.get(vocabulary) != simdjson::SUCCESS) return Status::Error(std::string(what) + " is not an object");
  return ReadPieceIds(vocabulary, what, &config->vocabulary);
}

Status ParseModel(element model, BpeConfig* config) {
  element vocabulary;
  if (model["vocab"].get(vocabulary) != simdjson::SUCCESS) return Status::Error("BPE model without a vocab");
  Status status = ReadVocabulary(vocabulary, "BPE vocab", config);
  if (!status.ok()) return status;
  array merges;
  if (model["merges"].get(merges) != simdjson::SUCCESS) return Status::Error("BPE model without a merges list");
  config->merges.reserve(merges.size());
  for (element entry : merges) {
    std::pair<std::string, std::string> merge;
    status = ReadMerge(entry, config->merges.size(), &merge);
    if (!status.ok()) return status;
    config->merges.push_back(std::move(merge));
  }
  element dropout;
  double dropout_value = 0;
  if (model["dropout"].get(dropout) == simdjson::SUCCESS && !dropout.is_null() &&
      (dropout.get(dropout_value) != simdjson::SUCCESS || dropout_value != 0.0)) {
    return Status::Error("BPE dropout is not supported (encoding would be random)");
  }
  std::string_view unknown;
  if (model["unk_token"].get(unknown) == simdjson::SUCCESS) config->unknown_token = std::string(unknown);
  config->continuing_subword_prefix = std::string(StringOr(model, "continuing_subword_prefix", ""));
  config->end_of_word_suffix = std::string(StringOr(model, "end_of_word_suffix", ""));
  config->fuse_unknown = BoolOr(model, "fuse_unk", false);
  config->byte_fallback = BoolOr(model, "byte_fallback", false);
  config->ignore_merges = BoolOr(model, "ignore_merges", false);
  return Status();
}

// The decoder steps Decode reproduces; others leave Decode joining pieces with spaces.
void ParseDecoder(element node, BpeConfig* config) {
  const std::string_view type = StringOr(node, "type", "");
  if (type == "Sequence") {
    array children;
    if (node["decoders"].get(children) == simdjson::SUCCESS) {
      for (element child : children) ParseDecoder(child, config);
    }
  } else if (type == "ByteLevel") {
    config->decoder_is_byte_level = true;
  } else if (type == "ByteFallback") {
    config->decoder_byte_fallback = true;
  } else if (type == "Fuse") {
    config->decoder_fuse = true;
  } else if (type == "Replace") {
    std::string_view pattern;
    if (node["pattern"]["String"].get(pattern) == simdjson::SUCCESS && !pattern.empty()) {
      config->decoder_replacements.emplace_back(std::string(pattern), std::string(StringOr(node, "content", "")));
    }
  }
}

}  // namespace

StatusOr<BpeConfig> ParseBpeJson(std::string_view json) {
  BpeConfig config;
  config.format = "huggingface";
  Status status = ReadTokenizerJson(json, "BPE", [&config](element root, element model) {
    STAMEN_RETURN_IF_ERROR(ParseModel(model, &config));
    element part;
    if (root["normalizer"].get(part) == simdjson::SUCCESS) STAMEN_RETURN_IF_ERROR(ParseNormalizer(part, &config));
    if (root["pre_tokenizer"].get(part) == simdjson::SUCCESS) STAMEN_RETURN_IF_ERROR(ParsePreTokenizer(part, &config));
    STAMEN_RETURN_IF_ERROR(ParseHuggingFaceSharedSections(root, &config.added_tokens, &config.post_processor));
    if (root["decoder"].get(part) == simdjson::SUCCESS && !part.is_null()) ParseDecoder(part, &config);
    return Status();
  });
  if (!status.ok()) return status;
  return config;
}

StatusOr<BpeConfig> ParseBpeVocabularyFiles(std::string_view vocab_json, std::string_view merges_txt,
                                            std::string_view tokenizer_config_json) {
  BpeConfig config;
  config.format = "vocab.json";
  config.nfc = true;
  config.split = bpe::SplitPattern::kQwen2;
  config.byte_level = true;
  config.decoder_is_byte_level = true;
  {
    simdjson::dom::parser parser;
    element root;
    const simdjson::padded_string padded(vocab_json);
    Status status = ParseJson(padded, &parser, &root);
    if (status.ok()) status = ReadVocabulary(root, "vocab.json", &config);
    if (!status.ok()) return Status::Error("vocab.json: " + status.message());
  }
  // merges.txt: "a b" per line; a first line starting with "#version" and empty lines skipped.
  size_t line_number = 0;
  for (size_t position = 0; position < merges_txt.size();) {
    size_t end = merges_txt.find('\n', position);
    if (end == std::string_view::npos) end = merges_txt.size();
    std::string_view line = merges_txt.substr(position, end - position);
    position = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_number == 1 && line.starts_with("#version"))) continue;
    const size_t space = line.find(' ');
    if (space == std::string_view::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string_view::npos) {
      return Status::Error("merges.txt line " + std::to_string(line_number) + " is not \"a b\"");
    }
    config.merges.emplace_back(std::string(line.substr(0, space)), std::string(line.substr(space + 1)));
  }
  if (tokenizer_config_json.empty()) return config;
  simdjson::dom::parser parser;
  element root;
  const simdjson::padded_string padded(tokenizer_config_json);
  Status status = ParseJson(padded, &parser, &root);
  if (!status.ok()) return Status::Error("tokenizer_config.json: " + status.message());
  status = ReadAddedTokensDecoder(root, &config.added_tokens);
  if (!status.ok()) return status;
  return config;
}

}  // namespace stamen::tokenizer
