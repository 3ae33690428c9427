// Times encodes of a whole file as one text: warm-up, then N timed single-thread encodes,
// reporting p50/p99, token count, heap allocations per encode and the trie's page kind,
// beside SentencePiece's C++ library on the same input when asked (--peer sentencepiece).
#include "bench/tokenizer_benchmark.h"

#include <valgrind/callgrind.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench/allocation_counter.h"
#include "tokenizer/tokenizer.h"

#include <dlfcn.h>

namespace stamen::bench {
namespace {

struct TokenizerBenchmarkOptions {
  std::string model;
  std::string input;
  std::string peer;
  std::string peer_model;
  std::string subject = "stamen";
  int iterations = 1000;
  int warmup = 100;
  bool json = false;
};

struct Timing {
  double p50_us = 0;
  double p99_us = 0;
  // The same from the thread's CPU clock: without the time the thread spent descheduled,
  // which on a shared machine is most of the wall-clock tail.
  double cpu_p50_us = 0;
  double cpu_p99_us = 0;
  double allocations_per_encode = 0;
  size_t tokens = 0;
};

double Percentile(std::vector<double> values, double fraction) {
  std::sort(values.begin(), values.end());
  const size_t index = std::min(values.size() - 1, static_cast<size_t>(fraction * static_cast<double>(values.size())));
  return values[index];
}

// Runs `encode` warm-up times, then `iterations` timed times. With no warm-up the timed
// encodes are the only ones counted by callgrind (--instr-atstart=no).
Timing Measure(const std::function<size_t()>& encode, int warmup, int iterations) {
  Timing timing;
  for (int i = 0; i < warmup; ++i) timing.tokens = encode();
  std::vector<double> durations(static_cast<size_t>(iterations));
  std::vector<double> cpu_durations(static_cast<size_t>(iterations));
  auto cpu_now_us = [] {
    timespec now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
  };
  if (warmup == 0) CALLGRIND_START_INSTRUMENTATION;
  const uint64_t allocations_before = AllocationCount();
  for (int i = 0; i < iterations; ++i) {
    const double cpu_start = cpu_now_us();
    const auto start = std::chrono::steady_clock::now();
    timing.tokens = encode();
    durations[static_cast<size_t>(i)] =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    cpu_durations[static_cast<size_t>(i)] = cpu_now_us() - cpu_start;
  }
  const uint64_t allocations = AllocationCount() - allocations_before;
  if (warmup == 0) CALLGRIND_STOP_INSTRUMENTATION;
  timing.allocations_per_encode = static_cast<double>(allocations) / iterations;
  timing.p50_us = Percentile(durations, 0.50);
  timing.p99_us = Percentile(durations, 0.99);
  timing.cpu_p50_us = Percentile(cpu_durations, 0.50);
  timing.cpu_p99_us = Percentile(cpu_durations, 0.99);
  return timing;
}

std::string PeerModelPath(const TokenizerBenchmarkOptions& options) {
  if (!options.peer_model.empty()) return options.peer_model;
  namespace fs = std::filesystem;
  fs::path path = options.model;
  if (path.extension() == ".model") return path.string();
  const fs::path directory = fs::is_directory(path) ? path : path.parent_path();
  for (const char* name : {"sentencepiece.bpe.model", "spiece.model", "tokenizer.model"}) {
    if (fs::exists(directory / name)) return (directory / name).string();
  }
  return {};
}

// Returns a function encoding `text` with SentencePiece (loaded from its module), or an error.
std::optional<std::function<size_t()>> MakePeer(const std::string& model_path, const std::string& text,
                                                std::string* error) {
#ifdef STAMEN_SENTENCEPIECE_PEER
  // Beside the running binary first (an installed or copied build), else where it was built.
  std::string module = (std::filesystem::read_symlink("/proc/self/exe").parent_path() /
                        std::filesystem::path(STAMEN_SENTENCEPIECE_PEER).filename()).string();
  if (!std::filesystem::exists(module)) module = STAMEN_SENTENCEPIECE_PEER;
  void* library = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (library == nullptr) {
    *error = std::string("cannot load the SentencePiece peer module: ") + dlerror();
    return std::nullopt;
  }
  using Load = void* (*)(const char*, char*, size_t);
  using Encode = size_t (*)(void*, const char*, size_t);
  auto load = reinterpret_cast<Load>(dlsym(library, "stamen_sentencepiece_load"));
  auto encode = reinterpret_cast<Encode>(dlsym(library, "stamen_sentencepiece_encode"));
  if (load == nullptr || encode == nullptr) {
    *error = "the SentencePiece peer module lacks its entry points: " + module;
    return std::nullopt;
  }
  char message[512];
  void* peer = load(model_path.c_str(), message, sizeof(message));
  if (peer == nullptr) {
    *error = "sentencepiece cannot load " + model_path + ": " + message;
    return std::nullopt;
  }
  // Lives as long as the process (a benchmark run).
  return [encode, peer, &text] { return encode(peer, text.data(), text.size()); };
#else
  *error = "this build has no SentencePiece library (install libsentencepiece-dev and rebuild)";
  return std::nullopt;
#endif
}

int RunTokenizerBenchmark(const TokenizerBenchmarkOptions& options) {
  std::ifstream file(options.input, std::ios::binary);
  if (!file) {
    std::cerr << "stamen bench tokenizer: cannot open " << options.input << "\n";
    return 2;
  }
  std::ostringstream contents;
  contents << file.rdbuf();
  const std::string text = std::move(contents).str();
  if (options.iterations <= 0 || options.warmup < 0) {
    std::cerr << "stamen bench tokenizer: --iterations must be positive and --warmup not negative\n";
    return 2;
  }

  std::string error;
  std::optional<std::function<size_t()>> peer;
  const bool want_peer = options.peer == "sentencepiece" || options.subject == "sentencepiece";
  if (!options.peer.empty() && options.peer != "sentencepiece") {
    std::cerr << "stamen bench tokenizer: unknown peer \"" << options.peer << "\" (supported: sentencepiece)\n";
    return 2;
  }
  if (want_peer) {
    const std::string peer_model = PeerModelPath(options);
    if (peer_model.empty()) {
      std::cerr << "stamen bench tokenizer: no SentencePiece .model next to " << options.model
                << "; pass --peer-model\n";
      return 2;
    }
    peer = MakePeer(peer_model, text, &error);
    if (!peer) {
      std::cerr << "stamen bench tokenizer: " << error << "\n";
      return 2;
    }
  }
  if (options.subject == "sentencepiece") {
    const Timing timing = Measure(*peer, options.warmup, options.iterations);
    std::printf("sentencepiece: tokens %zu p50 %.2f us p99 %.2f us allocations/encode %.1f\n", timing.tokens,
                timing.p50_us, timing.p99_us, timing.allocations_per_encode);
    return 0;
  }

  auto loaded = tokenizer::Tokenizer::Load(options.model);
  if (!loaded.ok()) {
    std::cerr << "stamen bench tokenizer: " << loaded.status().message() << "\n";
    return 2;
  }
  const tokenizer::Tokenizer& tokenizer = **loaded;
  tokenizer::Scratch scratch;
  tokenizer::Encoding encoding;
  const tokenizer::EncodeOptions encode_options;
  const Timing timing = Measure(
      [&] {
        tokenizer.Encode(text, encode_options, &encoding, &scratch);
        return encoding.ids.size();
      },
      options.warmup, options.iterations);
  const tokenizer::Stats stats = tokenizer.GetStats();
  std::optional<Timing> peer_timing;
  if (peer) peer_timing = Measure(*peer, options.warmup, options.iterations);

  if (options.json) {
    std::printf("{\"tokens\": %zu, \"p50_us\": %.3f, \"p99_us\": %.3f, \"allocations_per_encode\": %.3f, "
                "\"huge_pages\": \"%s\", \"cpu_p50_us\": %.3f, \"cpu_p99_us\": %.3f, ",
                timing.tokens, timing.p50_us, timing.p99_us, timing.allocations_per_encode,
                tokenizer::PageKindName(stats.trie_pages), timing.cpu_p50_us, timing.cpu_p99_us);
    if (peer_timing) {
      std::printf("\"peer\": {\"name\": \"sentencepiece\", \"p50_us\": %.3f, \"p99_us\": %.3f, \"tokens\": %zu}, "
                  "\"ratio_p50\": %.4f}\n",
                  peer_timing->p50_us, peer_timing->p99_us, peer_timing->tokens, timing.p50_us / peer_timing->p50_us);
    } else {
      std::printf("\"peer\": null, \"ratio_p50\": null}\n");
    }
    return 0;
  }
  std::printf("input %s: %zu bytes, %d timed encodes after %d warm-up\n", options.input.c_str(), text.size(),
              options.iterations, options.warmup);
  std::printf("stamen         tokens %6zu  p50 %9.2f us  p99 %9.2f us  (thread CPU time: p50 %.2f us  p99 %.2f us)  "
              "allocations/encode %.1f  trie %zu slots, %.1f MB, %s pages\n",
              timing.tokens, timing.p50_us, timing.p99_us, timing.cpu_p50_us, timing.cpu_p99_us,
              timing.allocations_per_encode, stats.trie_nodes,
              static_cast<double>(stats.trie_bytes) / 1e6, tokenizer::PageKindName(stats.trie_pages));
  if (peer_timing) {
    std::printf("sentencepiece  tokens %6zu  p50 %9.2f us  p99 %9.2f us  allocations/encode %.1f\n", peer_timing->tokens,
                peer_timing->p50_us, peer_timing->p99_us, peer_timing->allocations_per_encode);
    std::printf("ratio p50 stamen/sentencepiece: %.3f\n", timing.p50_us / peer_timing->p50_us);
  }
  return 0;
}

struct BatchBenchmarkOptions {
  std::string model;
  std::string input;
  size_t lines = 10000;
  unsigned threads = 2;
  int repeats = 5;
};

// Times EncodeBatch over the first `lines` lines of a file with 1 thread and with `threads`
// threads (best of `repeats`), and prints the speed-up.
int RunBatchBenchmark(const BatchBenchmarkOptions& options) {
  std::ifstream file(options.input, std::ios::binary);
  if (!file) {
    std::cerr << "stamen bench tokenizer-batch: cannot open " << options.input << "\n";
    return 2;
  }
  std::vector<std::string> lines;
  for (std::string line; lines.size() < options.lines && std::getline(file, line);) lines.push_back(line);
  std::vector<std::string_view> texts(lines.begin(), lines.end());
  auto loaded = tokenizer::Tokenizer::Load(options.model);
  if (!loaded.ok()) {
    std::cerr << "stamen bench tokenizer-batch: " << loaded.status().message() << "\n";
    return 2;
  }
  std::vector<tokenizer::Encoding> outputs;
  auto best_seconds = [&](unsigned threads) {
    double best = 1e30;
    for (int i = 0; i < options.repeats; ++i) {
      const auto start = std::chrono::steady_clock::now();
      (*loaded)->EncodeBatch(texts, tokenizer::EncodeOptions(), &outputs, threads);
      best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    return best;
  };
  best_seconds(options.threads);  // warm-up: scratch buffers and page faults
  const double one = best_seconds(1);
  const double many = best_seconds(options.threads);
  size_t tokens = 0;
  for (const auto& output : outputs) tokens += output.ids.size();
  std::printf("%zu texts, %zu tokens: 1 thread %.1f ms (%.0f texts/s), %u threads %.1f ms (%.0f texts/s), "
              "speed-up %.2fx\n",
              texts.size(), tokens, one * 1e3, texts.size() / one, options.threads, many * 1e3,
              texts.size() / many, one / many);
  return 0;
}

}  // namespace

void AddTokenizerBatchBenchmark(CLI::App& bench) {
  auto options = std::make_shared<BatchBenchmarkOptions>();
  CLI::App* command = bench.add_subcommand("tokenizer-batch", "Parallel batch encoding speed-up over one thread");
  command->add_option("--model", options->model, "Tokenizer file or model directory")->required();
  command->add_option("--input", options->input, "File of texts, one per line")->required();
  command->add_option("--lines", options->lines, "Texts to encode (from the start of the file)");
  command->add_option("--threads", options->threads, "Threads to compare with one");
  command->add_option("--repeats", options->repeats, "Runs per setting; the fastest counts");
  command->callback([options] { std::exit(RunBatchBenchmark(*options)); });
}

void AddTokenizerBenchmark(CLI::App& bench) {
  auto options = std::make_shared<TokenizerBenchmarkOptions>();
  CLI::App* command = bench.add_subcommand("tokenizer", "Single-thread encode latency of one text");
  command->add_option("--model", options->model, "Tokenizer file or model directory")->required();
  command->add_option("--input", options->input, "File encoded as one text")->required();
  command->add_option("--iterations", options->iterations, "Timed encodes");
  command->add_option("--warmup", options->warmup, "Untimed encodes first; 0 enables callgrind instrumentation");
  command->add_option("--peer", options->peer, "Also time a peer in this process: sentencepiece");
  command->add_option("--peer-model", options->peer_model, "SentencePiece .model for the peer");
  command->add_option("--subject", options->subject, "Time only this engine: stamen (default) or sentencepiece");
  command->add_flag("--json", options->json, "Print one JSON object");
  command->callback([options] { std::exit(RunTokenizerBenchmark(*options)); });
}

}  // namespace stamen::bench
