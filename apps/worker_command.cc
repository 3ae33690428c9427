#include "worker_command.h"

#include <spdlog/spdlog.h>

#include <memory>

#include "hub/resolve_model.h"
#include "server/grpc_worker.h"
#include "device_option.h"
#include "gateway_command.h"
#include "termination_signal.h"

namespace stamen::apps {
namespace {

struct WorkerCommandOptions {
  server::GrpcWorkerOptions server;
  std::string model_id;  // --model-id: the model, as for serve and gateway (TEI's meaning)
  bool offline = false;
  std::string log_level = "info";
  std::string device = "cpu";
  std::string dtype;
};

// --model-id is the model, as `serve` and `gateway` (and TEI) read it; the served name is
// --served-model-name. Before, a worker's --model-id was the served name: given beside
// --model, it still is, with a line saying so.
bool ReadModelFlags(WorkerCommandOptions& options) {
  auto& worker = options.server.worker;
  if (options.model_id.empty()) return true;
  if (worker.model_dir.empty()) {
    worker.model_dir = options.model_id;
    return true;
  }
  if (!worker.model_id.empty()) {
    spdlog::error("stamen worker: --model-id {} and --served-model-name {} both name what --model {} is served as: "
                  "--model-id is the model now, as for serve and gateway",
                  options.model_id, worker.model_id, worker.model_dir);
    return false;
  }
  spdlog::warn("stamen worker: --model-id {} beside --model is taken as the served name, its old meaning; it is "
               "deprecated: use --served-model-name {} (--model-id alone names the model, as for serve and gateway)",
               options.model_id, options.model_id);
  worker.model_id = options.model_id;
  return true;
}

int RunWorker(WorkerCommandOptions& options, const CLI::App& command) {
  spdlog::set_level(spdlog::level::from_str(options.log_level));
  LogVersionAndSettings(command);
  auto& worker = options.server.worker;
  if (!ReadModelFlags(options)) return 2;
  if (worker.model_dir.empty()) {
    spdlog::error("stamen worker: no model: give --model (or --model-id) DIR or org/name");
    return 2;
  }
  // A busy port is reported before the model is pulled or loaded.
  if (const size_t colon = options.server.listen.rfind(':'); colon != std::string::npos) {
    std::string host = options.server.listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    const int port = std::atoi(options.server.listen.c_str() + colon + 1);
    if (port > 0 && port < 65536) {
      if (const Status free = CheckPortFree(host, static_cast<uint16_t>(port)); !free.ok()) {
        spdlog::error("stamen worker: {}", free.message());
        return 2;
      }
    }
  }
  for (const std::string& error :
       {ApplyDeviceOption(options.device, &worker.engine), ApplyDtypeOption(options.dtype, &worker.engine)}) {
    if (!error.empty()) {
      spdlog::error("stamen worker: {}", error);
      return 2;
    }
  }
  auto folder = hub::ResolveModel(worker.model_dir, {.offline = options.offline});
  if (!folder.ok()) {
    spdlog::error("stamen worker: {}", folder.status().message());
    return 2;
  }
  if (worker.model_id.empty() && folder.value() != worker.model_dir) worker.model_id = worker.model_dir;
  worker.model_dir = folder.value();
  BlockTerminationSignals();
  auto started = server::GrpcWorker::Start(options.server);
  if (!started.ok()) {
    spdlog::error("stamen worker: {}", started.status().message());
    return 2;
  }
  const std::string signal = WaitForTerminationSignal();
  spdlog::info("worker: {} received", signal);
  (*started)->Shutdown();
  return 0;
}

}  // namespace

void AddWorkerCommand(CLI::App& app) {
  auto options = std::make_shared<WorkerCommandOptions>();
  CLI::App* command = app.add_subcommand("worker", "Serve a model over gRPC (stamen.v1.Inference) with token-budget batching");
  server::GrpcWorkerOptions& server = options->server;
  command->add_option("--model", server.worker.model_dir, "Hugging Face model folder, or a hub id org/name");
  command->add_flag("--offline", options->offline, "Never touch the network: org/name must be in the hub cache");
  command->add_option("--model-id", options->model_id,
                      "The model, as --model (TEI's meaning, as for serve and gateway); beside --model, the served "
                      "name (deprecated: use --served-model-name)");
  command->add_option("--served-model-name", server.worker.model_id,
                      "Name reported by Info (default: the hub id, else the folder's name)");
  command->add_option("--listen", server.listen, "gRPC address host:port (port 0: any free port)")
      ->capture_default_str();
  command->add_option("--device", options->device, "Where the model runs: cpu, cuda or cuda:N (bf16 on the GPU)")
      ->capture_default_str();
  command->add_option("--dtype", options->dtype, kDtypeHelp)->envname("DTYPE");
  command->add_option("--max-batch-tokens", server.worker.scheduler.max_batch_tokens,
                      "Token budget of one batch (default: the device's, 2048 on CPU, 512 on a GPU)");
  server.worker.scheduler.max_batch_tokens = 0;
  server.worker.scheduler.max_queued_tokens = 0;
  command->add_option("--query-batch-tokens", server.worker.scheduler.query_batch_tokens,
                      "Token budget of a batch that starts a short request beside bulk work, so that queries do "
                      "not wait for two full batches (default: half of --max-batch-tokens)");
  command->add_option("--max-batch-requests", server.worker.scheduler.max_batch_sequences,
                      "Most sequences in one batch")
      ->capture_default_str();
  command->add_option("--max-queued-tokens", server.worker.scheduler.max_queued_tokens,
                      "Tokens waiting beyond which requests get RESOURCE_EXHAUSTED (default: 512 batches)");
  command->add_option("--threads", server.worker.engine.num_threads, "CPU threads of the engine (0: all cores)")
      ->capture_default_str();
  command->add_option("--metrics-port", server.metrics_port, "Serve Prometheus /metrics on this port (-1: off)")
      ->capture_default_str();
  command->add_option("--metrics-host", server.metrics_host, "Address of the metrics endpoint")->capture_default_str();
  command->add_option("--log-level", options->log_level, "trace, debug (a line per batch), info, warn, error")
      ->capture_default_str();
  command->callback([options, command] {
    const int code = RunWorker(*options, *command);
    if (code != 0) std::exit(code);
  });
}

}  // namespace stamen::apps
