// The models `stamen serve` and `stamen gateway` serve: `--model [NAME=]FOLDER|org/name`, once
// or more, or a `--models FILE` listing each with options of its own.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace stamen::apps {

// One served model and the options it sets for itself; unset ones are the command line's.
struct ModelSpec {
  std::string name;   // served name (requests' "model", /models/{name}/…); empty: from `model`
  std::string model;  // a model folder or a hub id org/name
  std::optional<std::string> revision;
  std::optional<std::string> pooling;
  std::optional<std::string> default_prompt;
  std::optional<std::string> default_prompt_name;
  std::optional<std::string> instruction;      // a yes/no reranker's
  std::optional<std::string> yes_no_reranker;  // auto, on, off
  std::optional<bool> auto_truncate;
  std::vector<std::string> workers;  // gateway: its workers' addresses
  // serve: its in-process worker's
  std::optional<std::string> device;
  std::optional<std::string> dtype;
  std::optional<int64_t> max_batch_tokens;
  std::optional<int64_t> max_batch_requests;
  std::optional<int64_t> max_queued_tokens;
  std::optional<int> threads;
};

// "host:port,host:port" as its addresses (empty entries dropped).
std::vector<std::string> SplitAddresses(std::string_view list);

// `NAME=MODEL` or a bare `MODEL`. The text before '=' is a name only when it holds no '/'
// (a folder path may hold '=').
ModelSpec ParseModelArgument(const std::string& argument);

// A JSON file: {"models": [{"name": …, "model": …, option: value, …}, …]} or the bare array.
// The options are those of ModelSpec, spelled as above ("max_batch_tokens", "workers" as a
// list or a comma-separated string). Returns an error message naming the entry and field
// that is wrong, empty on success.
std::string ReadModelsFile(const std::string& path, std::vector<ModelSpec>* specs);

}  // namespace stamen::apps
