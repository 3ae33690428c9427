// The registry row of static embedding models (model2vec's StaticModel, sentence-transformers'
// StaticEmbedding; engine/models/static_embedding.cc runs them). Their folders hold no
// transformer config: ReadModelFolder reads them whole (model_folder/static_embedding.cc), and
// this row names their architectures and refuses a config.json read on its own.
#include "model_folder/family_config.h"

namespace stamen::engine {
namespace {

Status ReadSettings(const JsonObject& root, ModelConfig* config) {
  return Status::Error(root.file() + ": a static embedding model (" + config->architecture +
                       ") is read from its whole folder (the embedding table's shape and the tokenizer), "
                       "not from config.json alone");
}

constexpr ArchitectureDefinition kArchitectures[] = {
    {"StaticModel", ModelHead::kNone, "", "model2vec"},
    {"StaticEmbedding", ModelHead::kNone, "", ""},
};

}  // namespace

extern const FamilyConfig kStaticEmbeddingFamilyConfig{
    .architectures = kArchitectures, .read_settings = ReadSettings};

}  // namespace stamen::engine
