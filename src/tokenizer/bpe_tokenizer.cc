// BPE mode: added tokens split out of the raw text, NFC, the Split pattern's words, ByteLevel
// (optional prefix space and GPT-2 split), then merges by rank within each word, then the
// post-processor's template.
//
// Merging works on ids: a word starts as one symbol per byte (byte-level: the id of the byte's
// GPT-2 character, from a 256-entry table) or per character (with continuing_subword_prefix,
// end_of_word_suffix, byte_fallback and unk as Hugging Face's BPE::merge_word builds them), and
// the pair table maps (left id, right id) to (rank, merged id). Hugging Face pops the lowest
// (rank, position) from a heap of candidate pairs, skipping stale ones; that is the same as
// repeatedly merging the leftmost pair of lowest rank, which short words do with a scan over
// a compact array and long words (CJK runs are single words) with the heap.
#include "tokenizer/bpe_tokenizer.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cctype>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <unordered_map>

#include "tokenizer/added_token_matcher.h"
#include "tokenizer/bpe_config.h"
#include "tokenizer/bpe_text.h"
#include "tokenizer/create_from_parsed.h"
#include "tokenizer/huge_page_buffer.h"
#include "tokenizer/huggingface_normalizer.h"
#include "tokenizer/scratch_buffers.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocabulary_tokenizer.h"

namespace stamen::tokenizer {
namespace {

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the other 68 bytes for
// U+0100 onwards in byte order.
constexpr std::array<char32_t, 256> kByteCharacters = [] {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int byte = 0; byte < 256; ++byte) {
    const bool printable = (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || byte >= 174;
    table[static_cast<size_t>(byte)] = printable ? static_cast<char32_t>(byte) : next++;
  }
  return table;
}();

// The byte a GPT-2 character stands for, or -1.
int ByteOfCharacter(char32_t c) {
  if (c < 256) {
    const bool printable = (c >= 33 && c <= 126) || (c >= 161 && c <= 172) || c >= 174;
    if (printable) return static_cast<int>(c);
  }
  if (c >= 256 && c < 256 + 68) {
    for (int byte = 0; byte < 256; ++byte) {
      if (kByteCharacters[static_cast<size_t>(byte)] == c) return byte;
    }
  }
  return -1;
}

// The raw bytes a byte-level piece spells, or false when a character is not a GPT-2 byte.
bool PieceBytes(std::string_view piece, std::string* bytes) {
  bytes->clear();
  for (size_t position = 0; position < piece.size();) {
    const utf8::Decoded decoded = utf8::Decode(piece, position);
    const int byte = decoded.valid ? ByteOfCharacter(decoded.code_point) : -1;
    if (byte < 0) return false;
    bytes->push_back(static_cast<char>(byte));
    position += decoded.length;
  }
  return true;
}

// Hugging Face's Split with a String pattern over text[begin, end): the pieces between matches
// and the matches, the matches kept alone, merged into a neighbouring piece, or dropped. A
// match merges only into a piece that is not itself a match, as in Hugging Face.
void SplitLiteral(std::string_view text, uint32_t begin, uint32_t end, const LiteralSplit& split,
                  std::vector<Word>* words) {
  using Behavior = LiteralSplit::Behavior;
  const std::string_view pattern = split.pattern;
  const std::string_view range = text.substr(0, end);
  bool previous_match = false;
  auto add = [&](uint32_t piece_begin, uint32_t piece_end, bool is_match) {
    if (piece_end <= piece_begin) return;
    if (is_match && split.behavior == Behavior::kRemoved) {
    } else if (is_match && split.behavior == Behavior::kMergedWithPrevious && !previous_match && !words->empty()) {
      words->back().end = piece_end;
    } else if (!is_match && split.behavior == Behavior::kMergedWithNext && previous_match && !words->empty()) {
      words->back().end = piece_end;
    } else {
      words->push_back({piece_begin, piece_end, -1});
    }
    previous_match = is_match;
  };
  uint32_t position = begin;
  for (size_t found = range.find(pattern, begin); found != std::string_view::npos;
       found = range.find(pattern, position)) {
    const auto match_begin = static_cast<uint32_t>(found);
    add(position, match_begin, false);
    add(match_begin, match_begin + static_cast<uint32_t>(pattern.size()), true);
    position = match_begin + static_cast<uint32_t>(pattern.size());
  }
  add(position, end, false);
}

// Words shorter than this merge by scanning a compact array; longer ones use the heap.
constexpr size_t kShortWord = 48;

// Maps positions of the text a word lies in to offsets of the (repaired) input.
struct SourceMap {
  const OffsetMap* offsets;  // nullptr: positions are input offsets
  uint32_t size;             // of the text; position `size` maps to `end_origin`
  uint32_t end_origin;
  uint32_t Origin(uint32_t position) const {
    if (offsets == nullptr) return position;
    return position < size ? offsets->At(position) : end_origin;
  }
};

class BpeTokenizer final : public VocabularyTokenizer<BpeTokenizer, BpeConfig> {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(BpeConfig config);

  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;

  Stats GetStats() const override {
    return {VocabularySize(), merge_mask_ + 1, merge_buffer_.size(), merge_buffer_.kind(), config_.format};
  }

 private:
  friend VocabularyTokenizer;
  friend ContentTokenizer;

  struct MergeSlot {
    uint64_t key;  // left id << 32 | right id; kEmptyKey when free
    int32_t rank;
    int32_t new_id;
  };
  static constexpr uint64_t kEmptyKey = ~uint64_t{0};

  static uint64_t MergeKey(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  size_t MergeSlotOf(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> merge_shift_); }
  // The rank and result of merging (left, right); rank INT32_MAX when they do not merge.
  void FindMerge(int32_t left, int32_t right, int32_t* rank, int32_t* new_id) const {
    const uint64_t key = MergeKey(left, right);
    for (size_t slot = MergeSlotOf(key);; slot = (slot + 1) & merge_mask_) {
      const MergeSlot& entry = merge_slots_[slot];
      if (entry.key == key) {
        *rank = entry.rank;
        *new_id = entry.new_id;
        return;
      }
      if (entry.key == kEmptyKey) {
        *rank = INT32_MAX;
        return;
      }
    }
  }
  void AddMerge(int32_t left, int32_t right, int32_t rank, int32_t new_id) {
    const uint64_t key = MergeKey(left, right);
    for (size_t slot = MergeSlotOf(key);; slot = (slot + 1) & merge_mask_) {
      MergeSlot& entry = merge_slots_[slot];
      if (entry.key == key || entry.key == kEmptyKey) {  // a later duplicate wins, as in Hugging Face
        entry = {key, rank, new_id};
        return;
      }
    }
  }

  void EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers* buffers, Encoding* out) const;
  // Normalized text[begin, end) → words → tokens.
  void EncodeText(std::string_view text, uint32_t begin, uint32_t end, const SourceMap& map, bool with_pieces,
                  Scratch::Buffers* buffers, Encoding* out) const;
  // One pre-token: `word`'s bytes, of which the first `virtual_prefix` (0 or 1) are a space
  // that ByteLevel added; the others start at `source_begin` in the mapped text.
  void EncodeWord(std::string_view word, uint32_t virtual_prefix, uint32_t source_begin, const SourceMap& map,
                  bool with_pieces, Scratch::Buffers* buffers, Encoding* out) const;
  void InitialSymbols(std::string_view word, Scratch::Buffers* buffers) const;
  void MergeShort(Scratch::Buffers* buffers) const;
  void MergeLong(Scratch::Buffers* buffers) const;

  PieceMap model_ids_;       // the model's vocabulary alone
  PieceMap word_ids_;        // ignore_merges: whole words, as raw bytes when byte-level
  std::array<int32_t, 256> byte_ids_{};           // byte-level: id of each byte's character
  std::array<int32_t, 256> byte_fallback_ids_{};  // <0xXX> pieces, -1 when absent
  bool byte_symbols_ = false;  // byte-level with every byte in the vocabulary, no prefix/suffix
  int32_t unknown_id_ = -1;
  HugePageBuffer merge_buffer_;
  MergeSlot* merge_slots_ = nullptr;
  size_t merge_mask_ = 0;
  int merge_shift_ = 64;
};

StatusOr<std::unique_ptr<Tokenizer>> BpeTokenizer::Create(BpeConfig config) {
  auto tokenizer = std::make_unique<BpeTokenizer>();
  BpeTokenizer& t = *tokenizer;
  STAMEN_RETURN_IF_ERROR(t.ResizeTables(config));
  t.model_ids_.reserve(config.vocabulary.size());
  for (const auto& [piece, id] : config.vocabulary) {
    t.pieces_[static_cast<size_t>(id)] = piece;
    t.model_ids_[piece] = id;
  }
  if (config.unknown_token) {
    const auto found = t.model_ids_.find(*config.unknown_token);
    if (found != t.model_ids_.end()) t.unknown_id_ = found->second;
  }
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", byte);
    const auto found = t.model_ids_.find(std::string_view(name));
    t.byte_fallback_ids_[static_cast<size_t>(byte)] = found == t.model_ids_.end() ? -1 : found->second;
  }
  t.byte_symbols_ = config.byte_level && config.continuing_subword_prefix.empty() && config.end_of_word_suffix.empty();
  std::string character;
  for (int byte = 0; byte < 256 && config.byte_level; ++byte) {
    character.clear();
    utf8::Append(kByteCharacters[static_cast<size_t>(byte)], &character);
    const auto found = t.model_ids_.find(character);
    t.byte_ids_[static_cast<size_t>(byte)] = found == t.model_ids_.end() ? -1 : found->second;
    if (found == t.model_ids_.end()) t.byte_symbols_ = false;
  }
  if (config.ignore_merges) {
    std::string bytes;
    for (const auto& [piece, id] : t.model_ids_) {
      if (!config.byte_level) {
        t.word_ids_[piece] = id;
      } else if (PieceBytes(piece, &bytes)) {
        t.word_ids_[bytes] = id;
      }
    }
  }

  // The pair table: open addressing at most half full, on huge pages when it is large.
  size_t slots = 1024;
  while (slots < 2 * config.merges.size()) slots *= 2;
  t.merge_buffer_ = HugePageBuffer::Allocate(slots * sizeof(MergeSlot));
  if (t.merge_buffer_.data() == nullptr) return Status::Error("out of memory for the merge table");
  t.merge_slots_ = static_cast<MergeSlot*>(t.merge_buffer_.data());
  t.merge_mask_ = slots - 1;
  t.merge_shift_ = 64 - std::countr_zero(slots);
  for (size_t i = 0; i < slots; ++i) t.merge_slots_[i] = {kEmptyKey, INT32_MAX, -1};
  const size_t prefix_length = config.continuing_subword_prefix.size();
  std::string merged;
  for (size_t rank = 0; rank < config.merges.size(); ++rank) {
    const auto& [left, right] = config.merges[rank];
    const auto left_id = t.model_ids_.find(left);
    const auto right_id = t.model_ids_.find(right);
    if (left_id == t.model_ids_.end() || right_id == t.model_ids_.end() || right.size() < prefix_length) {
      return Status::Error("BPE merge " + std::to_string(rank) + " \"" + left + " " + right +
                           "\" uses a token that is not in the vocabulary");
    }
    merged = left;
    merged.append(right, prefix_length);
    const auto merged_id = t.model_ids_.find(merged);
    if (merged_id == t.model_ids_.end()) {
      return Status::Error("BPE merge " + std::to_string(rank) + " makes \"" + merged + "\", which is not in the vocabulary");
    }
    t.AddMerge(left_id->second, right_id->second, static_cast<int32_t>(rank), merged_id->second);
  }
  config.merges.clear();
  config.merges.shrink_to_fit();
  config.vocabulary.clear();
  config.vocabulary.shrink_to_fit();

  t.ids_ = t.model_ids_;
  std::string normalized;
  OffsetMap no_offsets;
  no_offsets.Reset(false);
  std::vector<char32_t> points;
  for (size_t index = 0; index < config.added_tokens.size(); ++index) {
    const AddedToken& token = config.added_tokens[index];
    t.pieces_[static_cast<size_t>(token.id)] = token.content;
    t.special_[static_cast<size_t>(token.id)] = token.special;
    t.ids_[token.content] = token.id;
    if (!token.normalized || (!config.nfc && config.normalizers.empty())) {
      (token.normalized ? t.normalized_matcher_ : t.raw_matcher_).Add(static_cast<int32_t>(index), token.content);
      continue;
    }
    normalized.clear();
    if (config.nfc) {
      bpe::AppendNfc(token.content, 0, &normalized, &no_offsets, &points);
    } else {
      OffsetMap work_offsets;
      std::string work;
      NormalizeHuggingFace(config.normalizers, token.content, 0, &normalized, &no_offsets, &work, &work_offsets);
    }
    if (!normalized.empty()) t.normalized_matcher_.Add(static_cast<int32_t>(index), normalized);
  }
  t.config_ = std::move(config);
  STAMEN_RETURN_IF_ERROR(CheckPostProcessorIds(t.config_.post_processor, t.pieces_.size()));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

void BpeTokenizer::EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers* buffers,
                                 Encoding* out) const {
  // Invalid bytes become U+FFFD; offsets are computed in that text and mapped back at the end.
  EncodeStretches(text, with_pieces, buffers, out, [&](std::string_view valid_text, const TextSegment& segment) {
    const std::string_view piece = valid_text.substr(segment.begin, segment.end - segment.begin);
    if ((!config_.nfc || bpe::IsNfcQuick(piece)) && config_.normalizers.empty() && normalized_matcher_.empty()) {
      EncodeText(valid_text, segment.begin, segment.end, SourceMap{nullptr, 0, 0}, with_pieces, buffers, out);
      return;
    }
    std::string& normalized = buffers->normalized;
    normalized.clear();
    buffers->offsets.Reset(with_pieces);
    if (config_.nfc) {
      bpe::AppendNfc(piece, segment.begin, &normalized, &buffers->offsets, &buffers->bpe_points);
    } else if (!config_.normalizers.empty()) {
      NormalizeHuggingFace(config_.normalizers, piece, segment.begin, &normalized, &buffers->offsets, &buffers->work,
                           &buffers->work_offsets);
    } else {
      normalized.assign(piece);
      buffers->offsets.AppendSequence(piece.size(), segment.begin);
    }
    const auto normalized_size = static_cast<uint32_t>(normalized.size());
    const SourceMap map{with_pieces ? &buffers->offsets : nullptr, normalized_size, segment.end};
    EncodeNormalizedStretches(
        normalized, normalized_size, with_pieces, buffers, out,
        [&](uint32_t begin, uint32_t end) { EncodeText(normalized, begin, end, map, with_pieces, buffers, out); },
        [&](uint32_t begin, uint32_t end) { return std::pair(map.Origin(begin), map.Origin(end)); });
  });
}

void BpeTokenizer::EncodeText(std::string_view text, uint32_t begin, uint32_t end, const SourceMap& map,
                              bool with_pieces, Scratch::Buffers* buffers, Encoding* out) const {
  std::vector<Word>& words = buffers->bpe_words;
  words.clear();
  if (config_.split) {
    bpe::SplitWords(text, begin, end, *config_.split, &words);
  } else if (config_.literal_split) {
    SplitLiteral(text, begin, end, *config_.literal_split, &words);
  } else if (end > begin) {
    words.push_back({begin, end, -1});
  }
  const bool prefix_space = config_.byte_level && config_.byte_level_add_prefix_space;
  const bool byte_level_split = config_.byte_level && config_.byte_level_use_regex;
  for (const Word& word : words) {
    const std::string_view piece = text.substr(word.begin, word.end - word.begin);
    if (!prefix_space && !byte_level_split) {
      EncodeWord(piece, 0, word.begin, map, with_pieces, buffers, out);
      continue;
    }
    // ByteLevel: a space before each split that lacks one, then the GPT-2 split within it.
    std::string_view source = text;
    uint32_t source_begin = word.begin;
    uint32_t virtual_prefix = 0;
    if (prefix_space && piece.front() != ' ') {
      buffers->words.assign(" ");
      buffers->words.append(piece);
      source = buffers->words;
      source_begin = 0;
      virtual_prefix = 1;
    }
    const auto source_end = static_cast<uint32_t>(source_begin + piece.size() + virtual_prefix);
    auto encode = [&](uint32_t sub_begin, uint32_t sub_end) {
      // Bytes of `source` → positions of `text`: shifted back by the added space.
      const uint32_t prefix = sub_begin < virtual_prefix ? 1 : 0;
      const uint32_t origin_begin = word.begin + (virtual_prefix != 0 ? sub_begin + prefix - 1 : sub_begin - source_begin);
      EncodeWord(source.substr(sub_begin, sub_end - sub_begin), prefix, origin_begin, map, with_pieces, buffers,
                 out);
    };
    if (!byte_level_split) {
      encode(source_begin, source_end);
      continue;
    }
    std::vector<Word>& inner = buffers->word_list;
    inner.clear();
    bpe::SplitWords(source, source_begin, source_end, bpe::SplitPattern::kGpt2, &inner);
    for (const Word& sub : inner) encode(sub.begin, sub.end);
  }
}

void BpeTokenizer::EncodeWord(std::string_view word, uint32_t virtual_prefix, uint32_t source_begin,
                              const SourceMap& map, bool with_pieces, Scratch::Buffers* buffers, Encoding* out) const {
  if (word.empty()) return;
  // Bytes [begin, end) of the word → offsets of the input.
  auto emit = [&](int32_t id, uint32_t begin, uint32_t end) {
    out->ids.push_back(id);
    if (!with_pieces) return;
    out->pieces.push_back(pieces_[static_cast<size_t>(id)]);
    const uint32_t from = source_begin + (begin > virtual_prefix ? begin - virtual_prefix : 0);
    const uint32_t to = source_begin + (end > virtual_prefix ? end - virtual_prefix : 0);
    out->offsets.emplace_back(map.Origin(from), map.Origin(to));
  };
  if (config_.ignore_merges) {
    const auto found = word_ids_.find(word);
    if (found != word_ids_.end()) {
      emit(found->second, 0, static_cast<uint32_t>(word.size()));
      return;
    }
  }
  InitialSymbols(word, buffers);
  if (buffers->bpe_ids.size() > 1) {
    if (buffers->bpe_ids.size() < kShortWord) {
      MergeShort(buffers);
    } else {
      MergeLong(buffers);
    }
  }
  uint32_t position = 0;
  for (size_t i = 0; i < buffers->bpe_ids.size(); ++i) {
    const uint32_t length = buffers->bpe_lengths[i];
    emit(buffers->bpe_ids[i], position, position + length);
    position += length;
  }
}

void BpeTokenizer::InitialSymbols(std::string_view word, Scratch::Buffers* buffers) const {
  std::vector<int32_t>& ids = buffers->bpe_ids;
  std::vector<uint32_t>& lengths = buffers->bpe_lengths;
  ids.clear();
  lengths.clear();
  const auto* bytes = reinterpret_cast<const unsigned char*>(word.data());
  if (byte_symbols_) {
    for (size_t i = 0; i < word.size(); ++i) ids.push_back(byte_ids_[bytes[i]]);
    lengths.assign(word.size(), 1);
    return;
  }
  // Hugging Face's merge_word: one symbol per character of the word as the model sees it.
  int32_t unknown_length = 0;  // a pending unknown symbol's bytes, 0 when none
  std::string& symbol = buffers->bpe_piece;
  for (size_t position = 0; position < word.size();) {
    uint32_t length = 1;
    symbol.clear();
    if (position > 0) symbol.append(config_.continuing_subword_prefix);
    if (config_.byte_level) {
      utf8::Append(kByteCharacters[bytes[position]], &symbol);
    } else {
      length = static_cast<uint32_t>(utf8::Decode(word, position).length);
      symbol.append(word, position, length);
    }
    position += length;
    if (position == word.size()) symbol.append(config_.end_of_word_suffix);
    const auto found = model_ids_.find(symbol);
    if (found != model_ids_.end()) {
      if (unknown_length > 0) {
        ids.push_back(unknown_id_);
        lengths.push_back(static_cast<uint32_t>(unknown_length));
        unknown_length = 0;
      }
      ids.push_back(found->second);
      lengths.push_back(length);
      continue;
    }
    if (config_.byte_fallback) {
      bool all = true;
      for (unsigned char byte : symbol) all = all && byte_fallback_ids_[byte] >= 0;
      if (all) {
        // The pieces carry the character's bytes: the first all of them, the others none.
        for (size_t i = 0; i < symbol.size(); ++i) {
          ids.push_back(byte_fallback_ids_[static_cast<unsigned char>(symbol[i])]);
          lengths.push_back(i == 0 ? length : 0);
        }
        continue;
      }
    }
    if (unknown_id_ < 0) continue;  // no unk_token: Hugging Face drops the character
    if (unknown_length > 0 && !config_.fuse_unknown) {
      ids.push_back(unknown_id_);
      lengths.push_back(static_cast<uint32_t>(unknown_length));
      unknown_length = 0;
    }
    unknown_length += static_cast<int32_t>(length);
  }
  if (unknown_length > 0) {
    ids.push_back(unknown_id_);
    lengths.push_back(static_cast<uint32_t>(unknown_length));
  }
}

void BpeTokenizer::MergeShort(Scratch::Buffers* buffers) const {
  std::vector<int32_t>& ids = buffers->bpe_ids;
  std::vector<uint32_t>& lengths = buffers->bpe_lengths;
  std::vector<int32_t>& ranks = buffers->bpe_ranks;
  std::vector<int32_t>& new_ids = buffers->bpe_new_ids;
  size_t count = ids.size();
  ranks.resize(count - 1);
  new_ids.resize(count - 1);
  for (size_t i = 0; i + 1 < count; ++i) FindMerge(ids[i], ids[i + 1], &ranks[i], &new_ids[i]);
  while (count > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < count; ++i) {
      if (ranks[i] < ranks[best]) best = i;
    }
    if (ranks[best] == INT32_MAX) break;
    ids[best] = new_ids[best];
    lengths[best] += lengths[best + 1];
    // Drop symbol best + 1 and the pair that started at it.
    const auto erase = [best](auto& values, size_t size) {
      std::copy(values.begin() + static_cast<std::ptrdiff_t>(best + 2), values.begin() + static_cast<std::ptrdiff_t>(size),
                values.begin() + static_cast<std::ptrdiff_t>(best + 1));
    };
    erase(ids, count);
    erase(lengths, count);
    if (best + 2 < count) {  // pairs exist after the dropped one
      erase(ranks, count - 1);
      erase(new_ids, count - 1);
    }
    --count;
    if (best > 0) FindMerge(ids[best - 1], ids[best], &ranks[best - 1], &new_ids[best - 1]);
    if (best + 1 < count) FindMerge(ids[best], ids[best + 1], &ranks[best], &new_ids[best]);
  }
  ids.resize(count);
  lengths.resize(count);
}

void BpeTokenizer::MergeLong(Scratch::Buffers* buffers) const {
  std::vector<int32_t>& ids = buffers->bpe_ids;
  std::vector<uint32_t>& lengths = buffers->bpe_lengths;
  std::vector<BpeSymbol>& symbols = buffers->bpe_symbols;
  std::vector<BpeCandidate>& heap = buffers->bpe_heap;
  const auto count = static_cast<int32_t>(ids.size());
  symbols.clear();
  heap.clear();
  for (int32_t i = 0; i < count; ++i) {
    symbols.push_back({ids[static_cast<size_t>(i)], lengths[static_cast<size_t>(i)], i - 1, i + 1 < count ? i + 1 : -1});
  }
  // A min-heap on (rank, position).
  auto later = [](const BpeCandidate& a, const BpeCandidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.position > b.position;
  };
  for (int32_t i = 0; i + 1 < count; ++i) {
    BpeCandidate candidate{0, i, 0};
    FindMerge(symbols[static_cast<size_t>(i)].id, symbols[static_cast<size_t>(i) + 1].id, &candidate.rank,
              &candidate.new_id);
    if (candidate.rank != INT32_MAX) heap.push_back(candidate);
  }
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const BpeCandidate top = heap.back();
    heap.pop_back();
    BpeSymbol& symbol = symbols[static_cast<size_t>(top.position)];
    if (symbol.length == 0 || symbol.next < 0) continue;
    const BpeSymbol right = symbols[static_cast<size_t>(symbol.next)];
    int32_t rank = 0, new_id = 0;
    FindMerge(symbol.id, right.id, &rank, &new_id);
    if (rank == INT32_MAX || new_id != top.new_id) continue;  // a stale candidate
    symbols[static_cast<size_t>(symbol.next)].length = 0;
    symbol.id = new_id;
    symbol.length += right.length;
    symbol.next = right.next;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].prev = top.position;
    if (symbol.prev >= 0) {
      BpeCandidate candidate{0, symbol.prev, 0};
      FindMerge(symbols[static_cast<size_t>(symbol.prev)].id, new_id, &candidate.rank, &candidate.new_id);
      if (candidate.rank != INT32_MAX) {
        heap.push_back(candidate);
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
    if (symbol.next >= 0) {
      BpeCandidate candidate{0, top.position, 0};
      FindMerge(new_id, symbols[static_cast<size_t>(symbol.next)].id, &candidate.rank, &candidate.new_id);
      if (candidate.rank != INT32_MAX) {
        heap.push_back(candidate);
        std::push_heap(heap.begin(), heap.end(), later);
      }
    }
  }
  ids.clear();
  lengths.clear();
  for (int32_t i = 0; i >= 0; i = symbols[static_cast<size_t>(i)].next) {
    ids.push_back(symbols[static_cast<size_t>(i)].id);
    lengths.push_back(symbols[static_cast<size_t>(i)].length);
  }
}

std::string BpeTokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string text;
  if (config_.decoder_byte_fallback || config_.decoder_fuse || !config_.decoder_replacements.empty()) {
    // Hugging Face's Replace, ByteFallback and Fuse decoders: a run of <0xXX> pieces becomes its
    // bytes when they are valid UTF-8, else one U+FFFD per byte; everything is concatenated.
    std::string bytes, piece;
    auto flush = [&] {
      if (bytes.empty()) return;
      std::string repaired;
      if (!utf8::ReplaceInvalid(bytes, &repaired)) {
        text += bytes;
      } else {
        for (size_t i = 0; i < bytes.size(); ++i) text += "\xEF\xBF\xBD";
      }
      bytes.clear();
    };
    for (int32_t id : ids) {
      if (id < 0 || static_cast<size_t>(id) >= pieces_.size() || (skip_special_tokens && IsSpecial(id))) continue;
      piece = pieces_[static_cast<size_t>(id)];
      for (const auto& [from, to] : config_.decoder_replacements) {
        for (size_t found = piece.find(from); found != std::string::npos; found = piece.find(from, found + to.size())) {
          piece.replace(found, from.size(), to);
        }
      }
      unsigned value = 0;
      if (config_.decoder_byte_fallback && piece.size() == 6 && piece.starts_with("<0x") && piece.back() == '>' &&
          std::isxdigit(static_cast<unsigned char>(piece[3])) && std::isxdigit(static_cast<unsigned char>(piece[4])) &&
          std::sscanf(piece.c_str() + 3, "%2x", &value) == 1) {
        bytes.push_back(static_cast<char>(value));
        continue;
      }
      flush();
      text += piece;
    }
    flush();
    return text;
  }
  bool first = true;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= pieces_.size() || (skip_special_tokens && IsSpecial(id))) continue;
    const std::string& piece = pieces_[static_cast<size_t>(id)];
    if (!config_.decoder_is_byte_level) {
      if (!first) text.push_back(' ');
      text += piece;
      first = false;
      continue;
    }
    // Hugging Face's ByteLevel decoder: a piece made of GPT-2 byte characters becomes those
    // bytes, any other piece stays as it is; the whole is then read as lossy UTF-8.
    const size_t before = text.size();
    bool all_bytes = true;
    for (size_t position = 0; position < piece.size();) {
      const utf8::Decoded decoded = utf8::Decode(piece, position);
      const int byte = decoded.valid ? ByteOfCharacter(decoded.code_point) : -1;
      if (byte < 0) {
        all_bytes = false;
        break;
      }
      text.push_back(static_cast<char>(byte));
      position += decoded.length;
    }
    if (!all_bytes) {
      text.resize(before);
      text += piece;
    }
    first = false;
  }
  if (!config_.decoder_is_byte_level) return text;
  std::string repaired;
  return utf8::ReplaceInvalid(text, &repaired) ? repaired : text;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadBpeTokenizer(std::string_view json) {
  return CreateFromParsed(ParseBpeJson(json), BpeTokenizer::Create);
}

StatusOr<std::unique_ptr<Tokenizer>> LoadBpeVocabulary(std::string_view vocab_json, std::string_view merges_txt,
                                                       std::string_view tokenizer_config_json) {
  return CreateFromParsed(ParseBpeVocabularyFiles(vocab_json, merges_txt, tokenizer_config_json), BpeTokenizer::Create);
}

StatusOr<std::unique_ptr<Tokenizer>> LoadBpeVocabularyFiles(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path directory = fs::is_directory(path, error) ? fs::path(path) : fs::path(path).parent_path();
  Status status;
  const std::string vocab = ReadTokenizerFile(directory / "vocab.json", &status);
  if (!status.ok()) return status;
  const std::string merges = ReadTokenizerFile(directory / "merges.txt", &status);
  if (!status.ok()) return status;
  std::string config;
  if (fs::exists(directory / "tokenizer_config.json", error)) {
    config = ReadTokenizerFile(directory / "tokenizer_config.json", &status);
    if (!status.ok()) return status;
  }
  auto tokenizer = LoadBpeVocabulary(vocab, merges, config);
  if (!tokenizer.ok()) return Status::Error((directory / "vocab.json").string() + ": " + tokenizer.status().message());
  return tokenizer;
}

}  // namespace stamen::tokenizer
