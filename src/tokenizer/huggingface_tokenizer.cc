// Hugging Face mode: added tokens split out of the raw text, the normalizers, Metaspace /
// WhitespaceSplit pre-tokenization into words, Viterbi with double scores per word, then
// the post-processor's template.
#include "tokenizer/huggingface_tokenizer.h"

#include <algorithm>
#include <array>

#include "tokenizer/added_token_matcher.h"
#include "tokenizer/content_tokenizer.h"
#include "tokenizer/create_from_parsed.h"
#include "tokenizer/huggingface_config.h"
#include "tokenizer/huggingface_normalizer.h"
#include "tokenizer/scratch_buffers.h"
#include "tokenizer/unigram_vocabulary.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

class HuggingFaceTokenizer final : public ContentTokenizer<HuggingFaceTokenizer> {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(HuggingFaceConfig config);

  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;

  size_t VocabularySize() const override { return std::max<size_t>(vocabulary_.size(), max_added_id_ + 1); }
  std::string_view IdToPiece(int32_t id) const override;
  int32_t PieceToId(std::string_view piece) const override;
  bool IsSpecial(int32_t id) const override {
    return std::any_of(config_.added_tokens.begin(), config_.added_tokens.end(),
                       [id](const AddedToken& token) { return token.id == id && token.special; });
  }
  size_t SpecialTokenCount(bool pair) const override { return config_.post_processor.SpecialCount(pair); }
  Stats GetStats() const override {
    return {VocabularySize(), vocabulary_.trie().slot_count(), vocabulary_.trie().bytes(),
            vocabulary_.trie().page_kind(), "huggingface"};
  }

 private:
  friend ContentTokenizer;
  void EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers* buffers, Encoding* out) const;
  const PostProcessor& ContentPostProcessor() const { return config_.post_processor; }
  // Appends the words of normalized bytes [begin, end) to `buffers->words` / `word_list`.
  void PreTokenize(uint32_t begin, uint32_t end, bool at_text_start, Scratch::Buffers* buffers) const;
  void AppendMetaspaceWords(uint32_t begin, uint32_t end, bool at_text_start, Scratch::Buffers* buffers) const;

  HuggingFaceConfig config_;
  UnigramVocabulary vocabulary_;
  AddedTokenMatcher raw_matcher_;         // tokens matched before normalization
  AddedTokenMatcher normalized_matcher_;  // tokens matched in normalized text
  size_t max_added_id_ = 0;
};

StatusOr<std::unique_ptr<Tokenizer>> HuggingFaceTokenizer::Create(HuggingFaceConfig config) {
  if (config.unknown_id < 0) {
    return Status::Error("the Unigram model has no unk_id; unknown characters could not be encoded");
  }
  double min_score = 0;
  std::vector<VocabularyEntry> entries;
  entries.reserve(config.vocabulary.size());
  for (auto& [piece, score] : config.vocabulary) {
    min_score = std::min(min_score, score);
    entries.push_back({std::move(piece), score, true, false});
  }
  config.vocabulary.clear();
  config.vocabulary.shrink_to_fit();
  auto tokenizer = std::make_unique<HuggingFaceTokenizer>();
  for (const AddedToken& token : config.added_tokens) {
    if (static_cast<size_t>(token.id) < entries.size() && token.special) entries[static_cast<size_t>(token.id)].special = true;
  }
  auto vocabulary = UnigramVocabulary::Build(std::move(entries), config.unknown_id, min_score - 10.0,
                                             config.byte_fallback);
  if (!vocabulary.ok()) return vocabulary.status();
  tokenizer->vocabulary_ = std::move(vocabulary.value());
  std::string normalized, work;
  OffsetMap offsets, work_offsets;
  for (size_t index = 0; index < config.added_tokens.size(); ++index) {
    const AddedToken& token = config.added_tokens[index];
    if (token.id < 0) return Status::Error("added token \"" + token.content + "\" has a negative id");
    tokenizer->max_added_id_ = std::max<size_t>(tokenizer->max_added_id_, static_cast<size_t>(token.id));
    if (!token.normalized) {
      tokenizer->raw_matcher_.Add(static_cast<int32_t>(index), token.content);
      continue;
    }
    NormalizeHuggingFace(config.normalizers, token.content, 0, &normalized, &offsets, &work, &work_offsets);
    if (!normalized.empty()) tokenizer->normalized_matcher_.Add(static_cast<int32_t>(index), normalized);
  }
  tokenizer->config_ = std::move(config);
  const PostProcessor& post_processor = tokenizer->config_.post_processor;
  for (const auto* items : {&post_processor.single, &post_processor.pair}) {
    for (const TemplateItem& item : *items) {
      for (int32_t id : item.special_ids) {
        if (id < 0 || static_cast<size_t>(id) >= tokenizer->VocabularySize()) {
          return Status::Error("post_processor special token id " + std::to_string(id) + " is outside the vocabulary of " +
                               std::to_string(tokenizer->VocabularySize()));
        }
      }
    }
  }
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

void HuggingFaceTokenizer::EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers* buffers,
                                         Encoding* out) const {
  out->Clear();
  // Text reaching Hugging Face is a Rust string: invalid bytes arrive as U+FFFD. Offsets
  // are computed in that text and mapped back to the caller's bytes at the end.
  const bool replaced = utf8::ReplaceInvalid(text, &buffers->valid_text, with_pieces ? &buffers->valid_text_origins : nullptr);
  if (replaced) text = buffers->valid_text;
  buffers->segments.clear();
  buffers->words.clear();
  buffers->offsets.Reset(with_pieces);
  buffers->word_offsets.Reset(with_pieces);
  buffers->word_list.clear();
  raw_matcher_.Split(text, 0, static_cast<uint32_t>(text.size()), config_.added_tokens, &buffers->segments);
  for (const TextSegment& segment : buffers->segments) {
    if (segment.added_token >= 0) {
      buffers->word_list.push_back({segment.begin, segment.end, segment.added_token});
      continue;
    }
    NormalizeHuggingFace(config_.normalizers, text.substr(segment.begin, segment.end - segment.begin),
                         segment.begin, &buffers->normalized, &buffers->offsets, &buffers->work,
                         &buffers->work_offsets);
    const auto normalized_size = static_cast<uint32_t>(buffers->normalized.size());
    if (normalized_matcher_.empty()) {
      PreTokenize(0, normalized_size, segment.begin == 0, buffers);
    } else {
      // Matches inside normalized text: split again, reusing the tail of `segments` as scratch.
      std::vector<TextSegment> inner;  // rare path (normalized added tokens); allocation accepted
      normalized_matcher_.Split(buffers->normalized, 0, normalized_size, config_.added_tokens, &inner);
      for (const TextSegment& piece : inner) {
        if (piece.added_token >= 0) {
          buffers->word_list.push_back({buffers->offsets.At(piece.begin, segment.begin),
                                        piece.end < normalized_size ? buffers->offsets.At(piece.end, segment.end)
                                                                    : segment.end,
                                        piece.added_token});
        } else {
          PreTokenize(piece.begin, piece.end, segment.begin == 0 && piece.begin == 0, buffers);
        }
      }
    }
    // A separator byte that no word covers, so each word's end offset is well defined.
    buffers->words.push_back('\0');
    buffers->word_offsets.Append(segment.end);
  }
  buffers->word_offsets.Append(static_cast<uint32_t>(text.size()));

  for (const Word& word : buffers->word_list) {
    if (word.special_id >= 0) {
      const AddedToken& token = config_.added_tokens[static_cast<size_t>(word.special_id)];
      out->ids.push_back(token.id);
      if (with_pieces) {
        out->pieces.push_back(token.content);
        out->offsets.emplace_back(word.begin, word.end);
      }
      continue;
    }
    buffers->pieces.clear();
    SegmentViterbi<double>(vocabulary_.trie(), buffers->words, word.begin, word.end, vocabulary_.unknown(),
                           buffers->double_cells, &buffers->pieces);
    vocabulary_.AppendPieces(buffers->words, buffers->word_offsets.data(), buffers->pieces, with_pieces, out);
  }
  out->type_ids.assign(out->ids.size(), 0);
  if (replaced && with_pieces) {
    for (auto& [begin, end] : out->offsets) {
      begin = buffers->valid_text_origins[begin];
      end = buffers->valid_text_origins[end];
    }
  }
}

void HuggingFaceTokenizer::PreTokenize(uint32_t begin, uint32_t end, bool at_text_start,
                                       Scratch::Buffers* buffers) const {
  const PreTokenizerConfig& pre_tokenizer = config_.pre_tokenizer;
  const std::string& text = buffers->normalized;
  if (!pre_tokenizer.whitespace_split) {
    AppendMetaspaceWords(begin, end, at_text_start, buffers);
    return;
  }
  // WhitespaceSplit: maximal runs of non-whitespace characters.
  uint32_t word_begin = begin;
  bool first_word = true;
  for (uint32_t position = begin; position <= end;) {
    utf8::Decoded decoded{0, 1, true};
    const bool at_end = position == end;
    if (!at_end) decoded = utf8::Decode(text, position);
    if (at_end || utf8::IsWhitespace(decoded.code_point)) {
      if (position > word_begin) {
        AppendMetaspaceWords(word_begin, position, at_text_start && first_word && word_begin == begin, buffers);
        first_word = false;
      }
      if (at_end) break;
      word_begin = position + static_cast<uint32_t>(decoded.length);
    }
    position += static_cast<uint32_t>(decoded.length);
  }
}

void HuggingFaceTokenizer::AppendMetaspaceWords(uint32_t begin, uint32_t end, bool at_text_start,
                                                Scratch::Buffers* buffers) const {
  if (begin >= end) return;
  const std::string& text = buffers->normalized;
  const OffsetMap& offsets = buffers->offsets;
  std::string& words = buffers->words;
  OffsetMap& word_offsets = buffers->word_offsets;
  const auto written_begin = static_cast<uint32_t>(words.size());
  if (!config_.pre_tokenizer.has_metaspace) {
    words.append(text, begin, end - begin);
    word_offsets.AppendRange(offsets, begin, end);
    buffers->word_list.push_back({written_begin, static_cast<uint32_t>(words.size()), -1});
    return;
  }
  const MetaspaceConfig& metaspace = config_.pre_tokenizer.metaspace;
  const std::string_view replacement = metaspace.replacement;
  const std::string_view piece = std::string_view(text).substr(begin, end - begin);
  const bool starts_with_replacement = piece.front() == ' ' || piece.starts_with(replacement);
  const bool prepend = !starts_with_replacement && (metaspace.prepend_scheme == PrependScheme::kAlways ||
                                                    (metaspace.prepend_scheme == PrependScheme::kFirst && at_text_start));
  if (prepend) {
    words.append(replacement);
    word_offsets.Append(replacement.size(), offsets.At(begin));
  }
  for (uint32_t i = begin; i < end;) {
    if (text[i] == ' ') {
      words.append(replacement);
      word_offsets.Append(replacement.size(), offsets.At(i));
      ++i;
      continue;
    }
    const size_t space = text.find(' ', i);
    const uint32_t run_end = space == std::string::npos || space > end ? end : static_cast<uint32_t>(space);
    words.append(text, i, run_end - i);
    word_offsets.AppendRange(offsets, i, run_end);
    i = run_end;
  }
  const auto written_end = static_cast<uint32_t>(words.size());
  if (!metaspace.split) {
    buffers->word_list.push_back({written_begin, written_end, -1});
    return;
  }
  // Split with the replacement merged into the word after it.
  uint32_t word_begin = written_begin;
  const std::string_view written = std::string_view(words).substr(0, written_end);
  for (size_t found = written.find(replacement, written_begin + 1); found != std::string_view::npos;
       found = written.find(replacement, found + replacement.size())) {
    if (found > word_begin) buffers->word_list.push_back({word_begin, static_cast<uint32_t>(found), -1});
    word_begin = static_cast<uint32_t>(found);
  }
  if (written_end > word_begin) buffers->word_list.push_back({word_begin, written_end, -1});
}

std::string_view HuggingFaceTokenizer::IdToPiece(int32_t id) const {
  for (const AddedToken& token : config_.added_tokens) {
    if (token.id == id) return token.content;
  }
  return vocabulary_.Contains(id) ? std::string_view(vocabulary_.entry(id).piece) : std::string_view();
}

int32_t HuggingFaceTokenizer::PieceToId(std::string_view piece) const {
  for (const AddedToken& token : config_.added_tokens) {
    if (token.content == piece) return token.id;
  }
  return vocabulary_.PieceToId(piece);
}

std::string HuggingFaceTokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string text;
  const MetaspaceConfig& metaspace = config_.decoder_metaspace;
  bool first = true;
  for (int32_t id : ids) {
    if (skip_special_tokens && IsSpecial(id)) continue;
    std::string piece(IdToPiece(id));
    if (config_.decoder_is_metaspace) {
      for (size_t found = piece.find(metaspace.replacement); found != std::string::npos;
           found = piece.find(metaspace.replacement, found + 1)) {
        piece.replace(found, metaspace.replacement.size(), " ");
      }
      if (first && metaspace.prepend_scheme != PrependScheme::kNever && !piece.empty() && piece.front() == ' ') {
        piece.erase(0, 1);
      }
    }
    text += piece;
    first = false;
  }
  return text;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadHuggingFaceTokenizer(std::string_view json) {
  return CreateFromParsed(ParseHuggingFaceConfig(json), HuggingFaceTokenizer::Create);
}

StatusOr<std::unique_ptr<Tokenizer>> CreateHuggingFaceTokenizer(HuggingFaceConfig config) {
  return HuggingFaceTokenizer::Create(std::move(config));
}

}  // namespace stamen::tokenizer
