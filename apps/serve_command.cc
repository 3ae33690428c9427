#include "serve_command.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <memory>

#include "device_option.h"
#include "gateway/in_process_backend.h"
#include "gateway/model_router.h"
#include "gateway_command.h"
#include "server/local_worker.h"
#include "termination_signal.h"

namespace stamen::apps {
namespace {

// A model's own worker options (--models) over the command line's.
bool ApplyWorkerOptions(const ModelSpec& spec, server::LocalWorkerOptions* worker, std::string* error) {
  if (spec.device) {
    if (*error = ApplyDeviceOption(*spec.device, &worker->engine); !error->empty()) return false;
  }
  if (spec.dtype) {
    if (*error = ApplyDtypeOption(*spec.dtype, &worker->engine); !error->empty()) return false;
  }
  if (spec.max_batch_tokens) worker->scheduler.max_batch_tokens = *spec.max_batch_tokens;
  if (spec.max_batch_requests) worker->scheduler.max_batch_sequences = *spec.max_batch_requests;
  if (spec.max_queued_tokens) worker->scheduler.max_queued_tokens = *spec.max_queued_tokens;
  if (spec.threads) worker->engine.num_threads = *spec.threads;
  return true;
}

int RunServe(GatewayCommandOptions& options, const server::LocalWorkerOptions& worker_options,
             const CLI::App& command) {
  SetUpLogging(options);
  LogVersionAndSettings(command);
  std::string error;
  std::vector<ServedModel> models;
  if (!ResolveHost(options, &error)) return Fail("serve", error);
  if (const Status free = CheckPortFree(options.gateway.host, options.gateway.port); !free.ok()) {
    return Fail("serve", free.message());
  }
  if (!ConfigureModels(options, &models, &error)) return Fail("serve", error);
  // What the gateway would refuse (a pooling the model cannot do, say) is refused before any
  // model is loaded.
  for (const ServedModel& model : models) {
    const gateway::GatewayOptions& gateway = model.options.gateway;
    if (const Status checked = gateway::Gateway::CheckModel(gateway); !checked.ok()) {
      return Fail("serve", (models.size() > 1 ? "model " + gateway.model_id + ": " : "") + checked.message());
    }
  }
  BlockTerminationSignals();
  metrics::Registry registry;
  // Several models: each worker's metrics labelled with its model, as the router labels the
  // gateways'.
  std::vector<std::unique_ptr<metrics::Registry>> model_registries;
  std::vector<std::unique_ptr<server::LocalWorker>> workers;
  for (ServedModel& model : models) {
    gateway::GatewayOptions& gateway = model.options.gateway;
    server::LocalWorkerOptions worker = worker_options;
    if (!ApplyWorkerOptions(model.spec, &worker, &error)) return Fail("serve", "model " + gateway.model_id + ": " + error);
    worker.model_dir = gateway.model_dir;
    worker.engine.yes_no_reranker = gateway.yes_no_reranker;
    worker.model_id = gateway.model_id;
    metrics::Registry* worker_registry = &registry;
    if (models.size() > 1) {
      worker_registry = model_registries.emplace_back(
          std::make_unique<metrics::Registry>(registry, gateway::ModelMetricLabels(gateway.model_id))).get();
    }
    auto loaded = server::LocalWorker::Load(worker, *worker_registry);
    if (!loaded.ok()) {
      return Fail("serve", (models.size() > 1 ? "model " + gateway.model_id + ": " : "") + loaded.status().message());
    }
    gateway.in_process_worker = std::make_shared<gateway::InProcessBackend>(**loaded);
    // One chunk per batch the worker cuts.
    gateway.dispatcher.chunk_tokens = static_cast<int64_t>((*loaded)->info().max_batch_tokens());
    workers.push_back(std::move(loaded.value()));
  }
  auto router = StartRouter(models, registry);
  if (!router.ok()) return Fail("serve", router.status().message());
  spdlog::info("serve: ready: try  curl http://{}:{}/v1/embeddings -H 'Content-Type: application/json' "
               "-d '{{\"input\": \"Hello world\"{}}}'",
               options.gateway.host, (*router)->port(),
               models.size() > 1 ? ", \"model\": \"" + models.front().options.gateway.model_id + "\"" : "");
  const std::string signal = WaitForTerminationSignal();
  spdlog::info("serve: {} received", signal);
  (*router)->Shutdown(std::chrono::seconds(30));
  for (const auto& worker : workers) worker->scheduler().Drain();
  for (ServedModel& model : models) model.options.gateway.in_process_worker.reset();
  spdlog::info("serve: stopped");
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
  auto dtype = std::make_shared<std::string>();
  command->add_option("--dtype", *dtype, kDtypeHelp)->envname("DTYPE");
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
  command->callback([options, worker, device, dtype, command] {
    if (std::string error = ApplyDeviceOption(*device, &worker->engine); !error.empty()) std::exit(Fail("serve", error));
    if (std::string error = ApplyDtypeOption(*dtype, &worker->engine); !error.empty()) std::exit(Fail("serve", error));
    const int code = RunServe(*options, *worker, *command);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::apps
