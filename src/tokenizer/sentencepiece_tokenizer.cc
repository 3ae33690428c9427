// SentencePiece mode: SentencePiece's normalizer, then Viterbi with float path scores over
// the whole normalized text, then byte fallback for unknown pieces.
#include "tokenizer/sentencepiece_tokenizer.h"

#include <cfloat>
#include <charconv>
#include <optional>
#include <unordered_set>

#include "tokenizer/create_from_parsed.h"
#include "tokenizer/content_tokenizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/scratch_buffers.h"
#include "tokenizer/sentencepiece_normalizer.h"
#include "tokenizer/unigram_vocabulary.h"

namespace stamen::tokenizer {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";

// The byte a `<0xHH>` piece stands for, or -1 when the piece has another form.
int ByteOfPiece(std::string_view piece) {
  int value = -1;
  if (piece.size() != 6 || !piece.starts_with("<0x") || piece.back() != '>') return -1;
  const auto parsed = std::from_chars(piece.data() + 3, piece.data() + 5, value, 16);
  return parsed.ec == std::errc() && parsed.ptr == piece.data() + 5 ? value : -1;
}

class SentencePieceTokenizer final : public ContentTokenizer<SentencePieceTokenizer> {
 public:
  static StatusOr<std::unique_ptr<Tokenizer>> Create(SentencePieceModel model);

  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;

  size_t VocabularySize() const override { return model_.pieces.size(); }
  std::string_view IdToPiece(int32_t id) const override {
    return vocabulary_.Contains(id) ? std::string_view(vocabulary_.entry(id).piece) : std::string_view();
  }
  int32_t PieceToId(std::string_view piece) const override { return vocabulary_.PieceToId(piece); }
  bool IsSpecial(int32_t id) const override {
    return vocabulary_.Contains(id) && vocabulary_.entry(id).special;
  }
  size_t SpecialTokenCount(bool) const override { return 0; }
  Stats GetStats() const override {
    return {model_.pieces.size(), vocabulary_.trie().slot_count(), vocabulary_.trie().bytes(),
            vocabulary_.trie().page_kind(), "sentencepiece"};
  }

 private:
  friend ContentTokenizer;
  // A .model file has no post-processor: a text's content is all of its ids.
  const PostProcessor& ContentPostProcessor() const {
    static const PostProcessor kNone;
    return kNone;
  }
  void EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers* buffers,
                     Encoding* out) const {
    out->Clear();
    buffers->offsets.Reset(with_pieces);
    normalizer_->Normalize(text, &buffers->normalized, &buffers->offsets);
    buffers->pieces.clear();
    SegmentViterbi<float>(vocabulary_.trie(), buffers->normalized, 0,
                          static_cast<uint32_t>(buffers->normalized.size()), vocabulary_.unknown(),
                          buffers->float_cells, &buffers->pieces);
    vocabulary_.AppendPieces(buffers->normalized, buffers->offsets.data(), buffers->pieces, with_pieces, out);
    out->type_ids.assign(out->ids.size(), 0);
  }

  SentencePieceModel model_;
  UnigramVocabulary vocabulary_;
  PieceTrie user_defined_;
  std::optional<SentencePieceNormalizer> normalizer_;
};

StatusOr<std::unique_ptr<Tokenizer>> SentencePieceTokenizer::Create(SentencePieceModel model) {
  if (model.model_type != 1) {
    return Status::Error("SentencePiece model type " + std::to_string(model.model_type) +
                         " is not supported (only Unigram, type 1; BPE models need a tokenizer.json)");
  }
  // SentencePiece scores unknown characters below the lowest normal piece, and user-defined
  // pieces by length times the highest; both bounds count normal pieces only.
  float min_score = FLT_MAX;
  float max_score = FLT_MIN;
  int32_t unknown_id = -1;
  bool has_user_defined = false;
  std::unordered_set<std::string_view> seen;
  for (size_t id = 0; id < model.pieces.size(); ++id) {
    const SentencePiece& piece = model.pieces[id];
    if (piece.text.empty()) return Status::Error("piece " + std::to_string(id) + " is empty");
    if (!seen.insert(piece.text).second) {
      return Status::Error("piece \"" + piece.text + "\" is defined twice");
    }
    if (piece.type == PieceType::kNormal) {
      min_score = std::min(min_score, piece.score);
      max_score = std::max(max_score, piece.score);
    }
    if (piece.type == PieceType::kUnknown) unknown_id = static_cast<int32_t>(id);
    if (piece.type == PieceType::kUserDefined) has_user_defined = true;
    if (piece.type == PieceType::kByte) {
      if (!model.byte_fallback) return Status::Error("byte piece " + piece.text + " found although byte_fallback is off");
      if (ByteOfPiece(piece.text) < 0) return Status::Error("byte piece \"" + piece.text + "\" is not of the form <0xHH>");
    }
  }
  if (unknown_id < 0) return Status::Error("the model defines no unknown piece (<unk>)");
  if (min_score == FLT_MAX) min_score = 0;
  if (max_score == FLT_MIN) max_score = 0;

  std::vector<VocabularyEntry> entries;
  entries.reserve(model.pieces.size());
  std::vector<TrieEntry> user_defined_entries;
  for (const SentencePiece& piece : model.pieces) {
    VocabularyEntry entry{piece.text, piece.score, true, false};
    switch (piece.type) {
      case PieceType::kNormal:
        break;
      case PieceType::kUserDefined:
        // SentencePiece's bonus, computed as it does: float product, double subtraction.
        entry.score = static_cast<double>(static_cast<float>(piece.text.size()) * max_score) - 0.1;
        break;
      case PieceType::kControl:
        entry.special = true;
        entry.searchable = false;
        break;
      default:  // unknown, unused and byte pieces are never matched from text
        entry.searchable = false;
        break;
    }
    entries.push_back(std::move(entry));
  }

  auto tokenizer = std::make_unique<SentencePieceTokenizer>();
  auto vocabulary = UnigramVocabulary::Build(std::move(entries), unknown_id,
                                             static_cast<double>(min_score - 10.0f), model.byte_fallback);
  if (!vocabulary.ok()) return vocabulary.status();
  tokenizer->vocabulary_ = std::move(vocabulary.value());
  tokenizer->model_ = std::move(model);
  if (has_user_defined) {
    for (size_t id = 0; id < tokenizer->model_.pieces.size(); ++id) {
      const SentencePiece& piece = tokenizer->model_.pieces[id];
      if (piece.type == PieceType::kUserDefined) {
        user_defined_entries.push_back({piece.text, static_cast<int32_t>(id), 0});
      }
    }
    tokenizer->user_defined_ = PieceTrie::Build(std::move(user_defined_entries));
  }
  auto normalizer = SentencePieceNormalizer::Create(tokenizer->model_,
                                                    has_user_defined ? &tokenizer->user_defined_ : nullptr);
  if (!normalizer.ok()) return normalizer.status();
  tokenizer->normalizer_.emplace(std::move(normalizer.value()));
  return std::unique_ptr<Tokenizer>(std::move(tokenizer));
}

std::string SentencePieceTokenizer::Decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  std::string text;
  for (int32_t id : ids) {
    if (!vocabulary_.Contains(id)) continue;
    const SentencePiece& piece = model_.pieces[static_cast<size_t>(id)];
    switch (piece.type) {
      case PieceType::kControl:
        if (!skip_special_tokens) text += piece.text;
        break;
      case PieceType::kUnknown:
        text += model_.unk_surface;
        break;
      case PieceType::kByte:
        text.push_back(static_cast<char>(ByteOfPiece(piece.text)));
        break;
      default:
        for (size_t i = 0; i < piece.text.size();) {
          if (std::string_view(piece.text).substr(i, kSpaceSymbol.size()) == kSpaceSymbol) {
            text.push_back(' ');
            i += kSpaceSymbol.size();
          } else {
            text.push_back(piece.text[i++]);
          }
        }
    }
  }
  if (model_.add_dummy_prefix && !text.empty() && text.front() == ' ') text.erase(0, 1);
  return text;
}

}  // namespace

StatusOr<std::unique_ptr<Tokenizer>> LoadSentencePieceTokenizer(std::string_view model_bytes) {
  return CreateFromParsed(ParseSentencePieceModel(model_bytes), SentencePieceTokenizer::Create);
}

}  // namespace stamen::tokenizer
