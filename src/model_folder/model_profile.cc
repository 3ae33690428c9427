// One model's profile (see model_profile.h).
#include "model_folder/model_profile.h"

#include "model_folder/model_tokenizer.h"

namespace stamen::engine {

ModelProfile ProfileOf(const ModelConfig& config, const SentenceTransformersConfig& sentence_transformers) {
  ModelProfile profile;
  const bool classifier = config.head == ModelHead::kSequenceClassification;
  profile.kind = !classifier ? ModelKind::kEmbedding : config.num_labels == 1 ? ModelKind::kReranker : ModelKind::kClassifier;
  profile.default_pooling = DefaultPooling(config, sentence_transformers);
  profile.sparse = profile.default_pooling == ops::PoolingMode::kSplade;
  profile.multi_vector = sentence_transformers.multi_vector.enabled;
  profile.bge_m3 = config.bge_m3.enabled;
  profile.pooled_width = sentence_transformers.EmbeddingWidth(config.hidden_size);
  profile.embedding_width = profile.sparse ? config.vocab_size : profile.pooled_width;
  profile.hidden_size = config.hidden_size;
  profile.max_sequence_length = MaxSequenceLength(config, sentence_transformers);
  profile.vocabulary_size = config.vocab_size;
  profile.type_vocabulary_size = config.type_vocab_size;
  profile.num_labels = classifier ? config.num_labels : 0;
  profile.task_adapters = config.lora_rank > 0 ? static_cast<int64_t>(config.adapter_tasks.size()) : 0;
  return profile;
}

std::string_view ModelKindName(ModelKind kind) {
  switch (kind) {
    case ModelKind::kEmbedding: return "embedding";
    case ModelKind::kReranker: return "reranker";
    case ModelKind::kClassifier: return "classifier";
  }
  return "embedding";
}

}  // namespace stamen::engine
