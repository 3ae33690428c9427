// stamen_hub against a fake hub on 127.0.0.1 (fake_hub.h): pulls into the huggingface_hub
// cache layout, cache hits without a request, resumed and corrupted downloads, the error
// messages, offline mode, and caches laid out by hand as huggingface_hub lays them out.
#include <stdlib.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fake_hub.h"
#include "hub/cache.h"
#include "hub/file_selection.h"
#include "hub/resolve_model.h"
#include "hub/progress_log.h"
#include "hub/sha256.h"
#include "temp_dir.h"

namespace stamen::hub {
namespace {

namespace fs = std::filesystem;
using testing::FakeFaults;
using testing::FakeFile;
using testing::FakeHub;
using testing::FakeRepo;
using testing::FakeRequest;

const std::string kCommit = "0123456789abcdef0123456789abcdef01234567";

using stamen::test::ReadFile;
using stamen::test::TempDir;

void WriteFile(const std::string& path, const std::string& content) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << content;
}

std::string RandomBytes(size_t size, unsigned seed) {
  std::mt19937 generator(seed);
  std::string bytes(size, '\0');
  for (char& byte : bytes) byte = static_cast<char>(generator());
  return bytes;
}

FakeRepo TinyRepo(const std::string& id) {
  return {id,
          kCommit,
          {{"README.md", "# tiny\n", false},
           {".gitattributes", "*.safetensors filter=lfs\n", false},
           {"config.json", "{\"architectures\": [\"BertModel\"]}\n", false},
           {"model.safetensors", RandomBytes(300'000, 1), true},
           {"pytorch_model.bin", RandomBytes(1000, 2), true},
           {"onnx/model.onnx", RandomBytes(1000, 3), true},
           {"tokenizer.json", "{\"model\": {}}\n", false},
           {"modules.json", "[]\n", false},
           {"1_Pooling/config.json", "{\"pooling_mode_mean_tokens\": true}\n", false}}};
}

const std::vector<std::string> kChosen = {"config.json", "model.safetensors", "tokenizer.json", "modules.json",
                                          "1_Pooling/config.json"};

const FakeFile& FileOf(const FakeRepo& repo, const std::string& path) {
  for (const FakeFile& file : repo.files) {
    if (file.path == path) return file;
  }
  throw std::runtime_error("no file " + path);
}

std::vector<FakeRequest> RequestsTo(const std::vector<FakeRequest>& requests, const std::string& prefix) {
  std::vector<FakeRequest> found;
  for (const FakeRequest& request : requests) {
    if (request.target.starts_with(prefix)) found.push_back(request);
  }
  return found;
}

// --- pure functions ---

TEST(Sha256, KnownDigests) {
  const auto digest = [](const std::string& text) {
    Sha256 hash;
    hash.Update(text);
    return hash.HexDigest();
  };
  EXPECT_EQ(digest(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(digest("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 pieces;  // a million 'a' fed in uneven pieces
  for (size_t fed = 0, step = 1; fed < 1'000'000; step = step % 97 + 1) {
    const size_t take = std::min(step, 1'000'000 - fed);
    pieces.Update(std::string(take, 'a'));
    fed += take;
  }
  EXPECT_EQ(pieces.HexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Cache, RepoIdsAndRevisions) {
  for (const char* good :
       {"sentence-transformers/all-MiniLM-L6-v2", "BAAI/bge-small-en-v1.5", "org/x_y.z", "bert-base-uncased"}) {
    EXPECT_TRUE(ValidateRepoId(good).ok()) << good;
  }
  EXPECT_EQ(RepoFolderName("bert-base-uncased"), "models--bert-base-uncased");  // as huggingface_hub names it
  for (const char* bad : {"a/b/c", "-x", "x..y", "", "../x", "org/..", "org/-x", "org/x.", "org/a--b", "org/a..b",
                          "org/na me", "/abs", "org/", "/name", "org/x?y"}) {
    EXPECT_FALSE(ValidateRepoId(bad).ok()) << bad;
  }
  EXPECT_EQ(RepoFolderName("BAAI/bge-small-en-v1.5"), "models--BAAI--bge-small-en-v1.5");
  for (const char* good : {"main", "v1.0", "refs/pr/1", kCommit.c_str()}) EXPECT_TRUE(ValidateRevision(good).ok()) << good;
  for (const char* bad : {"", "../main", "/main", "a b", "a\\b", "main/"}) EXPECT_FALSE(ValidateRevision(bad).ok()) << bad;
  EXPECT_TRUE(IsCommitHash(kCommit));
  EXPECT_FALSE(IsCommitHash("main"));
}

TEST(Cache, DefaultCacheDirFollowsTheEnvironment) {
  unsetenv("HF_HUB_CACHE");
  unsetenv("HUGGINGFACE_HUB_CACHE");
  unsetenv("HF_HOME");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(DefaultCacheDir(), "/home/u/.cache/huggingface/hub");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(DefaultCacheDir(), "/xdg/huggingface/hub");
  setenv("HF_HOME", "/hf", 1);
  EXPECT_EQ(DefaultCacheDir(), "/hf/hub");
  setenv("HF_HUB_CACHE", "/cache", 1);
  EXPECT_EQ(DefaultCacheDir(), "/cache");
  unsetenv("HF_HUB_CACHE");
  unsetenv("HF_HOME");
  unsetenv("XDG_CACHE_HOME");
}

TEST(FileSelection, SafetensorsConfigTokenizerAndSentenceTransformersOnly) {
  std::vector<RepoFile> files;
  for (const char* path :
       {"README.md", "config.json", "model.safetensors", "pytorch_model.bin", "tf_model.h5", "onnx/model.onnx",
        "openvino/openvino_model.bin", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
        "vocab.txt", "sentencepiece.bpe.model", "modules.json", "config_sentence_transformers.json",
        "sentence_bert_config.json", "1_Pooling/config.json", "2_Dense/config.json", "2_Dense/model.safetensors",
        "2_Dense/pytorch_model.bin", "data_config.json", "train_script.py"}) {
    files.push_back({.path = path});
  }
  auto chosen = SelectModelFiles(files, "org/m");
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  std::vector<std::string> paths;
  for (const RepoFile& file : *chosen) paths.push_back(file.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "model.safetensors", "tokenizer.json",
                                             "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
                                             "sentencepiece.bpe.model", "modules.json",
                                             "config_sentence_transformers.json", "sentence_bert_config.json",
                                             "1_Pooling/config.json", "2_Dense/config.json",
                                             "2_Dense/model.safetensors"}));
}

// BAAI/bge-m3's layout (issue 44): its two torch.save heads beside config.json are chosen, with
// weights or without (the gateway's pull: they make the folder a bge-m3 one); other .pt files not.
TEST(FileSelection, BgeM3HeadsBesideTheEncoder) {
  std::vector<RepoFile> files;
  for (const char* path : {"config.json", "model.safetensors", "pytorch_model.bin", "colbert_linear.pt",
                           "sparse_linear.pt", "optimizer.pt", "tokenizer.json", "1_Pooling/config.json"}) {
    files.push_back({.path = path});
  }
  for (const bool weights : {true, false}) {
    auto chosen = SelectModelFiles(files, "BAAI/bge-m3", weights);
    ASSERT_TRUE(chosen.ok()) << chosen.status().message();
    std::vector<std::string> paths;
    for (const RepoFile& file : *chosen) paths.push_back(file.path);
    std::vector<std::string> expected = {"config.json", "colbert_linear.pt", "sparse_linear.pt", "tokenizer.json",
                                         "1_Pooling/config.json"};
    if (weights) expected.insert(expected.begin() + 1, "model.safetensors");
    EXPECT_EQ(paths, expected) << "weights " << weights;
  }
}

// A DeBERTa-v3 cross-encoder without tokenizer.json (as mxbai-rerank-base-v1): spm.model and
// its JSON files are what its tokenizer is made of.
TEST(FileSelection, DebertaSpmModelAndItsFiles) {
  std::vector<RepoFile> files;
  for (const char* path : {".gitattributes", "README.md", "added_tokens.json", "config.json", "model.safetensors",
                           "pytorch_model.bin", "special_tokens_map.json", "spm.model", "tokenizer_config.json"}) {
    files.push_back({.path = path});
  }
  auto chosen = SelectModelFiles(files, "org/m");
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  std::vector<std::string> paths;
  for (const RepoFile& file : *chosen) paths.push_back(file.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"added_tokens.json", "config.json", "model.safetensors",
                                             "special_tokens_map.json", "spm.model", "tokenizer_config.json"}));
}

TEST(FileSelection, ShardedWeights) {
  std::vector<RepoFile> files;
  for (const char* path : {"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors", "pytorch_model.bin.index.json",
                           "pytorch_model-00001-of-00002.bin", "tokenizer.json"}) {
    files.push_back({.path = path});
  }
  auto chosen = SelectModelFiles(files, "org/m");
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  std::vector<std::string> paths;
  for (const RepoFile& file : *chosen) paths.push_back(file.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "model.safetensors.index.json",
                                             "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                             "tokenizer.json"}));
}

// What a gateway pulls: no weights, neither the model's nor a module's; a sharded model's index
// (tensor names only) stays. A repository without safetensors is still refused.
TEST(FileSelection, WithoutWeightsOnlyConfigsAndTokenizer) {
  std::vector<RepoFile> files;
  for (const char* path : {"config.json", "model.safetensors", "pytorch_model.bin", "tokenizer.json", "modules.json",
                           "1_Pooling/config.json", "2_Dense/config.json", "2_Dense/model.safetensors"}) {
    files.push_back({.path = path});
  }
  auto chosen = SelectModelFiles(files, "org/m", /*weights=*/false);
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  std::vector<std::string> paths;
  for (const RepoFile& file : *chosen) paths.push_back(file.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json",
                                             "2_Dense/config.json"}));
  files.clear();
  for (const char* path : {"config.json", "model.safetensors.index.json", "model-00001-of-00002.safetensors",
                           "model-00002-of-00002.safetensors", "tokenizer.json"}) {
    files.push_back({.path = path});
  }
  chosen = SelectModelFiles(files, "org/m", false);
  ASSERT_TRUE(chosen.ok()) << chosen.status().message();
  paths.clear();
  for (const RepoFile& file : *chosen) paths.push_back(file.path);
  EXPECT_EQ(paths, (std::vector<std::string>{"config.json", "model.safetensors.index.json", "tokenizer.json"}));
  EXPECT_FALSE(SelectModelFiles({{.path = "config.json"}, {.path = "pytorch_model.bin"}}, "org/old", false).ok());
}

// A sentence-transformers static model (issue 44; as sentence-transformers/static-retrieval-mrl-en-v1):
// no config.json, the StaticEmbedding module's table and tokenizer in its folder, which a gateway
// takes too (the table's header describes the model); or the table at the root (sentence-transformers
// 6 saves a first module there).
TEST(FileSelection, StaticEmbeddingRepositoriesWithoutConfig) {
  std::vector<RepoFile> files;
  for (const char* path : {"README.md", "modules.json", "config_sentence_transformers.json",
                           "0_StaticEmbedding/model.safetensors", "0_StaticEmbedding/tokenizer.json",
                           "1_Normalize/config.json"}) {
    files.push_back({.path = path});
  }
  for (const bool weights : {true, false}) {
    auto chosen = SelectModelFiles(files, "org/static", weights);
    ASSERT_TRUE(chosen.ok()) << chosen.status().message();
    std::vector<std::string> paths;
    for (const RepoFile& file : *chosen) paths.push_back(file.path);
    EXPECT_EQ(paths, (std::vector<std::string>{"modules.json", "config_sentence_transformers.json",
                                               "0_StaticEmbedding/model.safetensors", "0_StaticEmbedding/tokenizer.json",
                                               "1_Normalize/config.json"}));
  }
  auto root = SelectModelFiles({{.path = "modules.json"}, {.path = "model.safetensors"}, {.path = "tokenizer.json"}},
                               "org/static", /*weights=*/false);
  ASSERT_TRUE(root.ok()) << root.status().message();
  EXPECT_EQ(root->size(), 3u);
  // modules.json alone is no model.
  EXPECT_FALSE(SelectModelFiles({{.path = "modules.json"}, {.path = "tokenizer.json"}}, "org/x").ok());
}

TEST(FileSelection, NoSafetensorsIsAnError) {
  const auto chosen = SelectModelFiles({{.path = "config.json"}, {.path = "pytorch_model.bin"}}, "org/old");
  ASSERT_FALSE(chosen.ok());
  EXPECT_NE(chosen.status().message().find("safetensors"), std::string::npos);
  EXPECT_NE(chosen.status().message().find("pytorch_model.bin"), std::string::npos);
  EXPECT_FALSE(SelectModelFiles({{.path = "model.safetensors"}}, "org/x").ok());  // no config.json
  EXPECT_FALSE(ValidateRepoFilePath("../evil").ok());
  EXPECT_FALSE(ValidateRepoFilePath("a//b").ok());
  EXPECT_FALSE(ValidateRepoFilePath("/etc/passwd").ok());
  EXPECT_TRUE(ValidateRepoFilePath("1_Pooling/config.json").ok());
}

// A pull logged as lines: one per tenth of the bytes at most every interval, one after half a
// minute of nothing new, none in between, and a last one.
TEST(ProgressLog, LinesPerTenthAtMostEveryIntervalAndWhenStalled) {
  using Clock = ProgressLog::Clock;
  const Clock::time_point start{};
  std::vector<std::string> lines;
  ProgressLog log("pull: org/big", 1'000'000'000, [&](const std::string& line) { lines.push_back(line); },
                  std::chrono::seconds(5), start);
  const auto at = [&](double seconds) {
    return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  };
  log.Add(50'000'000, at(1));  // 5 %: nothing yet
  log.Add(60'000'000, at(4));  // 11 %, but under 5 s since the start
  EXPECT_TRUE(lines.empty());
  log.Add(1'000'000, at(5));  // 11.1 % at 5 s
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "pull: org/big: 111.0 MB of 1.00 GB (11%), 22.2 MB/s, about 40 s left");
  log.Add(50'000'000, at(20));  // 16 %: not a new tenth
  EXPECT_EQ(lines.size(), 1u);
  log.Add(40'000'000, at(21));  // 20.1 %
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("(20%)"), std::string::npos) << lines[1];
  log.Add(1'000, at(50));  // stalled: under 30 s since the last line
  EXPECT_EQ(lines.size(), 2u);
  log.Add(1'000, at(51.5));  // 30.5 s since the last line
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find("(20%)"), std::string::npos) << lines[2];
  log.Add(799'998'000, at(60));
  log.Finish(at(60));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_NE(lines[3].find("(100%)"), std::string::npos) << lines[3];
  EXPECT_EQ(lines[4], "pull: org/big: 1.00 GB downloaded in 60.0 s");
}

// --- against the fake hub ---

class HubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(hub_.running());
    for (const char* name : {"HF_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_ENDPOINT",
                             "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"}) {
      unsetenv(name);
    }
    setenv("HF_HOME", home_.path().c_str(), 1);  // no token file of the machine's user
    repo_ = TinyRepo("org/tiny");
    hub_.AddRepo(repo_);
    options_.cache_dir = cache_.path();
    options_.endpoint = hub_.endpoint();
    options_.progress = false;
  }
  void TearDown() override { unsetenv("HF_HOME"); }

  std::string RepoDir() const { return cache_.path() + "/models--org--tiny"; }
  std::string Snapshot() const { return RepoDir() + "/snapshots/" + kCommit; }
  std::string BlobOf(const std::string& path) const {
    const FakeFile& file = FileOf(repo_, path);
    return RepoDir() + "/blobs/" + (file.lfs ? FakeHub::Sha256Hex(file.content) : FakeHub::BlobId(file.content));
  }
  bool HasIncomplete() const {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(RepoDir() + "/blobs", error)) {
      if (entry.path().extension() == ".incomplete") return true;
    }
    return false;
  }

  FakeHub hub_;
  TempDir cache_, home_;
  FakeRepo repo_;
  ResolveOptions options_;
};

TEST_F(HubTest, FreshPullLaysOutTheCacheLikeHuggingfaceHub) {
  const auto snapshot = PullModel("org/tiny", options_);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  EXPECT_EQ(*snapshot, Snapshot());
  EXPECT_EQ(ReadFile(RepoDir() + "/refs/main"), kCommit);
  for (const std::string& path : kChosen) {
    const std::string link = Snapshot() + "/" + path;
    ASSERT_TRUE(fs::is_symlink(link)) << path;
    const std::string up = path.find('/') == std::string::npos ? "../../" : "../../../";
    EXPECT_EQ(fs::read_symlink(link).string(), up + "blobs/" + fs::path(BlobOf(path)).filename().string()) << path;
    EXPECT_EQ(ReadFile(link), FileOf(repo_, path).content) << path;
  }
  for (const char* skipped : {"README.md", ".gitattributes", "pytorch_model.bin", "onnx/model.onnx"}) {
    EXPECT_FALSE(fs::exists(Snapshot() + "/" + skipped)) << skipped;
  }
  EXPECT_FALSE(HasIncomplete());
  const auto requests = hub_.requests();
  EXPECT_EQ(RequestsTo(requests, "/api/models/org/tiny/revision/main").size(), 1u);
  EXPECT_EQ(RequestsTo(requests, "/org/tiny/resolve/" + kCommit + "/").size(), kChosen.size());
  EXPECT_EQ(RequestsTo(requests, "/cdn/").size(), 1u);  // the LFS file followed its redirect
  for (const FakeRequest& request : requests) EXPECT_EQ(request.authorization, "") << request.target;
  EXPECT_TRUE(RequestsTo(requests, "/org/tiny/resolve/" + kCommit + "/pytorch_model.bin").empty());
}

// A gateway's pull (weights off) downloads no weights and finds its snapshot in the cache
// after; a worker's resolve then downloads only the weights into the same snapshot.
TEST_F(HubTest, WithoutWeightsPullsConfigsAndTokenizerOnly) {
  ResolveOptions describe = options_;
  describe.weights = false;
  const auto snapshot = ResolveModel("org/tiny", describe);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  EXPECT_EQ(*snapshot, Snapshot());
  for (const char* path : {"config.json", "tokenizer.json", "modules.json", "1_Pooling/config.json"}) {
    EXPECT_TRUE(fs::exists(Snapshot() + "/" + path)) << path;
  }
  EXPECT_FALSE(fs::exists(Snapshot() + "/model.safetensors"));
  EXPECT_TRUE(RequestsTo(hub_.requests(), "/org/tiny/resolve/" + kCommit + "/model.safetensors").empty());
  EXPECT_TRUE(RequestsTo(hub_.requests(), "/cdn/").empty());
  hub_.ClearRequests();
  ASSERT_TRUE(ResolveModel("org/tiny", describe).ok());
  EXPECT_TRUE(hub_.requests().empty());  // complete for a gateway
  ASSERT_TRUE(ResolveModel("org/tiny", options_).ok());
  const auto requests = hub_.requests();
  EXPECT_EQ(RequestsTo(requests, "/org/tiny/resolve/" + kCommit + "/").size(), 1u);  // the weights alone
  EXPECT_EQ(ReadFile(Snapshot() + "/model.safetensors"), FileOf(repo_, "model.safetensors").content);
}

// A legacy id without an org ("bert-base-uncased") is pulled and found like any other.
TEST_F(HubTest, LegacyNameWithoutAnOrg) {
  hub_.AddRepo(TinyRepo("tiny-legacy"));
  const auto pulled = ResolveModel("tiny-legacy", options_);
  ASSERT_TRUE(pulled.ok()) << pulled.status().message();
  EXPECT_EQ(*pulled, cache_.path() + "/models--tiny-legacy/snapshots/" + kCommit);
  EXPECT_EQ(ReadFile(*pulled + "/config.json"), FileOf(repo_, "config.json").content);
  hub_.ClearRequests();
  ASSERT_TRUE(ResolveModel("tiny-legacy", options_).ok());
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubTest, CacheHitMakesNoRequest) {
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  hub_.ClearRequests();
  const auto resolved = ResolveModel("org/tiny", options_);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(*resolved, Snapshot());
  EXPECT_TRUE(hub_.requests().empty());
  // An explicit pull asks which commit main is, and downloads nothing.
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  const auto requests = hub_.requests();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_TRUE(requests[0].target.starts_with("/api/models/"));
}

TEST_F(HubTest, ResumesAPartialDownloadWithRange) {
  const std::string& content = FileOf(repo_, "model.safetensors").content;
  WriteFile(BlobOf("model.safetensors") + ".incomplete", content.substr(0, 100'000));
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  const auto cdn = RequestsTo(hub_.requests(), "/cdn/");
  ASSERT_EQ(cdn.size(), 1u);
  EXPECT_EQ(cdn[0].range, "bytes=100000-");
  EXPECT_EQ(ReadFile(Snapshot() + "/model.safetensors"), content);
  EXPECT_FALSE(HasIncomplete());
}

TEST_F(HubTest, ConnectionCutMidwayIsResumedInTheSamePull) {
  hub_.SetFaults({.cut_downloads = 1});
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  const auto cdn = RequestsTo(hub_.requests(), "/cdn/");
  ASSERT_EQ(cdn.size(), 2u);
  EXPECT_EQ(cdn[0].range, "");
  EXPECT_EQ(cdn[1].range, "bytes=150000-");
  EXPECT_EQ(ReadFile(Snapshot() + "/model.safetensors"), FileOf(repo_, "model.safetensors").content);
}

TEST_F(HubTest, RepeatedCutsKeepTheIncompleteFileForTheNextRun) {
  hub_.SetFaults({.cut_downloads = 100});
  const auto failed = PullModel("org/tiny", options_);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("interrupted"), std::string::npos) << failed.status().message();
  EXPECT_NE(failed.status().message().find("resume"), std::string::npos) << failed.status().message();
  const std::string incomplete = BlobOf("model.safetensors") + ".incomplete";
  ASSERT_TRUE(fs::exists(incomplete));
  const auto kept = fs::file_size(incomplete);
  EXPECT_GT(kept, 0u);
  EXPECT_FALSE(fs::exists(Snapshot() + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(RepoDir() + "/refs/main"));

  hub_.SetFaults({});
  hub_.ClearRequests();
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  const auto cdn = RequestsTo(hub_.requests(), "/cdn/");
  ASSERT_EQ(cdn.size(), 1u);
  EXPECT_EQ(cdn[0].range, "bytes=" + std::to_string(kept) + "-");
  EXPECT_EQ(ReadFile(Snapshot() + "/model.safetensors"), FileOf(repo_, "model.safetensors").content);
}

TEST_F(HubTest, ServerIgnoringRangeStartsOver) {
  const std::string& content = FileOf(repo_, "model.safetensors").content;
  WriteFile(BlobOf("model.safetensors") + ".incomplete", content.substr(0, 1000));
  hub_.SetFaults({.ignore_range = true});
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  EXPECT_EQ(ReadFile(Snapshot() + "/model.safetensors"), content);
}

TEST_F(HubTest, CorruptedDownloadIsDetectedAndNothingIsLeft) {
  hub_.SetFaults({.corrupt = true});
  const auto failed = ResolveModel("org/tiny", options_);
  ASSERT_FALSE(failed.ok());
  const std::string message = failed.status().message();
  EXPECT_NE(message.find("checksum mismatch"), std::string::npos) << message;
  EXPECT_NE(message.find("model.safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find(FakeHub::Sha256Hex(FileOf(repo_, "model.safetensors").content)), std::string::npos) << message;
  EXPECT_FALSE(fs::exists(Snapshot() + "/model.safetensors"));
  EXPECT_FALSE(fs::exists(BlobOf("model.safetensors")));
  EXPECT_FALSE(HasIncomplete());
  EXPECT_FALSE(fs::exists(RepoDir() + "/refs/main"));
}

TEST_F(HubTest, NotFoundMessages) {
  auto missing = ResolveModel("org/missing", options_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("model org/missing not found"), std::string::npos)
      << missing.status().message();
  EXPECT_NE(missing.status().message().find("HF_TOKEN"), std::string::npos) << missing.status().message();

  hub_.SetFaults({.missing_file = "tokenizer.json"});
  missing = PullModel("org/tiny", options_);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("file 'tokenizer.json' not found in org/tiny"), std::string::npos)
      << missing.status().message();

  hub_.SetFaults({});
  ResolveOptions options = options_;
  options.revision = "v9";
  missing = PullModel("org/tiny", options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("revision 'v9' not found"), std::string::npos) << missing.status().message();
}

TEST_F(HubTest, UnauthorizedMessagesMentionTheToken) {
  hub_.SetFaults({.status = 401, .error_code = "GatedRepo"});
  auto denied = PullModel("org/tiny", options_);
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("gated"), std::string::npos) << denied.status().message();
  EXPECT_NE(denied.status().message().find("set HF_TOKEN"), std::string::npos) << denied.status().message();

  hub_.SetFaults({.status = 401});
  denied = PullModel("org/tiny", options_);
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("denied (HTTP 401)"), std::string::npos) << denied.status().message();
  EXPECT_NE(denied.status().message().find("set HF_TOKEN"), std::string::npos) << denied.status().message();

  setenv("HF_TOKEN", "hf_wrong", 1);
  hub_.SetFaults({.status = 403});
  denied = PullModel("org/tiny", options_);
  unsetenv("HF_TOKEN");
  ASSERT_FALSE(denied.ok());
  EXPECT_NE(denied.status().message().find("HF_TOKEN has no access"), std::string::npos) << denied.status().message();
  EXPECT_FALSE(fs::exists(Snapshot()));
}

TEST_F(HubTest, TokenIsSentAsBearer) {
  setenv("HF_TOKEN", "hf_secret", 1);
  const auto pulled = PullModel("org/tiny", options_);
  unsetenv("HF_TOKEN");
  ASSERT_TRUE(pulled.ok()) << pulled.status().message();
  for (const FakeRequest& request : hub_.requests()) {
    EXPECT_EQ(request.authorization, "Bearer hf_secret") << request.target;
  }
  // The token file huggingface-cli login writes, when HF_TOKEN is unset.
  WriteFile(home_.path() + "/token", "hf_from_file\n");
  hub_.ClearRequests();
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  EXPECT_EQ(hub_.requests().at(0).authorization, "Bearer hf_from_file");
}

TEST_F(HubTest, OfflineMissIsAClearErrorWithoutARequest) {
  ResolveOptions offline = options_;
  offline.offline = true;
  auto missed = ResolveModel("org/tiny", offline);
  ASSERT_FALSE(missed.ok());
  EXPECT_NE(missed.status().message().find("offline"), std::string::npos) << missed.status().message();
  EXPECT_NE(missed.status().message().find(cache_.path()), std::string::npos) << missed.status().message();
  EXPECT_NE(missed.status().message().find("pass the model's folder"), std::string::npos) << missed.status().message();
  setenv("HF_HUB_OFFLINE", "1", 1);
  missed = ResolveModel("org/tiny", options_);
  EXPECT_FALSE(missed.ok());
  EXPECT_FALSE(PullModel("org/tiny", options_).ok());
  unsetenv("HF_HUB_OFFLINE");
  EXPECT_TRUE(hub_.requests().empty());

  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  hub_.ClearRequests();
  const auto hit = ResolveModel("org/tiny", offline);
  ASSERT_TRUE(hit.ok()) << hit.status().message();
  EXPECT_EQ(*hit, Snapshot());
  EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(HubTest, ListingWithoutBlobIdsUsesTheResolveHeaders) {
  hub_.SetFaults({.list_without_blobs = true});
  ASSERT_TRUE(PullModel("org/tiny", options_).ok());
  int heads = 0;
  for (const FakeRequest& request : hub_.requests()) heads += request.method == "HEAD";
  EXPECT_EQ(heads, static_cast<int>(kChosen.size()));
  for (const std::string& path : kChosen) {
    EXPECT_EQ(fs::read_symlink(Snapshot() + "/" + path).filename().string(), fs::path(BlobOf(path)).filename().string());
  }
}

TEST_F(HubTest, PullByCommitWritesNoRef) {
  ResolveOptions options = options_;
  options.revision = kCommit;
  const auto snapshot = PullModel("org/tiny", options);
  ASSERT_TRUE(snapshot.ok()) << snapshot.status().message();
  EXPECT_EQ(*snapshot, Snapshot());
  EXPECT_FALSE(fs::exists(RepoDir() + "/refs"));
  hub_.ClearRequests();
  EXPECT_TRUE(ResolveModel("org/tiny", options).ok());
  EXPECT_TRUE(hub_.requests().empty());
}

// A cache laid out by hand exactly as Python's huggingface_hub leaves it is used without any
// request (the endpoint is a closed port, and the fake hub sees nothing).
TEST_F(HubTest, FindsAHandMadeHuggingfaceHubCache) {
  const std::string repo = cache_.path() + "/models--BAAI--bge-hand";
  const std::string commit = "fedcba9876543210fedcba9876543210fedcba98";
  const std::string weights_sha = FakeHub::Sha256Hex("weights");
  WriteFile(repo + "/blobs/" + weights_sha, "weights");
  WriteFile(repo + "/blobs/1111111111111111111111111111111111111111", "{}");
  WriteFile(repo + "/refs/main", commit);  // no newline, as huggingface_hub writes it
  fs::create_directories(repo + "/snapshots/" + commit + "/1_Pooling");
  fs::create_symlink("../../blobs/" + weights_sha, repo + "/snapshots/" + commit + "/model.safetensors");
  fs::create_symlink("../../blobs/1111111111111111111111111111111111111111", repo + "/snapshots/" + commit + "/config.json");
  fs::create_symlink("../../../blobs/1111111111111111111111111111111111111111",
                     repo + "/snapshots/" + commit + "/1_Pooling/config.json");
  WriteFile(cache_.path() + "/.locks/models--BAAI--bge-hand/" + weights_sha + ".lock", "");

  ResolveOptions options = options_;
  options.endpoint = "http://127.0.0.1:1";
  auto resolved = ResolveModel("BAAI/bge-hand", options);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(*resolved, repo + "/snapshots/" + commit);
  EXPECT_EQ(ReadFile(*resolved + "/model.safetensors"), "weights");
  options.revision = commit;
  resolved = ResolveModel("BAAI/bge-hand", options);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  // Through $HF_HUB_CACHE as well.
  setenv("HF_HUB_CACHE", cache_.path().c_str(), 1);
  resolved = ResolveModel("BAAI/bge-hand", {.endpoint = "http://127.0.0.1:1", .offline = true});
  unsetenv("HF_HUB_CACHE");
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_TRUE(hub_.requests().empty());

  // Sharded weights: complete only with every shard its index names.
  const std::string sharded = repo + "/snapshots/" + commit;
  fs::remove(sharded + "/model.safetensors");
  WriteFile(sharded + "/model.safetensors.index.json",
            R"({"metadata": {}, "weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})");
  WriteFile(sharded + "/model-00001-of-00002.safetensors", "1");
  EXPECT_EQ(MissingModelFiles(sharded), std::vector<std::string>{"model-00002-of-00002.safetensors"});
  options.offline = true;
  const auto partial = ResolveModel("BAAI/bge-hand", options);
  ASSERT_FALSE(partial.ok());
  EXPECT_NE(partial.status().message().find("lacks model-00002-of-00002.safetensors"), std::string::npos)
      << partial.status().message();
  WriteFile(sharded + "/model-00002-of-00002.safetensors", "2");
  EXPECT_TRUE(ResolveModel("BAAI/bge-hand", options).ok());
}

TEST_F(HubTest, IncompleteSnapshotIsCompletedOnline) {
  WriteFile(Snapshot() + "/config.json", FileOf(repo_, "config.json").content);
  WriteFile(RepoDir() + "/refs/main", kCommit);
  const auto resolved = ResolveModel("org/tiny", options_);
  ASSERT_TRUE(resolved.ok()) << resolved.status().message();
  EXPECT_EQ(ReadFile(*resolved + "/model.safetensors"), FileOf(repo_, "model.safetensors").content);
}

TEST_F(HubTest, UnreachableHubIsNamed) {
  ResolveOptions options = options_;
  options.endpoint = "http://127.0.0.1:1";  // nothing listens there
  const auto failed = ResolveModel("org/tiny", options);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("cannot reach http://127.0.0.1:1 for org/tiny"), std::string::npos)
      << failed.status().message();
  // What to do about it: a mirror, the cache, or a folder.
  for (const char* way : {"HF_ENDPOINT", "--offline", "model's folder"}) {
    EXPECT_NE(failed.status().message().find(way), std::string::npos) << way << ": " << failed.status().message();
  }
}

TEST_F(HubTest, FoldersAreUsedAsTheyAre) {
  const auto resolved = ResolveModel(cache_.path(), options_);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(*resolved, cache_.path());
  const auto bad = ResolveModel("./no/such/folder", options_);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("no model folder './no/such/folder'"), std::string::npos)
      << bad.status().message();
  EXPECT_TRUE(hub_.requests().empty());
}

}  // namespace
}  // namespace stamen::hub
