// Reader of SentencePiece's `.model` file (a serialized ModelProto), written against the
// protobuf wire format so that no protobuf or sentencepiece library is needed at run time.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace stamen::tokenizer {

// SentencePiece's piece types, with the numbers of sentencepiece_model.proto.
enum class PieceType : unsigned char {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

struct SentencePiece {
  std::string text;
  float score = 0;
  PieceType type = PieceType::kNormal;
};

// The fields of ModelProto that encoding depends on, with the proto's defaults.
struct SentencePieceModel {
  std::vector<SentencePiece> pieces;
  int model_type = 1;  // 1 Unigram, 2 BPE, 3 word, 4 char
  bool byte_fallback = false;
  bool treat_whitespace_as_suffix = false;
  int unk_id = 0;
  int bos_id = 1;
  int eos_id = 2;
  int pad_id = -1;
  std::string unk_surface = " \xE2\x81\x87 ";  // " ⁇ ", what Decode prints for <unk>
  std::string normalizer_name;
  std::string precompiled_charsmap;
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

// Parses a serialized ModelProto. Errors say which field is malformed.
StatusOr<SentencePieceModel> ParseSentencePieceModel(std::string_view bytes);

}  // namespace stamen::tokenizer
