// Implements `stamen embed` with the defaults of Text Embeddings Inference: pooling from the
// folder's sentence-transformers Pooling module (else --pooling is required), vectors
// L2-normalised unless --no-normalize, texts truncated to the model's maximum length keeping
// the final special token, prompts only when --prompt-name names one (or --task, for a model with
// task adapters: jina-embeddings-v3, its task_instructions prompt and its LoRA). Lines are packed into
// ragged batches (up to --batch-lines lines and --batch-tokens tokens) for Engine::Step, and
// each batch's vectors are printed, in input order, as soon as it is done.
//
// What a line prints (automated checks read these exactly):
//   pooled embeddings             [f,f,…]
//   --pooling none                [[f,…],[f,…],…]: the last hidden state, one array per token
//                                 (special tokens included), needs --no-normalize
//   --pooling splade (or a SPLADE model's default)
//                                 {"id":f,…}: the non-zero entries of the sparse vector, keyed
//                                 by vocabulary id, in id order
#include "embed_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command_io.h"
#include "device_option.h"
#include "engine/engine.h"
#include "engine/finish_rows.h"
#include "model_folder/model_options.h"
#include "model_folder/model_tokenizer.h"
#include "hub/resolve_model.h"

namespace stamen::apps {
namespace {

struct EmbedOptions {
  std::string model;
  bool offline = false;
  std::string pooling;
  bool no_normalize = false;
  int64_t dimensions = 0;
  std::string prompt_name;
  std::string task;
  bool token_ids = false;
  std::string device = "cpu";
  std::string dtype;
  int threads = 0;
  size_t batch_lines = 32;
  size_t batch_tokens = 8192;
};

int Fail(const std::string& message) {
  std::cerr << "stamen embed: " << message << "\n";
  return 2;
}

int RunEmbed(EmbedOptions options) {
  engine::EngineOptions engine_options{.num_threads = options.threads};
  if (std::string error = ApplyDeviceOption(options.device, &engine_options); !error.empty()) return Fail(error);
  if (std::string error = ApplyDtypeOption(options.dtype, &engine_options); !error.empty()) return Fail(error);
  if (options.batch_lines == 0 || options.batch_tokens == 0) return Fail("--batch-lines and --batch-tokens must be positive");
  // A folder, or a hub id resolved through the Hugging Face cache (pulled when missing).
  auto model_dir = hub::ResolveModel(options.model, {.offline = options.offline});
  if (!model_dir.ok()) return Fail(model_dir.status().message());
  options.model = *model_dir;
  auto loaded = engine::Engine::Load(options.model, engine_options);
  if (!loaded.ok()) return Fail(loaded.status().message());
  engine::Engine& engine = **loaded;

  engine::StepOptions step;
  step.output = engine::StepOutput::kEmbeddings;
  const bool per_token = options.pooling == "none";
  if (per_token) {
    step.output = engine::StepOutput::kTokenEmbeddings;
    if (!options.no_normalize) {
      return Fail("--pooling none prints the raw last hidden state, which is not normalised: add --no-normalize");
    }
    if (options.dimensions != 0) return Fail("--dimensions applies to pooled embeddings, not to --pooling none");
  } else if (!options.pooling.empty()) {
    step.pooling = engine::ParsePoolingOption(options.pooling);
    if (!step.pooling) {
      return Fail("unknown --pooling '" + options.pooling + "' (supported: " + engine::PoolingOptionNames() + ", none)");
    }
  } else if (!engine.default_pooling().has_value()) {
    return Fail(options.model + " has no sentence-transformers pooling config (1_Pooling/config.json): "
                "choose one with --pooling (" + engine::PoolingOptionNames() + ", none)");
  }
  // The pooling the steps will use decides the output's form: splade vectors print sparse.
  const std::optional<engine::ops::PoolingMode> pooling = step.pooling ? step.pooling : engine.default_pooling();
  const bool sparse = !per_token && pooling == engine::ops::PoolingMode::kSplade;
  if (pooling) {
    if (const Status fits = engine::CheckPoolingFitsModel(engine.config(), *pooling); !fits.ok()) {
      return Fail(options.model + ": " + fits.message());
    }
  }
  if (sparse && options.dimensions != 0) return Fail("--dimensions cannot truncate splade (sparse) vectors");
  if (options.dimensions != 0) {
    if (options.dimensions < 0 || options.dimensions > engine.embedding_width()) {
      return Fail("--dimensions " + std::to_string(options.dimensions) + " is outside 1.." +
                  std::to_string(engine.embedding_width()) + " (the model's embedding width)");
    }
  }
  // The step's rows are whole and raw; they are cut and normalised as the worker does it
  // (FinishRows). SPLADE vectors are never normalised, as TEI's /embed_sparse gives them.
  const bool normalize = !options.no_normalize && !sparse;
  std::vector<float> finished;

  const engine::SentenceTransformersConfig& st = engine.sentence_transformers();
  std::string prompt;
  if (!options.prompt_name.empty()) {
    if (options.token_ids) return Fail("--prompt-name applies to texts, not to --token-ids input");
    const std::string* found = engine::FindPrompt(st, options.prompt_name);
    if (!found) {
      return Fail("prompt '" + options.prompt_name + "' is not in " + options.model +
                  "/config_sentence_transformers.json (prompts: " + engine::PromptNames(st) + ")");
    }
    prompt = *found;
    if (!prompt.empty() && !st.include_prompt) {
      return Fail(options.model + ": the Pooling module excludes prompt tokens (include_prompt false), "
                  "which is not supported");
    }
  }

  // A task adapter (jina-embeddings-v3): its LoRA on every line, and its prompt (the config's
  // task_instructions) before every text, as the model's encode(task=…) prepends it.
  int32_t adapter = -1;
  if (!options.task.empty()) {
    adapter = engine::AdapterIndex(engine.config(), options.task);
    if (adapter < 0) {
      return Fail("--task '" + options.task + "' is not one of " + options.model + "'s task adapters (" +
                  engine::AdapterTaskList(engine.config()) + ")");
    }
    if (!options.prompt_name.empty()) return Fail("--task brings its own prompt: leave --prompt-name out");
    if (!options.token_ids) prompt = engine.config().adapter_prompts[adapter];
    if (!prompt.empty() && !st.include_prompt) {
      return Fail(options.model + ": the Pooling module excludes prompt tokens (include_prompt false), "
                  "which is not supported");
    }
  }

  std::unique_ptr<engine::ModelTokenizer> tokenizer;
  if (!options.token_ids) {
    auto model_tokenizer = engine::ModelTokenizer::Load(options.model, engine.config());
    if (!model_tokenizer.ok()) return Fail(model_tokenizer.status().message());
    tokenizer = std::move(model_tokenizer.value());
  }
  // Texts are cut to sentence-transformers' max_seq_length as well; token ids only have to fit
  // the position table.
  const int64_t max_length = engine::MaxSequenceLength(engine.config(), st);
  const int64_t max_ids = engine::MaxSequenceLength(engine.config(), {});
  const int64_t vocabulary = engine.config().vocab_size;

  LineReader reader;
  PackedBatch batch;
  size_t first_line = 1;  // line number of the batch's first sequence
  std::string line, text, output, bad;
  std::vector<int32_t> ids;
  auto print = [&](const engine::LazyResult& result, int64_t sequence, std::string& out) {
    if (per_token) {
      const engine::Tensor rows = result.SequenceRows(sequence);
      const int64_t width = rows.dim(1);
      out.push_back('[');
      for (int64_t t = 0; t < rows.dim(0); ++t) {
        if (t > 0) out.push_back(',');
        AppendJsonArray({rows.data<float>() + t * width, static_cast<size_t>(width)}, &out);
      }
      out.append("]\n");
    } else if (sparse) {
      const std::span<const float> row = result.Row(sequence);
      out.push_back('{');
      bool first = true;
      for (size_t id = 0; id < row.size(); ++id) {
        if (row[id] == 0.0f) continue;
        out.append(first ? "\"" : ",\"").append(std::to_string(id)).append("\":");
        AppendJsonFloat(row[id], &out);
        first = false;
      }
      out.append("}\n");
    } else {
      const int64_t width = static_cast<int64_t>(result.Row(sequence).size());
      finished.resize(static_cast<size_t>(options.dimensions > 0 ? options.dimensions : width));
      // --dimensions is at most the embedding width (checked above), so the rows always give it.
      const engine::Status status =
          engine::FinishRows(result, sequence, 1, static_cast<int64_t>(finished.size()), normalize, finished.data());
      if (!status.ok()) std::cerr << "stamen embed: " << status.message() << "\n";
      AppendJsonArray(finished, &out);
      out.push_back('\n');
    }
  };
  auto flush = [&] { return RunBatch(engine, step, "stamen embed", batch, first_line, output, print); };

  while (reader.Next(&line)) {
    const std::string where = "line " + std::to_string(reader.number()) + ": ";
    if (options.token_ids) {
      if (!ParseTokenIds(line, &ids, &bad)) return Fail(where + "'" + bad + "' is not a token id");
      if (std::string problem = CheckTokenIds(ids, vocabulary, max_ids); !problem.empty()) return Fail(where + problem);
    } else {
      if (prompt.empty()) {
        tokenizer->Encode(line, static_cast<size_t>(max_length), &ids);
      } else {
        text.assign(prompt).append(line);
        tokenizer->Encode(text, static_cast<size_t>(max_length), &ids);
      }
    }
    if (ids.empty()) return Fail(where + "no tokens to embed");
    if (const int rc = AddToBatch(batch, ids, {}, options.batch_tokens, options.batch_lines, flush, adapter); rc != 0) {
      return rc;
    }
  }
  return flush();
}

}  // namespace

void AddEmbedCommand(CLI::App& app) {
  auto options = std::make_shared<EmbedOptions>();
  CLI::App* command = app.add_subcommand(
      "embed",
      "Embed stdin, one text per line, printing one JSON array of floats per line (per-token arrays with "
      "--pooling none, an {\"id\": value} object of the non-zero entries with --pooling splade)");
  command->add_option("--model", options->model,
                      "Hugging Face model folder (config.json, safetensors, tokenizer), or hub id org/name "
                      "(from the hub cache, pulled when missing)")
      ->required();
  command->add_flag("--offline", options->offline, "Never touch the network: org/name must be in the hub cache");
  command->add_option("--pooling", options->pooling,
                      engine::PoolingOptionNames() + " (splade: a …ForMaskedLM model's sparse vector), or none "
                      "(every token's last hidden state) (default: the folder's 1_Pooling/config.json; splade for "
                      "…ForMaskedLM)");
  command->add_flag("--no-normalize", options->no_normalize, "Do not L2-normalise the vectors");
  command->add_option("--dimensions", options->dimensions, "Keep only the leading N dimensions (Matryoshka)");
  command->add_option("--prompt-name", options->prompt_name,
                      "Prepend this prompt of config_sentence_transformers.json to every text");
  command->add_option("--task", options->task,
                      "Run every text with this task adapter and its prompt (jina-embeddings-v3: retrieval.query, "
                      "retrieval.passage, separation, classification, text-matching)");
  command->add_flag("--token-ids", options->token_ids, "Lines are space-separated token ids, used as they are");
  command->add_option("--device", options->device, "Where to run: cpu, cuda or cuda:N (bf16 on the GPU)");
  command->add_option("--dtype", options->dtype, kDtypeHelp);
  command->add_option("--threads", options->threads, "CPU threads (0 = all cores)");
  command->add_option("--batch-lines", options->batch_lines, "Most lines per engine step");
  command->add_option("--batch-tokens", options->batch_tokens, "Most tokens per engine step (a longer line runs alone)");
  command->callback([options] { std::exit(RunEmbed(*options)); });
}

}  // namespace stamen::apps
