// How the commands, the gateway and the worker name what a model folder offers: the id a
// model is served under, its pooling modes as users write them, and its prompts. One place, so
// that `stamen embed`, `serve`, `gateway` and `worker` accept and report the same words.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "model_folder/model_config.h"
#include "model_folder/kinds.h"

namespace stamen::engine {

// `model_id` when it is given, else the name of the folder `model_dir` (a trailing separator
// allowed), as /info, gRPC Info and the responses report it.
std::string ModelIdOf(const std::string& model_dir, const std::string& model_id);

// A pooling mode as the API, the command line and the worker's wire write it: its name
// (kinds.h) with '-' for '_': "cls", "mean", "last-token", "mean-sqrt-len-tokens", ….
std::string PoolingOptionName(ops::PoolingMode mode);
// The inverse, also taking the model files' spellings ("last_token", "lasttoken",
// "mean_sqrt_len_tokens"); nullopt for any other text.
std::optional<ops::PoolingMode> ParsePoolingOption(std::string_view name);
// Every pooling option, as help texts and errors list them: "cls, mean, …, splade".
std::string PoolingOptionNames();

// Whether a model with `config`'s head can pool with `pooling`: splade needs a masked-LM head
// (…ForMaskedLM). The one check `stamen embed`, the gateway at start and the engine per step
// share, so an impossible pair is refused before anything is served.
Status CheckPoolingFitsModel(const ModelConfig& config, ops::PoolingMode pooling);

// The text of the prompt called `name` in config_sentence_transformers.json; nullptr when the
// model has none by that name.
const std::string* FindPrompt(const SentenceTransformersConfig& config, const std::string& name);
// The model's prompt names, comma-separated ("none" when it has none), for error messages.
std::string PromptNames(const SentenceTransformersConfig& config);

}  // namespace stamen::engine
