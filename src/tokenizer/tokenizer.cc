// Format detection and loading, the batch encoder, and the small shared types of tokenizer.h.
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tokenizer/bpe_tokenizer.h"
#include "tokenizer/deberta_v2_sentencepiece.h"
#include "tokenizer/huggingface_tokenizer.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/scratch_buffers.h"
#include "tokenizer/sentencepiece_tokenizer.h"
#include "tokenizer/wordpiece_tokenizer.h"
#include "tokenizer/worker_pool.h"

namespace stamen::tokenizer {

void Encoding::Clear() {
  ids.clear();
  type_ids.clear();
  pieces.clear();
  offsets.clear();
}

Scratch::Scratch() : buffers_(std::make_unique<Buffers>()) {}
Scratch::~Scratch() = default;
Scratch::Scratch(Scratch&&) noexcept = default;
Scratch& Scratch::operator=(Scratch&&) noexcept = default;

const char* PageKindName(PageKind kind) {
  switch (kind) {
    case PageKind::kHugeTlb: return "hugetlb";
    case PageKind::kTransparentHuge: return "transparent";
    case PageKind::kNormal: return "normal";
  }
  return "normal";
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::LoadFromBytes(std::string_view bytes, bool is_json) {
  if (!is_json) return LoadSentencePieceTokenizer(bytes);
  // Any other model type (Unigram, or none) goes to the Unigram reader, whose errors say what
  // it cannot read.
  const std::string model_type = TokenizerJsonModelType(bytes);
  if (model_type == "WordPiece") return LoadWordPieceTokenizer(bytes);
  if (model_type == "BPE") return LoadBpeTokenizer(bytes);
  return LoadHuggingFaceTokenizer(bytes);
}

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path file = path;
  if (fs::is_directory(file, error)) {
    bool found = false;
    for (const char* name : {"tokenizer.json", "sentencepiece.bpe.model", "spiece.model", "tokenizer.model", "spm.model",
                             "vocab.json", "vocab.txt"}) {
      if (fs::exists(file / name, error)) {
        file /= name;
        found = true;
        break;
      }
    }
    if (!found) {
      return Status::Error(path + ": no tokenizer.json, sentencepiece.bpe.model, spiece.model, "
                                  "tokenizer.model, spm.model, vocab.json (with merges.txt) or vocab.txt in this directory");
    }
  }
  // DeBERTa-v2/v3's spm.model (the name only transformers' DebertaV2Tokenizer uses) is read as
  // transformers converts it, with the tokenizer_config.json beside it, not as a bare .model.
  if (file.filename() == "spm.model") return LoadDebertaV2SentencePieceFiles(file.string());
  // A BPE vocab.json with merges.txt beside it (either file may be named).
  if (file.filename() == "vocab.json" || file.filename() == "merges.txt") return LoadBpeVocabularyFiles(file.string());
  // A WordPiece vocab.txt, with the tokenizer_config.json beside it.
  if (file.extension() == ".txt") return LoadWordPieceVocabularyFile(file.string());
  std::ifstream stream(file, std::ios::binary);
  if (!stream) return Status::Error(file.string() + ": cannot open file");
  std::ostringstream contents;
  contents << stream.rdbuf();
  if (stream.bad()) return Status::Error(file.string() + ": read error");
  const std::string bytes = std::move(contents).str();
  // A JSON document starts with '{' (after optional whitespace); a ModelProto never does,
  // since its first byte is the key of field 1, 2 or 3.
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  const bool is_json = first != std::string::npos && bytes[first] == '{';
  auto tokenizer = LoadFromBytes(bytes, is_json);
  if (!tokenizer.ok()) return Status::Error(file.string() + ": " + tokenizer.status().message());
  return tokenizer;
}

void Tokenizer::EncodeBatch(std::span<const std::string_view> texts, const EncodeOptions& options,
                            std::vector<Encoding>* outputs, unsigned threads) const {
  outputs->resize(texts.size());
  if (texts.empty()) return;
  WorkerPool& pool = WorkerPool::Shared();
  if (threads == 0) threads = static_cast<unsigned>(pool.size() + 1);
  // Texts are claimed a small block at a time so long and short texts balance across threads.
  constexpr size_t kBlock = 16;
  const size_t helpers = std::min<size_t>(threads - 1, (texts.size() + kBlock - 1) / kBlock - 1);
  std::atomic<size_t> next{0};
  auto work = [&] {
    thread_local Scratch scratch;  // kept by each pool thread between batches
    for (size_t begin = next.fetch_add(kBlock); begin < texts.size(); begin = next.fetch_add(kBlock)) {
      const size_t end = std::min(texts.size(), begin + kBlock);
      for (size_t i = begin; i < end; ++i) Encode(texts[i], options, &(*outputs)[i], &scratch);
    }
  };
  pool.Run(helpers, work);
}

}  // namespace stamen::tokenizer
