#include "gateway_commands.h"

#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <sstream>

#include "engine/model_options.h"
#include "engine/yes_no_reranker.h"
#include "gateway/gateway.h"
#include "gateway/json_log.h"
#include "hub/resolve_model.h"
#include "server/local_worker.h"
#include "device_option.h"
#include "termination_signal.h"

namespace stamen::apps {
namespace {

struct GatewayCommandOptions {
  gateway::GatewayOptions gateway;
  std::string workers;  // --workers host:port,...
  std::string pooling;
  std::string yes_no_reranker = "auto";
  std::string model;  // --model: the same as --model-id
  bool offline = false;
  bool json_output = false;
  hub::ResolveOptions hub;  // --revision, --hf-token, --huggingface-hub-cache
  std::string log_level = "info";
  double request_timeout_seconds = 60;  // --request-timeout
  double worker_timeout_seconds = 60;   // --worker-timeout (gateway)
  double health_interval_seconds = 1;   // --health-interval (gateway)
};

// --model DIR or org/name (found in, or pulled into, the Hugging Face cache); the model id
// defaults to the hub id.
bool ResolveModelFolder(GatewayCommandOptions& options, std::string* error) {
  std::string& model = options.gateway.model_dir;  // --model-id (or MODEL_ID)
  const char* environment = std::getenv("MODEL_ID");
  // The command line wins over the environment.
  if (!options.model.empty() && environment != nullptr && model == environment) model = options.model;
  if (!options.model.empty() && !model.empty() && options.model != model) {
    // Before TEI's names, --model-id was the served name: say what it is now.
    *error = "--model " + options.model + " and --model-id " + model +
             " both name the model (--model-id is the model, as in Text Embeddings Inference); name the served "
             "model with --served-model-name";
    return false;
  }
  if (model.empty()) model = options.model;
  if (model.empty()) {
    *error = "no model: give --model-id (or --model, or the MODEL_ID environment variable)";
    return false;
  }
  options.hub.offline = options.offline;
  auto folder = hub::ResolveModel(options.gateway.model_dir, options.hub);
  if (!folder.ok()) {
    *error = folder.status().message();
    return false;
  }
  if (options.gateway.model_id.empty() && folder.value() != options.gateway.model_dir) {
    options.gateway.model_id = options.gateway.model_dir;
  }
  options.gateway.model_dir = folder.value();
  return true;
}

std::chrono::milliseconds Milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

// --host (TEI's --hostname) as an address to listen on: a name is resolved to its first
// address.
bool ResolveHost(GatewayCommandOptions& options, std::string* error) {
  std::string& host = options.gateway.host;
  in6_addr unused;
  if (inet_pton(AF_INET, host.c_str(), &unused) == 1 || inet_pton(AF_INET6, host.c_str(), &unused) == 1) return true;
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int code = getaddrinfo(host.c_str(), nullptr, &hints, &found); code != 0 || found == nullptr) {
    *error = "--host/--hostname '" + host + "' is neither an address nor a name that resolves: " + gai_strerror(code);
    return false;
  }
  char address[INET6_ADDRSTRLEN] = {};
  const void* bytes = found->ai_family == AF_INET6
                          ? static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr)
                          : static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr);
  inet_ntop(found->ai_family, bytes, address, sizeof(address));
  freeaddrinfo(found);
  host = address;
  return true;
}

// Options the gateway and serve share, with TEI's names and environment variables
// (router/src/main.rs: each flag's name in upper snake case).
void AddGatewayOptions(CLI::App* command, GatewayCommandOptions& options) {
  gateway::GatewayOptions& g = options.gateway;
  command->add_option("--model-id", g.model_dir,
                      "The model: a Hugging Face model folder, or a hub id org/name (pulled when missing)")
      ->envname("MODEL_ID");
  command->add_option("--model", options.model, "The same as --model-id");
  command->add_option("--served-model-name", g.model_id,
                      "Name reported by /info, /v1/models and in responses (default: the hub id, else the folder's name)")
      ->envname("SERVED_MODEL_NAME");
  command->add_option("--revision", options.hub.revision, "Revision of a hub model: branch, tag or commit")
      ->envname("REVISION")
      ->capture_default_str();
  command->add_option("--hf-token", options.hub.token, "Hugging Face token for gated and private models")
      ->envname("HF_TOKEN");
  command->add_option("--huggingface-hub-cache", options.hub.cache_dir,
                      "Hugging Face hub cache folder (default: $HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub)")
      ->envname("HUGGINGFACE_HUB_CACHE");
  command->add_flag("--offline", options.offline, "Never touch the network: org/name must be in the hub cache");
  // Not TEI's HOSTNAME variable: Docker and some shells (RHEL's /etc/profile) export it as the
  // machine's name, which would move a server meant for loopback onto the network unasked.
  command->add_option("--host,--hostname", g.host, "Address (or a name resolving to it) to listen on")
      ->capture_default_str();
  command->add_option("--port,-p", g.port, "HTTP port")->envname("PORT")->capture_default_str();
  command->add_option("--max-concurrent-requests", g.max_concurrent_requests,
                      "Requests in flight beyond which new ones get 429")
      ->envname("MAX_CONCURRENT_REQUESTS")
      ->capture_default_str();
  command->add_option("--max-token-states", g.max_token_states,
                      "Most floats one /embed_all answer carries, every token's vector (413 beyond)")
      ->capture_default_str();
  command->add_option("--max-client-batch-size", g.max_client_batch_size, "Most inputs in one request (413 beyond)")
      ->envname("MAX_CLIENT_BATCH_SIZE")
      ->capture_default_str();
  command->add_option("--bulk-threshold", g.bulk_threshold,
                      "Embedding requests of more inputs than this run at low priority unless they name one "
                      "(0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--rerank-bulk-threshold", g.rerank_bulk_threshold,
                      "The same for rerank requests, by documents (0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  command->add_option("--payload-limit", g.payload_limit, "Largest request body in bytes (413 beyond)")
      ->envname("PAYLOAD_LIMIT")
      ->capture_default_str();
  command->add_flag("--auto-truncate", g.auto_truncate,
                    "Truncate inputs longer than the model's maximum instead of answering 422")
      ->envname("AUTO_TRUNCATE");
  command->add_option("--default-prompt", g.default_prompt, "Text prepended to inputs that name no prompt")
      ->envname("DEFAULT_PROMPT");
  command->add_option("--default-prompt-name", g.default_prompt_name,
                      "Prompt of config_sentence_transformers.json used when a request names none")
      ->envname("DEFAULT_PROMPT_NAME");
  command->add_option("--pooling", options.pooling, "Override the model's pooling: cls, mean, max, last-token")
      ->envname("POOLING");
  command->add_option("--yes-no-reranker", options.yes_no_reranker,
                      "Run a *ForCausalLM folder as a yes/no reranker (Qwen3-Reranker): auto (a causal LM without "
                      "sentence-transformers modules.json, unless --pooling is given), on or off")
      ->capture_default_str();
  command->add_option("--instruction", g.yes_no_instruction,
                      "A yes/no reranker's <Instruct> (default: the folder's yes_no_reranker.json, else the model "
                      "card's web-search instruction)");
  command->add_option("--api-key", g.api_key, "Require 'Authorization: Bearer <key>' on every route but /health")
      ->envname("API_KEY");
  command->add_option("--tokenization-workers", g.tokenization_workers, "Tokenization threads (0: one per core)")
      ->envname("TOKENIZATION_WORKERS")
      ->capture_default_str();
  command->add_option("--http-threads", g.http_threads, "HTTP I/O threads")->capture_default_str();
  command->add_option("--request-timeout", options.request_timeout_seconds,
                      "Seconds a request may take, tokenization to answer (504 beyond)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--log-level", options.log_level, "trace, debug (a line per batch), info, warn, error")
      ->capture_default_str();
  command->add_flag("--json-output", options.json_output, "Logs as JSON lines (timestamp, level, message, target)")
      ->envname("JSON_OUTPUT");
  command->add_option("--cors-allow-origin", g.cors_allow_origins,
                      "Origins whose browser requests get CORS headers (repeat it or give a comma list; * for any)")
      ->envname("CORS_ALLOW_ORIGIN")
      ->delimiter(',');
}

int Fail(const std::string& command, const std::string& message) {
  spdlog::error("stamen {}: {}", command, message);
  return 2;
}

bool ResolvePooling(GatewayCommandOptions& options, std::string* error) {
  bool known = false;
  options.gateway.yes_no_reranker = engine::ParseYesNoRerankerOption(options.yes_no_reranker, &known);
  if (!known) {
    *error = "unknown --yes-no-reranker '" + options.yes_no_reranker + "' (auto, on, off)";
    return false;
  }
  if (options.pooling.empty()) return true;
  // A pooling mode asks for embeddings: a causal LM folder is then not taken for a reranker.
  if (!options.gateway.yes_no_reranker.has_value()) options.gateway.yes_no_reranker = false;
  options.gateway.pooling = engine::ParsePoolingOption(options.pooling);
  if (!options.gateway.pooling) *error = "unknown --pooling '" + options.pooling + "' (cls, mean, max, last-token)";
  return options.gateway.pooling.has_value();
}

// Log level and format, before anything is logged.
void SetUpLogging(const GatewayCommandOptions& options) {
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  if (options.json_output) gateway::UseJsonLogs();
}

int RunServe(GatewayCommandOptions& options, server::LocalWorkerOptions worker_options) {
  SetUpLogging(options);
  std::string error;
  if (!ResolvePooling(options, &error) || !ResolveHost(options, &error) || !ResolveModelFolder(options, &error)) {
    return Fail("serve", error);
  }
  options.gateway.request_timeout = Milliseconds(options.request_timeout_seconds);
  BlockTerminationSignals();
  metrics::Registry registry;
  worker_options.model_dir = options.gateway.model_dir;
  worker_options.engine.yes_no_reranker = options.gateway.yes_no_reranker;
  worker_options.model_id = options.gateway.model_id;
  auto worker = server::LocalWorker::Load(worker_options, registry);
  if (!worker.ok()) return Fail("serve", worker.status().message());
  options.gateway.in_process_worker = std::make_shared<gateway::InProcessBackend>(**worker);
  // One chunk per batch the worker cuts.
  options.gateway.dispatcher.chunk_tokens = static_cast<int64_t>((*worker)->info().max_batch_tokens());
  auto started = gateway::Gateway::Start(options.gateway, registry);
  if (!started.ok()) return Fail("serve", started.status().message());
  spdlog::info("serve: ready: try  curl http://{}:{}/v1/embeddings -H 'Content-Type: application/json' "
               "-d '{{\"input\": \"Hello world\"}}'",
               options.gateway.host, (*started)->port());
  const std::string signal = WaitForTerminationSignal();
  spdlog::info("serve: {} received", signal);
  (*started)->Shutdown(std::chrono::seconds(30));
  (*worker)->scheduler().Drain();
  options.gateway.in_process_worker.reset();
  spdlog::info("serve: stopped");
  return 0;
}

int RunGateway(GatewayCommandOptions& options) {
  SetUpLogging(options);
  std::string error;
  if (!ResolvePooling(options, &error) || !ResolveHost(options, &error) || !ResolveModelFolder(options, &error)) {
    return Fail("gateway", error);
  }
  options.gateway.request_timeout = Milliseconds(options.request_timeout_seconds);
  options.gateway.dispatcher.call_timeout = Milliseconds(options.worker_timeout_seconds);
  options.gateway.dispatcher.health_interval = Milliseconds(options.health_interval_seconds);
  std::stringstream list(options.workers);
  for (std::string entry; std::getline(list, entry, ',');) {
    if (!entry.empty()) options.gateway.worker_addresses.push_back(entry);
  }
  if (options.gateway.worker_addresses.empty()) return Fail("gateway", "--workers names no worker");
  BlockTerminationSignals();
  metrics::Registry registry;
  auto started = gateway::Gateway::Start(options.gateway, registry);
  if (!started.ok()) return Fail("gateway", started.status().message());
  const std::string signal = WaitForTerminationSignal();
  spdlog::info("gateway: {} received", signal);
  (*started)->Shutdown(std::chrono::seconds(30));
  return 0;
}

}  // namespace

void AddServeCommand(CLI::App& app) {
  auto options = std::make_shared<GatewayCommandOptions>();
  auto worker = std::make_shared<server::LocalWorkerOptions>();
  CLI::App* command = app.add_subcommand(
      "serve", "Serve a model over HTTP (OpenAI, TEI, Cohere APIs): gateway and worker in one process");
  AddGatewayOptions(command, *options);
  worker->scheduler.max_batch_tokens = 0;
  worker->scheduler.max_queued_tokens = 0;
  auto device = std::make_shared<std::string>("cpu");
  command->add_option("--device", *device, "Where the model runs: cpu, cuda or cuda:N (bf16 on the GPU)")
      ->capture_default_str();
  command->add_option("--max-batch-tokens", worker->scheduler.max_batch_tokens,
                      "Token budget of one batch (default: the device's, 2048 on CPU, 512 on a GPU)")
      ->envname("MAX_BATCH_TOKENS");
  command->add_option("--query-batch-tokens", worker->scheduler.query_batch_tokens,
                      "Token budget of a batch that starts a short request beside bulk work, so that queries do "
                      "not wait for two full batches (default: half of --max-batch-tokens)");
  command->add_option("--max-batch-requests", worker->scheduler.max_batch_sequences, "Most sequences in one batch")
      ->envname("MAX_BATCH_REQUESTS")
      ->capture_default_str();
  command->add_option("--max-queued-tokens", worker->scheduler.max_queued_tokens,
                      "Tokens waiting beyond which requests get 429 (default: 512 batches)");
  command->add_option("--threads", worker->engine.num_threads, "CPU threads of the engine (0: all cores)")
      ->capture_default_str();
  command->callback([options, worker, device] {
    if (std::string error = ApplyDeviceOption(*device, &worker->engine); !error.empty()) std::exit(Fail("serve", error));
    const int code = RunServe(*options, *worker);
    if (code != 0) std::exit(code);
  });
}

void AddGatewayCommand(CLI::App& app) {
  auto options = std::make_shared<GatewayCommandOptions>();
  CLI::App* command = app.add_subcommand("gateway", "Serve the HTTP API in front of `stamen worker` processes");
  AddGatewayOptions(command, *options);
  command->add_option("--workers", options->workers,
                      "Workers as host:port,...; a name resolving to several addresses (a Kubernetes headless "
                      "Service) gives one worker per address, re-resolved every 10 s")
      ->required();
  command->add_option("--chunk-tokens", options->gateway.dispatcher.chunk_tokens,
                      "Tokens per chunk a request is split into across workers")->capture_default_str();
  command->add_option("--worker-timeout", options->worker_timeout_seconds,
                      "Seconds one chunk may take on a worker before it is given up on and retried on another")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->add_option("--health-interval", options->health_interval_seconds,
                      "Seconds between health checks of each worker (also their timeout, at most 2 s)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  command->callback([options] {
    const int code = RunGateway(*options);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::apps
