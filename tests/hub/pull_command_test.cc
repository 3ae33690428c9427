// `stamen pull` and `stamen embed --model org/name` as a user runs them, against the fake hub
// (fake_hub.h) serving a tiny model written by `stamen make-model`.
#include <stdlib.h>
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "fake_hub.h"
#include "temp_dir.h"

namespace stamen::hub {
namespace {

namespace fs = std::filesystem;
using testing::FakeHub;
using testing::FakeRepo;

const std::string kCli = STAMEN_CLI;
const std::string kShared = STAMEN_SHARED_DIR;
const std::string kCommit = "89abcdef0123456789abcdef0123456789abcdef";
const std::string kIds = "101 7 99 102\n101 102\n";

using test::ReadFile;
using test::Result;
using test::TempDir;

// Runs `<environment> stamen <arguments>` with `input` on stdin.
Result RunStamen(const std::string& environment, const std::string& arguments, const std::string& input) {
  return test::RunCommand(
      "env -u HF_TOKEN -u HF_HUB_OFFLINE -u HF_HUB_CACHE " + environment + " '" + kCli + "' " + arguments, input);
}

class PullCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(hub_.running());
    // A tiny BERT with sentence-transformers files, served as org/tiny (weights through LFS).
    const Result made = RunStamen("", "make-model --like all-MiniLM-L6-v2 --random-seed 3 --layers 1 --vocab-size 1000 "
                                      "--out " + work_.File("made") + " --tokenizer " + kShared +
                                      "/models/configs/all-MiniLM-L6-v2", "");
    ASSERT_EQ(made.code, 0) << made.err;
    FakeRepo repo{"org/tiny", kCommit, {}};
    for (const auto& entry : fs::recursive_directory_iterator(work_.File("made"))) {
      if (!entry.is_regular_file()) continue;
      const std::string path = fs::relative(entry.path(), work_.File("made")).string();
      repo.files.push_back({path, ReadFile(entry.path().string()), path.ends_with(".safetensors")});
    }
    repo.files.push_back({"pytorch_model.bin", "not to be downloaded", true});
    hub_.AddRepo(repo);
    environment_ = "HF_ENDPOINT=" + hub_.endpoint() + " HF_HUB_CACHE=" + work_.File("cache") + " HF_HOME=" +
                   work_.File("home");
  }

  FakeHub hub_;
  TempDir work_;
  std::string environment_;
};

TEST_F(PullCommandTest, PullThenEmbedByHubId) {
  const Result pulled = RunStamen(environment_, "pull org/tiny", "");
  ASSERT_EQ(pulled.code, 0) << pulled.err;
  const std::string snapshot = work_.File("cache") + "/models--org--tiny/snapshots/" + kCommit;
  EXPECT_EQ(pulled.out, snapshot + "\n");
  // No progress bar when stderr is not a terminal: log lines, the first and the last.
  EXPECT_EQ(pulled.err.find('\r'), std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find(" info pull: org/tiny (commit 89abcdef0123) into " + work_.File("cache")),
            std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find(" info pull: org/tiny: "), std::string::npos) << pulled.err;
  EXPECT_NE(pulled.err.find(" downloaded in "), std::string::npos) << pulled.err;
  EXPECT_TRUE(fs::is_symlink(snapshot + "/model.safetensors"));
  EXPECT_TRUE(fs::exists(snapshot + "/1_Pooling/config.json"));
  EXPECT_FALSE(fs::exists(snapshot + "/pytorch_model.bin"));

  const Result reference = RunStamen("", "embed --token-ids --model " + work_.File("made"), kIds);
  ASSERT_EQ(reference.code, 0) << reference.err;
  hub_.ClearRequests();
  const Result by_id = RunStamen(environment_, "embed --token-ids --model org/tiny", kIds);
  ASSERT_EQ(by_id.code, 0) << by_id.err;
  EXPECT_EQ(by_id.out, reference.out);
  const Result offline = RunStamen(environment_, "embed --offline --token-ids --model org/tiny", kIds);
  ASSERT_EQ(offline.code, 0) << offline.err;
  EXPECT_EQ(offline.out, reference.out);
  EXPECT_TRUE(hub_.requests().empty());  // both found in the cache
}

TEST_F(PullCommandTest, EmbedPullsAMissingModel) {
  const Result embedded = RunStamen(environment_, "embed --token-ids --model org/tiny", kIds);
  ASSERT_EQ(embedded.code, 0) << embedded.err;
  EXPECT_EQ(std::count(embedded.out.begin(), embedded.out.end(), '\n'), 2);
  EXPECT_FALSE(hub_.requests().empty());
  EXPECT_TRUE(fs::exists(work_.File("cache") + "/models--org--tiny/refs/main"));
}

// `stamen gateway --model org/name` pulls what it reads (configs, tokenizer), never the weights
// its workers load (issue 45: every gateway replica pulled model.safetensors).
TEST_F(PullCommandTest, GatewayPullsNoWeights) {
  const std::string log = work_.File("gateway.log");
  const std::string line = "env -u HF_TOKEN -u HF_HUB_OFFLINE -u HF_HUB_CACHE " + environment_ + " '" + kCli +
                           "' gateway --model org/tiny --workers 127.0.0.1:1 --port 0 --tokenization-workers 1 2> '" +
                           log + "' & pid=$!; for i in $(seq 300); do grep -q ' on http://' '" + log +
                           "' && break; sleep 0.1; done; kill $pid; wait $pid";
  std::system(line.c_str());
  const std::string text = ReadFile(log);
  ASSERT_NE(text.find(" on http://"), std::string::npos) << text;
  const std::string snapshot = work_.File("cache") + "/models--org--tiny/snapshots/" + kCommit;
  for (const char* path : {"config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json"}) {
    EXPECT_TRUE(fs::exists(snapshot + "/" + path)) << path;
  }
  EXPECT_FALSE(fs::exists(snapshot + "/model.safetensors"));
  for (const auto& request : hub_.requests()) {
    EXPECT_EQ(request.target.find(".safetensors"), std::string::npos) << request.target;
    EXPECT_FALSE(request.target.starts_with("/cdn/")) << request.target;
  }
}

TEST_F(PullCommandTest, CacheOptionAndRevision) {
  const Result pulled = RunStamen(environment_, "pull org/tiny --revision " + kCommit + " --cache " + work_.File("other"), "");
  ASSERT_EQ(pulled.code, 0) << pulled.err;
  EXPECT_EQ(pulled.out, work_.File("other") + "/models--org--tiny/snapshots/" + kCommit + "\n");
  EXPECT_FALSE(fs::exists(work_.File("cache")));
}

TEST_F(PullCommandTest, Errors) {
  Result failed = RunStamen(environment_, "embed --offline --token-ids --model org/tiny", kIds);
  EXPECT_EQ(failed.code, 2);
  EXPECT_NE(failed.err.find("offline mode is on"), std::string::npos) << failed.err;
  EXPECT_TRUE(hub_.requests().empty());

  failed = RunStamen(environment_, "pull org/nope", "");
  EXPECT_EQ(failed.code, 2);
  EXPECT_NE(failed.err.find("stamen pull: model org/nope not found"), std::string::npos) << failed.err;
  EXPECT_EQ(failed.out, "");

  hub_.SetFaults({.status = 401, .error_code = "GatedRepo"});
  failed = RunStamen(environment_, "rerank --model org/tiny", "a\tb\n");
  EXPECT_EQ(failed.code, 2);
  EXPECT_NE(failed.err.find("stamen rerank: org/tiny is a gated model"), std::string::npos) << failed.err;
  EXPECT_NE(failed.err.find("HF_TOKEN"), std::string::npos) << failed.err;

  failed = RunStamen(environment_, "pull not/an/id", "");
  EXPECT_EQ(failed.code, 2);
  EXPECT_NE(failed.err.find("expected org/name"), std::string::npos) << failed.err;
}

}  // namespace
}  // namespace stamen::hub
