// MaxSim reranking and token vectors in the worker (issue 44): the scheduler runs PyLate's query
// and document ids of tests/engine/data/tiny-colbert-* (tools/make_multi_vector_goldens.py) as
// WorkKind::kMaxSim and kTokenVectors requests, in batches small enough that documents land in
// batches after their query's, and the scores equal PyLate's colbert_scores within 1e-4 and the
// kept vectors (skiplist dropped) PyLate's encode.
#include <gtest/gtest.h>

#include <simdjson.h>

#include <cmath>
#include <condition_variable>
#include <cstring>
#include <future>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "server/max_sim.h"
#include "server/scheduler.h"

namespace stamen::server {
namespace {

const std::string kData = std::string(STAMEN_ENGINE_TEST_DATA) + "/";

std::vector<std::vector<int32_t>> ReadIds(simdjson::dom::element rows) {
  std::vector<std::vector<int32_t>> ids;
  for (simdjson::dom::element row : rows.get_array()) {
    auto& out = ids.emplace_back();
    for (simdjson::dom::element id : row.get_array()) out.push_back(static_cast<int32_t>(int64_t(id)));
  }
  return ids;
}

std::string Pack(const std::vector<int32_t>& ids) {
  std::string bytes(ids.size() * sizeof(int32_t), '\0');
  std::memcpy(bytes.data(), ids.data(), bytes.size());
  return bytes;
}

TEST(MaxSimTest, SumsEachQueryVectorsBestDotProduct) {
  const float query[] = {1, 0, 0, 1, 0.6f, 0.8f};         // 3 vectors of 2
  const float document[] = {0.8f, 0.6f, 0, 1, -1, 0};     // 3 vectors of 2
  // best dots: (1,0)→0.8, (0,1)→1, (0.6,0.8)→max(0.96, 0.8, -0.6)=0.96
  EXPECT_NEAR(MaxSim(query, 3, document, 3, 2), 0.8 + 1.0 + 0.96, 1e-6);
  EXPECT_EQ(MaxSim(query, 3, document, 0, 2), 0.0f);
}

class MaxSimSchedulerTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    reference_ = parser_.load(kData + GetParam() + "/reference.json");
    auto loaded = engine::Engine::Load(kData + GetParam(), {.num_threads = 1, .compute_dtype = engine::DataType::kF32});
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    engine_ = std::move(loaded.value());
    // A few sequences per batch: a request's documents run in batches after its query's.
    scheduler_ = std::make_unique<Scheduler>(
        [this](const engine::Batch& batch, const engine::StepOptions& step) { return engine_->Step(batch, step); },
        ModelLimits::Of(*engine_), SchedulerOptions{.max_batch_tokens = 24}, nullptr);
    for (simdjson::dom::element id : reference_["skiplist_ids"].get_array()) skip_.push_back(static_cast<int32_t>(int64_t(id)));
  }

  // Submits `request` and waits for it.
  void Run(const std::shared_ptr<WorkRequest>& request) {
    std::promise<void> finished;
    request->on_done = [&](WorkRequest&) { finished.set_value(); };
    const Status submitted = scheduler_->Submit(request);
    ASSERT_TRUE(submitted.ok()) << submitted.message();
    finished.get_future().wait();
    ASSERT_TRUE(request->status.ok()) << request->status.message();
  }

  simdjson::dom::parser parser_;
  simdjson::dom::element reference_;
  std::unique_ptr<engine::Engine> engine_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<int32_t> skip_;
};

TEST_P(MaxSimSchedulerTest, ScoresEqualPyLateColbertScores) {
  const auto queries = ReadIds(reference_["query_ids"]);
  const auto documents = ReadIds(reference_["document_ids"]);
  std::vector<int32_t> attended;
  for (simdjson::dom::element keys : reference_["query_attended_keys"].get_array()) {
    attended.push_back(static_cast<int32_t>(int64_t(keys)));
  }
  const bool unattended = !bool(reference_["attend_to_expansion_tokens"]);
  simdjson::dom::array scores = reference_["scores"].get_array();
  for (size_t q = 0; q < queries.size(); ++q) {
    auto request = std::make_shared<WorkRequest>();
    request->kind = WorkKind::kMaxSim;
    std::vector<int32_t> ids = queries[q];
    request->lengths.push_back(static_cast<int32_t>(queries[q].size()));
    request->key_lengths.push_back(unattended ? attended[q] : 0);
    for (const auto& document : documents) {
      ids.insert(ids.end(), document.begin(), document.end());
      request->lengths.push_back(static_cast<int32_t>(document.size()));
      request->key_lengths.push_back(0);
    }
    request->token_ids = Pack(ids);
    request->skip_token_ids = skip_;
    Run(request);
    ASSERT_EQ(request->columns, 1);
    ASSERT_EQ(request->output.size(), documents.size() * sizeof(float));
    const float* values = reinterpret_cast<const float*>(request->output.data());
    simdjson::dom::array expected = scores.at(q).get_array();
    for (size_t d = 0; d < documents.size(); ++d) {
      EXPECT_NEAR(values[d], double(expected.at(d)), 1e-4) << GetParam() << ": query " << q << ", document " << d;
    }
  }
}

TEST_P(MaxSimSchedulerTest, DocumentVectorsDropTheSkiplist) {
  const auto documents = ReadIds(reference_["document_ids"]);
  auto request = std::make_shared<WorkRequest>();
  request->kind = WorkKind::kTokenVectors;
  std::vector<int32_t> ids;
  for (const auto& document : documents) {
    ids.insert(ids.end(), document.begin(), document.end());
    request->lengths.push_back(static_cast<int32_t>(document.size()));
  }
  request->token_ids = Pack(ids);
  request->skip_token_ids = skip_;
  Run(request);
  const float* values = reinterpret_cast<const float*>(request->output.data());
  size_t row = 0;
  for (simdjson::dom::element document : reference_["document_vectors"].get_array()) {
    for (simdjson::dom::element vector : document.get_array()) {
      size_t column = 0;
      for (simdjson::dom::element value : vector.get_array()) {
        EXPECT_NEAR(values[row * request->columns + column], double(value), 1e-4) << "row " << row;
        ++column;
      }
      ASSERT_EQ(column, static_cast<size_t>(request->columns));
      ++row;
    }
  }
  EXPECT_EQ(static_cast<int64_t>(row), request->row_offsets.back());
}

TEST_P(MaxSimSchedulerTest, PooledEmbeddingModelsRefuseTokenVectors) {
  // The other way round: a multi-vector request to a model without Dense token modules.
  auto loaded = engine::Engine::Load(kData + "tiny-distilbert", {.num_threads = 1});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  WorkRequest request;
  request.kind = WorkKind::kMaxSim;
  request.lengths = {2};
  request.token_ids = Pack({101, 102});
  EXPECT_FALSE(ValidateWorkRequest(request, ModelLimits::Of(**loaded)).ok());
}

INSTANTIATE_TEST_SUITE_P(PyLate, MaxSimSchedulerTest, ::testing::Values("tiny-colbert-bert", "tiny-colbert-modernbert", "tiny-colbert-stanford",
                                                  "tiny-colbert-jina"));

}  // namespace
}  // namespace stamen::server
