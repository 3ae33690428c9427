// Implements `stamen pull` over stamen_hub's PullModel: the files a model needs (config,
// safetensors weights, tokenizer, sentence-transformers modules) at a revision, into the
// cache Python's huggingface_hub shares. Prints the snapshot folder on stdout, the only
// output there, so `--model "$(stamen pull org/name)"` works.
#include "pull_command.h"

#include <iostream>
#include <memory>
#include <string>

#include "hub/resolve_model.h"

namespace stamen::apps {
namespace {

struct PullOptions {
  std::string model;
  hub::ResolveOptions hub;
};

int RunPull(const PullOptions& options) {
  auto snapshot = hub::PullModel(options.model, options.hub);
  if (!snapshot.ok()) {
    std::cerr << "stamen pull: " << snapshot.status().message() << "\n";
    return 2;
  }
  std::cout << *snapshot << "\n";
  return 0;
}

}  // namespace

void AddPullCommand(CLI::App& app) {
  auto options = std::make_shared<PullOptions>();
  CLI::App* command = app.add_subcommand(
      "pull", "Download a model from the Hugging Face hub ($HF_ENDPOINT, $HF_TOKEN) into the hub cache");
  command->add_option("model", options->model, "Hugging Face model id, org/name")->required();
  command->add_option("--revision", options->hub.revision, "Branch, tag or commit")->capture_default_str();
  command->add_option("--cache", options->hub.cache_dir,
                      "Hub cache folder (default: $HF_HUB_CACHE, $HF_HOME/hub or ~/.cache/huggingface/hub)");
  command->callback([options] { std::exit(RunPull(*options)); });
}

}  // namespace stamen::apps
