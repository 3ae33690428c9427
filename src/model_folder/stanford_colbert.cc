// Stanford ColBERT checkpoints (colbert-ir/colbertv2.0 and the folders its library saves):
// config.json's architecture HF_ColBERT, BERT's tensors under "bert." and the projection
// "linear.weight" [dim, hidden] in the same model.safetensors, the query and document settings
// in artifact.metadata. Read as PyLate's ColBERT reads them (Dense.from_stanford_weights and its
// artifact.metadata branch): one Dense module without bias or activation, the prefixes
// query_token_id / doc_token_id (default "[unused0]" / "[unused1]"), query_maxlen, doc_maxlen and
// attend_to_mask_tokens, PyLate's defaults for everything else.
//
// jina-colbert-v2 is such a checkpoint over jina's XLM-RoBERTa (tensors under "roberta."). Its
// markers are the tokens "[QueryMarker]" / "[DocumentMarker]" its tokenizer adds, and its query
// expansion tokens are attended to: the defaults when artifact.metadata does not say, as its
// model card runs it in PyLate (query_prefix, document_prefix, attend_to_expansion_tokens=True)
// and as vLLM's ColBERT preprocessing defaults for it.
#include <filesystem>

#include "common/files.h"
#include "model_folder/json_document.h"
#include "model_folder/model_config.h"

namespace stamen::engine {

namespace fs = std::filesystem;

bool IsStanfordColbert(const ModelConfig& config) {
  return config.architecture == kStanfordColbertArchitecture || config.architecture == kJinaColbertArchitecture;
}

Status ReadStanfordColbert(const std::string& model_dir, const ModelConfig& config, SentenceTransformersConfig* st) {
  auto projection = ReadRootProjection(model_dir, config, config.architecture);
  if (!projection.ok()) return projection.status();
  st->dense.push_back(*projection);
  MultiVectorConfig& multi_vector = st->multi_vector;
  multi_vector.enabled = true;
  const bool jina = config.architecture == kJinaColbertArchitecture;
  multi_vector.query_prefix = jina ? "[QueryMarker]" : "[unused0]";
  multi_vector.document_prefix = jina ? "[DocumentMarker]" : "[unused1]";
  multi_vector.attend_to_expansion_tokens = jina;
  const fs::path metadata = fs::path(model_dir) / "artifact.metadata";
  if (IsFile(metadata)) {
    auto document = JsonDocument::Load(metadata.string());
    if (!document.ok()) return document.status();
    const JsonObject root = document.value()->root();
    STAMEN_RETURN_IF_ERROR(root.Optional("query_token_id", &multi_vector.query_prefix));
    STAMEN_RETURN_IF_ERROR(root.Optional("doc_token_id", &multi_vector.document_prefix));
    STAMEN_RETURN_IF_ERROR(root.Optional("query_maxlen", &multi_vector.query_length));
    STAMEN_RETURN_IF_ERROR(root.Optional("doc_maxlen", &multi_vector.document_length));
    STAMEN_RETURN_IF_ERROR(root.Optional("attend_to_mask_tokens", &multi_vector.attend_to_expansion_tokens));
  }
  // PyLate's default skiplist: Python's string.punctuation, one character each.
  multi_vector.skiplist_words.clear();
  for (const char c : std::string_view("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")) multi_vector.skiplist_words.emplace_back(1, c);
  return Status();
}

}  // namespace stamen::engine
