// What the model commands (embed, rerank) share: reading stdin line by line, packing
// sequences into ragged engine batches, and printing floats as JSON numbers.
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <span>
#include <string>
#include <vector>

#include "engine/engine.h"

namespace stamen::apps {

// Lines of stdin split on '\n' only (a '\r' stays part of the text); the last line needs no
// final newline. Reads as it goes, so output can follow input in a pipe.
class LineReader {
 public:
  LineReader() { std::ios::sync_with_stdio(false); }
  bool Next(std::string* line) {
    if (!std::getline(std::cin, *line)) return false;
    ++number_;
    return true;
  }
  // 1-based number of the line last read.
  size_t number() const { return number_; }

 private:
  size_t number_ = 0;
};

// Sequences packed end to end for Engine::Step, with the input line of each.
class PackedBatch {
 public:
  // `adapter`: the task adapter the sequence runs with (Batch::adapters), −1 for none.
  void Add(std::span<const int32_t> ids, std::span<const int32_t> type_ids, int32_t adapter = -1) {
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    types_.insert(types_.end(), type_ids.begin(), type_ids.end());
    cu_seqlens_.push_back(static_cast<int32_t>(ids_.size()));
    adapters_.push_back(adapter);
    with_adapters_ = with_adapters_ || adapter >= 0;
  }
  size_t sequences() const { return cu_seqlens_.size() - 1; }
  size_t tokens() const { return ids_.size(); }
  engine::Batch View() const {
    engine::Batch batch;
    batch.token_ids = ids_;
    batch.cu_seqlens = cu_seqlens_;
    if (types_.size() == ids_.size()) batch.token_type_ids = types_;
    if (with_adapters_) batch.adapters = adapters_;
    return batch;
  }
  void Clear() {
    ids_.clear();
    types_.clear();
    cu_seqlens_.assign(1, 0);
    adapters_.clear();
    with_adapters_ = false;
  }

 private:
  std::vector<int32_t> ids_;
  std::vector<int32_t> types_;
  std::vector<int32_t> cu_seqlens_{0};
  std::vector<int32_t> adapters_;
  bool with_adapters_ = false;
};

// Writes `text` to stdout and flushes; false on a write error.
inline bool WriteOut(std::string* text) {
  const bool ok = std::fwrite(text->data(), 1, text->size(), stdout) == text->size() && std::fflush(stdout) == 0;
  text->clear();
  return ok;
}

// Runs `batch` through `engine`, appends each sequence's result to `output` with
// `print_row(result, sequence, output)` (result: the step's LazyResult), writes it to stdout
// and empties the batch. `first_line` (the input
// line of the batch's first sequence) names the lines in errors and advances. Returns 0, or
// the exit code after printing the error prefixed by `command`.
template <typename PrintRow>
int RunBatch(engine::Engine& engine, const engine::StepOptions& step, const char* command, PackedBatch& batch,
             size_t& first_line, std::string& output, PrintRow&& print_row) {
  if (batch.sequences() == 0) return 0;
  auto result = engine.Step(batch.View(), step);
  const engine::Status status = result.ok() ? result->Wait() : result.status();
  if (!status.ok()) {
    std::cerr << command << ": lines " << first_line << "-" << first_line + batch.sequences() - 1 << ": "
              << status.message() << "\n";
    return 2;
  }
  for (size_t s = 0; s < batch.sequences(); ++s) print_row(*result, static_cast<int64_t>(s), output);
  first_line += batch.sequences();
  batch.Clear();
  if (!WriteOut(&output)) {
    std::cerr << command << ": cannot write to stdout\n";
    return 1;
  }
  return 0;
}

// Adds one sequence to `batch`, first running `flush` (which computes and empties the batch)
// when the sequence would take it past `max_tokens`, and again once it holds `max_sequences`.
// Returns the first non-zero result of `flush`, else 0.
template <typename Flush>
int AddToBatch(PackedBatch& batch, std::span<const int32_t> ids, std::span<const int32_t> type_ids,
               size_t max_tokens, size_t max_sequences, Flush&& flush, int32_t adapter = -1) {
  if (batch.sequences() > 0 && batch.tokens() + ids.size() > max_tokens) {
    if (const int rc = flush(); rc != 0) return rc;
  }
  batch.Add(ids, type_ids, adapter);
  return batch.sequences() >= max_sequences ? flush() : 0;
}

// Shortest text that reads back as the same float; JSON has no NaN or infinity: null.
inline void AppendJsonFloat(float value, std::string* out) {
  if (!std::isfinite(value)) {
    out->append("null");
    return;
  }
  char text[32];
  const auto result = std::to_chars(text, text + sizeof(text), value);
  out->append(text, result.ptr);
}


// `values` as a JSON array of numbers: [f,f,…].
inline void AppendJsonArray(std::span<const float> values, std::string* out) {
  out->push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendJsonFloat(values[i], out);
  }
  out->push_back(']');
}

// Checks token ids read from a line against the model: inside the vocabulary and not longer
// than the position table allows (`max_ids`, 0: no limit). Returns the problem, or "".
inline std::string CheckTokenIds(std::span<const int32_t> ids, int64_t vocabulary, int64_t max_ids) {
  for (int32_t id : ids) {
    if (id >= vocabulary) {
      return "token id " + std::to_string(id) + " is outside the vocabulary (size " + std::to_string(vocabulary) + ")";
    }
  }
  if (max_ids > 0 && static_cast<int64_t>(ids.size()) > max_ids) {
    return std::to_string(ids.size()) + " token ids; the model takes at most " + std::to_string(max_ids);
  }
  return "";
}

// Parses "12 7 99" (spaces or tabs) into `ids`; false with `bad` set to the first non-id.
inline bool ParseTokenIds(std::string_view line, std::vector<int32_t>* ids, std::string* bad) {
  ids->clear();
  size_t i = 0;
  while (i < line.size()) {
    if (line[i] == ' ' || line[i] == '\t' || line[i] == '\r') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < line.size() && line[end] != ' ' && line[end] != '\t' && line[end] != '\r') ++end;
    int32_t id = 0;
    const auto result = std::from_chars(line.data() + i, line.data() + end, id);
    if (result.ec != std::errc() || result.ptr != line.data() + end || id < 0) {
      *bad = std::string(line.substr(i, end - i));
      return false;
    }
    ids->push_back(id);
    i = end;
  }
  return true;
}

}  // namespace stamen::apps
