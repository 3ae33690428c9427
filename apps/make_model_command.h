// `stamen make-model`: writes a Hugging Face model folder with random weights shaped like a
// real model (config.json, model.safetensors, tokenizer files, sentence-transformers files),
// for benchmarks and the demo model.
#pragma once

#include <cstdint>
#include <string>

#include <CLI/CLI.hpp>

namespace stamen::apps {

struct MakeModelOptions {
  std::string like;       // xlm-roberta-base, all-MiniLM-L6-v2, qwen3-0.6b, bge-reranker-base
  uint64_t seed = 0;
  std::string out;        // the folder to write (created; files in it are replaced)
  std::string tokenizer;  // a tokenizer file or folder; empty: the default for `like`
  int64_t layers = 0;     // 0: the real model's; fewer for quick tests
  int64_t vocab_size = 0; // 0: the real model's
  int64_t labels = 0;     // classifiers: labels of the head (id2label LABEL_i); 0: the real model's one
};

// Writes the folder; returns 0, or prints the error and returns 2.
int MakeModel(const MakeModelOptions& options);

// Registers the subcommand on `app`; it runs when parsed.
void AddMakeModelCommand(CLI::App& app);

}  // namespace stamen::apps
