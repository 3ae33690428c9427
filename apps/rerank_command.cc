// Implements `stamen rerank` for cross-encoders and classifiers (…ForSequenceClassification)
// and yes/no LLM rerankers (Qwen3-Reranker, mxbai-rerank-v2, bge-reranker-v2-gemma,
// model_folder/yes_no_reranker.h): each pair is encoded with the tokenizer's pair template,
// truncated longest-first to the model's maximum length (a yes/no reranker's: its template's
// parts around the instruction, query and document, only the query and document cut), or,
// with --token-ids, each line is the ids of one already templated input (token types all 0, as
// transformers assumes for input_ids alone), packed into ragged batches and scored by
// Engine::Step. A line prints the raw score of a one-label head (a cross-encoder's logit, a
// yes/no reranker's logit_yes − logit_no or logit_yes alone, whose sigmoid is the normalized
// score), or the JSON array of all logits of a head with several labels.
#include "rerank_command.h"

#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "command_io.h"
#include "device_option.h"
#include "engine/engine.h"
#include "model_folder/model_tokenizer.h"
#include "hub/resolve_model.h"

namespace stamen::apps {
namespace {

struct RerankOptions {
  std::string model;
  bool offline = false;
  bool token_ids = false;
  std::string device = "cpu";
  std::string dtype;
  int threads = 0;
  size_t batch_lines = 32;
  size_t batch_tokens = 8192;
  std::string yes_no_reranker = "auto";
  std::string instruction;
};

int Fail(const std::string& message) {
  std::cerr << "stamen rerank: " << message << "\n";
  return 2;
}

int RunRerank(RerankOptions options) {
  engine::EngineOptions engine_options{.num_threads = options.threads};
  if (std::string error = ApplyDeviceOption(options.device, &engine_options); !error.empty()) return Fail(error);
  if (std::string error = ApplyDtypeOption(options.dtype, &engine_options); !error.empty()) return Fail(error);
  if (options.batch_lines == 0 || options.batch_tokens == 0) return Fail("--batch-lines and --batch-tokens must be positive");
  bool known = false;
  engine_options.yes_no_reranker = engine::ParseYesNoRerankerOption(options.yes_no_reranker, &known);
  if (!known) return Fail("unknown --yes-no-reranker '" + options.yes_no_reranker + "' (auto, on, off)");
  // A folder, or a hub id resolved through the Hugging Face cache (pulled when missing).
  auto model_dir = hub::ResolveModel(options.model, {.offline = options.offline});
  if (!model_dir.ok()) return Fail(model_dir.status().message());
  options.model = *model_dir;
  auto loaded = engine::Engine::Load(options.model, engine_options);
  if (!loaded.ok()) return Fail(loaded.status().message());
  engine::Engine& engine = **loaded;
  const engine::ModelConfig& config = engine.config();
  if (config.head != engine::ModelHead::kSequenceClassification) {
    return Fail(options.model + ": " + config.architecture +
                " is not a cross-encoder (rerank needs a …ForSequenceClassification model)");
  }
  const bool several_labels = config.num_labels > 1;
  std::unique_ptr<engine::ModelTokenizer> tokenizer;
  if (!options.token_ids) {
    auto model_tokenizer = engine::ModelTokenizer::Load(options.model, config);
    if (!model_tokenizer.ok()) return Fail(model_tokenizer.status().message());
    tokenizer = std::move(model_tokenizer.value());
  }
  const bool yes_no = config.yes_no_reranker();
  if (!yes_no && !options.instruction.empty()) return Fail("--instruction applies to yes/no rerankers only");
  if (options.token_ids && !options.instruction.empty()) return Fail("--instruction applies to texts, not to --token-ids input");
  engine::YesNoTemplate prompt;
  if (yes_no) {
    auto read = engine::ReadYesNoTemplate(options.model, config, options.instruction);
    if (!read.ok()) return Fail(read.status().message());
    prompt = std::move(read.value());
  }
  const size_t max_length = static_cast<size_t>(engine::MaxSequenceLength(config, engine.sentence_transformers()));
  const int64_t max_ids = engine::MaxSequenceLength(config, {});
  const bool with_types = config.type_vocab_size > 0;

  engine::StepOptions step;
  step.output = engine::StepOutput::kScores;
  LineReader reader;
  PackedBatch batch;
  size_t first_line = 1;
  std::string line, output, bad;
  std::vector<int32_t> ids, types;
  auto flush = [&] {
    return RunBatch(engine, step, "stamen rerank", batch, first_line, output,
                    [several_labels](const engine::LazyResult& result, int64_t sequence, std::string& out) {
                      const std::span<const float> logits = result.Row(sequence);
                      if (several_labels) {
                        AppendJsonArray(logits, &out);
                      } else {
                        AppendJsonFloat(logits[0], &out);
                      }
                      out.push_back('\n');
                    });
  };

  while (reader.Next(&line)) {
    if (options.token_ids) {
      const std::string where = "line " + std::to_string(reader.number()) + ": ";
      if (!ParseTokenIds(line, &ids, &bad)) return Fail(where + "'" + bad + "' is not a token id");
      if (std::string problem = CheckTokenIds(ids, config.vocab_size, max_ids); !problem.empty()) {
        return Fail(where + problem);
      }
      if (ids.empty()) return Fail(where + "no token ids");
      if (const int rc = AddToBatch(batch, ids, {}, options.batch_tokens, options.batch_lines, flush); rc != 0) {
        return rc;
      }
      continue;
    }
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      return Fail("line " + std::to_string(reader.number()) + " has no tab: lines must be query<TAB>document");
    }
    const std::string_view view(line);
    if (yes_no) {
      tokenizer->EncodeYesNoPair(prompt, view.substr(0, tab), view.substr(tab + 1), max_length, &ids);
      types.clear();
    } else {
      tokenizer->EncodePair(view.substr(0, tab), view.substr(tab + 1), max_length, &ids, &types);
    }
    const auto type_ids = with_types && !types.empty() ? std::span<const int32_t>(types) : std::span<const int32_t>();
    if (const int rc = AddToBatch(batch, ids, type_ids, options.batch_tokens, options.batch_lines, flush); rc != 0) {
      return rc;
    }
  }
  return flush();
}

}  // namespace

void AddRerankCommand(CLI::App& app) {
  auto options = std::make_shared<RerankOptions>();
  CLI::App* command = app.add_subcommand(
      "rerank",
      "Score stdin's query<TAB>document lines with a cross-encoder or a yes/no LLM reranker, one raw score per line "
      "(the logit; for a yes/no reranker logit_yes - logit_no, whose sigmoid is P(yes); a JSON array of the logits "
      "per line for a classifier with several labels)");
  command->add_option("--model", options->model,
                      "Hugging Face cross-encoder or yes/no reranker folder, or hub id org/name (from the hub cache, "
                      "pulled when missing)")
      ->required();
  command->add_flag("--offline", options->offline, "Never touch the network: org/name must be in the hub cache");
  command->add_flag("--token-ids", options->token_ids,
                    "Lines are space-separated token ids of one templated input each (special tokens included), "
                    "used as they are");
  command->add_option("--device", options->device, "Where to run: cpu, cuda or cuda:N (bf16 on the GPU)");
  command->add_option("--dtype", options->dtype, kDtypeHelp);
  command->add_option("--threads", options->threads, "CPU threads (0 = all cores)");
  command->add_option("--batch-lines", options->batch_lines, "Most pairs per engine step");
  command->add_option("--batch-tokens", options->batch_tokens, "Most tokens per engine step (a longer pair runs alone)");
  command->add_option("--yes-no-reranker", options->yes_no_reranker,
                      "Run a *ForCausalLM folder as a yes/no reranker: auto (a causal LM without sentence-transformers "
                      "modules.json), on or off");
  command->add_option("--instruction", options->instruction,
                      "A yes/no reranker's instruction (default: the model folder's yes_no_reranker.json, else its "
                      "preset's, e.g. Qwen3-Reranker's web-search instruction)");
  command->callback([options] { std::exit(RunRerank(*options)); });
}

}  // namespace stamen::apps
