// Converts DeBERTa-v2/v3's spm.model and its JSON files into a Hugging Face Unigram
// configuration, step by step as transformers 4's DebertaV2Converter (convert_slow_tokenizer.py)
// and PreTrainedTokenizerFast's added tokens do.
#include "tokenizer/deberta_v2_sentencepiece.h"

#include <simdjson.h>

#include <algorithm>
#include <filesystem>

#include "tokenizer/huggingface_tokenizer.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/sentencepiece_model.h"
#include "tokenizer/vocabulary_tokenizer.h"

namespace stamen::tokenizer {
namespace {

using simdjson::dom::element;

// A special-token setting: "[CLS]" or {"content": "[CLS]", ...}.
std::string_view TokenContent(element node) {
  std::string_view content;
  if (node.get(content) == simdjson::SUCCESS) return content;
  return StringOr(node, "content", "");
}

// A parsed JSON file, or an empty object when the file is absent.
struct JsonFile {
  simdjson::dom::parser parser;
  simdjson::padded_string text;
  element root;
};

Status ParseFile(std::string_view bytes, const char* name, JsonFile* file) {
  file->text = simdjson::padded_string(WithBigIntegersAsFloats(bytes.empty() ? std::string_view("{}") : bytes));
  Status status = ParseJson(file->text, &file->parser, &file->root);
  if (!status.ok()) return Status::Error(std::string(name) + ": " + status.message());
  if (!file->root.is_object()) return Status::Error(std::string(name) + ": not a JSON object");
  return Status();
}

AddedToken* FindByContent(std::vector<AddedToken>* tokens, std::string_view content) {
  for (AddedToken& token : *tokens) {
    if (token.content == content) return &token;
  }
  return nullptr;
}

// The added tokens of the converted fast tokenizer, in the order its added vocabulary holds
// them: the spm control and user-defined pieces (SpmConverter), the tokens tokenizer_config.json
// lists with their flags, the named special tokens, then the rest of added_tokens.json.
Status BuildAddedTokens(const SentencePieceModel& model, element config, element special_map, element added_ids,
                        std::vector<AddedToken>* tokens) {
  for (size_t id = 0; id < model.pieces.size(); ++id) {
    const SentencePiece& piece = model.pieces[id];
    if (piece.type != PieceType::kControl && piece.type != PieceType::kUserDefined) continue;
    AddedToken token;
    token.id = static_cast<int32_t>(id);
    token.content = piece.text;
    token.special = piece.type == PieceType::kControl;
    tokens->push_back(std::move(token));
  }
  std::vector<AddedToken> listed;
  Status status = ReadAddedTokensDecoder(config, &listed);
  if (!status.ok()) return status;
  for (AddedToken& token : listed) {
    auto same = std::find_if(tokens->begin(), tokens->end(), [&](const AddedToken& t) { return t.id == token.id; });
    if (same != tokens->end()) {
      *same = std::move(token);
    } else {
      tokens->push_back(std::move(token));
    }
  }
  // A token not in spm.model nor in the files gets the next id, as [MASK] does (128000 in
  // deberta-v3-base).
  auto next_id = static_cast<int32_t>(model.pieces.size());
  for (const AddedToken& token : *tokens) next_id = std::max(next_id, token.id + 1);
  const auto id_of = [&](std::string_view content) -> int32_t {
    int64_t id = 0;
    if (added_ids[content].get(id) == simdjson::SUCCESS) return static_cast<int32_t>(id);
    for (size_t piece = 0; piece < model.pieces.size(); ++piece) {
      if (model.pieces[piece].text == content) return static_cast<int32_t>(piece);
    }
    return next_id++;
  };
  // DebertaV2Tokenizer's special tokens and defaults; its __init__ makes [UNK] a normalized token.
  static constexpr const char* kKeys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                          "pad_token", "cls_token", "mask_token"};
  static constexpr const char* kDefaults[] = {"[CLS]", "[SEP]", "[UNK]", "[SEP]", "[PAD]", "[CLS]", "[MASK]"};
  for (size_t i = 0; i < std::size(kKeys); ++i) {
    element node;
    std::string_view content = kDefaults[i];
    if (config[kKeys[i]].get(node) == simdjson::SUCCESS || special_map[kKeys[i]].get(node) == simdjson::SUCCESS) {
      content = TokenContent(node);
    }
    if (content.empty() || FindByContent(tokens, content) != nullptr) continue;
    AddedToken token;
    token.content = std::string(content);
    token.id = id_of(content);
    token.special = true;
    token.normalized = std::string_view(kKeys[i]) == "unk_token";
    tokens->push_back(std::move(token));
  }
  simdjson::dom::object extra;
  if (added_ids.get(extra) != simdjson::SUCCESS) return Status::Error("added_tokens.json: not a JSON object");
  for (auto [content, value] : extra) {
    int64_t id = 0;
    if (value.get(id) != simdjson::SUCCESS || id < 0) {
      return Status::Error("added_tokens.json: the id of \"" + std::string(content) + "\" is not a number");
    }
    if (content.empty() || FindByContent(tokens, content) != nullptr) continue;
    AddedToken token;
    token.content = std::string(content);
    token.id = static_cast<int32_t>(id);
    token.normalized = true;  // a user's token, not special: matched in normalized text
    tokens->push_back(std::move(token));
  }
  return Status();
}

}  // namespace

StatusOr<HuggingFaceConfig> ConvertDebertaV2SentencePiece(const DebertaV2Files& files) {
  auto parsed = ParseSentencePieceModel(files.model);
  if (!parsed.ok()) return Status::Error("spm.model: " + parsed.status().message());
  const SentencePieceModel& model = parsed.value();
  if (model.model_type != 1) {
    return Status::Error("spm.model: SentencePiece model type " + std::to_string(model.model_type) +
                         " is not supported (DeBERTa's is Unigram, type 1)");
  }
  if (model.unk_id < 0 || static_cast<size_t>(model.unk_id) >= model.pieces.size()) {
    return Status::Error("spm.model: unk_id " + std::to_string(model.unk_id) + " is not a piece");
  }
  JsonFile config, special_map, added_ids;
  Status status = ParseFile(files.tokenizer_config, "tokenizer_config.json", &config);
  if (status.ok()) status = ParseFile(files.special_tokens_map, "special_tokens_map.json", &special_map);
  if (status.ok()) status = ParseFile(files.added_tokens, "added_tokens.json", &added_ids);
  if (!status.ok()) return status;
  // The two options change the normalizer and pre-tokenizer in ways this converter does not
  // build (Lowercase; Punctuation "isolated" before Metaspace): refused rather than approximated.
  if (BoolOr(config.root, "do_lower_case", false)) {
    return Status::Error("tokenizer_config.json: do_lower_case true is not supported for DeBERTa's spm.model "
                         "(the Hub's DeBERTa-v2/v3 models have it false)");
  }
  if (BoolOr(config.root, "split_by_punct", false)) {
    return Status::Error("tokenizer_config.json: split_by_punct true is not supported for DeBERTa's spm.model "
                         "(the Hub's DeBERTa-v2/v3 models have it false)");
  }

  HuggingFaceConfig result;
  result.vocabulary.reserve(model.pieces.size());
  for (const SentencePiece& piece : model.pieces) result.vocabulary.emplace_back(piece.text, piece.score);
  result.unknown_id = model.unk_id;
  // SpmConverter builds the Unigram model without byte fallback (DebertaV2Converter keeps
  // handle_byte_fallback off): a byte piece is never chosen, an unknown character is [UNK].
  result.byte_fallback = false;

  NormalizerStep strip;
  strip.kind = NormalizerStep::Kind::kStrip;
  strip.strip_left = strip.strip_right = true;
  result.normalizers.push_back(std::move(strip));
  if (!model.precompiled_charsmap.empty()) {
    auto precompiled = PrecompiledNormalizerStep(model.precompiled_charsmap);
    if (!precompiled.ok()) return Status::Error("spm.model: " + precompiled.status().message());
    result.normalizers.push_back(std::move(precompiled.value()));
  }
  NormalizerStep spaces;  // Replace(Regex(" {2,}"), " ")
  spaces.kind = NormalizerStep::Kind::kReplace;
  ReplaceAlternative run_of_spaces;
  run_of_spaces.characters = {U' '};
  run_of_spaces.minimum_repeats = 2;
  run_of_spaces.maximum_repeats = 0;
  spaces.replace.alternatives.push_back(std::move(run_of_spaces));
  spaces.replace.content = " ";
  result.normalizers.push_back(std::move(spaces));

  // Metaspace "always": transformers 4 prepends the ▁ to every word whatever add_prefix_space
  // says (the slow DebertaV2Tokenizer has no such attribute for the converter to read).
  result.pre_tokenizer.has_metaspace = true;
  result.decoder_is_metaspace = true;

  status = BuildAddedTokens(model, config.root, special_map.root, added_ids.root, &result.added_tokens);
  if (!status.ok()) return status;
  // DebertaV2Converter's template names [CLS] and [SEP] literally.
  const AddedToken* cls = FindByContent(&result.added_tokens, "[CLS]");
  const AddedToken* sep = FindByContent(&result.added_tokens, "[SEP]");
  if (cls == nullptr || sep == nullptr) return Status::Error("spm.model: no [CLS] or [SEP] token");
  const TemplateItem first_cls = TemplateItem::Special(cls->content, cls->id, 0);
  const TemplateItem first_sep = TemplateItem::Special(sep->content, sep->id, 0);
  result.post_processor.single = {first_cls, TemplateItem::Sequence(0, 0), first_sep};
  result.post_processor.pair = {first_cls, TemplateItem::Sequence(0, 0), first_sep, TemplateItem::Sequence(1, 1),
                                TemplateItem::Special(sep->content, sep->id, 1)};
  return result;
}

StatusOr<std::unique_ptr<Tokenizer>> LoadDebertaV2SentencePieceFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const bool is_folder = fs::is_directory(path, error);
  const fs::path model_path = is_folder ? fs::path(path) / "spm.model" : fs::path(path);
  const fs::path folder = model_path.parent_path();
  Status status;
  const std::string model = ReadTokenizerFile(model_path, &status);
  if (!status.ok()) return status;
  std::string texts[3];
  const char* names[3] = {"tokenizer_config.json", "special_tokens_map.json", "added_tokens.json"};
  for (int i = 0; i < 3; ++i) {
    if (!fs::exists(folder / names[i], error)) continue;
    texts[i] = ReadTokenizerFile(folder / names[i], &status);
    if (!status.ok()) return status;
  }
  auto config = ConvertDebertaV2SentencePiece({model, texts[0], texts[1], texts[2]});
  if (!config.ok()) return Status::Error(folder.string() + ": " + config.status().message());
  auto tokenizer = CreateHuggingFaceTokenizer(std::move(config.value()));
  if (!tokenizer.ok()) return Status::Error(model_path.string() + ": " + tokenizer.status().message());
  return tokenizer;
}

}  // namespace stamen::tokenizer
