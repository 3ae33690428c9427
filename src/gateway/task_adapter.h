// Task adapters over HTTP (jina-embeddings-v3): the "task" a request names, or the one a Cohere
// input_type stands for, as the index of the model's LoRA adapter every input runs with and the
// prompt that task brings (config.json's task_instructions).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

#include "gateway/api.h"
#include "model_folder/model_config.h"

namespace stamen::gateway {

struct TaskAdapter {
  int32_t index = -1;  // into config.adapter_tasks (server::WorkRequest::adapter); −1: none
  std::string prompt;  // the task's instruction, put before each text ("" for some tasks)
};

// The adapter of `task`; an empty task is none. A task the model does not have, or any task on a
// model without adapters, is a 400 that lists the model's tasks.
std::variant<TaskAdapter, ApiError> ResolveTask(const engine::ModelConfig& config, std::string_view task);

// The model's task a Cohere input_type stands for (search_query: retrieval.query,
// search_document: retrieval.passage, classification: classification, clustering: separation),
// or empty when the model has no such task (then input_type picks a prompt, as for any model).
std::string TaskForInputType(const engine::ModelConfig& config, std::string_view input_type);

}  // namespace stamen::gateway
