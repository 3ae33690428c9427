// The tokenizer of a model folder, mapped to the ids and special tokens the model was trained
// with, and the longest input the model takes. Bridges src/tokenizer (text → a file's ids)
// and the engine (ids → vectors):
//   - `tokenizer.json` is used as is (its post-processor gives the special tokens);
//   - an XLM-R / RoBERTa folder with only `sentencepiece.bpe.model` gets fairseq's ids
//     (spm 0 `<unk>` → 3, spm 1 `<s>` → 0, spm 2 `</s>` → 2, spm i ≥ 3 → i + 1) and the
//     `<s> A </s>` / `<s> A </s></s> B </s>` template, as transformers' XLMRobertaTokenizer;
//   - a DeBERTa-v2/v3 folder with only `spm.model` (+ tokenizer_config.json …) gets the
//     tokenizer transformers converts it into, spm ids as they are (deberta_v2_sentencepiece.h);
//   - otherwise the folder is handed to tokenizer::Tokenizer::Load (e.g. WordPiece `vocab.txt`);
//   - a static embedding model (model2vec, StaticEmbedding) uses its table's tokenizer.json
//     without special tokens, as its library does: model2vec's rules cut the text to
//     max_length · (median vocabulary piece length) code points, keep max_length tokens and
//     drop the unknown token; a text left with no token gets the empty bag id alone (the zero
//     row of the engine's table, see StaticEmbeddingConfig).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model_folder/model_config.h"
#include "common/status.h"
#include "model_folder/yes_no_reranker.h"
#include "tokenizer/tokenizer.h"

namespace stamen::engine {

// The most tokens (special tokens included) one sequence of `config` may have: the position
// table (max_position_embeddings, less RoBERTa's pad_token_id + 1 offset), capped by
// sentence-transformers' max_seq_length when the folder gives one. 0 when neither is known.
int64_t MaxSequenceLength(const ModelConfig& config, const SentenceTransformersConfig& sentence_transformers);

class ModelTokenizer {
 public:
  enum class Kind {
    kTokenizer,           // tokenizer.json or whatever Tokenizer::Load picks, ids as the file gives them
    kFairseqSentencePiece // sentencepiece.bpe.model with the fairseq id shift and XLM-R template
  };

  // Loads the tokenizer of `model_dir` for a model described by `config` (which picks the
  // fairseq mapping for RoBERTa-family folders without tokenizer.json). Errors name the file.
  static StatusOr<std::unique_ptr<ModelTokenizer>> Load(const std::string& model_dir, const ModelConfig& config);
  // Another ModelTokenizer over this one's loaded tokenizer, with scratch memory of its own:
  // one per thread without loading the files again. The tokenizer is read-only once loaded
  // (its encodes are const and keep their state in the caller's scratch), so the copies share
  // it safely; it lives as long as any of them.
  std::unique_ptr<ModelTokenizer> ShareWithNewScratch() const;

  // One text → ids with the model's special tokens, at most `max_length` ids (0: no limit):
  // the content is cut on `side`, the special tokens (the final one included) are kept.
  // Not thread-safe: one caller per ModelTokenizer (it reuses its scratch memory); give each
  // thread its own with ShareWithNewScratch.
  void Encode(std::string_view text, size_t max_length, std::vector<int32_t>* ids,
              tokenizer::TruncationSide side = tokenizer::TruncationSide::kRight);
  // One text → ids, pieces and byte offsets (special tokens, when added, have offsets [0, 0)
  // and `special` set), for the /tokenize route.
  struct Token {
    int32_t id;
    std::string piece;
    uint32_t begin, end;
    bool special;
  };
  std::vector<Token> Tokenize(std::string_view text, bool add_special_tokens);
  // A (first, second) pair with the pair template; truncation to `max_length` takes tokens
  // from the longer text first (transformers' "longest_first"). `type_ids` gets the segment
  // of each id (0 for the first text's part of the template, 1 for the second's).
  void EncodePair(std::string_view first, std::string_view second, size_t max_length, std::vector<int32_t>* ids,
                  std::vector<int32_t>* type_ids);

  // A yes/no reranker's pair as its model card builds it: the ids of each of the template's
  // parts (yes_no_reranker.h), formatted and encoded alone without special tokens, concatenated;
  // beyond `max_length` (0: no limit) only the query and document parts are cut (the rule in
  // yes_no_reranker.h), so the instruction-following end of the prompt is never cut off. When
  // the fixed parts alone reach the limit one variable token is kept. Tokenizer-file kind only.
  void EncodeYesNoPair(const YesNoTemplate& prompt, std::string_view query, std::string_view document,
                       size_t max_length, std::vector<int32_t>* ids);

  // Ids (as Encode gives them) → text, special tokens dropped when `skip_special_tokens`, as
  // Hugging Face tokenizers decodes: the tokenizer's own decode, or for the fairseq mapping
  // the pieces of the shifted ids as XLM-R's tokenizer.json decodes them. Out-of-range ids
  // are dropped.
  std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const;

  Kind kind() const { return kind_; }
  // The file or folder the tokenizer was loaded from.
  const std::string& source() const { return source_; }
  // The model's vocabulary as the mapped ids see it (fairseq adds <pad> and <mask>).
  size_t VocabularySize() const;
  const tokenizer::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  ModelTokenizer() = default;
  // spm id → fairseq id.
  static int32_t FairseqId(int32_t spm_id) { return spm_id == 0 ? 3 : spm_id < 3 ? (spm_id == 1 ? 0 : 2) : spm_id + 1; }
  void EncodeContent(std::string_view text, std::vector<int32_t>* ids);

  // Static embedding models' token rules (see the file comment); off for other models.
  struct StaticRules {
    bool enabled = false;
    int32_t unknown_id = -1;     // dropped from the ids (model2vec); -1: none is dropped
    bool cut_characters = false;  // texts are cut to character_limit code points first (model2vec)
    size_t character_limit = 0;
    size_t token_limit = 0;       // ids kept (model2vec's max_length, a tokenizer.json's truncation); 0: all
    int32_t empty_bag_id = -1;   // the ids of a text with no token left
  };
  static StatusOr<StaticRules> ReadStaticRules(const ModelConfig& config, const tokenizer::Tokenizer& tokenizer,
                                               const std::string& tokenizer_path);
  void EncodeStatic(std::string_view text, size_t max_length, std::vector<int32_t>* ids,
                    tokenizer::TruncationSide side);

  Kind kind_ = Kind::kTokenizer;
  StaticRules static_rules_;
  std::string source_;
  std::shared_ptr<const tokenizer::Tokenizer> tokenizer_;  // shared by ShareWithNewScratch copies
  tokenizer::Scratch scratch_;
  tokenizer::Encoding encoding_;
  std::vector<int32_t> first_, second_;
  // EncodeYesNoPair's template, its parts' kinds and its fixed parts' ids (encoded once per
  // template), and the variable parts' ids of the pair being encoded.
  std::vector<std::string> yes_no_parts_;
  std::string yes_no_instruction_;
  std::vector<YesNoPartKind> yes_no_kinds_;
  std::vector<std::vector<int32_t>> yes_no_ids_;
};

// Fairseq's layout of XLM-R special tokens.
inline constexpr int32_t kFairseqBos = 0;
inline constexpr int32_t kFairseqPad = 1;
inline constexpr int32_t kFairseqEos = 2;
inline constexpr int32_t kFairseqUnk = 3;

// How transformers' "longest_first" splits `budget` content tokens between a pair of lengths
// (first, second): the lengths each part is cut to.
std::pair<size_t, size_t> LongestFirstLengths(size_t first, size_t second, size_t budget);

}  // namespace stamen::engine
