#include "gateway/late_chunking.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace stamen::gateway {

namespace {

using Token = engine::ModelTokenizer::Token;

// Content tokens [first, end) of a chunk, as indices after the leading special tokens.
struct TokenRange {
  int64_t first = 0;
  int64_t end = 0;
  int64_t size() const { return end - first; }
};

}  // namespace

std::variant<LateChunkPlan, ApiError> PlanLateChunks(std::span<const Token> tokens, size_t prompt_bytes,
                                                     size_t text_bytes, std::span<const TextSpan> chunks,
                                                     int64_t max_length, const std::string& what) {
  const int64_t count = static_cast<int64_t>(tokens.size());
  int64_t prefix = 0;
  while (prefix < count && tokens[prefix].special) ++prefix;
  int64_t suffix = 0;
  while (suffix < count - prefix && tokens[count - 1 - suffix].special) ++suffix;
  const std::span<const Token> content = tokens.subspan(prefix, count - prefix - suffix);
  const int64_t content_size = static_cast<int64_t>(content.size());

  // Which content tokens each chunk holds (offsets grow along the text, so they are a run).
  std::vector<TokenRange> ranges;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const std::string name = what + ": chunk " + std::to_string(k) + " [" + std::to_string(chunks[k].start) + ", " +
                             std::to_string(chunks[k].end) + ")";
    if (static_cast<size_t>(chunks[k].end) > text_bytes) {
      return ApiError{400, name + " ends past the text's " + std::to_string(text_bytes) + " bytes"};
    }
    const size_t low = prompt_bytes + static_cast<size_t>(chunks[k].start);
    const size_t high = prompt_bytes + static_cast<size_t>(chunks[k].end);
    auto first = std::partition_point(content.begin(), content.end(), [&](const Token& token) { return token.begin < low; });
    auto end = first;
    while (end != content.end() && end->end <= high) ++end;
    if (first == end) return ApiError{422, name + " holds no token"};
    ranges.push_back({first - content.begin(), end - content.begin()});
  }

  // Window starts (content token indices) and the chunks each one pools, in chunk order.
  std::map<int64_t, std::vector<size_t>> windows;
  const int64_t window = max_length > 0 ? max_length - prefix - suffix : content_size;
  if (window <= 0) return ApiError{422, what + ": the model's special tokens leave no room for text"};
  if (content_size <= window) {
    for (size_t k = 0; k < ranges.size(); ++k) windows[0].push_back(k);
  } else {
    const int64_t stride = std::max<int64_t>(window - window / 4, 1);
    std::vector<int64_t> starts;
    for (int64_t start = 0; start + window < content_size; start += stride) starts.push_back(start);
    starts.push_back(content_size - window);
    for (size_t k = 0; k < ranges.size(); ++k) {
      const TokenRange range = ranges[k];
      if (range.size() > window) {
        return ApiError{422, what + ": chunk " + std::to_string(k) + " has " + std::to_string(range.size()) +
                                 " tokens; the model takes " + std::to_string(window) + " at once"};
      }
      // The window holding all of it with the most context on its tighter side.
      int64_t best = -1, best_context = -1;
      for (int64_t start : starts) {
        if (start > range.first || start + window < range.end) continue;
        const int64_t context = std::min(range.first - start, start + window - range.end);
        if (context > best_context) best = start, best_context = context;
      }
      if (best < 0) best = std::clamp(range.first - (window - range.size()) / 2, int64_t{0}, content_size - window);
      windows[best].push_back(k);
    }
  }

  LateChunkPlan plan;
  plan.row_of_chunk.resize(ranges.size());
  int64_t row = 0;
  for (const auto& [start, members] : windows) {
    const int64_t end = std::min(start + window, content_size);
    for (int64_t i = 0; i < prefix; ++i) plan.token_ids.push_back(tokens[i].id);
    for (int64_t i = start; i < end; ++i) plan.token_ids.push_back(content[i].id);
    for (int64_t i = count - suffix; i < count; ++i) plan.token_ids.push_back(tokens[i].id);
    plan.lengths.push_back(static_cast<int32_t>(prefix + (end - start) + suffix));
    plan.span_counts.push_back(static_cast<int32_t>(members.size()));
    for (size_t k : members) {
      plan.spans.push_back(static_cast<int32_t>(prefix + ranges[k].first - start));
      plan.spans.push_back(static_cast<int32_t>(prefix + ranges[k].end - start));
      plan.row_of_chunk[k] = row++;
    }
  }
  return plan;
}

namespace {

std::vector<TextSpan> SentenceChunks(std::string_view text) {
  std::vector<TextSpan> chunks;
  size_t start = 0;
  // A sentence starts where the previous one ended, so the whitespace between them is the next
  // one's: byte-level and SentencePiece tokenizers fold a space into the word after it ("▁It"
  // spans the space), and a span starting after the space would leave that word out.
  auto close = [&](size_t end) {
    size_t first = start, last = end;
    while (first < last && std::isspace(static_cast<unsigned char>(text[first]))) ++first;
    while (last > first && std::isspace(static_cast<unsigned char>(text[last - 1]))) --last;
    if (last > first) chunks.push_back({static_cast<int64_t>(start), static_cast<int64_t>(last)});
    start = end;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    size_t mark = 0;  // bytes of a sentence end starting at i
    if (text[i] == '.' || text[i] == '!' || text[i] == '?') {
      mark = 1;
    } else {
      for (std::string_view wide : {"\u3002", "\uff01", "\uff1f"}) {  // 。！？
        if (text.substr(i, wide.size()) == wide) mark = wide.size();
      }
    }
    if (text[i] == '\n') {
      close(i);
    } else if (mark > 0 && (i + mark == text.size() || std::isspace(static_cast<unsigned char>(text[i + mark])) ||
                            mark > 1)) {
      close(i + mark);
      i += mark - 1;
    }
  }
  close(text.size());
  return chunks;
}

}  // namespace

std::vector<TextSpan> ChunksByRule(const ChunkingRule& rule, std::string_view text, std::span<const Token> tokens,
                                   size_t prompt_bytes) {
  if (rule.sentences) return SentenceChunks(text);
  std::vector<const Token*> content;  // the text's own tokens
  for (const Token& token : tokens) {
    if (!token.special && token.begin >= prompt_bytes) content.push_back(&token);
  }
  std::vector<TextSpan> chunks;
  const int64_t count = static_cast<int64_t>(content.size());
  const int64_t step = rule.tokens - rule.overlap;
  for (int64_t first = 0; first < count; first += step) {
    const int64_t last = std::min(first + rule.tokens, count) - 1;
    chunks.push_back({static_cast<int64_t>(content[first]->begin - prompt_bytes),
                      static_cast<int64_t>(content[last]->end - prompt_bytes)});
    if (last == count - 1) break;
  }
  return chunks;
}

}  // namespace stamen::gateway
