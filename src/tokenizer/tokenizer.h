// Public interface of the stamen tokenizer library: load a SentencePiece `.model` or a
// Hugging Face `tokenizer.json` (Unigram) and turn text into token ids, exactly as the
// reference implementation of that file format does. Depends on nothing else in stamen but
// the header-only error type of src/common.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace stamen::tokenizer {

using ::stamen::Status;
using ::stamen::StatusOr;

enum class TruncationSide { kRight, kLeft };

struct EncodeOptions {
  // Add the special tokens of the file's post-processor (`<s> … </s>`); a `.model` has no
  // post-processor (SentencePiece's Encode adds none), so this changes nothing there.
  bool add_special_tokens = true;
  // Keep at most this many ids in total, special tokens included (0 = no limit). Special
  // tokens are always kept; content is cut on `truncation_side`. As in Hugging Face, a limit
  // smaller than the special tokens alone truncates nothing.
  size_t max_length = 0;
  TruncationSide truncation_side = TruncationSide::kRight;
  // Fill `Encoding::pieces` and `Encoding::offsets` (costs a little time).
  bool with_pieces = false;
};

// One encoded text (or pair). Owned by the caller and reused across calls: its vectors keep
// their capacity, so steady-state encoding allocates nothing.
struct Encoding {
  std::vector<int32_t> ids;
  std::vector<uint8_t> type_ids;  // 0 for the first text, 1 for the second of a pair
  std::vector<std::string> pieces;                     // only with `with_pieces`
  std::vector<std::pair<uint32_t, uint32_t>> offsets;  // [begin, end) bytes of the input
  void Clear();
};

// Caller-owned working memory for one thread's encodes (the Viterbi table, normalized bytes,
// offsets). Reusing one across calls makes steady-state encodes allocation-free.
class Scratch {
 public:
  Scratch();
  ~Scratch();
  Scratch(Scratch&&) noexcept;
  Scratch& operator=(Scratch&&) noexcept;
  struct Buffers;
  Buffers& buffers() { return *buffers_; }

 private:
  std::unique_ptr<Buffers> buffers_;
};

// Where the trie's node array lives, as reported by `Stats`.
enum class PageKind { kHugeTlb, kTransparentHuge, kNormal };
const char* PageKindName(PageKind kind);

struct Stats {
  size_t vocabulary_size = 0;
  size_t trie_nodes = 0;   // slots in the double array, used or not
  size_t trie_bytes = 0;
  PageKind trie_pages = PageKind::kNormal;
  std::string format;      // "sentencepiece" or "huggingface"
};

class Tokenizer {
 public:
  // Loads `path`: a SentencePiece `.model`, a `tokenizer.json`, or a directory holding one
  // of them (tokenizer.json preferred). DeBERTa's `spm.model` is read with the JSON files
  // beside it, as transformers converts it (deberta_v2_sentencepiece.h), not as a bare `.model`.
  // Errors name the file and what is wrong or unsupported.
  static StatusOr<std::unique_ptr<Tokenizer>> Load(const std::string& path);
  // Same, from bytes already in memory; `is_json` picks the format.
  static StatusOr<std::unique_ptr<Tokenizer>> LoadFromBytes(std::string_view bytes, bool is_json);

  virtual ~Tokenizer() = default;

  // Encodes one text into `out` (cleared first). Never fails on any input bytes: invalid
  // UTF-8 is handled as the reference does.
  virtual void Encode(std::string_view text, const EncodeOptions& options, Encoding* out,
                      Scratch* scratch) const = 0;
  // Encodes a (first, second) pair with the pair template, e.g. `<s> A </s></s> B </s>`;
  // truncation removes tokens from the longer text first.
  virtual void EncodePair(std::string_view first, std::string_view second,
                          const EncodeOptions& options, Encoding* out, Scratch* scratch) const = 0;
  // Encodes many texts on `threads` worker threads (0 = all cores); `outputs` is resized.
  void EncodeBatch(std::span<const std::string_view> texts, const EncodeOptions& options,
                   std::vector<Encoding>* outputs, unsigned threads = 0) const;

  // Text of `ids`; special and control tokens are dropped when `skip_special_tokens`.
  virtual std::string Decode(std::span<const int32_t> ids, bool skip_special_tokens) const = 0;

  virtual size_t VocabularySize() const = 0;
  virtual std::string_view IdToPiece(int32_t id) const = 0;  // "" when out of range
  virtual int32_t PieceToId(std::string_view piece) const = 0;  // -1 when absent
  virtual bool IsSpecial(int32_t id) const = 0;
  // Ids the post-processor adds around one text / a pair (for length budgeting).
  virtual size_t SpecialTokenCount(bool pair) const = 0;
  virtual Stats GetStats() const = 0;
};

}  // namespace stamen::tokenizer
