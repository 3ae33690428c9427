// Encode and EncodePair for every tokenizer that encodes each text's content on its own and
// then has a post-processor put the special tokens around it (the SentencePiece, Unigram, BPE
// and WordPiece tokenizers): one text's content into the scratch's first encoding, a pair's
// second into its second, then PostProcessor::Assemble.
#pragma once

#include <string_view>

#include "tokenizer/post_processor.h"
#include "tokenizer/scratch_buffers.h"
#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// `Derived` (which makes this class its friend) provides
//   void EncodeContent(std::string_view text, bool with_pieces, Scratch::Buffers*, Encoding*) const;
// the content ids of one text, before the post-processor, and
//   const PostProcessor& ContentPostProcessor() const;
template <typename Derived>
class ContentTokenizer : public Tokenizer {
 public:
  void Encode(std::string_view text, const EncodeOptions& options, Encoding* out, Scratch* scratch) const override {
    Scratch::Buffers& buffers = scratch->buffers();
    derived().EncodeContent(text, options.with_pieces, &buffers, &buffers.first);
    derived().ContentPostProcessor().Assemble(&buffers.first, nullptr, options, out);
  }

  void EncodePair(std::string_view first, std::string_view second, const EncodeOptions& options, Encoding* out,
                  Scratch* scratch) const override {
    Scratch::Buffers& buffers = scratch->buffers();
    derived().EncodeContent(first, options.with_pieces, &buffers, &buffers.first);
    derived().EncodeContent(second, options.with_pieces, &buffers, &buffers.second);
    derived().ContentPostProcessor().Assemble(&buffers.first, &buffers.second, options, out);
  }

 private:
  const Derived& derived() const { return static_cast<const Derived&>(*this); }
};

}  // namespace stamen::tokenizer
