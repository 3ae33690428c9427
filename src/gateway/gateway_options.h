// What one served model's gateway is started with: its folder, the HTTP server's address and
// limits, the requests' defaults and limits, and where its workers are. Gateway (the HTTP side)
// and Inference (the model's tokenizers, pool and dispatcher) both read it.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gateway/dispatcher.h"
#include "model_folder/kinds.h"

namespace stamen::gateway {

struct GatewayOptions {
  std::string model_dir;  // tokenizer and model description
  std::string model_id;   // reported in /info and responses; the folder's name when empty
  std::string host = "127.0.0.1";
  uint16_t port = 8080;
  int http_threads = 2;
  int tokenization_workers = 0;  // 0: one per core
  size_t payload_limit = 16 * 1024 * 1024;  // bytes (TEI's 2 MB surprises users)
  int64_t max_client_batch_size = 2048;     // inputs per request (OpenAI's limit)
  int64_t max_concurrent_requests = 512;    // beyond: 429
  // The most floats one /embed_all answer carries (every token's vector; about 12 bytes each as
  // JSON), so that a request within the payload limit cannot make the server build gigabytes.
  int64_t max_token_states = int64_t{16} << 20;  // 64 MB computed, about 200 MB of JSON
  // The most tokens one /tokenize answer lists (about 60 bytes of JSON each), so that a body
  // within the payload limit (a few bytes a token) cannot make an answer tens of times larger.
  int64_t max_tokenize_tokens = int64_t{1} << 20;  // about 64 MB of JSON
  bool auto_truncate = false;               // truncate over-long inputs unless a request says no
  std::string default_prompt;               // text prepended when a request names no prompt
  std::string default_prompt_name;          // a prompt of the model's config, same use
  std::string api_key;                      // Bearer token required on every route but /health
  std::optional<engine::ops::PoolingMode> pooling;  // overrides the model's pooling
  // A *ForCausalLM folder as a yes/no reranker (engine/yes_no_reranker.h): on, off, or the
  // folder decides (nullopt); the worker must be told the same. Its <Instruct> when not empty.
  std::optional<bool> yes_no_reranker;
  std::string yes_no_instruction;
  std::chrono::milliseconds request_timeout{60000};
  // Origins (or "*") whose browser requests get CORS headers and preflight answers; empty: none.
  std::vector<std::string> cors_allow_origins;
  // Requests that name no priority are low priority (bulk) when they carry more inputs than
  // this, normal otherwise; 0: never. Embedding routes (an indexing job sends many inputs)
  // and rerank routes (one search's documents) have their own.
  int64_t bulk_threshold = 32;
  int64_t rerank_bulk_threshold = 0;
  DispatcherOptions dispatcher;
  // Where the work runs: an in-process worker, or gRPC worker addresses.
  std::shared_ptr<WorkerBackend> in_process_worker;
  std::vector<std::string> worker_addresses;
};

}  // namespace stamen::gateway
