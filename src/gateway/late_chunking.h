// Late chunking (Günther et al., "Late Chunking", arXiv 2409.04701): a text runs through the
// model once and each chunk's vector pools only that chunk's token states, so every chunk
// carries the context of the text around it. The gateway finds which tokens each chunk holds
// and, for a text longer than the model takes, the windows it runs in; the worker pools the
// spans (WorkRequest::spans). No I/O here: tests call it directly.
//
// A token belongs to a chunk when its byte span (as /tokenize reports it) lies inside the
// chunk's; special tokens, and the prompt's tokens, belong to none. Byte-level BPE and
// SentencePiece tokens span the space before their word ("▁It" is " It"), so a chunk should
// start at the whitespace before its first word.
//
// Long texts: the content tokens are cut into windows of W = max_length minus the special
// tokens, starting every 3W/4 tokens (the last one ends at the text's end), each wrapped in the
// model's special tokens. A chunk is pooled in the window that holds it best: of the windows
// that hold all of it, the one with the most context on its tighter side. A chunk that no such
// window holds (only one longer than W/4 can miss) gets a window of its own, centred on it.
// Only windows that pool a chunk are computed. A chunk longer than W tokens is refused.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "model_folder/model_tokenizer.h"
#include "gateway/api.h"

namespace stamen::gateway {

// The sequences one input runs as, and where its chunks' vectors come out.
struct LateChunkPlan {
  std::vector<int32_t> token_ids;    // the windows' ids, end to end
  std::vector<int32_t> lengths;      // tokens per window
  std::vector<int32_t> span_counts;  // chunks pooled in each window (each ≥ 1)
  std::vector<int32_t> spans;        // (begin, end) token pairs within their window, window by window
  // Chunk k's vector is row row_of_chunk[k] of this input's rows (windows in order, each
  // window's spans in order).
  std::vector<int64_t> row_of_chunk;
};

// `tokens`: the model's tokenization, special tokens included, of the prompt (`prompt_bytes`
// long) followed by the input text (`text_bytes` long). `max_length`: the most tokens a
// sequence may have (0: no limit). Errors name the chunk as "`what`: chunk k".
std::variant<LateChunkPlan, ApiError> PlanLateChunks(std::span<const engine::ModelTokenizer::Token> tokens,
                                                     size_t prompt_bytes, size_t text_bytes,
                                                     std::span<const TextSpan> chunks, int64_t max_length,
                                                     const std::string& what);

// The chunks `rule` cuts a text into (`tokens` and `prompt_bytes` as for PlanLateChunks):
// - sentences: each runs from where the previous one ended (the whitespace between them is
//   the next one's, as tokenizers that fold a space into the next word have it) through '.',
//   '!' or '?' (or '。', '！', '？') followed by a space or the end, or up to a line break, or to
//   the text's end;
// - tokens: runs of rule.tokens of the text's tokens (special and prompt tokens left out), each
//   starting rule.tokens − rule.overlap after the previous one, the last ending at the last
//   token; each spans its first token's start to its last token's end.
std::vector<TextSpan> ChunksByRule(const ChunkingRule& rule, std::string_view text,
                                   std::span<const engine::ModelTokenizer::Token> tokens, size_t prompt_bytes);

}  // namespace stamen::gateway
