// Task adapters over HTTP (see task_adapter.h).
#include "gateway/task_adapter.h"

#include <array>
#include <utility>

namespace stamen::gateway {

std::variant<TaskAdapter, ApiError> ResolveTask(const engine::ModelConfig& config, std::string_view task) {
  if (task.empty()) return TaskAdapter{};
  const int index = engine::AdapterIndex(config, task);
  if (index < 0) {
    return ApiError{400, "'task' '" + std::string(task) + "' is not one of the model's task adapters (" +
                             engine::AdapterTaskList(config) + ")"};
  }
  return TaskAdapter{index, config.adapter_prompts[static_cast<size_t>(index)]};
}

std::string TaskForInputType(const engine::ModelConfig& config, std::string_view input_type) {
  // jina-embeddings-v3's tasks for Cohere's input types (Jina's own API maps them alike).
  static constexpr std::array<std::pair<std::string_view, std::string_view>, 4> kTasks = {{
      {"search_query", "retrieval.query"},
      {"search_document", "retrieval.passage"},
      {"classification", "classification"},
      {"clustering", "separation"},
  }};
  for (const auto& [type, task] : kTasks) {
    if (type == input_type && engine::AdapterIndex(config, task) >= 0) return std::string(task);
  }
  return std::string();
}

}  // namespace stamen::gateway
