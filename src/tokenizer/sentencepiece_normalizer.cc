// Follows SentencePiece's Normalizer::Normalize step for step, including its offset map.
#include "tokenizer/sentencepiece_normalizer.h"

#include "tokenizer/utf8.h"

namespace stamen::tokenizer {
namespace {

constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581

// Length of the longest user-defined piece that prefixes `input` (0 when none).
size_t LongestPieceMatch(const PieceTrie& trie, std::string_view input) {
  size_t longest = 0;
  const TrieNode* node = trie.root();
  for (size_t i = 0; i < input.size(); ++i) {
    const auto byte = static_cast<unsigned char>(input[i]);
    if (!node->HasChild(byte)) break;
    node = &trie.Child(*node, byte);
    if (node->token_id >= 0) longest = i + 1;
  }
  return longest;
}

}  // namespace

StatusOr<SentencePieceNormalizer> SentencePieceNormalizer::Create(const SentencePieceModel& model,
                                                                  const PieceTrie* user_defined) {
  auto charsmap = Charsmap::Parse(model.precompiled_charsmap);
  if (!charsmap.ok()) return charsmap.status();
  SentencePieceNormalizer normalizer;
  normalizer.charsmap_ = std::move(charsmap.value());
  normalizer.user_defined_ = user_defined;
  normalizer.add_dummy_prefix_ = model.add_dummy_prefix;
  normalizer.remove_extra_whitespaces_ = model.remove_extra_whitespaces;
  normalizer.escape_whitespaces_ = model.escape_whitespaces;
  normalizer.whitespace_as_suffix_ = model.treat_whitespace_as_suffix;
  for (int byte = 1; byte < 128; ++byte) {
    normalizer.ascii_passes_through_[byte] = byte != ' ' && normalizer.AsciiPassesThrough(static_cast<char>(byte));
  }
  return normalizer;
}

bool SentencePieceNormalizer::AsciiPassesThrough(char byte) const {
  const std::string_view key(&byte, 1);
  std::string_view replacement;
  if (charsmap_.LongestMatch(key, &replacement) > 0) return false;
  const auto lead = static_cast<unsigned char>(byte);
  const TrieNode* piece_node = nullptr;
  if (user_defined_ != nullptr && user_defined_->root()->HasChild(lead)) {
    piece_node = &user_defined_->Child(*user_defined_->root(), lead);
    if (piece_node->token_id >= 0) return false;
  }
  for (int next = 0; next < 128; ++next) {
    const char pair[2] = {byte, static_cast<char>(next)};
    if (charsmap_.HasKeyStartingWith(std::string_view(pair, 2))) return false;
    if (piece_node != nullptr && piece_node->HasChild(static_cast<unsigned char>(next))) return false;
  }
  return true;
}

std::pair<std::string_view, size_t> SentencePieceNormalizer::NormalizePrefix(std::string_view input) const {
  if (user_defined_ != nullptr) {
    const size_t length = LongestPieceMatch(*user_defined_, input);
    if (length > 0) return {input.substr(0, length), length};
  }
  std::string_view replacement;
  const size_t matched = charsmap_.LongestMatch(input, &replacement);
  if (matched > 0) return {replacement, matched};
  const utf8::Decoded decoded = utf8::Decode(input, 0);
  // A malformed byte becomes U+FFFD but consumes only itself.
  if (!decoded.valid) return {utf8::kReplacementUtf8, 1};
  return {input.substr(0, decoded.length), decoded.length};
}

void SentencePieceNormalizer::Normalize(std::string_view input, std::string* normalized,
                                        OffsetMap* offsets) const {
  normalized->clear();
  offsets->Reset(offsets->enabled());
  uint32_t consumed = 0;
  if (remove_extra_whitespaces_) {
    while (!input.empty()) {
      const auto [piece, length] = NormalizePrefix(input);
      if (piece != " ") break;
      input.remove_prefix(length);
      consumed += static_cast<uint32_t>(length);
    }
  }
  if (input.empty()) {
    offsets->Append(consumed);
    return;
  }
  const std::string_view space = escape_whitespaces_ ? kSpaceSymbol : std::string_view(" ");
  auto append_space = [&] {
    normalized->append(space);
    offsets->Append(space.size(), consumed);
  };
  if (!whitespace_as_suffix_ && add_dummy_prefix_) append_space();

  bool previous_is_space = remove_extra_whitespaces_;
  while (!input.empty()) {
    // Fast path: a run of ASCII bytes that normalize to themselves.
    size_t run = 0;
    while (run < input.size() && static_cast<unsigned char>(input[run]) < 0x80 &&
           ascii_passes_through_[static_cast<unsigned char>(input[run])] &&
           (run + 1 == input.size() || static_cast<unsigned char>(input[run + 1]) < 0x80)) {
      ++run;
    }
    if (run > 0) {
      normalized->append(input.substr(0, run));
      offsets->AppendSequence(run, consumed);
      previous_is_space = false;
      consumed += static_cast<uint32_t>(run);
      input.remove_prefix(run);
      continue;
    }
    const auto [replacement, length] = NormalizePrefix(input);
    std::string_view piece = replacement;
    if (previous_is_space && remove_extra_whitespaces_) {
      while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
    }
    if (!piece.empty()) {
      for (char byte : piece) {
        if (escape_whitespaces_ && byte == ' ') {
          normalized->append(kSpaceSymbol);
          offsets->Append(kSpaceSymbol.size(), consumed);
        } else {
          normalized->push_back(byte);
          offsets->Append(consumed);
        }
      }
      previous_is_space = piece.back() == ' ';
    }
    consumed += static_cast<uint32_t>(length);
    input.remove_prefix(length);
    if (!remove_extra_whitespaces_) previous_is_space = false;
  }
  if (remove_extra_whitespaces_) {
    while (normalized->size() >= space.size() &&
           std::string_view(*normalized).substr(normalized->size() - space.size()) == space) {
      const size_t length = normalized->size() - space.size();
      consumed = offsets->At(length);
      normalized->resize(length);
      offsets->Resize(length);
    }
  }
  if (whitespace_as_suffix_ && add_dummy_prefix_) append_space();
  offsets->Append(consumed);
}

}  // namespace stamen::tokenizer
