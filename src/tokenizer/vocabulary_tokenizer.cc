#include "tokenizer/vocabulary_tokenizer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace stamen::tokenizer {

std::string ReadTokenizerFile(const std::filesystem::path& path, Status* status) {
  std::ifstream stream(path, std::ios::binary);
  if (!stream) {
    *status = Status::Error(path.string() + ": cannot open file");
    return {};
  }
  std::ostringstream contents;
  contents << stream.rdbuf();
  if (stream.bad()) *status = Status::Error(path.string() + ": read error");
  return std::move(contents).str();
}

StatusOr<size_t> TokenTableSize(const std::vector<std::pair<std::string, int32_t>>& vocabulary,
                                const std::vector<AddedToken>& added_tokens) {
  size_t size = 0;
  for (const auto& [piece, id] : vocabulary) size = std::max(size, static_cast<size_t>(id) + 1);
  for (const AddedToken& token : added_tokens) {
    if (token.id < 0) return Status::Error("added token \"" + token.content + "\" has a negative id");
    size = std::max(size, static_cast<size_t>(token.id) + 1);
  }
  // Ids index tables: a few holes are fine, ids far beyond the number of pieces are not.
  if (size > 2 * (vocabulary.size() + added_tokens.size()) + 1024) {
    return Status::Error("token id " + std::to_string(size - 1) + " is far beyond the " +
                         std::to_string(vocabulary.size() + added_tokens.size()) + " tokens");
  }
  return size;
}

Status CheckPostProcessorIds(const PostProcessor& post_processor, size_t size) {
  for (const auto* items : {&post_processor.single, &post_processor.pair}) {
    for (const TemplateItem& item : *items) {
      for (int32_t id : item.special_ids) {
        if (id < 0 || static_cast<size_t>(id) >= size) {
          return Status::Error("post_processor special token id " + std::to_string(id) +
                               " is outside the vocabulary of " + std::to_string(size));
        }
      }
    }
  }
  return Status();
}

}  // namespace stamen::tokenizer
