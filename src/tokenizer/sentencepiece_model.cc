// Decodes the protobuf wire format of SentencePiece's ModelProto (proto2): varints,
// 32-bit floats and length-delimited submessages; unknown fields are skipped.
#include "tokenizer/sentencepiece_model.h"

#include <cstdint>
#include <cstring>
#include <optional>

namespace stamen::tokenizer {
namespace {

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// Walks the fields of one message; each `Next` yields a field number, its wire type and
// its payload (varint value or byte range).
class WireReader {
 public:
  explicit WireReader(std::string_view bytes) : bytes_(bytes) {}

  struct Field {
    uint32_t number = 0;
    WireType type = kVarint;
    uint64_t varint = 0;
    std::string_view payload;  // length-delimited and fixed-width fields
  };

  // Returns the next field, or nothing at the end; sets `error_` on malformed input.
  std::optional<Field> Next() {
    if (position_ >= bytes_.size() || !error_.empty()) return std::nullopt;
    uint64_t key = 0;
    if (!ReadVarint(&key)) return Fail("truncated field key");
    Field field;
    field.number = static_cast<uint32_t>(key >> 3);
    field.type = static_cast<WireType>(key & 7);
    switch (field.type) {
      case kVarint:
        if (!ReadVarint(&field.varint)) return Fail("truncated varint");
        break;
      case kFixed64:
        if (!ReadBytes(8, &field.payload)) return Fail("truncated 64-bit field");
        break;
      case kFixed32:
        if (!ReadBytes(4, &field.payload)) return Fail("truncated 32-bit field");
        break;
      case kLengthDelimited: {
        uint64_t length = 0;
        if (!ReadVarint(&length) || !ReadBytes(length, &field.payload)) {
          return Fail("truncated length-delimited field");
        }
        break;
      }
      default:
        return Fail("unsupported wire type " + std::to_string(static_cast<int>(field.type)));
    }
    return field;
  }

  const std::string& error() const { return error_; }

 private:
  std::optional<Field> Fail(std::string message) {
    error_ = std::move(message) + " at byte " + std::to_string(position_);
    return std::nullopt;
  }
  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (position_ >= bytes_.size()) return false;
      const auto byte = static_cast<unsigned char>(bytes_[position_++]);
      *value |= static_cast<uint64_t>(byte & 0x7F) << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;
  }
  bool ReadBytes(uint64_t length, std::string_view* out) {
    if (length > bytes_.size() - position_) return false;
    *out = bytes_.substr(position_, length);
    position_ += length;
    return true;
  }

  std::string_view bytes_;
  size_t position_ = 0;
  std::string error_;
};

float AsFloat(const WireReader::Field& field) {
  float value = 0;
  if (field.type == kFixed32) std::memcpy(&value, field.payload.data(), sizeof(value));
  return value;
}

// Proto int32 fields carry negative values as 64-bit two's complement varints.
int AsInt(const WireReader::Field& field) { return static_cast<int>(static_cast<int64_t>(field.varint)); }

Status ParsePiece(std::string_view bytes, SentencePiece* piece) {
  WireReader reader(bytes);
  while (auto field = reader.Next()) {
    if (field->number == 1 && field->type == kLengthDelimited) piece->text = field->payload;
    if (field->number == 2) piece->score = AsFloat(*field);
    if (field->number == 3 && field->type == kVarint) {
      const auto type = field->varint;
      if (type < 1 || type > 6) return Status::Error("piece has unknown type " + std::to_string(type));
      piece->type = static_cast<PieceType>(type);
    }
  }
  if (!reader.error().empty()) return Status::Error("malformed piece: " + reader.error());
  return Status();
}

Status ParseTrainerSpec(std::string_view bytes, SentencePieceModel* model) {
  WireReader reader(bytes);
  while (auto field = reader.Next()) {
    if (field->type == kVarint) {
      switch (field->number) {
        case 3: model->model_type = AsInt(*field); break;
        case 24: model->treat_whitespace_as_suffix = field->varint != 0; break;
        case 35: model->byte_fallback = field->varint != 0; break;
        case 40: model->unk_id = AsInt(*field); break;
        case 41: model->bos_id = AsInt(*field); break;
        case 42: model->eos_id = AsInt(*field); break;
        case 43: model->pad_id = AsInt(*field); break;
        default: break;
      }
    } else if (field->type == kLengthDelimited && field->number == 44) {
      model->unk_surface = field->payload;
    }
  }
  if (!reader.error().empty()) return Status::Error("malformed trainer_spec: " + reader.error());
  return Status();
}

Status ParseNormalizerSpec(std::string_view bytes, SentencePieceModel* model) {
  WireReader reader(bytes);
  while (auto field = reader.Next()) {
    if (field->type == kLengthDelimited) {
      if (field->number == 1) model->normalizer_name = field->payload;
      if (field->number == 2) model->precompiled_charsmap = field->payload;
    } else if (field->type == kVarint) {
      if (field->number == 3) model->add_dummy_prefix = field->varint != 0;
      if (field->number == 4) model->remove_extra_whitespaces = field->varint != 0;
      if (field->number == 5) model->escape_whitespaces = field->varint != 0;
    }
  }
  if (!reader.error().empty()) return Status::Error("malformed normalizer_spec: " + reader.error());
  return Status();
}

}  // namespace

StatusOr<SentencePieceModel> ParseSentencePieceModel(std::string_view bytes) {
  SentencePieceModel model;
  WireReader reader(bytes);
  while (auto field = reader.Next()) {
    if (field->type != kLengthDelimited) continue;
    Status status;
    if (field->number == 1) {
      model.pieces.emplace_back();
      status = ParsePiece(field->payload, &model.pieces.back());
    } else if (field->number == 2) {
      status = ParseTrainerSpec(field->payload, &model);
    } else if (field->number == 3) {
      status = ParseNormalizerSpec(field->payload, &model);
    }
    if (!status.ok()) return status;
  }
  if (!reader.error().empty()) return Status::Error("not a SentencePiece model: " + reader.error());
  if (model.pieces.empty()) return Status::Error("not a SentencePiece model: it has no pieces");
  return model;
}

}  // namespace stamen::tokenizer
