#include "bench/serve_inputs.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace stamen::bench {
namespace {

// Used when no corpus file is found: plain English, repeated as needed.
constexpr const char* kBuiltInText =
    "A serving stack turns text into vectors for search, clustering and recommendation. Each request "
    "carries one or many inputs; the gateway splits them into tokens, the worker gathers the tokens of "
    "many requests into batches and runs the model, and the answers travel back in the order they were "
    "asked. Latency matters for a user waiting on a search box, throughput matters for the nightly job "
    "that embeds a million documents, and both matter when a service answers thousands of people at once. "
    "The numbers in this report come from the same machine, measured in the same run, so that their "
    "ratios say more than their absolute values on a computer shared with other work.";

}  // namespace

std::string DefaultCorpusPath() {
  namespace fs = std::filesystem;
  for (const fs::path& candidate : {fs::path(STAMEN_BENCH_CORPUS), fs::path("../shared/corpus/botchan.txt")}) {
    std::error_code error;
    if (fs::is_regular_file(candidate, error)) return candidate.string();
  }
  return "";
}

StatusOr<std::unique_ptr<InputMaker>> InputMaker::Load(const std::string& model_dir, const std::string& corpus_path) {
  auto maker = std::unique_ptr<InputMaker>(new InputMaker());
  auto config = engine::ReadModelConfig((std::filesystem::path(model_dir) / "config.json").string());
  if (!config.ok()) return config.status();
  maker->config_ = config.value();
  auto tokenizer = engine::ModelTokenizer::Load(model_dir, maker->config_);
  if (!tokenizer.ok()) return tokenizer.status();
  maker->tokenizer_ = std::move(tokenizer.value());
  std::string text = kBuiltInText;
  if (!corpus_path.empty()) {
    std::ifstream file(corpus_path, std::ios::binary);
    if (!file) return Status::Error("cannot read the corpus " + corpus_path);
    std::stringstream content;
    content << file.rdbuf();
    text = content.str();
  }
  std::istringstream words(text);
  for (std::string word; words >> word;) {
    // Plain words only: no control characters, nothing the JSON writers must escape heavily.
    bool ok = true;
    for (unsigned char c : word) ok = ok && c >= 0x20 && c != '"' && c != '\\';
    if (ok) maker->words_.push_back(word);
  }
  // A test model with a cut vocabulary (`stamen make-model --vocab-size 1000`) behind a full
  // tokenizer: keep the words whose ids all fit, so that every input is valid for it.
  const int64_t vocabulary = maker->config_.vocab_size;
  if (vocabulary > 0 && static_cast<int64_t>(maker->tokenizer_->VocabularySize()) > vocabulary) {
    std::vector<std::string> candidates = std::move(maker->words_);
    for (const char* mark : {"!", "\"", "#", "$", "%", "&", "'", "(", ")", "*", "+", ",", "-", ".", "/", ":", ";"}) {
      candidates.emplace_back(mark);
    }
    maker->words_.clear();
    std::vector<int32_t> ids;
    for (std::string& word : candidates) {
      maker->tokenizer_->Encode(word, 0, &ids);
      if (std::all_of(ids.begin(), ids.end(), [&](int32_t id) { return id >= 0 && id < vocabulary; })) {
        maker->words_.push_back(std::move(word));
      }
    }
    if (maker->words_.empty()) {
      return Status::Error("no word of the corpus has ids within the model's vocabulary of " +
                           std::to_string(vocabulary));
    }
  } else if (maker->words_.size() < 16) {
    return Status::Error("the corpus has too few words: " + corpus_path);
  }
  return maker;
}

std::string InputMaker::Words(size_t start, size_t count) const {
  std::string text;
  for (size_t i = 0; i < count; ++i) {
    if (i) text += ' ';
    text += words_[(start + i) % words_.size()];
  }
  return text;
}

size_t InputMaker::Count(const std::string& text) {
  tokenizer_->Encode(text, 0, &scratch_);
  return scratch_.size();
}

size_t InputMaker::CountPair(const std::string& query, const std::string& document) {
  tokenizer_->EncodePair(query, document, 0, &scratch_, &scratch_types_);
  return scratch_.size();
}

namespace {

// The longest word count whose text has at most `tokens` tokens (counts grow with words),
// then single-token filler words until exactly `tokens`; empty on failure.
template <typename CountFunction, typename TextFunction>
std::string ExactText(int64_t tokens, CountFunction count, TextFunction text_of) {
  size_t low = 0, high = 1;
  while (static_cast<int64_t>(count(text_of(high))) <= tokens) {
    low = high;
    high *= 2;
    if (high > (1u << 22)) return {};
  }
  while (high - low > 1) {
    const size_t middle = (low + high) / 2;
    if (static_cast<int64_t>(count(text_of(middle))) <= tokens) {
      low = middle;
    } else {
      high = middle;
    }
  }
  std::string text = text_of(low);
  for (const char* filler : {" a", " the", " and", " .", " ,", " of", " x"}) {
    for (int64_t guard = 0; guard < tokens; ++guard) {
      const int64_t have = static_cast<int64_t>(count(text));
      if (have == tokens) return text;
      const std::string longer = text + filler;
      if (static_cast<int64_t>(count(longer)) > tokens) break;
      text = longer;
    }
  }
  return static_cast<int64_t>(count(text)) == tokens ? text : std::string();
}

}  // namespace

StatusOr<std::string> InputMaker::Text(int64_t tokens, int variant) {
  const size_t start = static_cast<size_t>(variant) * 7919 % words_.size();
  std::string text = ExactText(
      tokens, [this](const std::string& t) { return Count(t); }, [&](size_t n) { return Words(start, n); });
  if (text.empty()) return Status::Error("cannot make a text of exactly " + std::to_string(tokens) + " tokens");
  return text;
}

StatusOr<std::vector<int32_t>> InputMaker::Ids(int64_t tokens, int variant) {
  auto text = Text(tokens, variant);
  if (!text.ok()) return text.status();
  std::vector<int32_t> ids;
  tokenizer_->Encode(*text, 0, &ids);
  return ids;
}

StatusOr<InputMaker::Pair> InputMaker::MakePair(int64_t tokens, int variant) {
  Pair pair;
  const size_t start = static_cast<size_t>(variant) * 7919 % words_.size();
  // One query for every pair, as in a reranking request; the documents differ by variant.
  pair.query = "what did the teacher say to the students about the school?";
  const int64_t vocabulary = config_.vocab_size;
  tokenizer_->Encode(pair.query, 0, &scratch_);
  if (vocabulary > 0 && std::any_of(scratch_.begin(), scratch_.end(), [&](int32_t id) { return id >= vocabulary; })) {
    pair.query = Words(0, 8);  // a cut vocabulary: words known to fit
  }
  const size_t document_start = start;
  pair.document = ExactText(
      tokens, [&](const std::string& document) { return CountPair(pair.query, document); },
      [&](size_t n) { return Words(document_start, n); });
  if (pair.document.empty()) {
    return Status::Error("cannot make a (query, document) pair of exactly " + std::to_string(tokens) + " tokens");
  }
  tokenizer_->EncodePair(pair.query, pair.document, 0, &pair.ids, &pair.type_ids);
  return pair;
}

StatusOr<std::unique_ptr<Reference>> Reference::Load(const std::string& model_dir) {
  auto engine = engine::Engine::Load(model_dir);
  if (!engine.ok()) return engine.status();
  auto reference = std::make_unique<Reference>();
  reference->engine_ = std::move(engine.value());
  return reference;
}

StatusOr<std::vector<float>> Reference::Embed(const std::vector<int32_t>& ids) {
  const std::vector<int32_t> offsets = {0, static_cast<int32_t>(ids.size())};
  engine::Batch batch{ids, offsets, {}};
  auto result = engine_->Step(batch, {});
  if (!result.ok()) return result.status();
  STAMEN_RETURN_IF_ERROR(result->Wait());
  const auto row = result->Row(0);
  return std::vector<float>(row.begin(), row.end());
}

StatusOr<std::vector<float>> Reference::Score(const std::vector<int32_t>& ids, const std::vector<int32_t>& type_ids) {
  const std::vector<int32_t> offsets = {0, static_cast<int32_t>(ids.size())};
  engine::Batch batch{ids, offsets, {}};
  if (engine_->config().type_vocab_size > 1) batch.token_type_ids = type_ids;
  engine::StepOptions options;
  options.output = engine::StepOutput::kScores;
  auto result = engine_->Step(batch, options);
  if (!result.ok()) return result.status();
  STAMEN_RETURN_IF_ERROR(result->Wait());
  const auto row = result->Row(0);
  return std::vector<float>(row.begin(), row.end());
}

double CosineDivergence(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return 1.0;
  double dot = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  if (aa == 0 || bb == 0) return 1.0;
  return 1.0 - dot / std::sqrt(aa * bb);
}

double ScoreDivergence(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size() || a.empty()) return 1.0;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(double{b[i]})));
  }
  return worst;
}

}  // namespace stamen::bench
