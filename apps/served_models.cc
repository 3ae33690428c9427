#include "served_models.h"

#include <simdjson.h>

#include <sstream>

namespace stamen::apps {

namespace {

using simdjson::dom::element;

// Reads one entry's field `key` into the spec; an error message when it has the wrong type or
// is not an option at all.
std::string ReadField(std::string_view key, element value, ModelSpec& spec) {
  auto text = [&](std::string* out) -> std::string {
    std::string_view view;
    if (value.get(view) != simdjson::SUCCESS) return "'" + std::string(key) + "' must be a string";
    *out = std::string(view);
    return "";
  };
  auto optional_text = [&](std::optional<std::string>* out) {
    std::string read;
    std::string error = text(&read);
    if (error.empty()) *out = std::move(read);
    return error;
  };
  auto count = [&](auto* out) -> std::string {
    int64_t number = 0;
    if (value.get(number) != simdjson::SUCCESS || number < 0) {
      return "'" + std::string(key) + "' must be a non-negative integer";
    }
    *out = static_cast<typename std::decay_t<decltype(*out)>::value_type>(number);
    return "";
  };
  if (key == "name") return text(&spec.name);
  if (key == "model") return text(&spec.model);
  if (key == "revision") return optional_text(&spec.revision);
  if (key == "pooling") return optional_text(&spec.pooling);
  if (key == "default_prompt") return optional_text(&spec.default_prompt);
  if (key == "default_prompt_name") return optional_text(&spec.default_prompt_name);
  if (key == "instruction") return optional_text(&spec.instruction);
  if (key == "yes_no_reranker") return optional_text(&spec.yes_no_reranker);
  if (key == "device") return optional_text(&spec.device);
  if (key == "dtype") return optional_text(&spec.dtype);
  if (key == "max_batch_tokens") return count(&spec.max_batch_tokens);
  if (key == "max_batch_requests") return count(&spec.max_batch_requests);
  if (key == "max_queued_tokens") return count(&spec.max_queued_tokens);
  if (key == "threads") return count(&spec.threads);
  if (key == "auto_truncate") {
    bool flag = false;
    if (value.get(flag) != simdjson::SUCCESS) return "'auto_truncate' must be true or false";
    spec.auto_truncate = flag;
    return "";
  }
  if (key == "workers") {
    std::string_view list;
    if (value.get(list) == simdjson::SUCCESS) {
      spec.workers = SplitAddresses(list);
      return "";
    }
    simdjson::dom::array addresses;
    if (value.get(addresses) != simdjson::SUCCESS) return "'workers' must be a list of host:port strings";
    for (element address : addresses) {
      std::string_view one;
      if (address.get(one) != simdjson::SUCCESS) return "'workers' must be a list of host:port strings";
      spec.workers.emplace_back(one);
    }
    return "";
  }
  return "unknown option '" + std::string(key) +
         "' (name, model, revision, pooling, default_prompt, default_prompt_name, instruction, yes_no_reranker, "
         "auto_truncate, workers, device, dtype, max_batch_tokens, max_batch_requests, max_queued_tokens, threads)";
}

}  // namespace

std::vector<std::string> SplitAddresses(std::string_view list) {
  std::vector<std::string> addresses;
  std::stringstream stream{std::string(list)};
  for (std::string entry; std::getline(stream, entry, ',');) {
    if (!entry.empty()) addresses.push_back(entry);
  }
  return addresses;
}

ModelSpec ParseModelArgument(const std::string& argument) {
  ModelSpec spec;
  const size_t equals = argument.find('=');
  if (equals != std::string::npos && equals > 0 && argument.substr(0, equals).find('/') == std::string::npos) {
    spec.name = argument.substr(0, equals);
    spec.model = argument.substr(equals + 1);
  } else {
    spec.model = argument;
  }
  return spec;
}

std::string ReadModelsFile(const std::string& path, std::vector<ModelSpec>* specs) {
  simdjson::dom::parser parser;
  element root;
  if (const auto error = parser.load(path).get(root); error != simdjson::SUCCESS) {
    return "--models " + path + ": " + (error == simdjson::IO_ERROR ? "cannot be read" : "is not valid JSON");
  }
  simdjson::dom::array entries;
  const bool listed = root.is_object() ? root["models"].get(entries) == simdjson::SUCCESS
                                       : root.get(entries) == simdjson::SUCCESS;
  if (!listed) {
    return "--models " + path + ": expected {\"models\": [...]} or a list of models";
  }
  size_t index = 0;
  for (element entry : entries) {
    const std::string where = "--models " + path + ": model " + std::to_string(index++);
    simdjson::dom::object fields;
    if (entry.get(fields) != simdjson::SUCCESS) return where + " is not an object";
    ModelSpec spec;
    for (auto field : fields) {
      if (std::string error = ReadField(field.key, field.value, spec); !error.empty()) return where + ": " + error;
    }
    if (spec.model.empty()) return where + " has no \"model\" (a folder or an org/name hub id)";
    specs->push_back(std::move(spec));
  }
  if (specs->empty()) return "--models " + path + " lists no model";
  return "";
}

}  // namespace stamen::apps
