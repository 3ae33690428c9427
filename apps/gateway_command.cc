#include "gateway_command.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "gateway/json_log.h"
#include "model_folder/model_options.h"
#include "model_folder/yes_no_reranker.h"
#include "termination_signal.h"

namespace stamen::apps {
namespace {

// The models to serve: --models FILE, or each --model, or --model-id (MODEL_ID); the name
// of a single one may come from --served-model-name.
bool ListModels(const GatewayCommandOptions& options, std::vector<ModelSpec>* specs, std::string* error) {
  const std::string& model_id = options.gateway.model_dir;  // --model-id (or MODEL_ID)
  const char* environment = std::getenv("MODEL_ID");
  // The command line wins over the environment.
  const bool listed = !options.models.empty() || !options.models_file.empty();
  const bool model_id_given = !model_id.empty() && !(listed && environment != nullptr && model_id == environment);
  if (!options.models_file.empty()) {
    if (!options.models.empty()) {
      *error = "--models " + options.models_file + " and --model both list models: give them all in one";
      return false;
    }
    if (*error = ReadModelsFile(options.models_file, specs); !error->empty()) return false;
  }
  for (const std::string& argument : options.models) specs->push_back(ParseModelArgument(argument));
  if (model_id_given && specs->empty()) {
    specs->emplace_back().model = model_id;
  } else if (model_id_given && !(specs->size() == 1 && specs->front().model == model_id)) {
    // Before TEI's names, --model-id was the served name: say what it is now.
    *error = "--model " + (options.models.empty() ? options.models_file : options.models.front()) + " and --model-id " +
             model_id + " both name the model (--model-id is the model, as in Text Embeddings Inference); name the "
             "served model with --served-model-name, or several models with --model NAME=FOLDER each";
    return false;
  }
  if (specs->empty()) {
    *error = "no model: give --model-id (or --model, or the MODEL_ID environment variable)";
    return false;
  }
  if (const std::string& served_name = options.gateway.model_id; !served_name.empty()) {
    if (specs->size() > 1) {
      *error = "--served-model-name names one model, and " + std::to_string(specs->size()) +
               " are served: name each with --model NAME=FOLDER (or \"name\" in --models)";
      return false;
    }
    if (!specs->front().name.empty() && specs->front().name != served_name) {
      *error = "--served-model-name " + served_name + " and --model " + specs->front().name + "=… name the model twice";
      return false;
    }
    specs->front().name = served_name;
  }
  return true;
}

// --model-id DIR or org/name (found in, or pulled into, the Hugging Face cache); the model id
// defaults to the hub id.
bool ResolveModelFolder(GatewayCommandOptions& options, std::string* error) {
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
  options.gateway.model_id = engine::ModelIdOf(options.gateway.model_dir, options.gateway.model_id);
  return true;
}

}  // namespace

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

// TEI's names and variables: router/src/main.rs, each flag's name in upper snake case.
void AddGatewayOptions(CLI::App* command, GatewayCommandOptions& options) {
  gateway::GatewayOptions& g = options.gateway;
  command->add_option("--model-id", g.model_dir,
                      "The model: a Hugging Face model folder, or a hub id org/name (pulled when missing)")
      ->envname("MODEL_ID");
  command->add_option("--model", options.models,
                      "The same as --model-id; NAME=FOLDER (or NAME=org/name) names it. Give it once per model to "
                      "serve several: requests pick one by their \"model\" field or the path /models/NAME/…");
  command->add_option("--models", options.models_file,
                      "A JSON file listing the models to serve, each with options of its own: "
                      "{\"models\": [{\"name\", \"model\", \"pooling\", \"workers\", \"max_batch_tokens\", …}]}");
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
  command->add_option("--max-tokenize-tokens", g.max_tokenize_tokens,
                      "Most tokens one /tokenize answer lists (413 beyond)")
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
  command->add_option("--pooling", options.pooling, "Override the model's pooling: " + engine::PoolingOptionNames())
      ->envname("POOLING");
  command->add_option("--yes-no-reranker", options.yes_no_reranker,
                      "Run a *ForCausalLM folder as a yes/no reranker (Qwen3-Reranker, mxbai-rerank-v2, "
                      "bge-reranker-v2-gemma): auto (a causal LM without "
                      "sentence-transformers modules.json, unless --pooling is given), on or off")
      ->capture_default_str();
  command->add_option("--instruction", g.yes_no_instruction,
                      "A yes/no reranker's instruction (default: the folder's yes_no_reranker.json, else its preset's, "
                      "e.g. Qwen3-Reranker's web-search instruction)");
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

void LogVersionAndSettings(const CLI::App& command) {
  std::string settings;
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0 || option->get_name() == "--help") continue;
    const std::string name = option->get_name();
    settings += (settings.empty() ? "" : " ") + name;
    if (option->get_type_size() == 0) continue;  // a flag
    std::string value;
    for (const std::string& result : option->results()) value += (value.empty() ? "" : ",") + result;
    const bool secret = name == "--api-key" || name == "--hf-token";
    settings += "=" + (secret ? std::string("(hidden)") : value);
  }
  spdlog::info("stamen {} {}: {}", STAMEN_VERSION, command.get_name(), settings.empty() ? "defaults" : settings);
}

Status CheckPortFree(const std::string& host, uint16_t port) {
  if (port == 0) return Status();
  sockaddr_storage address{};
  socklen_t length = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&address);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    length = sizeof(*v4);
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    length = sizeof(*v6);
  } else {
    return Status();  // not an address: the server's own bind reports it
  }
  const int fd = ::socket(address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status();
  const int on = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));  // as the server binds it
  const int bound = ::bind(fd, reinterpret_cast<const sockaddr*>(&address), length);
  const int saved = errno;
  ::close(fd);
  if (bound == 0) return Status();
  return Status::Error("cannot listen on " + host + ":" + std::to_string(port) + ": " + std::strerror(saved) +
                       (saved == EADDRINUSE ? " (another server runs there: stop it or choose another port)" : ""));
}

int Fail(const std::string& command, const std::string& message) {
  spdlog::error("stamen {}: {}", command, message);
  return 2;
}

namespace {

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
  if (!options.gateway.pooling) *error = "unknown --pooling '" + options.pooling + "' (" + engine::PoolingOptionNames() + ")";
  return options.gateway.pooling.has_value();
}

// `spec`'s options over the command line's, its folder found or pulled.
bool Configure(const ModelSpec& spec, const GatewayCommandOptions& options, ServedModel* model, std::string* error) {
  model->options = options;
  model->spec = spec;
  GatewayCommandOptions& o = model->options;
  o.gateway.model_dir = spec.model;
  o.gateway.model_id = spec.name;
  if (spec.revision) o.hub.revision = *spec.revision;
  if (spec.pooling) o.pooling = *spec.pooling;
  if (spec.default_prompt) o.gateway.default_prompt = *spec.default_prompt;
  if (spec.default_prompt_name) o.gateway.default_prompt_name = *spec.default_prompt_name;
  if (spec.instruction) o.gateway.yes_no_instruction = *spec.instruction;
  if (spec.yes_no_reranker) o.yes_no_reranker = *spec.yes_no_reranker;
  if (spec.auto_truncate) o.gateway.auto_truncate = *spec.auto_truncate;
  o.gateway.worker_addresses = spec.workers;  // the gateway's; --workers NAME=… adds to them
  return ResolvePooling(o, error) && ResolveModelFolder(o, error);
}

}  // namespace

void LogToStandardError() {
  spdlog::set_default_logger(spdlog::stderr_color_mt("stamen"));
  // ISO 8601 with the zone (+00:00 in containers), so that lines from several machines order.
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ %v");
}

void SetUpLogging(const GatewayCommandOptions& options) {
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  if (options.json_output) gateway::UseJsonLogs();
}

// Every model of the command line, configured; on failure `error` says which and why.
bool ConfigureModels(const GatewayCommandOptions& options, std::vector<ServedModel>* models, std::string* error) {
  std::vector<ModelSpec> specs;
  if (!ListModels(options, &specs, error)) return false;
  // What every model shares, derived once.
  GatewayCommandOptions shared = options;
  shared.gateway.request_timeout = Milliseconds(options.request_timeout_seconds);
  for (const ModelSpec& spec : specs) {
    models->emplace_back();
    if (!Configure(spec, shared, &models->back(), error)) {
      if (specs.size() > 1) *error = "model " + (spec.name.empty() ? spec.model : spec.name) + ": " + *error;
      return false;
    }
    // Before any model is loaded.
    const std::string& name = models->back().options.gateway.model_id;
    for (size_t i = 0; i + 1 < models->size(); ++i) {
      if ((*models)[i].options.gateway.model_id != name) continue;
      *error = "two models are named '" + name + "': give each its own name (--model NAME=FOLDER)";
      return false;
    }
  }
  return true;
}

StatusOr<std::unique_ptr<gateway::ModelRouter>> StartRouter(const std::vector<ServedModel>& models,
                                                            metrics::Registry& registry) {
  std::vector<gateway::GatewayOptions> options;
  for (const ServedModel& model : models) options.push_back(model.options.gateway);
  return gateway::ModelRouter::Start(options, registry);
}

namespace {

// Each model's worker addresses: its own from --models, or --workers NAME=…; a single model's
// also --workers host:port,… without a name.
bool AssignWorkers(const std::vector<std::string>& workers, std::vector<ServedModel>& models, std::string* error) {
  for (const std::string& argument : workers) {
    const size_t equals = argument.find('=');
    auto model = models.begin();
    if (equals == std::string::npos && models.size() > 1) {
      *error = "--workers " + argument + " names no model, and " + std::to_string(models.size()) +
               " are served: give --workers NAME=host:port,… for each";
      return false;
    }
    if (equals != std::string::npos) {
      const std::string name = argument.substr(0, equals);
      model = std::find_if(models.begin(), models.end(),
                           [&](const ServedModel& m) { return m.options.gateway.model_id == name; });
      if (model == models.end()) {
        *error = "--workers " + argument + ": no model is named '" + name + "'";
        return false;
      }
    }
    const std::vector<std::string> addresses =
        SplitAddresses(equals == std::string::npos ? argument : argument.substr(equals + 1));
    std::vector<std::string>& into = model->options.gateway.worker_addresses;
    into.insert(into.end(), addresses.begin(), addresses.end());
  }
  for (const ServedModel& model : models) {
    if (model.options.gateway.worker_addresses.empty()) {
      *error = models.size() > 1 ? "model " + model.options.gateway.model_id +
                                       " has no workers: give --workers " + model.options.gateway.model_id +
                                       "=host:port,… (or \"workers\" in --models)"
                                 : "--workers names no worker";
      return false;
    }
  }
  return true;
}

int RunGateway(GatewayCommandOptions& options, const CLI::App& command) {
  SetUpLogging(options);
  LogVersionAndSettings(command);
  std::string error;
  std::vector<ServedModel> models;
  options.gateway.dispatcher.call_timeout = Milliseconds(options.worker_timeout_seconds);
  options.gateway.dispatcher.health_interval = Milliseconds(options.health_interval_seconds);
  // A new pod behind a headless Service is found at the next health check, not up to 10 s later.
  options.gateway.dispatcher.resolve_interval = options.gateway.dispatcher.health_interval;
  if (!ResolveHost(options, &error)) return Fail("gateway", error);
  if (const Status free = CheckPortFree(options.gateway.host, options.gateway.port); !free.ok()) {
    return Fail("gateway", free.message());
  }
  if (!ConfigureModels(options, &models, &error) || !AssignWorkers(options.workers, models, &error)) {
    return Fail("gateway", error);
  }
  BlockTerminationSignals();
  metrics::Registry registry;
  auto router = StartRouter(models, registry);
  if (!router.ok()) return Fail("gateway", router.status().message());
  const std::string signal = WaitForTerminationSignal();
  spdlog::info("gateway: {} received", signal);
  (*router)->Shutdown(std::chrono::seconds(30));
  return 0;
}

}  // namespace

void AddGatewayCommand(CLI::App& app) {
  SetUpGatewayCommand(app.add_subcommand("gateway", "Serve the HTTP API in front of `stamen worker` processes"));
}

void SetUpGatewayCommand(CLI::App* command) {
  auto options = std::make_shared<GatewayCommandOptions>();
  // The gateway tokenizes and describes the model; the workers load the weights. Every replica
  // pulling them into its own emptyDir cost each one the whole model (issue 45).
  options->hub.weights = false;
  AddGatewayOptions(command, *options);
  command->add_option("--workers", options->workers,
                      "Workers as host:port,...; a name resolving to several addresses (a Kubernetes headless "
                      "Service) gives one worker per address, re-resolved at every health check. With several models, once "
                      "per model as NAME=host:port,...");
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
  command->callback([options, command] {
    const int code = RunGateway(*options, *command);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::apps
