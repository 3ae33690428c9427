// `stamen serve` and `stamen worker` as programs: TEI's environment variables, the served
// model's name, refusals at start, and the start line before a busy port.
#include "tests/gateway/gateway_fixture.h"

namespace stamen::gateway {
namespace {

// `stamen serve` configured by TEI's environment variables alone (as TEI's Docker image is),
// logging JSON lines; HOSTNAME (Docker's container name) leaves it on loopback.
TEST(ServeCommandTest, TakesTeisEnvironmentVariables) {
  const std::string folder = server::testing::ScratchFolder() + "/env-serve";
  std::filesystem::create_directories(folder);
  const std::string log = folder + "/log", pid_file = folder + "/pid";
  std::filesystem::remove(log);
  const std::string command = "MODEL_ID='" + Embedder() + "' SERVED_MODEL_NAME=from-env PORT=0 HOSTNAME=a-container-id "
                              "MAX_CLIENT_BATCH_SIZE=3 AUTO_TRUNCATE=true JSON_OUTPUT=true CORS_ALLOW_ORIGIN=https://a.example,https://b.example "
                              "API_KEY=env-key '" + std::string(STAMEN_CLI) + "' serve --threads 1 2> '" + log +
                              "' & echo $! > '" + pid_file + "'";
  ASSERT_EQ(std::system(command.c_str()), 0);
  int pid = 0;
  for (int attempt = 0; attempt < 50 && pid == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream(pid_file) >> pid;
  }
  ASSERT_GT(pid, 0);
  struct Stopper {
    int pid;
    ~Stopper() { kill(pid, SIGTERM); }  // also when an assertion below ends the test
  } stopper{pid};
  int port = 0;
  std::string line;
  for (int attempt = 0; attempt < 600 && port == 0; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    std::ifstream lines(log);
    while (std::getline(lines, line)) {
      const size_t at = line.find("on http://127.0.0.1:");
      if (at != std::string::npos) {
        port = std::atoi(line.c_str() + at + std::strlen("on http://127.0.0.1:"));
        break;
      }
    }
  }
  ASSERT_GT(port, 0) << "no port in the log";
  // The log line is one JSON object.
  simdjson::dom::parser log_parser;
  auto entry = Parse(log_parser, line);
  EXPECT_EQ(std::string_view(entry["level"].get_string().value()), "INFO");
  EXPECT_NE(std::string_view(entry["message"].get_string().value()).find("from-env"), std::string_view::npos);
  EXPECT_EQ(std::string_view(entry["timestamp"].get_string().value()).back(), 'Z');

  const std::vector<std::pair<std::string, std::string>> key = {{"Authorization", "Bearer env-key"}};
  EXPECT_EQ(Http(port, "GET", "/info").status, 401);  // API_KEY
  simdjson::dom::parser info_parser;
  auto info = Parse(info_parser, Http(port, "GET", "/info", "", key).body);
  EXPECT_EQ(std::string_view(info["model_id"].get_string().value()), "from-env");
  EXPECT_EQ(info["max_client_batch_size"].get_int64().value(), 3);
  EXPECT_TRUE(info["auto_truncate"].get_bool().value());
  auto with_origin = key;
  with_origin.emplace_back("Origin", "https://b.example");
  EXPECT_EQ(Http(port, "GET", "/v1/models", "", with_origin).Header("access-control-allow-origin"), "https://b.example");
}

// `--model-id` is TEI's: the model. Given beside a different --model (its old meaning, the
// served name), the error says where the name goes now.
TEST(ServeCommandTest, ModelIdIsTheModel) {
  const std::string log = server::testing::ScratchFolder() + "/model-id.log";
  const std::string command = "'" + std::string(STAMEN_CLI) + "' serve --model '" + Embedder() +
                              "' --model-id my-name --port 0 2> '" + log + "'";
  const int status = std::system(command.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << status;
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  EXPECT_NE(text.str().find("name the served model with --served-model-name"), std::string::npos) << text.str();
}

// A pooling the model cannot do is refused at start, before the model is loaded, as `stamen
// embed` refuses it (issue 45: serve started, then failed every request).
TEST(ServeCommandTest, RefusesSpladeOnAModelWithoutAMaskedLmHead) {
  const std::string log = server::testing::ScratchFolder() + "/splade-refused.log";
  for (const char* command : {"serve --threads 1", "gateway --workers 127.0.0.1:1"}) {
    const std::string line = "'" + std::string(STAMEN_CLI) + "' " + command + " --model '" + Embedder() +
                             "' --pooling splade --port 0 2> '" + log + "'";
    const int status = std::system(line.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 2) << command << ": " << status;
    std::stringstream text;
    text << std::ifstream(log).rdbuf();
    EXPECT_NE(text.str().find("BertModel has no masked-LM head: splade pooling needs a …ForMaskedLM model"),
              std::string::npos) << text.str();
    EXPECT_EQ(text.str().find("warmed up"), std::string::npos) << command << ": the model was loaded first";
  }
}

// A port another process listens on, for as long as it lives.
class BusyPort {
 public:
  BusyPort() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(address);
    if (bind(fd_, reinterpret_cast<sockaddr*>(&address), length) == 0 && listen(fd_, 1) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      port_ = ntohs(address.sin_port);
    }
  }
  ~BusyPort() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// Runs `stamen ARGUMENTS`; its exit code and stderr.
std::pair<int, std::string> RunCli(const std::string& arguments) {
  const std::string log = server::testing::ScratchFolder() + "/cli.log";
  const int status = std::system(("'" + std::string(STAMEN_CLI) + "' " + arguments + " 2> '" + log + "'").c_str());
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()};
}

// At start: a line with the version and the settings given (secrets hidden), timestamps with
// their zone, and a busy port reported before the model is loaded (issue 45).
TEST(ServeCommandTest, StartLineAndABusyPortBeforeTheModelLoads) {
  BusyPort busy;
  ASSERT_GT(busy.port(), 0);
  const std::string port = std::to_string(busy.port());
  for (const std::string& command : {"serve --threads 1 --api-key s3cret --port " + port,
                                    "gateway --workers 127.0.0.1:1 --api-key s3cret --port " + port,
                                    "worker --threads 1 --listen 127.0.0.1:" + port}) {
    const auto [code, log] = RunCli(command + " --model '" + Embedder() + "'");
    EXPECT_EQ(code, 2) << command << "\n" << log;
    EXPECT_NE(log.find("cannot listen on 127.0.0.1:" + port + ": Address already in use"), std::string::npos)
        << command << "\n" << log;
    EXPECT_EQ(log.find("warmed up"), std::string::npos) << command << ": the model was loaded first\n" << log;
    const std::string name = command.substr(0, command.find(' '));
    EXPECT_NE(log.find(std::string("stamen ") + STAMEN_VERSION + " " + name + ": "), std::string::npos) << log;
    EXPECT_NE(log.find("--model="), std::string::npos) << log;
    EXPECT_EQ(log.find("s3cret"), std::string::npos) << "the API key was logged:\n" << log;
    // 2026-12-05T13:46:57.363+00:00 info …
    EXPECT_TRUE(std::regex_search(log, std::regex(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d info )")))
        << log;
  }
}

// `worker --model-id` is the model, as for serve and gateway; beside --model it is still the
// served name, with a line saying it is deprecated.
TEST(WorkerCommandTest, ModelIdIsTheModelAndTheOldMeaningIsDeprecated) {
  BusyPort busy;  // each run stops at the busy port, after reading its model flags
  const std::string listen = " --listen 127.0.0.1:" + std::to_string(busy.port());
  auto [code, log] = RunCli("worker --model-id '" + Embedder() + "'" + listen);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("Address already in use"), std::string::npos) << log;
  std::tie(code, log) = RunCli("worker --model '" + Embedder() + "' --model-id my-name" + listen);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("is taken as the served name, its old meaning; it is deprecated: use --served-model-name my-name"),
            std::string::npos) << log;
  std::tie(code, log) = RunCli("worker" + listen);
  EXPECT_EQ(code, 2);
  EXPECT_NE(log.find("no model: give --model (or --model-id)"), std::string::npos) << log;
}

}  // namespace
}  // namespace stamen::gateway
