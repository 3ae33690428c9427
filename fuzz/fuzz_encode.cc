// libFuzzer target: arbitrary text through the real XLM-R vocabulary, as a SentencePiece
// `.model` and as a `tokenizer.json`. The first input byte picks the encode options.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "fuzz/fuzz_checks.h"

namespace {

using stamen::tokenizer::Tokenizer;

// The models live in ../shared beside the repository (STAMEN_SHARED_DIR overrides it).
std::unique_ptr<Tokenizer> LoadOrDie(const char* file) {
  const char* shared = std::getenv("STAMEN_SHARED_DIR");
  const std::string path = std::string(shared != nullptr ? shared : STAMEN_SOURCE_DIR "/../shared") +
                           "/models/xlmr-trimmed-32k/" + file;
  auto loaded = Tokenizer::Load(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "fuzz_encode: cannot load %s: %s\n", path.c_str(), loaded.status().message().c_str());
    std::exit(1);
  }
  return std::move(*loaded);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<Tokenizer> sentencepiece = LoadOrDie("sentencepiece.bpe.model");
  static const std::unique_ptr<Tokenizer> huggingface = LoadOrDie("tokenizer.json");
  static stamen::tokenizer::Scratch scratch;  // reused, as servers do, to catch stale state
  static stamen::tokenizer::Encoding encoding;
  if (size == 0) return 0;
  const auto options = stamen::fuzz::OptionsFromByte(data[0]);
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  stamen::fuzz::EncodeAndCheck(*sentencepiece, text, options, /*strict=*/true, &scratch, &encoding);
  stamen::fuzz::EncodeAndCheck(*huggingface, text, options, /*strict=*/true, &scratch, &encoding);
  return 0;
}
