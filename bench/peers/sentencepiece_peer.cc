// SentencePiece as a benchmark peer, built as a module the benchmark loads at run time.
//
// Why a module: Debian's libsentencepiece carries its own copy of protobuf-lite and exports
// its symbols; linked into `stamen` next to libprotobuf (gRPC) the two copies interpose and
// the program crashes before main. Loaded with dlopen(RTLD_LOCAL | RTLD_DEEPBIND) it binds
// to its own copy and stays invisible to the rest of the process.
#include <sentencepiece_processor.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct Peer {
  sentencepiece::SentencePieceProcessor processor;
  std::vector<int> ids;
};

}  // namespace

extern "C" {

// Loads a .model; returns null and writes a message to `error` on failure.
void* stamen_sentencepiece_load(const char* model_path, char* error, size_t error_size) {
  auto* peer = new Peer();
  const auto status = peer->processor.Load(model_path);
  if (status.ok()) return peer;
  const std::string message = status.ToString();
  std::strncpy(error, message.c_str(), error_size - 1);
  error[error_size - 1] = '\0';
  delete peer;
  return nullptr;
}

// Encodes `text` and returns the number of ids.
size_t stamen_sentencepiece_encode(void* handle, const char* text, size_t length) {
  auto* peer = static_cast<Peer*>(handle);
  peer->processor.Encode(std::string_view(text, length), &peer->ids);
  return peer->ids.size();
}

void stamen_sentencepiece_free(void* handle) { delete static_cast<Peer*>(handle); }

}  // extern "C"
