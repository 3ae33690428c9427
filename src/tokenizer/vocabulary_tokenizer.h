// What the BPE and WordPiece tokenizers share: pieces and special flags by id, piece → id,
// the post-processor's template around each text's content ids, added tokens appended as
// they match, and the checks on token ids when a tokenizer is built.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tokenizer/added_token_matcher.h"
#include "tokenizer/content_tokenizer.h"
#include "tokenizer/huggingface_config.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/scratch_buffers.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace stamen::tokenizer {

// Lets a piece map be searched with a string_view.
struct PieceHash {
  using is_transparent = void;
  size_t operator()(std::string_view piece) const { return std::hash<std::string_view>{}(piece); }
};
using PieceMap = std::unordered_map<std::string, int32_t, PieceHash, std::equal_to<>>;

// The whole of a file, or "" with `*status` set to the error (naming the file).
std::string ReadTokenizerFile(const std::filesystem::path& path, Status* status);

// Ids the tables are indexed by: one past the largest id of `vocabulary` and `added_tokens`,
// or an error when an added token's id is negative or the ids lie far beyond the number of
// pieces (a few holes are fine).
StatusOr<size_t> TokenTableSize(const std::vector<std::pair<std::string, int32_t>>& vocabulary,
                                const std::vector<AddedToken>& added_tokens);

// An error when a special token of `post_processor`'s templates is not an id below `size`.
Status CheckPostProcessorIds(const PostProcessor& post_processor, size_t size);

// `Derived` (which makes this class and ContentTokenizer<Derived> its friends) provides
//   void EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers*, Encoding*) const;
// the content ids of one text, before the post-processor (ContentTokenizer). `Config` has
// `added_tokens` and `post_processor`.
template <typename Derived, typename Config>
class VocabularyTokenizer : public ContentTokenizer<Derived> {
 public:
  size_t VocabularySize() const override { return pieces_.size(); }
  std::string_view IdToPiece(int32_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < pieces_.size() ? std::string_view(pieces_[static_cast<size_t>(id)])
                                                               : std::string_view();
  }
  int32_t PieceToId(std::string_view piece) const override {
    const auto found = ids_.find(piece);
    return found == ids_.end() ? -1 : found->second;
  }
  bool IsSpecial(int32_t id) const override {
    return id >= 0 && static_cast<size_t>(id) < special_.size() && special_[static_cast<size_t>(id)];
  }
  size_t SpecialTokenCount(bool pair) const override { return config_.post_processor.SpecialCount(pair); }

 protected:
  // Sizes `pieces_` and `special_` for the ids of `config` (see TokenTableSize).
  Status ResizeTables(const Config& config) {
    const StatusOr<size_t> size = TokenTableSize(config.vocabulary, config.added_tokens);
    if (!size.ok()) return size.status();
    pieces_.resize(size.value());
    special_.resize(size.value());
    return Status();
  }

  // Starts one text's content: clears `out`, replaces invalid UTF-8 in `*text` with U+FFFD (as
  // the Rust string reaching Hugging Face holds it; the origins kept for offsets) and splits it
  // at the added tokens matched before normalization into `buffers->segments`. Returns whether
  // `*text` was repaired (then it points into `buffers`), for FinishContent.
  bool StartContent(std::string_view* text, bool with_pieces, Scratch::Buffers* buffers, Encoding* out) const {
    out->Clear();
    const bool replaced =
        utf8::ReplaceInvalid(*text, &buffers->valid_text, with_pieces ? &buffers->valid_text_origins : nullptr);
    if (replaced) *text = buffers->valid_text;
    buffers->segments.clear();
    raw_matcher_.Split(*text, 0, static_cast<uint32_t>(text->size()), config_.added_tokens, &buffers->segments);
    return replaced;
  }

  // Ends one text's content: type ids 0, and offsets in repaired text mapped back to the input.
  static void FinishContent(bool replaced, bool with_pieces, const Scratch::Buffers& buffers, Encoding* out) {
    out->type_ids.assign(out->ids.size(), 0);
    if (replaced && with_pieces) {
      for (auto& [begin, end] : out->offsets) {
        begin = buffers.valid_text_origins[begin];
        end = buffers.valid_text_origins[end];
      }
    }
  }

  // One text's content, the part of EncodeContent that does not depend on the model: StartContent,
  // then each stretch of `text` between the added tokens matched before normalization handed to
  // `encode_stretch(text, segment)` and each of those tokens appended in its turn, then
  // FinishContent. `encode_stretch` may append to `buffers->segments` (EncodeNormalizedStretches)
  // as long as it takes back what it added: only the segments of the raw split are walked.
  template <typename EncodeStretch>
  void EncodeStretches(std::string_view text, bool with_pieces, Scratch::Buffers* buffers, Encoding* out,
                       EncodeStretch&& encode_stretch) const {
    const bool replaced = StartContent(&text, with_pieces, buffers, out);
    std::vector<TextSegment>& segments = buffers->segments;
    const size_t raw_segments = segments.size();
    for (size_t index = 0; index < raw_segments; ++index) {
      const TextSegment segment = segments[index];
      if (segment.added_token >= 0) {
        AppendAddedToken(segment.added_token, segment.begin, segment.end, with_pieces, out);
      } else {
        encode_stretch(text, segment);
      }
    }
    FinishContent(replaced, with_pieces, *buffers, out);
  }

  // One stretch after its normalization into `normalized` (of `size` bytes): the added tokens
  // matched in normalized text split it again, into the tail of `buffers->segments` (dropped
  // after); each stretch between them goes to `encode_normalized(begin, end)`, and each token is
  // appended at the input offsets `origins(begin, end)` gives for its normalized ones.
  template <typename EncodeNormalized, typename Origins>
  void EncodeNormalizedStretches(std::string_view normalized, uint32_t size, bool with_pieces,
                                 Scratch::Buffers* buffers, Encoding* out, EncodeNormalized&& encode_normalized,
                                 Origins&& origins) const {
    if (normalized_matcher_.empty()) {
      encode_normalized(0, size);
      return;
    }
    std::vector<TextSegment>& segments = buffers->segments;
    const size_t inner_begin = segments.size();
    normalized_matcher_.Split(normalized, 0, size, config_.added_tokens, &segments);
    for (size_t inner = inner_begin; inner < segments.size(); ++inner) {
      const TextSegment part = segments[inner];
      if (part.added_token < 0) {
        encode_normalized(part.begin, part.end);
      } else {
        const auto [begin, end] = origins(part.begin, part.end);
        AppendAddedToken(part.added_token, begin, end, with_pieces, out);
      }
    }
    segments.resize(inner_begin);
  }

  const PostProcessor& ContentPostProcessor() const { return config_.post_processor; }

  void AppendAddedToken(int32_t index, uint32_t begin, uint32_t end, bool with_pieces, Encoding* out) const {
    const AddedToken& token = config_.added_tokens[static_cast<size_t>(index)];
    out->ids.push_back(token.id);
    if (with_pieces) {
      out->pieces.push_back(token.content);
      out->offsets.emplace_back(begin, end);
    }
  }

  Config config_;
  std::vector<std::string> pieces_;  // by id; added tokens override the model's pieces
  std::vector<bool> special_;
  PieceMap ids_;  // piece → id, the added tokens' last (for PieceToId)
  AddedTokenMatcher raw_matcher_;         // tokens matched before normalization
  AddedTokenMatcher normalized_matcher_;  // tokens matched in normalized text

};

}  // namespace stamen::tokenizer
