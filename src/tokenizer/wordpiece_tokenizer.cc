// WordPiece mode: added tokens split out of the raw text, BertNormalizer, BertPreTokenizer
// words, then greedy longest-match-first pieces per word (`##` marking a piece that
// continues a word), then the post-processor's template.
#include "tokenizer/wordpiece_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "tokenizer/added_token_matcher.h"
#include "tokenizer/bert_normalizer.h"
#include "tokenizer/create_from_parsed.h"
#include "tokenizer/piece_trie.h"
#include "tokenizer/scratch_buffers.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocabulary_tokenizer.h"
#include "tokenizer/wordpiece_config.h"

namespace stamen::tokenizer {
namespace {

void ReplaceAll(std::string* text, std::string_view from, std::string_view to) {
  for (size_t found = text->find(from); found != std::string::npos; found = text->find(from, found + to.size())) {
    text->replace(found, from.size(), to);
  }
}

class WordPieceTokenizer final : public VocabularyTokenizer<WordPieceTokenizer, WordPieceConfig> {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(WordPieceConfig config);

  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;

  Stats GetStats() const override {
    return {VocabularySize(), word_start_trie_.slot_count() + continuation_trie_.slot_count(),
            word_start_trie_.bytes() + continuation_trie_.bytes(), word_start_trie_.page_kind(), config_.format};
  }

 private:
  friend VocabularyTokenizer;
  friend ContentTokenizer;

  void EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers* buffers, Encoding* out) const;
  // Pre-tokenizes normalized bytes [begin, end) and appends each word's pieces.
  void EncodeNormalized(uint32_t begin, uint32_t end, bool with_pieces, Scratch::Buffers* buffers,
                        Encoding* out) const;
  // Greedy longest-match-first over normalized bytes [begin, end) of one word.
  void AppendWord(uint32_t begin, uint32_t end, bool with_pieces, const Scratch::Buffers& buffers,
                  Encoding* out) const;

  BertNormalizer normalizer_;
  PieceTrie word_start_trie_;    // every piece, as a word's first piece
  PieceTrie continuation_trie_;  // pieces that start with the prefix, without it
  int32_t unknown_id_ = -1;
};

StatusOr<std::unique_ptr<Tokenizer>> WordPieceTokenizer::Create(WordPieceConfig config) {
  auto tokenizer = std::make_unique<WordPieceTokenizer>();
  STAMEN_RETURN_IF_ERROR(tokenizer->ResizeTables(config));
  std::unordered_map<std::string_view, int32_t> vocabulary_ids;  // later duplicates win, as in Hugging Face
  for (const auto& [piece, id] : config.vocabulary) {
    tokenizer->pieces_[static_cast<size_t>(id)] = piece;
    vocabulary_ids[piece] = id;
  }
  const auto unknown = vocabulary_ids.find(config.unknown_token);
  if (unknown == vocabulary_ids.end()) {
    return Status::Error("the WordPiece unk_token \"" + config.unknown_token + "\" is not in the vocabulary");
  }
  tokenizer->unknown_id_ = unknown->second;

  std::vector<TrieEntry> word_start, continuation;
  word_start.reserve(config.vocabulary.size());
  const std::string_view prefix = config.continuing_subword_prefix;
  for (const auto& [piece, id] : config.vocabulary) {
    word_start.push_back({piece, id, 0});
    if (std::string_view(piece).starts_with(prefix)) {
      continuation.push_back({std::string_view(piece).substr(prefix.size()), id, 0});
    }
  }
  tokenizer->word_start_trie_ = PieceTrie::Build(std::move(word_start));
  tokenizer->continuation_trie_ = PieceTrie::Build(std::move(continuation));
  if (tokenizer->word_start_trie_.root() == nullptr || tokenizer->continuation_trie_.root() == nullptr) {
    return Status::Error("out of memory building the vocabulary trie");
  }

  tokenizer->normalizer_ = BertNormalizer(config.normalizer);
  std::string normalized;
  for (size_t index = 0; index < config.added_tokens.size(); ++index) {
    const AddedToken& token = config.added_tokens[index];
    tokenizer->pieces_[static_cast<size_t>(token.id)] = token.content;
    tokenizer->special_[static_cast<size_t>(token.id)] = token.special;
    if (!token.normalized) {
      tokenizer->raw_matcher_.Add(static_cast<int32_t>(index), token.content);
      continue;
    }
    normalized.clear();
    tokenizer->normalizer_.Normalize(token.content, 0, static_cast<uint32_t>(token.content.size()), &normalized,
                                     nullptr);
    if (!normalized.empty()) tokenizer->normalized_matcher_.Add(static_cast<int32_t>(index), normalized);
  }
  // Piece → id: the model's, then the added tokens' (Hugging Face looks those up first).
  tokenizer->ids_.reserve(vocabulary_ids.size() + config.added_tokens.size());
  for (const auto& [piece, id] : vocabulary_ids) tokenizer->ids_[std::string(piece)] = id;
  for (const AddedToken& token : config.added_tokens) tokenizer->ids_[token.content] = token.id;
  config.vocabulary.clear();
  config.vocabulary.shrink_to_fit();
  tokenizer->config_ = std::move(config);
  STAMEN_RETURN_IF_ERROR(CheckPostProcessorIds(tokenizer->config_.post_processor, tokenizer->pieces_.size()));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

void WordPieceTokenizer::EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers* buffers,
                                       Encoding* out) const {
  // Invalid bytes become U+FFFD (which clean_text then drops); offsets are computed in that
  // text and mapped back at the end.
  EncodeStretches(text, with_pieces, buffers, out, [&](std::string_view valid_text, const TextSegment& segment) {
    buffers->normalized.clear();
    buffers->normalized_begins.clear();
    buffers->normalized_ends.clear();
    const BertOffsets offsets{&buffers->normalized_begins, &buffers->normalized_ends, &buffers->combining_marks};
    normalizer_.Normalize(valid_text, segment.begin, segment.end, &buffers->normalized,
                          with_pieces ? &offsets : nullptr);
    EncodeNormalizedStretches(
        buffers->normalized, static_cast<uint32_t>(buffers->normalized.size()), with_pieces, buffers, out,
        [&](uint32_t begin, uint32_t end) { EncodeNormalized(begin, end, with_pieces, buffers, out); },
        [&](uint32_t begin, uint32_t end) {
          return with_pieces ? std::pair(buffers->normalized_begins[begin], buffers->normalized_ends[end - 1])
                             : std::pair(0u, 0u);
        });
  });
}

void WordPieceTokenizer::EncodeNormalized(uint32_t begin, uint32_t end, bool with_pieces, Scratch::Buffers* buffers,
                                          Encoding* out) const {
  std::vector<Word>& words = buffers->word_list;
  words.clear();
  if (config_.bert_pre_tokenizer) {
    BertPreTokenize(buffers->normalized, begin, end, &words);
  } else if (end > begin) {
    words.push_back({begin, end, -1});
  }
  for (const Word& word : words) AppendWord(word.begin, word.end, with_pieces, *buffers, out);
}

void WordPieceTokenizer::AppendWord(uint32_t begin, uint32_t end, bool with_pieces, const Scratch::Buffers& buffers,
                                    Encoding* out) const {
  const auto* bytes = reinterpret_cast<const unsigned char*>(buffers.normalized.data());
  auto emit = [&](int32_t id, uint32_t piece_begin, uint32_t piece_end) {
    out->ids.push_back(id);
    if (with_pieces) {
      out->pieces.push_back(pieces_[static_cast<size_t>(id)]);
      out->offsets.emplace_back(buffers.normalized_begins[piece_begin], buffers.normalized_ends[piece_end - 1]);
    }
  };
  size_t characters = 0;
  for (uint32_t i = begin; i < end; ++i) characters += (bytes[i] & 0xC0) != 0x80;
  if (characters > config_.max_input_chars_per_word) {
    emit(unknown_id_, begin, end);
    return;
  }
  const size_t word_start = out->ids.size();
  const PieceTrie* trie = &word_start_trie_;
  for (uint32_t position = begin; position < end;) {
    // The longest piece that starts here: the deepest node with a token on the walk.
    const TrieNode* node = trie->root();
    int32_t best_id = -1;
    uint32_t best_end = position;
    for (uint32_t i = position; i < end && node->HasChild(bytes[i]); ++i) {
      node = &trie->Child(*node, bytes[i]);
      if (node->token_id >= 0) {
        best_id = node->token_id;
        best_end = i + 1;
      }
    }
    if (best_id < 0) {
      // Some part of the word has no piece: the whole word is unknown.
      out->ids.resize(word_start);
      if (with_pieces) {
        out->pieces.resize(word_start);
        out->offsets.resize(word_start);
      }
      emit(unknown_id_, begin, end);
      return;
    }
    emit(best_id, position, best_end);
    position = best_end;
    trie = &continuation_trie_;
  }
}

std::string WordPieceTokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string text;
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size() || (skip_special_tokens && IsSpecial(id))) continue;
    std::string token = pieces_[static_cast<size_t>(id)];
    if (!config_.decoder_is_wordpiece) {
      if (!first) text.push_back(' ');
      text += token;
      first = false;
      continue;
    }
    // Hugging Face's WordPiece decoder, token by token.
    if (!first) {
      if (token.starts_with(config_.decoder_prefix)) {
        token.erase(0, config_.decoder_prefix.size());
      } else {
        token.insert(0, 1, ' ');
      }
    }
    if (config_.decoder_cleanup) {
      static constexpr std::pair<std::string_view, std::string_view> kCleanup[] = {
          {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
          {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
      for (const auto& [from, to] : kCleanup) ReplaceAll(&token, from, to);
    }
    text += token;
    first = false;
  }
  return text;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadWordPieceTokenizer(std::string_view json) {
  return CreateFromParsed(ParseWordPieceJson(json), WordPieceTokenizer::Create);
}

StatusOr<std::unique_ptr<Tokenizer>> LoadWordPieceVocabulary(std::string_view vocab_txt,
                                                             std::string_view tokenizer_config_json) {
  return CreateFromParsed(ParseWordPieceVocabulary(vocab_txt, tokenizer_config_json), WordPieceTokenizer::Create);
}

StatusOr<std::unique_ptr<Tokenizer>> LoadWordPieceVocabularyFile(const std::string& vocab_path) {
  namespace fs = std::filesystem;
  Status status;
  const std::string vocab = ReadTokenizerFile(vocab_path, &status);
  if (!status.ok()) return status;
  const fs::path config_path = fs::path(vocab_path).parent_path() / "tokenizer_config.json";
  std::error_code error;
  std::string config;
  if (fs::exists(config_path, error)) {
    config = ReadTokenizerFile(config_path, &status);
    if (!status.ok()) return status;
  }
  auto tokenizer = LoadWordPieceVocabulary(vocab, config);
  if (!tokenizer.ok()) return Status::Error(vocab_path + ": " + tokenizer.status().message());
  return tokenizer;
}

}  // namespace stamen::tokenizer
