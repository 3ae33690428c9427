// What `stamen serve` and `stamen gateway` share (TEI's flags, the models to serve, the HTTP
// side), and `stamen gateway` itself: the HTTP front of gRPC workers elsewhere, which links no
// engine (the `stamen-gateway` program is this command alone).
#pragma once

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/metrics.h"
#include "gateway/gateway.h"
#include "gateway/model_router.h"
#include "hub/resolve_model.h"
#include "served_models.h"

namespace stamen::apps {

struct GatewayCommandOptions {
  gateway::GatewayOptions gateway;
  std::vector<std::string> workers;  // --workers [NAME=]host:port,..., once per model
  std::string pooling;
  std::string yes_no_reranker = "auto";
  std::vector<std::string> models;  // --model [NAME=]MODEL, once or more
  std::string models_file;          // --models FILE
  bool offline = false;
  bool json_output = false;
  hub::ResolveOptions hub;  // --revision, --hf-token, --huggingface-hub-cache
  std::string log_level = "info";
  double request_timeout_seconds = 60;  // --request-timeout
  double worker_timeout_seconds = 60;   // --worker-timeout (gateway)
  double health_interval_seconds = 1;   // --health-interval (gateway)
};

// One model as served: its gateway's options, and the spec they came from (`stamen serve`
// reads its worker options there).
struct ServedModel {
  GatewayCommandOptions options;
  ModelSpec spec;
};

// Options the gateway and serve share, with TEI's names and environment variables.
void AddGatewayOptions(CLI::App* command, GatewayCommandOptions& options);
// Log level and format, before anything is logged.
void SetUpLogging(const GatewayCommandOptions& options);
// Where and how every program logs (first thing in main): stderr, since stdout carries the
// commands' output (ids, vectors, JSON); ISO times.
void LogToStandardError();
// The start line: "stamen VERSION COMMAND: --flag=value …", every setting given on the command
// line or by its environment variable, secrets (--api-key, --hf-token) hidden.
void LogVersionAndSettings(const CLI::App& command);
// Ok when a server could listen on host:port now (port 0 always can): checked before a model
// is pulled or loaded, so that a busy port is reported in a second, not after minutes.
Status CheckPortFree(const std::string& host, uint16_t port);
// Logs `message` as `stamen COMMAND`'s error; returns the exit code 2.
int Fail(const std::string& command, const std::string& message);
std::chrono::milliseconds Milliseconds(double seconds);
// --host as an address to listen on.
bool ResolveHost(GatewayCommandOptions& options, std::string* error);
// Every model of the command line, configured (folders found or pulled, names unique); on
// failure `error` says which and why.
bool ConfigureModels(const GatewayCommandOptions& options, std::vector<ServedModel>* models, std::string* error);

// The HTTP side: the router in front of the models, one or several (model_router.h).
StatusOr<std::unique_ptr<gateway::ModelRouter>> StartRouter(const std::vector<ServedModel>& models,
                                                            metrics::Registry& registry);

// `stamen gateway` as a subcommand of `app`; SetUpGatewayCommand gives `command` (a
// subcommand, or the `stamen-gateway` program's root) its options and callback.
void AddGatewayCommand(CLI::App& app);
void SetUpGatewayCommand(CLI::App* command);

}  // namespace stamen::apps
