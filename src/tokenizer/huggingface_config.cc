// Reads tokenizer.json with simdjson's DOM API, component by component.
#include "tokenizer/huggingface_config.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>

#include "tokenizer/json_fields.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// Decodes standard base64 (the encoding of `precompiled_charsmap`).
bool DecodeBase64(std::string_view text, std::string* out) {
  auto value_of = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  out->clear();
  uint32_t accumulator = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=' || c == '\n' || c == '\r') continue;
    const int value = value_of(c);
    if (value < 0) return false;
    accumulator = (accumulator << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out->push_back(static_cast<char>((accumulator >> bits) & 0xFF));
    }
  }
  return true;
}

bool IsNull(element parent, const char* key) {
  element value;
  return parent[key].get(value) != simdjson::SUCCESS || value.is_null();
}

// The escapes a Replace regex may use for one character; 0 when `c` after '\\' is not one.
char32_t EscapedCharacter(char c) {
  switch (c) {
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    case 'f': return '\f';
    case 'v': return '\v';
    default: return std::string_view("\\.^$|?*+()[]{}- /").find(c) != std::string_view::npos ? static_cast<char32_t>(c) : 0;
  }
}

// Reads one set member at `*position` (a character, an escape, or \s) into `alternative`.
bool ReadSetMember(std::string_view regex, size_t* position, bool in_brackets, ReplaceAlternative* alternative) {
  if (*position >= regex.size()) return false;
  if (regex[*position] == '\\') {
    if (*position + 1 >= regex.size()) return false;
    const char escaped = regex[*position + 1];
    *position += 2;
    if (escaped == 's') {
      alternative->whitespace = true;
      return true;
    }
    const char32_t c = EscapedCharacter(escaped);
    if (c == 0) return false;
    alternative->characters.push_back(c);
    return true;
  }
  const unsigned char lead = static_cast<unsigned char>(regex[*position]);
  // Outside brackets these start constructs the matcher does not know; inside, ranges and
  // negation are not supported.
  const std::string_view special = in_brackets ? "[]^-" : ".^$|?*+()[]{}";
  if (lead < 0x80 && special.find(static_cast<char>(lead)) != std::string_view::npos) return false;
  const utf8::Decoded decoded = utf8::Decode(regex, *position);
  if (!decoded.valid) return false;
  alternative->characters.push_back(decoded.code_point);
  *position += decoded.length;
  return true;
}

// One alternative: [\A] (character | \s | [members]) [+ | {n} | {n,} | {n,m}] [\z].
bool ParseAlternative(std::string_view text, ReplaceAlternative* alternative) {
  size_t position = 0;
  if (text.starts_with("\\A")) {
    alternative->at_start = true;
    position = 2;
  }
  if (text.ends_with("\\z") && text.size() >= position + 2) {
    alternative->at_end = true;
    text.remove_suffix(2);
  }
  if (position >= text.size()) return false;
  if (text[position] == '[') {
    ++position;
    while (position < text.size() && text[position] != ']') {
      if (!ReadSetMember(text, &position, true, alternative)) return false;
    }
    if (position >= text.size()) return false;
    ++position;  // ']'
  } else if (!ReadSetMember(text, &position, false, alternative)) {
    return false;
  }
  const std::string_view quantifier = text.substr(position);
  if (quantifier.empty()) return true;
  if (quantifier == "+") {
    alternative->maximum_repeats = 0;
    return true;
  }
  if (quantifier.size() < 3 || quantifier.front() != '{' || quantifier.back() != '}') return false;
  const std::string_view bounds = quantifier.substr(1, quantifier.size() - 2);
  const size_t comma = bounds.find(',');
  auto number = [](std::string_view digits, size_t* value) {
    // Bounded so that a hostile file cannot overflow the count; real files use 1 or 2.
    const auto parsed = std::from_chars(digits.data(), digits.data() + digits.size(), *value);
    return !digits.empty() && parsed.ec == std::errc() && parsed.ptr == digits.data() + digits.size() &&
           *value <= 1'000'000;
  };
  if (!number(bounds.substr(0, comma), &alternative->minimum_repeats) || alternative->minimum_repeats == 0) return false;
  if (comma == std::string_view::npos) {
    alternative->maximum_repeats = alternative->minimum_repeats;
  } else if (comma + 1 == bounds.size()) {
    alternative->maximum_repeats = 0;
  } else if (!number(bounds.substr(comma + 1), &alternative->maximum_repeats) ||
             alternative->maximum_repeats < alternative->minimum_repeats) {
    return false;
  }
  return true;
}

Status ParseReplace(element node, ReplaceRule* rule) {
  rule->content = std::string(StringOr(node, "content", ""));
  std::string_view literal;
  if (node["pattern"]["String"].get(literal) == simdjson::SUCCESS) {
    rule->pattern = std::string(literal);
    if (rule->pattern.empty()) return Status::Error("Replace normalizer with an empty pattern");
    return Status();
  }
  std::string_view regex;
  if (node["pattern"]["Regex"].get(regex) != simdjson::SUCCESS) {
    return Status::Error("Replace normalizer without a String or Regex pattern");
  }
  // Alternatives of one repeated character set; anything else (groups, sequences, ranges,
  // quantifiers that match nothing) is refused rather than approximated.
  for (size_t begin = 0;;) {
    size_t bar = begin;
    while (bar < regex.size() && regex[bar] != '|') bar += regex[bar] == '\\' ? 2 : 1;
    bar = std::min(bar, regex.size());
    ReplaceAlternative alternative;
    if (!ParseAlternative(regex.substr(begin, bar - begin), &alternative)) {
      return Status::Error("Replace normalizer regex \"" + std::string(regex) +
                           "\" is not supported (supported: alternatives of one character, \\s or [set] with an "
                           "optional +, {n}, {n,} or {n,m}, \\A and \\z, as in \" {2,}\" and \"\\s{2,}|[\\n\\r\\t]\")");
    }
    rule->alternatives.push_back(std::move(alternative));
    if (bar >= regex.size()) break;
    begin = bar + 1;
  }
  return Status();
}

}  // namespace

StatusOr<NormalizerStep> PrecompiledNormalizerStep(std::string_view charsmap_blob) {
  NormalizerStep step;
  step.kind = NormalizerStep::Kind::kPrecompiled;
  auto charsmap = Charsmap::Parse(charsmap_blob);
  if (!charsmap.ok()) return Status::Error("Precompiled normalizer: " + charsmap.status().message());
  step.charsmap = std::move(charsmap.value());
  for (int byte = 0; byte < 128; ++byte) {
    const char key[1] = {static_cast<char>(byte)};
    std::string_view replacement;
    step.ascii_unchanged[static_cast<size_t>(byte)] = byte != 0 && !step.charsmap.ShortestMatch(std::string_view(key, 1), &replacement);
  }
  return step;
}

Status ParseHuggingFaceNormalizer(element node, std::vector<NormalizerStep>* steps) {
  if (node.is_null()) return Status();
  const std::string_view type = StringOr(node, "type", "");
  if (type == "Sequence") {
    return ReadSequence(node, "normalizers", "normalizer",
                        [steps](element child) { return ParseHuggingFaceNormalizer(child, steps); });
  }
  NormalizerStep step;
  if (type == "Precompiled") {
    std::string blob;
    std::string_view encoded;
    if (node["precompiled_charsmap"].get(encoded) == simdjson::SUCCESS && !DecodeBase64(encoded, &blob)) {
      return Status::Error("Precompiled normalizer: precompiled_charsmap is not base64");
    }
    auto precompiled = PrecompiledNormalizerStep(blob);
    if (!precompiled.ok()) return precompiled.status();
    step = std::move(precompiled.value());
  } else if (type == "Replace") {
    step.kind = NormalizerStep::Kind::kReplace;
    Status status = ParseReplace(node, &step.replace);
    if (!status.ok()) return status;
  } else if (type == "Strip") {
    step.kind = NormalizerStep::Kind::kStrip;
    step.strip_left = BoolOr(node, "strip_left", true);
    step.strip_right = BoolOr(node, "strip_right", true);
  } else if (type == "Prepend") {
    step.kind = NormalizerStep::Kind::kPrepend;
    step.prepend = std::string(StringOr(node, "prepend", ""));
  } else if (type == "NFC") {
    step.kind = NormalizerStep::Kind::kNfc;  // DeBERTa-v3 as transformers 5 writes it
  } else {
    return Status::Error("normalizer \"" + std::string(type) +
                         "\" is not supported (supported: Precompiled, Replace, Strip, Prepend, NFC, Sequence)");
  }
  steps->push_back(std::move(step));
  return Status();
}

namespace {

Status ParseMetaspace(element node, MetaspaceConfig* config) {
  config->replacement = std::string(StringOr(node, "replacement", "\xE2\x96\x81"));
  if (config->replacement.empty()) return Status::Error("Metaspace with an empty replacement");
  // Older files have only `add_prefix_space`; newer ones `prepend_scheme`, which wins.
  config->prepend_scheme = BoolOr(node, "add_prefix_space", true) ? PrependScheme::kAlways : PrependScheme::kNever;
  const std::string_view scheme = StringOr(node, "prepend_scheme", "");
  if (scheme == "always") config->prepend_scheme = PrependScheme::kAlways;
  else if (scheme == "first") config->prepend_scheme = PrependScheme::kFirst;
  else if (scheme == "never") config->prepend_scheme = PrependScheme::kNever;
  else if (!scheme.empty()) return Status::Error("Metaspace prepend_scheme \"" + std::string(scheme) + "\" is unknown");
  config->split = BoolOr(node, "split", true);
  return Status();
}

Status ParsePreTokenizer(element node, PreTokenizerConfig* config) {
  if (node.is_null()) return Status();
  const std::string_view type = StringOr(node, "type", "");
  if (type == "Sequence") {
    return ReadSequence(node, "pretokenizers", "pre_tokenizer", [config](element child) {
      if (config->has_metaspace) return Status::Error("pre_tokenizer Sequence with steps after Metaspace is not supported");
      return ParsePreTokenizer(child, config);
    });
  }
  if (type == "Metaspace") {
    config->has_metaspace = true;
    return ParseMetaspace(node, &config->metaspace);
  }
  if (type == "WhitespaceSplit") {
    config->whitespace_split = true;
    return Status();
  }
  return Status::Error("pre_tokenizer \"" + std::string(type) +
                       "\" is not supported (supported: Metaspace, WhitespaceSplit, Sequence of them)");
}

Status ParseTemplate(element node, element special_tokens, std::vector<TemplateItem>* items) {
  array parts;
  if (node.get(parts) != simdjson::SUCCESS) return Status::Error("TemplateProcessing template is not a list");
  for (element part : parts) {
    element body;
    int64_t type_id = 0;
    if (part["Sequence"].get(body) == simdjson::SUCCESS) {
      if (body["type_id"].get(type_id) != simdjson::SUCCESS) type_id = 0;
      const std::string_view name = StringOr(body, "id", "A");
      items->push_back(TemplateItem::Sequence(name == "B" ? 1 : 0, static_cast<uint8_t>(type_id)));
    } else if (part["SpecialToken"].get(body) == simdjson::SUCCESS) {
      if (body["type_id"].get(type_id) != simdjson::SUCCESS) type_id = 0;
      const std::string_view name = StringOr(body, "id", "");
      element token;
      array ids;
      if (special_tokens[name].get(token) != simdjson::SUCCESS || token["ids"].get(ids) != simdjson::SUCCESS) {
        return Status::Error("TemplateProcessing uses special token \"" + std::string(name) + "\" it does not define");
      }
      TemplateItem item;
      item.type_id = static_cast<uint8_t>(type_id);
      for (element id : ids) {
        int64_t value = 0;
        if (id.get(value) != simdjson::SUCCESS) return Status::Error("TemplateProcessing special token id is not a number");
        item.special_ids.push_back(static_cast<int32_t>(value));
      }
      array tokens;
      if (token["tokens"].get(tokens) == simdjson::SUCCESS) {
        for (element piece : tokens) item.special_pieces.emplace_back(piece.is_string() ? piece.get_string().value_unsafe() : "");
      }
      item.special_pieces.resize(item.special_ids.size());
      items->push_back(std::move(item));
    } else {
      return Status::Error("TemplateProcessing item is neither Sequence nor SpecialToken");
    }
  }
  return Status();
}

// `[piece, id]` as RobertaProcessing / BertProcessing store cls and sep.
Status ReadPieceAndId(element node, const char* key, std::string* piece, int64_t* id) {
  array pair;
  if (node[key].get(pair) != simdjson::SUCCESS || pair.size() != 2) return Status::Error(std::string("post_processor without ") + key);
  std::string_view text;
  if (pair.at(0).get(text) != simdjson::SUCCESS || pair.at(1).get(*id) != simdjson::SUCCESS) {
    return Status::Error(std::string("post_processor ") + key + " is not [piece, id]");
  }
  *piece = std::string(text);
  return Status();
}

Status ParsePostProcessor(element node, PostProcessor* processor) {
  if (node.is_null()) return Status();
  const std::string_view type = StringOr(node, "type", "");
  if (type == "Sequence") {
    return ReadSequence(node, "processors", "post_processor",
                        [processor](element child) { return ParsePostProcessor(child, processor); });
  }
  if (type == "ByteLevel") return Status();  // only trims offsets
  if (type == "TemplateProcessing") {
    element special_tokens;
    if (node["special_tokens"].get(special_tokens) != simdjson::SUCCESS) return Status::Error("TemplateProcessing without special_tokens");
    processor->single.clear();
    processor->pair.clear();
    element single, pair;
    if (node["single"].get(single) != simdjson::SUCCESS || node["pair"].get(pair) != simdjson::SUCCESS) {
      return Status::Error("TemplateProcessing without single and pair templates");
    }
    Status status = ParseTemplate(single, special_tokens, &processor->single);
    if (status.ok()) status = ParseTemplate(pair, special_tokens, &processor->pair);
    return status;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    std::string cls, sep;
    int64_t cls_id = 0, sep_id = 0;
    Status status = ReadPieceAndId(node, "cls", &cls, &cls_id);
    if (status.ok()) status = ReadPieceAndId(node, "sep", &sep, &sep_id);
    if (!status.ok()) return status;
    const bool roberta = type == "RobertaProcessing";
    const uint8_t second_type = roberta ? 0 : 1;
    const auto cls_item = [&](uint8_t type_id) { return TemplateItem::Special(cls, static_cast<int32_t>(cls_id), type_id); };
    const auto sep_item = [&](uint8_t type_id) { return TemplateItem::Special(sep, static_cast<int32_t>(sep_id), type_id); };
    processor->single = {cls_item(0), TemplateItem::Sequence(0, 0), sep_item(0)};
    processor->pair = {cls_item(0), TemplateItem::Sequence(0, 0), sep_item(0)};
    if (roberta) processor->pair.push_back(sep_item(0));
    processor->pair.push_back(TemplateItem::Sequence(1, second_type));
    processor->pair.push_back(sep_item(second_type));
    return Status();
  }
  return Status::Error("post_processor \"" + std::string(type) +
                       "\" is not supported (supported: TemplateProcessing, RobertaProcessing, BertProcessing, "
                       "ByteLevel, Sequence)");
}

Status ParseAddedTokens(element node, std::vector<AddedToken>* tokens) {
  if (node.is_null()) return Status();
  array list;
  if (node.get(list) != simdjson::SUCCESS) return Status::Error("added_tokens is not a list");
  for (element entry : list) {
    AddedToken token;
    int64_t id = 0;
    std::string_view content;
    if (entry["id"].get(id) != simdjson::SUCCESS || entry["content"].get(content) != simdjson::SUCCESS) {
      return Status::Error("added token without id or content");
    }
    if (content.empty()) return Status::Error("added token " + std::to_string(id) + " has empty content");
    token.id = static_cast<int32_t>(id);
    token.content = std::string(content);
    ReadAddedTokenFlags(entry, &token);
    tokens->push_back(std::move(token));
  }
  return Status();
}

Status ParseModel(element model, HuggingFaceConfig* config) {
  const std::string_view type = StringOr(model, "type", "");
  array vocabulary;
  const bool has_list_vocabulary = model["vocab"].get(vocabulary) == simdjson::SUCCESS;
  // Files written before the "type" key existed are recognised by their vocabulary shape.
  if (type != "Unigram" && !(type.empty() && has_list_vocabulary)) {
    return Status::Error("model type \"" + std::string(type.empty() ? "unknown" : type) +
                         "\" is not supported by the Unigram tokenizer");
  }
  if (!has_list_vocabulary) return Status::Error("Unigram model without a vocab list");
  config->vocabulary.reserve(vocabulary.size());
  for (element entry : vocabulary) {
    array pair;
    std::string_view piece;
    double score = 0;
    if (entry.get(pair) != simdjson::SUCCESS || pair.size() != 2 || pair.at(0).get(piece) != simdjson::SUCCESS ||
        pair.at(1).get(score) != simdjson::SUCCESS) {
      return Status::Error("Unigram vocab entry " + std::to_string(config->vocabulary.size()) +
                           " is not [piece, score]");
    }
    config->vocabulary.emplace_back(std::string(piece), score);
  }
  int64_t unknown_id = -1;
  if (!IsNull(model, "unk_id") && model["unk_id"].get(unknown_id) != simdjson::SUCCESS) {
    return Status::Error("Unigram unk_id is not a number");
  }
  config->unknown_id = static_cast<int32_t>(unknown_id);
  config->byte_fallback = BoolOr(model, "byte_fallback", false);
  return Status();
}

}  // namespace

StatusOr<HuggingFaceConfig> ParseHuggingFaceConfig(std::string_view json) {
  HuggingFaceConfig config;
  // The Unigram model checks its own type: files written before "type" existed have none.
  Status status = ReadTokenizerJson(json, "", [&config](element root, element model) {
    STAMEN_RETURN_IF_ERROR(ParseModel(model, &config));
    element part;
    if (root["normalizer"].get(part) == simdjson::SUCCESS) {
      STAMEN_RETURN_IF_ERROR(ParseHuggingFaceNormalizer(part, &config.normalizers));
    }
    if (root["pre_tokenizer"].get(part) == simdjson::SUCCESS) {
      STAMEN_RETURN_IF_ERROR(ParsePreTokenizer(part, &config.pre_tokenizer));
    }
    STAMEN_RETURN_IF_ERROR(ParseHuggingFaceSharedSections(root, &config.added_tokens, &config.post_processor));
    if (root["decoder"].get(part) == simdjson::SUCCESS && !part.is_null() &&
        StringOr(part, "type", "") == "Metaspace") {
      config.decoder_is_metaspace = true;
      STAMEN_RETURN_IF_ERROR(ParseMetaspace(part, &config.decoder_metaspace));
    }
    return Status();
  });
  if (!status.ok()) return status;
  return config;
}

Status ParseHuggingFaceSharedSections(element root, std::vector<AddedToken>* added_tokens,
                                      PostProcessor* post_processor) {
  element part;
  if (root["post_processor"].get(part) == simdjson::SUCCESS) {
    STAMEN_RETURN_IF_ERROR(ParsePostProcessor(part, post_processor));
  }
  if (root["added_tokens"].get(part) == simdjson::SUCCESS) STAMEN_RETURN_IF_ERROR(ParseAddedTokens(part, added_tokens));
  return Status();
}

}  // namespace stamen::tokenizer
