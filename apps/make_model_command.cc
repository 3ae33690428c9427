// Implements `stamen make-model`. Weights are F32 from a seeded generator (xoshiro256** with a
// Box-Muller transform, so the same seed gives the same bytes on every machine): matrices and
// embeddings N(0, 0.02²) as transformers initialises them (initializer_range), biases
// N(0, 0.02²), norm weights 1 + N(0, 0.02²), norm biases N(0, 0.02²). The tensors are those
// of the family's tensor schema (models/family.h), which the loader reads too. Each tensor's
// stream is seeded from (seed, tensor name), and is written in chunks, so memory stays small
// even for a 250k-row embedding table.
#include "make_model_command.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <numbers>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "model_folder/model_tokenizer.h"
#include "engine/models/family.h"

namespace stamen::apps {
namespace {

namespace fs = std::filesystem;

// kQwen3Reranker: Qwen3ForCausalLM with tied embeddings and no sentence-transformers files, which
// stamen runs as a yes/no reranker (engine/yes_no_reranker.h), as Qwen/Qwen3-Reranker-0.6B ships.
enum class Family {
  kBert, kBertClassifier, kXlmRoberta, kXlmRobertaClassifier, kQwen3, kQwen3Reranker, kMpnet, kModernBert, kGemma3,
  // Issue 48: bidirectional Llama / Qwen3 encoders.
  kEuroBert, kPplxQwen3, kLlamaBidirectional,
  // Issue 48: llama-nemotron-rerank (LlamaBidirectionalForSequenceClassification: mean-pooled `score`).
  kLlamaBidirectionalReranker,
  // Issue 48: EuroBertForSequenceClassification, as a fine-tune of the hub's remote code saves it.
  kEuroBertReranker,
  // Issue 48: rotary post-norm encoders, as the hub's folders hold them.
  kNomicBert, kGte, kGteReranker,
  // Issue 48: NomicBERT with experts (nomic-embed-text-v2-moe), the hub's remote-code layout.
  kNomicBertMoe,
  // Issue 48: voyage-4-nano (Qwen3BidirectionalModel: bidirectional Qwen3, `linear` projection).
  kVoyageQwen3,
  // Issue 48: JinaBERT (ALiBi), as the hub's folders hold it; kJinaBertCode is
  // jina-embeddings-v2-base-code's (jinaai/jina-bert-v2-qk-post-norm's layers).
  kJinaBert, kJinaBertReranker, kJinaBertCode,
  // Issue 48: jina-embeddings-v3 with its five task LoRA adapters, as the hub holds it.
  kJinaEmbeddingsV3,
  // Issue 44: LLM rerankers, *ForCausalLM with tied embeddings run as yes/no rerankers
  // (model_folder/yes_no_reranker.h): Qwen2 (mxbai-rerank-v2), Gemma (bge-reranker-v2-gemma).
  kQwen2Reranker, kGemmaReranker,
  // Issue 44: Gemma 2 (Gemma2ForCausalLM, soft-capped) run as a yes/no reranker.
  kGemma2Reranker,
  // Issue 44: a Stanford ColBERT checkpoint (colbertv2.0): HF_ColBERT, BERT under "bert." and
  // the projection "linear.weight" in one file, artifact.metadata (model_folder/stanford_colbert.cc).
  kStanfordColbert,
};

struct Like {
  const char* name;
  Family family;
  int64_t hidden, layers, heads, kv_heads, head_dim, intermediate, max_positions, vocab, type_vocab;
  const char* pooling;   // sentence-transformers pooling_mode; nullptr: no sentence-transformers files
  int64_t max_seq_length;
  const char* tokenizer;  // default tokenizer folder, under the shipped tokenizers (ShippedTokenizers)
};

constexpr Like kLikes[] = {
    {"xlm-roberta-base", Family::kXlmRoberta, 768, 12, 12, 12, 64, 3072, 514, 250002, 1, "mean", 512, "xlm-roberta-trimmed-32k"},
    {"all-MiniLM-L6-v2", Family::kBert, 384, 6, 12, 12, 32, 1536, 512, 30522, 2, "mean", 256, "bert-base-uncased"},
    {"qwen3-0.6b", Family::kQwen3, 1024, 28, 16, 8, 128, 3072, 32768, 151669, 0, "lasttoken", 8192, "qwen2"},
    {"qwen3-reranker-0.6b", Family::kQwen3Reranker, 1024, 28, 16, 8, 128, 3072, 40960, 151669, 0, nullptr, 0, "qwen2"},
    {"bge-reranker-base", Family::kXlmRobertaClassifier, 768, 12, 12, 12, 64, 3072, 514, 250002, 1, nullptr, 512,
     "xlm-roberta-trimmed-32k"},
    {"ms-marco-MiniLM-L6-v2", Family::kBertClassifier, 384, 6, 12, 12, 32, 1536, 512, 30522, 2, nullptr, 512,
     "bert-base-uncased"},
    // all-mpnet-base-v2's shapes (microsoft/mpnet-base); its WordPiece vocabulary is BERT's
    // uncased one plus five tokens, so BERT's tokenizer gives ids it can take.
    {"mpnet-base", Family::kMpnet, 768, 12, 12, 12, 64, 3072, 514, 30527, 0, "mean", 384, "bert-base-uncased"},
    // answerdotai/ModernBERT-base's shapes, pooled as gte-modernbert-base is (cls, 8,192 tokens);
    // BERT's tokenizer stands in for its byte-level BPE (ids < 30,522 fit its 50,368).
    {"modernbert-base", Family::kModernBert, 768, 22, 12, 12, 64, 1152, 8192, 50368, 0, "cls", 8192, "bert-base-uncased"},
    // google/embeddinggemma-300m's shapes and sentence-transformers pipeline (mean pooling,
    // Dense 768→3072→768, Normalize; its query/document prompts); BERT's tokenizer stands in
    // for Gemma's 262k one (33 MB, not shipped).
    {"embeddinggemma-300m", Family::kGemma3, 768, 24, 3, 1, 256, 1152, 2048, 262144, 0, "mean", 2048, "bert-base-uncased"},
    // Issue 48. EuroBERT/EuroBERT-210m as the hub ships it (EuroBertForMaskedLM, no
    // sentence-transformers files: mean pooling, the bidirectional default); BERT's tokenizer
    // stands in for its Llama 3 one (ids < 30,522 fit its 128,256).
    {"EuroBERT-210m", Family::kEuroBert, 768, 12, 12, 12, 64, 3072, 8192, 128256, 0, nullptr, 0, "bert-base-uncased"},
    // EuroBERT-210m fine-tuned as a reranker (EuroBertForSequenceClassification, clf_pooling "late",
    // the default; --labels for a classifier), the hub's auto_map naming its head's class.
    {"EuroBERT-210m-reranker", Family::kEuroBertReranker, 768, 12, 12, 12, 64, 3072, 8192, 128256, 0, nullptr, 0,
     "bert-base-uncased"},
    // perplexity-ai/pplx-embed-v1-0.6b and -4b (Qwen3-0.6B's and Qwen3-4B's shapes, bidirectional,
    // mean pooling, int8 vectors); Qwen's tokenizer.
    {"pplx-embed-v1-0.6b", Family::kPplxQwen3, 1024, 28, 16, 8, 128, 3072, 32768, 151936, 0, "mean", 32768, "qwen2"},
    {"pplx-embed-v1-4b", Family::kPplxQwen3, 2560, 36, 32, 8, 128, 9728, 32768, 151936, 0, "mean", 32768, "qwen2"},
    // voyageai/voyage-4-nano: its config.json was not seen here; the shapes are Qwen3-0.6B's layers,
    // 12 of them, which its model.safetensors' size (692,919,112 bytes of BF16) fits to within the
    // file's header: 151,936 × 1,024 embeddings + 12 × 15.73 M + the 2,048 × 1,024 `linear`.
    // Bidirectional, mean pooling, normalised; Qwen's tokenizer.
    {"voyage-4-nano", Family::kVoyageQwen3, 1024, 12, 16, 8, 128, 3072, 32768, 151936, 0, "mean", 32768, "qwen2"},
    // nvidia/llama-nemotron-embed-1b-v2 (Llama 3.2 1B's shapes with Llama 3's RoPE scaling,
    // bidirectional, mean pooling, tied embeddings); BERT's tokenizer stands in for Llama 3's.
    {"llama-nemotron-embed-1b-v2", Family::kLlamaBidirectional, 2048, 16, 32, 8, 64, 8192, 131072, 128256, 0, "mean",
     8192, "bert-base-uncased"},
    // nvidia/llama-nemotron-rerank-1b-v2: the same backbone as LlamaBidirectionalForSequenceClassification
    // (its "avg" pooling, `score` [labels, hidden] beside "model."; --labels for a classifier); no
    // sentence-transformers files. BERT's tokenizer stands in for Llama 3's.
    {"llama-nemotron-rerank-1b-v2", Family::kLlamaBidirectionalReranker, 2048, 16, 32, 8, 64, 8192, 131072, 128256, 0,
     nullptr, 0, "bert-base-uncased"},
    // nomic-ai/nomic-embed-text-v1.5 (NomicBERT: the remote code's config keys beside
    // transformers 5's, mean pooling, its search_query: / search_document: prompts, 2,048
    // positions); its tokenizer is BERT's uncased one.
    {"nomic-embed-text-v1.5", Family::kNomicBert, 768, 12, 12, 12, 64, 3072, 2048, 30528, 2, "mean", 2048,
     "bert-base-uncased"},
    // nomic-ai/nomic-embed-text-v2-moe (the remote code's config: biases, gelu, 8 experts of
    // 3,072 in every odd layer, top 2; mean pooling over 512 tokens, its query / passage
    // prompts); its XLM-R vocabulary is the trimmed XLM-R tokenizer's superset. Its expert layers
    // are layers 1, 3, …: a folder needs --layers 2 or more to hold one.
    {"nomic-embed-text-v2-moe", Family::kNomicBertMoe, 768, 12, 12, 12, 64, 3072, 2048, 250048, 1, "mean", 512,
     "xlm-roberta-trimmed-32k"},
    // Alibaba-NLP/gte-base-en-v1.5 (model_type "new", NTK factor 2, no token types, CLS pooling;
    // BERT's uncased tokenizer) and gte-multilingual-base and its reranker (NTK factor 8, XLM-R's
    // vocabulary; the trimmed XLM-R tokenizer gives ids it can take).
    {"gte-base-en-v1.5", Family::kGte, 768, 12, 12, 12, 64, 3072, 8192, 30528, 0, "cls", 8192, "bert-base-uncased"},
    {"gte-multilingual-base", Family::kGte, 768, 12, 12, 12, 64, 3072, 8192, 250048, 1, "cls", 8192,
     "xlm-roberta-trimmed-32k"},
    {"gte-multilingual-reranker-base", Family::kGteReranker, 768, 12, 12, 12, 64, 3072, 8192, 250048, 1, nullptr, 0,
     "xlm-roberta-trimmed-32k"},
    // jinaai/jina-embeddings-v2-base-en (JinaBERT: ALiBi over 8,192 positions, GEGLU, mean
    // pooling, BERT's uncased tokenizer) and jina-reranker-v1-turbo-en (6 layers of 384, 12 heads;
    // BERT's tokenizer stands in for its own).
    {"jina-embeddings-v2-base-en", Family::kJinaBert, 768, 12, 12, 12, 64, 3072, 8192, 30528, 2, "mean", 8192,
     "bert-base-uncased"},
    {"jina-reranker-v1-turbo-en", Family::kJinaBertReranker, 384, 6, 12, 12, 32, 1536, 8192, 30528, 2, nullptr, 0,
     "bert-base-uncased"},
    // jinaai/jina-embeddings-v2-base-code (the qk-post-norm layers, 61,056 tokens of its own
    // byte-level BPE, mean pooling); BERT's tokenizer stands in (ids < 30,522 fit).
    {"jina-embeddings-v2-base-code", Family::kJinaBertCode, 768, 12, 12, 12, 64, 3072, 8192, 61056, 2, "mean", 8192,
     "bert-base-uncased"},
    // jinaai/jina-embeddings-v3 (the hub's XLMRobertaLoRA config and tensors: rotary, 8,194
    // positions, five rank-4 task adapters and their prompts, mean pooling); its XLM-R vocabulary
    // is the trimmed XLM-R tokenizer's superset.
    {"jina-embeddings-v3", Family::kJinaEmbeddingsV3, 1024, 24, 16, 16, 64, 4096, 8194, 250002, 1, "mean", 8194,
     "xlm-roberta-trimmed-32k"},
    // Issue 44. mixedbread-ai/mxbai-rerank-base-v2 (Qwen2-0.5B's shapes, tied); Qwen's tokenizer.
    {"mxbai-rerank-base-v2", Family::kQwen2Reranker, 896, 24, 14, 2, 64, 4864, 32768, 151936, 0, nullptr, 0, "qwen2"},
    // BAAI/bge-reranker-v2-gemma (gemma-2b's shapes: multi-query attention, head_dim 256,
    // tied); BERT's uncased tokenizer stands in for Gemma's 256k one, with a
    // yes_no_reranker.json that scores its "yes" and opens with its [CLS].
    // BERT-base with ColBERT's 128-dimension projection; BERT's tokenizer has the [unused0] /
    // [unused1] prefix tokens.
    {"colbertv2.0", Family::kStanfordColbert, 768, 12, 12, 12, 64, 3072, 512, 30522, 2, nullptr, 0, "bert-base-uncased"},
    {"bge-reranker-v2-gemma", Family::kGemmaReranker, 2048, 18, 8, 1, 256, 16384, 8192, 256000, 0, nullptr, 0,
     "bert-base-uncased"},
    // BAAI/bge-reranker-v2.5-gemma2-lightweight (gemma-2-9b's shapes: 42 layers alternating sliding and full,
    // soft-capped attention and logits) as its hub folder has it: CostWiseGemmaForCausalLM with a one-output head
    // per layer from start_layer 8 (or the last layer, when --layers leaves fewer); BERT's tokenizer stands in, as above.
    {"bge-reranker-v2.5-gemma2-lightweight", Family::kGemma2Reranker, 3584, 42, 16, 8, 256, 14336, 8192, 256000, 0,
     nullptr, 0, "bert-base-uncased"},
};

// ColBERT's projection width (colbertv2.0's "dim").
constexpr int64_t kColbertDimension = 128;
// voyage-4-nano's projection width (its num_labels).
constexpr int64_t kVoyageDimension = 2048;

// EmbeddingGemma's Dense modules after pooling: in → out features, no bias, identity.
constexpr int64_t kGemmaDense[][2] = {{768, 3072}, {3072, 768}};

// Files of a tokenizer folder worth copying.
constexpr const char* kTokenizerFiles[] = {"tokenizer.json",   "tokenizer_config.json", "special_tokens_map.json",
                                           "sentencepiece.bpe.model", "vocab.txt",     "vocab.json",
                                           "merges.txt",     "spm.model",             "added_tokens.json"};

int Fail(const std::string& message) {
  std::cerr << "stamen make-model: " << message << "\n";
  return 2;
}

// --- the random stream ---

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

class Normal {
 public:
  Normal(uint64_t seed, const std::string& name) {
    uint64_t state = seed;
    for (unsigned char c : name) state = (state ^ c) * 0x100000001B3ull;  // FNV-1a over the name
    for (uint64_t& word : s_) word = SplitMix64(state);
  }
  // Two N(0, 1) samples per Box-Muller step; the spare is returned next.
  float Next() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double u1 = (static_cast<double>(Bits() >> 11) + 1.0) * 0x1.0p-53;  // (0, 1]
    const double u2 = static_cast<double>(Bits() >> 11) * 0x1.0p-53;          // [0, 1)
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    spare_ = static_cast<float>(radius * std::sin(angle));
    has_spare_ = true;
    return static_cast<float>(radius * std::cos(angle));
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t Bits() {  // xoshiro256**
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  uint64_t s_[4];
  float spare_ = 0.0f;
  bool has_spare_ = false;
};

// --- config.json and the sentence-transformers files ---

// A classifier's "id2label" and "label2id" lines: LABEL_0 … LABEL_{labels-1}, as transformers names them.
std::string LabelsJson(int64_t labels) {
  std::string id2label, label2id;
  for (int64_t i = 0; i < labels; ++i) {
    const std::string index = std::to_string(i), name = "\"LABEL_" + index + "\"";
    id2label += (i ? ", \"" : "\"") + index + "\": " + name;
    label2id += (i ? ", " : "") + name + ": " + index;
  }
  return "  \"id2label\": {" + id2label + "},\n  \"label2id\": {" + label2id + "},\n";
}

// The shape keys of a Llama-style config.json (the issue 48 encoders), fp32, ending the object:
// its last line has no comma. `activation` is the activation's key and value (Llama's silu unless
// a family names its own, as Gemma's configs do).
std::string DecoderShapesJson(const Like& like, int64_t layers, int64_t vocab,
                              const std::string& activation = "\"hidden_act\": \"silu\"") {
  return "  \"head_dim\": " + std::to_string(like.head_dim) + ",\n  " + activation + ",\n  \"hidden_size\": " +
         std::to_string(like.hidden) + ",\n  \"intermediate_size\": " + std::to_string(like.intermediate) +
         ",\n  \"max_position_embeddings\": " + std::to_string(like.max_positions) + ",\n  \"num_attention_heads\": " +
         std::to_string(like.heads) + ",\n  \"num_hidden_layers\": " + std::to_string(layers) +
         ",\n  \"num_key_value_heads\": " + std::to_string(like.kv_heads) + ",\n  \"torch_dtype\": \"float32\",\n"
         "  \"vocab_size\": " + std::to_string(vocab) + "\n";
}

std::string ConfigJson(const Like& like, int64_t layers, int64_t vocab, int64_t labels) {
  const std::string n = std::to_string(layers), v = std::to_string(vocab);
  const std::string h = std::to_string(like.hidden), heads = std::to_string(like.heads);
  const std::string ffn = std::to_string(like.intermediate), positions = std::to_string(like.max_positions);
  switch (like.family) {
    case Family::kQwen3:
    case Family::kQwen3Reranker:
      return std::string("{\n  \"architectures\": [\"") +
             (like.family == Family::kQwen3 ? "Qwen3Model" : "Qwen3ForCausalLM") + "\"],\n  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n"
             "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151643,\n  \"head_dim\": " + std::to_string(like.head_dim) +
             ",\n  \"hidden_act\": \"silu\",\n  \"hidden_size\": " + h + ",\n  \"initializer_range\": 0.02,\n"
             "  \"intermediate_size\": " + ffn + ",\n  \"max_position_embeddings\": " + positions + ",\n"
             "  \"max_window_layers\": " + n + ",\n  \"model_type\": \"qwen3\",\n  \"num_attention_heads\": " + heads +
             ",\n  \"num_hidden_layers\": " + n + ",\n  \"num_key_value_heads\": " + std::to_string(like.kv_heads) +
             ",\n  \"rms_norm_eps\": 1e-06,\n  \"rope_scaling\": null,\n  \"rope_theta\": 1000000,\n"
             "  \"sliding_window\": null,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"float32\",\n"
             "  \"use_cache\": true,\n  \"use_sliding_window\": false,\n  \"vocab_size\": " + v + "\n}\n";
    case Family::kBert:
    case Family::kBertClassifier:
    case Family::kStanfordColbert: {
      const bool classifier = like.family == Family::kBertClassifier;
      return std::string("{\n  \"architectures\": [\"") +
             (classifier ? "BertForSequenceClassification" : like.family == Family::kStanfordColbert ? "HF_ColBERT" : "BertModel") +
             "\"],\n  \"attention_probs_dropout_prob\": 0.1,\n" +
             (classifier ? LabelsJson(labels) : "") +
             "  \"hidden_act\": \"gelu\",\n  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": " + h + ",\n"
             "  \"initializer_range\": 0.02,\n  \"intermediate_size\": " + ffn + ",\n  \"layer_norm_eps\": 1e-12,\n"
             "  \"max_position_embeddings\": " + positions + ",\n  \"model_type\": \"bert\",\n"
             "  \"num_attention_heads\": " + heads + ",\n  \"num_hidden_layers\": " + n + ",\n  \"pad_token_id\": 0,\n"
             "  \"position_embedding_type\": \"absolute\",\n  \"torch_dtype\": \"float32\",\n"
             "  \"type_vocab_size\": " + std::to_string(like.type_vocab) + ",\n  \"vocab_size\": " + v + "\n}\n";
    }
    case Family::kMpnet:
      return "{\n  \"architectures\": [\"MPNetModel\"],\n  \"attention_probs_dropout_prob\": 0.1,\n  \"bos_token_id\": 0,\n"
             "  \"eos_token_id\": 2,\n  \"hidden_act\": \"gelu\",\n  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": " + h +
             ",\n  \"initializer_range\": 0.02,\n  \"intermediate_size\": " + ffn + ",\n  \"layer_norm_eps\": 1e-05,\n"
             "  \"max_position_embeddings\": " + positions + ",\n  \"model_type\": \"mpnet\",\n  \"num_attention_heads\": " +
             heads + ",\n  \"num_hidden_layers\": " + n + ",\n  \"pad_token_id\": 1,\n"
             "  \"relative_attention_num_buckets\": 32,\n  \"torch_dtype\": \"float32\",\n  \"vocab_size\": " + v + "\n}\n";
    case Family::kModernBert:
      // As ModernBERT-base's config.json has it (before transformers wrote layer_types):
      // global attention every third layer, a 128-token window elsewhere.
      return "{\n  \"architectures\": [\"ModernBertModel\"],\n  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n"
             "  \"bos_token_id\": 50281,\n  \"classifier_activation\": \"gelu\",\n  \"classifier_pooling\": \"mean\",\n"
             "  \"cls_token_id\": 50281,\n  \"decoder_bias\": true,\n  \"embedding_dropout\": 0.0,\n  \"eos_token_id\": 50282,\n"
             "  \"global_attn_every_n_layers\": 3,\n  \"global_rope_theta\": 160000.0,\n  \"hidden_activation\": \"gelu\",\n"
             "  \"hidden_size\": " + h + ",\n  \"initializer_cutoff_factor\": 2.0,\n  \"initializer_range\": 0.02,\n"
             "  \"intermediate_size\": " + ffn + ",\n  \"local_attention\": 128,\n  \"local_rope_theta\": 10000.0,\n"
             "  \"max_position_embeddings\": " + positions + ",\n  \"mlp_bias\": false,\n  \"mlp_dropout\": 0.0,\n"
             "  \"model_type\": \"modernbert\",\n  \"norm_bias\": false,\n  \"norm_eps\": 1e-05,\n"
             "  \"num_attention_heads\": " + heads + ",\n  \"num_hidden_layers\": " + n + ",\n  \"pad_token_id\": 50283,\n"
             "  \"sep_token_id\": 50282,\n  \"tie_word_embeddings\": true,\n  \"torch_dtype\": \"float32\",\n"
             "  \"vocab_size\": " + v + "\n}\n";
    case Family::kGemma3: {
      // Every sixth layer attends globally, the others through a 512-token window.
      std::string layer_types;
      for (int64_t i = 0; i < layers; ++i) {
        layer_types += std::string(i ? ", " : "") + ((i + 1) % 6 == 0 ? "\"full_attention\"" : "\"sliding_attention\"");
      }
      return "{\n  \"architectures\": [\"Gemma3TextModel\"],\n  \"attention_bias\": false,\n  \"attention_dropout\": 0.0,\n"
             "  \"attn_logit_softcapping\": null,\n  \"bos_token_id\": 2,\n  \"eos_token_id\": 1,\n"
             "  \"final_logit_softcapping\": null,\n  \"head_dim\": " + std::to_string(like.head_dim) + ",\n"
             "  \"hidden_activation\": \"gelu_pytorch_tanh\",\n  \"hidden_size\": " + h + ",\n  \"initializer_range\": 0.02,\n"
             "  \"intermediate_size\": " + ffn + ",\n  \"layer_types\": [" + layer_types + "],\n"
             "  \"max_position_embeddings\": " + positions + ",\n  \"model_type\": \"gemma3_text\",\n"
             "  \"num_attention_heads\": " + heads + ",\n  \"num_hidden_layers\": " + n + ",\n"
             "  \"num_key_value_heads\": " + std::to_string(like.kv_heads) + ",\n  \"pad_token_id\": 0,\n"
             "  \"query_pre_attn_scalar\": 256,\n  \"rms_norm_eps\": 1e-06,\n  \"rope_local_base_freq\": 10000.0,\n"
             "  \"rope_scaling\": null,\n  \"rope_theta\": 1000000.0,\n  \"sliding_window\": 512,\n"
             "  \"torch_dtype\": \"float32\",\n  \"use_bidirectional_attention\": true,\n  \"vocab_size\": " + v + "\n}\n";
    }
    // Issue 44: as the hub's config.json of each has it (bge-reranker-v2-gemma's legacy "gelu"
    // is GemmaConfig's tanh approximation).
    case Family::kQwen2Reranker:
      return "{\n  \"architectures\": [\"Qwen2ForCausalLM\"],\n  \"attention_dropout\": 0.0,\n"
             "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151643,\n  \"max_window_layers\": " + n + ",\n"
             "  \"model_type\": \"qwen2\",\n  \"rms_norm_eps\": 1e-06,\n  \"rope_scaling\": null,\n"
             "  \"rope_theta\": 1000000.0,\n  \"sliding_window\": null,\n  \"tie_word_embeddings\": true,\n"
             "  \"use_cache\": true,\n  \"use_sliding_window\": false,\n" + DecoderShapesJson(like, layers, vocab) +
             "}\n";
    case Family::kGemma2Reranker:
      return "{\n  \"architectures\": [\"CostWiseGemmaForCausalLM\"],\n  \"attention_bias\": false,\n"
             "  \"attention_dropout\": 0.0,\n  \"attn_logit_softcapping\": 50.0,\n"
             "  \"auto_map\": {\"AutoConfig\": \"BAAI/bge-reranker-v2.5-gemma2-lightweight--gemma_config.CostWiseGemmaConfig\", "
             "\"AutoModel\": \"BAAI/bge-reranker-v2.5-gemma2-lightweight--gemma_model.CostWiseGemmaModel\", "
             "\"AutoModelForCausalLM\": \"BAAI/bge-reranker-v2.5-gemma2-lightweight--gemma_model.CostWiseGemmaForCausalLM\"},\n"
             "  \"bos_token_id\": 2,\n  \"eos_token_id\": 1,\n  \"final_logit_softcapping\": 30.0,\n"
             "  \"layer_sep\": 1,\n  \"layer_wise\": true,\n  \"model_type\": \"cost_wise_gemma\",\n"
             "  \"pad_token_id\": 0,\n  \"query_pre_attn_scalar\": 256,\n  \"rms_norm_eps\": 1e-06,\n"
             "  \"rope_theta\": 10000.0,\n  \"sliding_window\": 4096,\n  \"start_layer\": " +
             std::to_string(std::min<int64_t>(8, layers)) + ",\n  \"use_cache\": true,\n" +
             DecoderShapesJson(like, layers, vocab, "\"hidden_activation\": \"gelu_pytorch_tanh\"") + "}\n";
    case Family::kGemmaReranker:
      return "{\n  \"architectures\": [\"GemmaForCausalLM\"],\n  \"attention_bias\": false,\n"
             "  \"attention_dropout\": 0.0,\n  \"bos_token_id\": 2,\n  \"eos_token_id\": 1,\n  \"model_type\": \"gemma\",\n"
             "  \"pad_token_id\": 0,\n  \"rms_norm_eps\": 1e-06,\n  \"rope_scaling\": null,\n  \"rope_theta\": 10000.0,\n"
             "  \"tie_word_embeddings\": true,\n  \"use_cache\": true,\n" +
             DecoderShapesJson(like, layers, vocab, "\"hidden_act\": \"gelu\"") + "}\n";
    // Issue 48: the hub's config.json of each, auto_map included; the shapes as DecoderShapesJson writes them.
    case Family::kEuroBert:
      return "{\n  \"architectures\": [\"EuroBertForMaskedLM\"],\n  \"attention_bias\": false,\n"
             "  \"auto_map\": {\"AutoConfig\": \"configuration_eurobert.EuroBertConfig\", "
             "\"AutoModel\": \"modeling_eurobert.EuroBertModel\", \"AutoModelForMaskedLM\": \"modeling_eurobert.EuroBertForMaskedLM\"},\n"
             "  \"bos_token_id\": 128000,\n  \"eos_token_id\": 128001,\n  \"mask_token_id\": 128002,\n  \"mlp_bias\": false,\n"
             "  \"model_type\": \"eurobert\",\n  \"pad_token_id\": 128001,\n  \"rms_norm_eps\": 1e-05,\n"
             "  \"rope_scaling\": null,\n  \"rope_theta\": 250000,\n  \"tie_word_embeddings\": false,\n" +
             DecoderShapesJson(like, layers, vocab) + "}\n";
    case Family::kEuroBertReranker:
      return "{\n  \"architectures\": [\"EuroBertForSequenceClassification\"],\n  \"attention_bias\": false,\n"
             "  \"auto_map\": {\"AutoConfig\": \"configuration_eurobert.EuroBertConfig\", "
             "\"AutoModel\": \"modeling_eurobert.EuroBertModel\", "
             "\"AutoModelForSequenceClassification\": \"modeling_eurobert.EuroBertForSequenceClassification\"},\n"
             "  \"clf_pooling\": \"late\",\n" + LabelsJson(labels) +
             "  \"bos_token_id\": 128000,\n  \"eos_token_id\": 128001,\n  \"mask_token_id\": 128002,\n  \"mlp_bias\": false,\n"
             "  \"model_type\": \"eurobert\",\n  \"pad_token_id\": 128001,\n  \"rms_norm_eps\": 1e-05,\n"
             "  \"rope_scaling\": null,\n  \"rope_theta\": 250000,\n  \"tie_word_embeddings\": false,\n" +
             DecoderShapesJson(like, layers, vocab) + "}\n";
    case Family::kPplxQwen3:
      return "{\n  \"architectures\": [\"PPLXQwen3Model\"],\n  \"attention_bias\": false,\n"
             "  \"auto_map\": {\"AutoConfig\": \"configuration.PPLXQwen3Config\", \"AutoModel\": \"modeling.PPLXQwen3Model\"},\n"
             "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151643,\n  \"model_type\": \"bidirectional_pplx_qwen3\",\n"
             "  \"rms_norm_eps\": 1e-06,\n  \"rope_parameters\": {\"rope_theta\": 1000000, \"rope_type\": \"default\"},\n"
             "  \"sliding_window\": null,\n  \"tie_word_embeddings\": true,\n  \"use_bidirectional_attention\": true,\n"
             "  \"use_cache\": false,\n  \"use_sliding_window\": false,\n" + DecoderShapesJson(like, layers, vocab) + "}\n";
    case Family::kVoyageQwen3:
      // As voyage-4-nano's remote code reads it: a Qwen3 config with the class in auto_map, the
      // projection's width as num_labels.
      return "{\n  \"architectures\": [\"Qwen3BidirectionalModel\"],\n  \"attention_bias\": false,\n"
             "  \"auto_map\": {\"AutoModel\": \"modeling_qwen3_bidirectional.Qwen3BidirectionalModel\"},\n"
             "  \"bos_token_id\": 151643,\n  \"eos_token_id\": 151643,\n  \"model_type\": \"qwen3\",\n"
             "  \"num_labels\": " + std::to_string(kVoyageDimension) + ",\n  \"rms_norm_eps\": 1e-06,\n"
             "  \"rope_parameters\": {\"rope_theta\": 1000000, \"rope_type\": \"default\"},\n"
             "  \"sliding_window\": null,\n  \"tie_word_embeddings\": true,\n  \"use_bidirectional_attention\": true,\n"
             "  \"use_cache\": false,\n  \"use_sliding_window\": false,\n" + DecoderShapesJson(like, layers, vocab) + "}\n";
    case Family::kLlamaBidirectional:
    case Family::kLlamaBidirectionalReranker: {
      const bool reranker = like.family == Family::kLlamaBidirectionalReranker;
      return std::string("{\n  \"architectures\": [\"") +
             (reranker ? "LlamaBidirectionalForSequenceClassification" : "LlamaBidirectionalModel") +
             "\"],\n  \"attention_bias\": false,\n"
             "  \"auto_map\": {\"AutoConfig\": \"llama_bidirectional_model.LlamaBidirectionalConfig\", "
             "\"AutoModel\": \"llama_bidirectional_model.LlamaBidirectionalModel\"" +
             (reranker ? ", \"AutoModelForSequenceClassification\": "
                         "\"llama_bidirectional_model.LlamaBidirectionalForSequenceClassification\""
                       : "") +
             "},\n" + (reranker ? LabelsJson(labels) : "") +
             "  \"bos_token_id\": 128000,\n  \"eos_token_id\": 128001,\n  \"mlp_bias\": false,\n"
             "  \"model_type\": \"llama_bidirec\",\n  \"pooling\": \"avg\",\n  \"rms_norm_eps\": 1e-05,\n"
             "  \"rope_scaling\": {\"factor\": 32.0, \"high_freq_factor\": 4.0, \"low_freq_factor\": 1.0, "
             "\"original_max_position_embeddings\": 8192, \"rope_type\": \"llama3\"},\n  \"rope_theta\": 500000.0,\n"
             "  \"temperature\": 1.0,\n  \"tie_word_embeddings\": true,\n" + DecoderShapesJson(like, layers, vocab) + "}\n";
    }
    case Family::kNomicBert:
      // The hub's config.json: the remote code's GPT2Config keys, with transformers 5's
      // max_position_embeddings and rope_parameters beside them.
      return "{\n  \"activation_function\": \"swiglu\",\n  \"architectures\": [\"NomicBertModel\"],\n"
             "  \"auto_map\": {\"AutoConfig\": \"nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig\", "
             "\"AutoModel\": \"nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel\"},\n"
             "  \"causal\": false,\n  \"layer_norm_epsilon\": 1e-12,\n  \"max_position_embeddings\": " + positions +
             ",\n  \"max_trained_positions\": 2048,\n  \"mlp_fc1_bias\": false,\n  \"mlp_fc2_bias\": false,\n"
             "  \"model_type\": \"nomic_bert\",\n  \"n_embd\": " + h + ",\n  \"n_head\": " + heads + ",\n  \"n_inner\": " +
             ffn + ",\n  \"n_layer\": " + n + ",\n  \"n_positions\": 8192,\n  \"pad_token_id\": 0,\n"
             "  \"prenorm\": false,\n  \"qkv_proj_bias\": false,\n"
             "  \"rope_parameters\": {\"rope_theta\": 1000.0, \"rope_type\": \"default\"},\n  \"rotary_emb_base\": 1000,\n"
             "  \"rotary_emb_fraction\": 1.0,\n  \"rotary_emb_interleaved\": false,\n  \"rotary_scaling_factor\": null,\n"
             "  \"torch_dtype\": \"float32\",\n  \"type_vocab_size\": " + std::to_string(like.type_vocab) +
             ",\n  \"use_rms_norm\": false,\n  \"vocab_size\": " + v + "\n}\n";
    case Family::kNomicBertMoe:
      // The hub's config.json of nomic-embed-text-v2-moe: the remote code's keys alone.
      return "{\n  \"activation_function\": \"gelu\",\n  \"architectures\": [\"NomicBertModel\"],\n"
             "  \"attn_pdrop\": 0.0,\n"
             "  \"auto_map\": {\"AutoConfig\": \"nomic-ai/nomic-bert-2048--configuration_hf_nomic_bert.NomicBertConfig\", "
             "\"AutoModel\": \"nomic-ai/nomic-bert-2048--modeling_hf_nomic_bert.NomicBertModel\"},\n"
             "  \"causal\": false,\n  \"expert_choice_router\": false,\n  \"ffn_div\": 1,\n"
             "  \"layer_norm_epsilon\": 1e-05,\n  \"max_trained_positions\": 2048,\n  \"mlp_fc1_bias\": true,\n"
             "  \"mlp_fc2_bias\": true,\n  \"model_type\": \"nomic_bert\",\n  \"moe_every_n_layers\": 2,\n"
             "  \"moe_impl\": \"megablocks\",\n  \"moe_normalize_expert_weights\": false,\n  \"moe_resid_pdrop\": 0.0,\n"
             "  \"moe_top_k\": 2,\n  \"n_embd\": " + h + ",\n  \"n_head\": " + heads + ",\n  \"n_inner\": " + ffn +
             ",\n  \"n_layer\": " + n + ",\n  \"n_positions\": " + positions + ",\n  \"num_experts\": 8,\n"
             "  \"num_shared_experts\": 0,\n  \"pad_token_id\": 1,\n  \"prenorm\": false,\n  \"qkv_proj_bias\": true,\n"
             "  \"resid_pdrop\": 0.0,\n  \"rotary_emb_base\": 10000,\n  \"rotary_emb_fraction\": 1.0,\n"
             "  \"rotary_emb_interleaved\": false,\n  \"rotary_emb_scale_base\": null,\n  \"rotary_scaling_factor\": null,\n"
             "  \"torch_dtype\": \"float32\",\n  \"type_vocab_size\": " + std::to_string(like.type_vocab) +
             ",\n  \"use_rms_norm\": false,\n  \"vocab_size\": " + v + "\n}\n";
    case Family::kGte:
    case Family::kGteReranker: {
      // The hub's config.json (model_type "new", Alibaba-NLP/new-impl).
      const bool reranker = like.family == Family::kGteReranker;
      const bool english = like.type_vocab == 0;
      return std::string("{\n  \"architectures\": [\"") + (reranker ? "NewForSequenceClassification" : "NewModel") +
             "\"],\n  \"attention_probs_dropout_prob\": 0.0,\n"
             "  \"auto_map\": {\"AutoConfig\": \"Alibaba-NLP/new-impl--configuration.NewConfig\", "
             "\"AutoModel\": \"Alibaba-NLP/new-impl--modeling.NewModel\", "
             "\"AutoModelForSequenceClassification\": \"Alibaba-NLP/new-impl--modeling.NewForSequenceClassification\"},\n"
             "  \"classifier_dropout\": 0.0,\n  \"hidden_act\": \"gelu\",\n  \"hidden_dropout_prob\": 0.1,\n"
             "  \"hidden_size\": " + h + ",\n" + (reranker ? LabelsJson(labels) : "") +
             "  \"initializer_range\": 0.02,\n  \"intermediate_size\": " + ffn + ",\n  \"layer_norm_eps\": 1e-12,\n"
             "  \"layer_norm_type\": \"layer_norm\",\n  \"logn_attention_clip1\": false,\n"
             "  \"logn_attention_scale\": false,\n  \"max_position_embeddings\": " + positions + ",\n"
             "  \"model_type\": \"new\",\n  \"num_attention_heads\": " + heads + ",\n  \"num_hidden_layers\": " + n +
             ",\n  \"pack_qkv\": true,\n  \"pad_token_id\": " + (english ? "0" : "1") + ",\n"
             "  \"position_embedding_type\": \"rope\",\n  \"rope_scaling\": {\"factor\": " + (english ? "2.0" : "8.0") +
             ", \"type\": \"ntk\"},\n  \"rope_theta\": " + (english ? "500000" : "160000") + ",\n"
             "  \"torch_dtype\": \"float32\",\n  \"type_vocab_size\": " + std::to_string(like.type_vocab) +
             ",\n  \"unpad_inputs\": false,\n  \"use_memory_efficient_attention\": false,\n  \"vocab_size\": " + v +
             "\n}\n";
    }
    case Family::kJinaBert:
    case Family::kJinaBertReranker:
    case Family::kJinaBertCode: {
      // The hub's config.json (model_type "bert", jinaai/jina-bert-implementation's remote code,
      // or jina-bert-v2-qk-post-norm's for jina-embeddings-v2-base-code).
      const bool reranker = like.family == Family::kJinaBertReranker;
      const std::string repository = std::string("jinaai/") + (like.family == Family::kJinaBertCode
                                                                   ? "jina-bert-v2-qk-post-norm"
                                                                   : "jina-bert-implementation");
      return std::string("{\n  \"architectures\": [\"") +
             (reranker ? "JinaBertForSequenceClassification" : "JinaBertForMaskedLM") +
             "\"],\n  \"attention_probs_dropout_prob\": 0.0,\n"
             "  \"auto_map\": {\"AutoConfig\": \"" + repository + "--configuration_bert.JinaBertConfig\", "
             "\"AutoModel\": \"" + repository + "--modeling_bert.JinaBertModel\", "
             "\"AutoModelForMaskedLM\": \"" + repository + "--modeling_bert.JinaBertForMaskedLM\", "
             "\"AutoModelForSequenceClassification\": "
             "\"" + repository + "--modeling_bert.JinaBertForSequenceClassification\"},\n"
             "  \"classifier_dropout\": null,\n  \"emb_pooler\": " + (reranker ? "null" : "\"mean\"") +
             ",\n  \"feed_forward_type\": \"geglu\",\n  \"hidden_act\": \"gelu\",\n"
             "  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": " + h + ",\n" + (reranker ? LabelsJson(labels) : "") +
             "  \"initializer_range\": 0.02,\n  \"intermediate_size\": " + ffn + ",\n  \"layer_norm_eps\": 1e-12,\n"
             "  \"max_position_embeddings\": " + positions + ",\n  \"model_type\": \"bert\",\n"
             "  \"num_attention_heads\": " + heads + ",\n  \"num_hidden_layers\": " + n + ",\n  \"pad_token_id\": 0,\n"
             "  \"position_embedding_type\": \"alibi\",\n  \"torch_dtype\": \"float32\",\n  \"type_vocab_size\": " +
             std::to_string(like.type_vocab) + ",\n  \"vocab_size\": " + v + "\n}\n";
    }
    case Family::kJinaEmbeddingsV3:
      // The hub's config.json (jinaai/xlm-roberta-flash-implementation's XLMRobertaFlashConfig).
      return "{\n  \"architectures\": [\"XLMRobertaModel\"],\n  \"attention_probs_dropout_prob\": 0.1,\n"
             "  \"auto_map\": {\"AutoConfig\": \"jinaai/xlm-roberta-flash-implementation--configuration_xlm_roberta."
             "XLMRobertaFlashConfig\", \"AutoModel\": \"jinaai/xlm-roberta-flash-implementation--modeling_lora."
             "XLMRobertaLoRA\"},\n  \"bos_token_id\": 0,\n  \"eos_token_id\": 2,\n  \"hidden_act\": \"gelu\",\n"
             "  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": " + h + ",\n  \"initializer_range\": 0.02,\n"
             "  \"intermediate_size\": " + ffn + ",\n  \"layer_norm_eps\": 1e-05,\n  \"load_trained_adapters\": true,\n"
             "  \"lora_adaptations\": [\"retrieval.query\", \"retrieval.passage\", \"separation\", \"classification\", "
             "\"text-matching\"],\n  \"lora_alpha\": 1,\n  \"lora_dropout_p\": 0.0,\n  \"lora_rank\": 4,\n"
             "  \"max_position_embeddings\": " + positions + ",\n  \"model_type\": \"xlm-roberta\",\n"
             "  \"num_attention_heads\": " + heads + ",\n  \"num_hidden_layers\": " + n + ",\n  \"pad_token_id\": 1,\n"
             "  \"position_embedding_type\": \"rotary\",\n  \"rotary_emb_base\": 20000.0,\n"
             "  \"task_instructions\": {\"retrieval.query\": \"Represent the query for retrieving evidence documents: \", "
             "\"retrieval.passage\": \"Represent the document for retrieval: \", \"separation\": \"\", "
             "\"classification\": \"\", \"text-matching\": \"\"},\n  \"torch_dtype\": \"float32\",\n"
             "  \"type_vocab_size\": " + std::to_string(like.type_vocab) + ",\n  \"use_flash_attn\": true,\n"
             "  \"vocab_size\": " + v + "\n}\n";
    case Family::kXlmRoberta:
    case Family::kXlmRobertaClassifier: {
      const bool classifier = like.family == Family::kXlmRobertaClassifier;
      return std::string("{\n  \"architectures\": [\"") +
             (classifier ? "XLMRobertaForSequenceClassification" : "XLMRobertaModel") +
             "\"],\n  \"attention_probs_dropout_prob\": 0.1,\n  \"bos_token_id\": 0,\n  \"eos_token_id\": 2,\n"
             "  \"hidden_act\": \"gelu\",\n  \"hidden_dropout_prob\": 0.1,\n  \"hidden_size\": " + h + ",\n" +
             (classifier ? LabelsJson(labels) : "") +
             "  \"initializer_range\": 0.02,\n  \"intermediate_size\": " + ffn + ",\n  \"layer_norm_eps\": 1e-05,\n"
             "  \"max_position_embeddings\": " + positions + ",\n  \"model_type\": \"xlm-roberta\",\n"
             "  \"num_attention_heads\": " + heads + ",\n  \"num_hidden_layers\": " + n + ",\n  \"pad_token_id\": 1,\n"
             "  \"position_embedding_type\": \"absolute\",\n  \"torch_dtype\": \"float32\",\n"
             "  \"type_vocab_size\": " + std::to_string(like.type_vocab) + ",\n  \"vocab_size\": " + v + "\n}\n";
    }
  }
  return "";
}

bool WriteText(const fs::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file << text;
  return static_cast<bool>(file);
}

engine::Status WriteSentenceTransformersFiles(const Like& like, const fs::path& out) {
  using engine::Status;
  if (like.pooling == nullptr) return Status();
  const std::string mode = like.pooling;
  std::error_code error;
  fs::create_directories(out / "1_Pooling", error);
  fs::create_directories(out / (like.family == Family::kGemma3 ? "4_Normalize" : "2_Normalize"), error);
  auto on = [&](const char* name) { return std::string(mode == name ? "true" : "false"); };
  const std::string pooling =
      "{\n  \"word_embedding_dimension\": " + std::to_string(like.hidden) +
      ",\n  \"pooling_mode_cls_token\": " + on("cls") + ",\n  \"pooling_mode_mean_tokens\": " + on("mean") +
      ",\n  \"pooling_mode_max_tokens\": false,\n  \"pooling_mode_mean_sqrt_len_tokens\": false,\n"
      "  \"pooling_mode_weightedmean_tokens\": false,\n  \"pooling_mode_lasttoken\": " + on("lasttoken") +
      ",\n  \"include_prompt\": true\n}\n";
  const bool gemma = like.family == Family::kGemma3;
  const std::string modules =
      "[\n  {\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"},\n"
      "  {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"},\n" +
      std::string(gemma ? "  {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"},\n"
                          "  {\"idx\": 3, \"name\": \"3\", \"path\": \"3_Dense\", \"type\": \"sentence_transformers.models.Dense\"},\n"
                          "  {\"idx\": 4, \"name\": \"4\", \"path\": \"4_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}\n]\n"
                        : "  {\"idx\": 2, \"name\": \"2\", \"path\": \"2_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}\n]\n");
  const std::string bert_config =
      "{\n  \"max_seq_length\": " + std::to_string(like.max_seq_length) + ",\n  \"do_lower_case\": false\n}\n";
  std::string prompts = "{\n  \"prompts\": {},\n  \"default_prompt_name\": null,\n  \"similarity_fn_name\": \"cosine\"\n}\n";
  if (gemma) {
    prompts =
        "{\n  \"prompts\": {\n    \"query\": \"task: search result | query: \",\n    \"document\": \"title: none | text: \"\n"
        "  },\n  \"default_prompt_name\": null,\n  \"similarity_fn_name\": \"cosine\"\n}\n";
  }
  if (like.family == Family::kNomicBert) {
    prompts =
        "{\n  \"prompts\": {\n    \"query\": \"search_query: \",\n    \"document\": \"search_document: \",\n"
        "    \"classification\": \"classification: \",\n    \"clustering\": \"clustering: \"\n  },\n"
        "  \"default_prompt_name\": null,\n  \"similarity_fn_name\": \"cosine\"\n}\n";
  }
  if (like.family == Family::kNomicBertMoe) {
    // nomic-embed-text-v2-moe's config_sentence_transformers.json names its document prompt "passage".
    prompts =
        "{\n  \"prompts\": {\n    \"query\": \"search_query: \",\n    \"passage\": \"search_document: \",\n"
        "    \"Classification\": \"classification: \",\n    \"Clustering\": \"clustering: \"\n  },\n"
        "  \"default_prompt_name\": null,\n  \"similarity_fn_name\": \"cosine\"\n}\n";
  }
  if (like.family == Family::kVoyageQwen3) {
    prompts =
        "{\n  \"prompts\": {\n    \"query\": \"Represent the query for retrieving supporting documents: \",\n"
        "    \"document\": \"Represent the document for retrieval: \"\n  },\n"
        "  \"default_prompt_name\": null,\n  \"similarity_fn_name\": \"cosine\"\n}\n";
  }
  if (like.family == Family::kQwen3) {
    prompts =
        "{\n  \"prompts\": {\n    \"query\": \"Instruct: Given a web search query, retrieve relevant passages that "
        "answer the query\\nQuery:\",\n    \"document\": \"\"\n  },\n  \"default_prompt_name\": null,\n"
        "  \"similarity_fn_name\": \"cosine\"\n}\n";
  }
  if (!WriteText(out / "1_Pooling" / "config.json", pooling) || !WriteText(out / "modules.json", modules) ||
      !WriteText(out / "sentence_bert_config.json", bert_config) ||
      !WriteText(out / "config_sentence_transformers.json", prompts)) {
    return Status::Error("cannot write the sentence-transformers files in " + out.string());
  }
  return Status();
}

// --- model.safetensors ---

// The tensors a folder of this config holds, from the family's schema (the one the loader reads).
std::vector<engine::TensorSpec> SchemaTensors(const engine::ModelConfig& config) {
  const engine::ArchitectureDefinition* architecture = nullptr;
  engine::FindArchitecture(config.architecture, &architecture);
  return engine::FamilyOf(config.family).tensors(config, std::string(architecture->weight_prefix));
}

int64_t Elements(const engine::TensorSpec& tensor) { return tensor.shape.NumElements(); }

engine::Status WriteSafetensors(const fs::path& path, const std::vector<engine::TensorSpec>& tensors, uint64_t seed) {
  using engine::Status;
  std::string header = "{\"__metadata__\":{\"format\":\"pt\"}";
  uint64_t offset = 0;
  for (const engine::TensorSpec& tensor : tensors) {
    std::string shape;
    for (int axis = 0; axis < tensor.shape.rank(); ++axis) {
      shape += (shape.empty() ? "" : ",") + std::to_string(tensor.shape[axis]);
    }
    const uint64_t bytes = static_cast<uint64_t>(Elements(tensor)) * 4;
    header += ",\"" + tensor.name + "\":{\"dtype\":\"F32\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  while (header.size() % 8 != 0) header.push_back(' ');  // data starts 8-byte aligned
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return Status::Error("cannot create " + path.string());
  const uint64_t header_size = header.size();
  char prefix[8];
  std::memcpy(prefix, &header_size, 8);  // little-endian on every target we build for
  file.write(prefix, 8);
  file.write(header.data(), static_cast<std::streamsize>(header.size()));
  constexpr float kScale = 0.02f;
  std::vector<float> chunk(1 << 20);
  for (const engine::TensorSpec& tensor : tensors) {
    Normal normal(seed, tensor.name);
    int64_t left = Elements(tensor);
    while (left > 0) {
      const size_t count = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(chunk.size())));
      for (size_t i = 0; i < count; ++i) {
        const float sample = kScale * normal.Next();
        chunk[i] = tensor.init == engine::TensorInit::kNormOne ? 1.0f + sample : sample;
      }
      file.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(count * 4));
      left -= static_cast<int64_t>(count);
    }
  }
  file.flush();
  if (!file) return Status::Error("cannot write " + path.string() + " (disk full?)");
  return Status();
}

// EmbeddingGemma's 2_Dense and 3_Dense folders (kGemmaDense): config.json and a random
// linear.weight [out, in] each.
engine::Status WriteDenseModules(const fs::path& out, uint64_t seed) {
  for (size_t i = 0; i < std::size(kGemmaDense); ++i) {
    const int64_t in = kGemmaDense[i][0], features = kGemmaDense[i][1];
    const fs::path folder = out / (std::to_string(i + 2) + "_Dense");
    std::error_code error;
    fs::create_directories(folder, error);
    const std::string config = "{\n  \"in_features\": " + std::to_string(in) + ",\n  \"out_features\": " +
                               std::to_string(features) + ",\n  \"bias\": false,\n"
                               "  \"activation_function\": \"torch.nn.modules.linear.Identity\"\n}\n";
    if (!WriteText(folder / "config.json", config)) return engine::Status::Error("cannot write " + (folder / "config.json").string());
    const engine::TensorSpec weight{.name = "linear.weight", .shape = engine::Shape{features, in}};
    STAMEN_RETURN_IF_ERROR(WriteSafetensors(folder / "model.safetensors", {weight}, seed + i + 1));
  }
  return engine::Status();
}

// --- tokenizer ---

// The tokenizers that ship with stamen (models/tokenizers/ in the source tree): the build puts
// them at ../share/stamen/tokenizers beside the executable, as `cmake --install` does, so the
// binary finds them wherever the tree or the installation lies.
fs::path ShippedTokenizers() {
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  if (error) return {};
  return executable.parent_path().parent_path() / "share" / "stamen" / "tokenizers";
}

// The default tokenizer folder of `like` (empty if it is missing); `looked` says where.
std::string DefaultTokenizer(const Like& like, std::string* looked) {
  const fs::path candidate = ShippedTokenizers() / like.tokenizer;
  *looked = candidate.string();
  std::error_code error;
  return fs::is_directory(candidate, error) ? candidate.string() : "";
}

engine::Status CopyTokenizer(const std::string& source, Family family, const fs::path& out) {
  using engine::Status;
  std::error_code error;
  int copied = 0;
  if (fs::is_directory(source, error)) {
    for (const char* name : kTokenizerFiles) {
      const fs::path from = fs::path(source) / name;
      if (!fs::is_regular_file(from, error)) continue;
      if (!fs::copy_file(from, out / name, fs::copy_options::overwrite_existing, error)) {
        return Status::Error("cannot copy " + from.string() + ": " + error.message());
      }
      fs::permissions(out / name, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add, error);
      ++copied;
    }
  } else if (fs::is_regular_file(source, error)) {
    std::string name = fs::path(source).filename().string();
    // A SentencePiece model is found under the name transformers gives it for XLM-R.
    if (fs::path(source).extension() == ".model" &&
        (family == Family::kXlmRoberta || family == Family::kXlmRobertaClassifier || family == Family::kGte ||
         family == Family::kGteReranker || family == Family::kNomicBertMoe)) {
      name = "sentencepiece.bpe.model";
    }
    if (!fs::copy_file(source, out / name, fs::copy_options::overwrite_existing, error)) {
      return Status::Error("cannot copy " + source + ": " + error.message());
    }
    fs::permissions(out / name, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::add, error);
    ++copied;
  } else {
    return Status::Error("tokenizer " + source + " does not exist");
  }
  if (copied == 0) return Status::Error(source + " holds no tokenizer file (tokenizer.json, sentencepiece.bpe.model, vocab.txt, …)");
  return Status();
}

}  // namespace

int MakeModel(const MakeModelOptions& options) {
  const Like* like = nullptr;
  std::string names;
  for (const Like& candidate : kLikes) {
    if (options.like == candidate.name) like = &candidate;
    names += (names.empty() ? "" : ", ") + std::string(candidate.name);
  }
  if (like == nullptr) return Fail("unknown --like '" + options.like + "' (supported: " + names + ")");
  if (options.layers < 0 || options.vocab_size < 0) return Fail("--layers and --vocab-size must not be negative");
  const int64_t layers = options.layers > 0 ? options.layers : like->layers;
  const int64_t vocab = options.vocab_size > 0 ? options.vocab_size : like->vocab;
  const bool decoder = like->family == Family::kQwen3 || like->family == Family::kQwen3Reranker ||
                       like->family == Family::kQwen2Reranker || like->family == Family::kGemmaReranker ||
                       like->family == Family::kGemma2Reranker;
  if (!decoder && vocab < 4) return Fail("--vocab-size must be at least 4");
  const bool classifier = like->family == Family::kBertClassifier || like->family == Family::kXlmRobertaClassifier ||
                          like->family == Family::kGteReranker || like->family == Family::kJinaBertReranker ||
                          like->family == Family::kEuroBertReranker || like->family == Family::kLlamaBidirectionalReranker;
  if (options.labels < 0 || (options.labels > 1 && !classifier)) {
    return Fail("--labels must be positive, and only a classifier (bge-reranker-base, ms-marco-MiniLM-L6-v2, "
                "gte-multilingual-reranker-base, jina-reranker-v1-turbo-en, EuroBERT-210m-reranker, "
                "llama-nemotron-rerank-1b-v2) has labels");
  }
  const int64_t labels = options.labels > 0 ? options.labels : 1;

  std::string tokenizer = options.tokenizer;
  if (tokenizer.empty()) {
    std::string looked;
    tokenizer = DefaultTokenizer(*like, &looked);
    if (tokenizer.empty()) return Fail("no default tokenizer for " + options.like + " (" + looked + " is missing; is share/stamen/tokenizers beside the binary?): pass --tokenizer PATH");
  }

  const fs::path out(options.out);
  std::error_code error;
  fs::create_directories(out, error);
  if (!fs::is_directory(out, error)) return Fail("cannot create " + out.string());
  if (!WriteText(out / "config.json", ConfigJson(*like, layers, vocab, labels))) return Fail("cannot write " + (out / "config.json").string());
  auto config = engine::ReadModelConfig((out / "config.json").string());
  if (!config.ok()) return Fail("the written config.json does not read back: " + config.status().message());
  std::vector<engine::TensorSpec> tensors = SchemaTensors(*config);
  if (like->family == Family::kStanfordColbert) {
    // The projection beside the backbone, and the settings ColBERT's library saves with it
    // (PyLate's defaults for the lengths).
    tensors.push_back({.name = "linear.weight", .shape = engine::Shape{kColbertDimension, like->hidden}});
    const std::string metadata =
        "{\n  \"query_token_id\": \"[unused0]\",\n  \"doc_token_id\": \"[unused1]\",\n  \"query_maxlen\": 32,\n"
        "  \"doc_maxlen\": 180,\n  \"attend_to_mask_tokens\": false,\n  \"dim\": " + std::to_string(kColbertDimension) +
        ",\n  \"similarity\": \"cosine\"\n}\n";
    if (!WriteText(out / "artifact.metadata", metadata)) return Fail("cannot write " + (out / "artifact.metadata").string());
  }
  if (like->family == Family::kVoyageQwen3) {
    tensors.push_back({.name = "linear.weight", .shape = engine::Shape{kVoyageDimension, like->hidden}});
  }
  if (auto status = WriteSafetensors(out / "model.safetensors", tensors, options.seed); !status.ok()) return Fail(status.message());
  if (auto status = WriteSentenceTransformersFiles(*like, out); !status.ok()) return Fail(status.message());
  if (like->family == Family::kGemma3) {
    if (auto status = WriteDenseModules(out, options.seed); !status.ok()) return Fail(status.message());
  }
  if (auto status = CopyTokenizer(tokenizer, like->family, out); !status.ok()) return Fail(status.message());
  const bool gemma_reranker = like->family == Family::kGemmaReranker || like->family == Family::kGemma2Reranker;
  if (gemma_reranker && options.tokenizer.empty()) {
    // The stand-in tokenizer has neither Gemma's <bos> nor "Yes": its [CLS] and "yes" instead;
    // the v2.5 lightweight reranker's layout is v2-gemma's, with its own prompt, and it scores
    // through its heads, not a token.
    const std::string preset = like->family == Family::kGemma2Reranker
                                   ? "  \"preset\": \"bge-reranker-v2.5-gemma2-lightweight\",\n"
                                   : "  \"preset\": \"bge-reranker-v2-gemma\",\n";
    const std::string yes_token = like->family == Family::kGemma2Reranker ? "" : ",\n  \"yes_token\": \"yes\"";
    const std::string stand_in =
        "{\n" + preset +
        "  \"parts\": [\"[CLS]\", \"A: {query}\", \"\\n\", \"B: {document}\", \"\\n\", \"{instruction}\"]" +
        yes_token + "\n}\n";
    if (!WriteText(out / std::string(engine::kYesNoTemplateFile), stand_in)) {
      return Fail("cannot write " + (out / std::string(engine::kYesNoTemplateFile)).string());
    }
  }

  // The folder must load; a tokenizer this build cannot read yet (or whose ids exceed the
  // vocabulary) is only a warning: --token-ids input still works.
  auto engine = engine::Engine::Load(out.string(), {.num_threads = 1});
  if (!engine.ok()) return Fail("the written folder does not load: " + engine.status().message());
  auto model_tokenizer = engine::ModelTokenizer::Load(out.string(), (*engine)->config());
  if (!model_tokenizer.ok()) {
    std::cerr << "stamen make-model: warning: stamen cannot load the tokenizer yet (" << model_tokenizer.status().message()
              << "); use --token-ids input\n";
  } else if (static_cast<int64_t>((*model_tokenizer)->VocabularySize()) > vocab) {
    std::cerr << "stamen make-model: warning: the tokenizer has " << (*model_tokenizer)->VocabularySize()
              << " ids but the model's vocabulary has " << vocab << "; some texts will fail\n";
  }
  int64_t parameters = 0;
  for (const engine::TensorSpec& tensor : tensors) parameters += Elements(tensor);
  std::cerr << "stamen make-model: wrote " << out.string() << " (" << options.like << " shapes, " << layers
            << " layers, vocabulary " << vocab << ", " << parameters << " parameters, seed " << options.seed
            << ", tokenizer from " << tokenizer << ")\n";
  return 0;
}

void AddMakeModelCommand(CLI::App& app) {
  auto options = std::make_shared<MakeModelOptions>();
  CLI::App* command = app.add_subcommand(
      "make-model", "Write a Hugging Face model folder with random weights shaped like a real model");
  std::string likes;
  for (const Like& like : kLikes) likes += (likes.empty() ? "" : ", ") + std::string(like.name);
  command->add_option("--like", options->like, "The model whose shapes and layout to copy: " + likes)->required();
  command->add_option("--random-seed", options->seed, "Seed of the weights (same seed, same bytes)")->required();
  command->add_option("--out", options->out, "Folder to write")->required();
  command->add_option("--tokenizer", options->tokenizer,
                      "Tokenizer file or folder to copy (default: the one shipped with stamen for --like)");
  command->add_option("--layers", options->layers, "Fewer layers than the real model (quick tests)");
  command->add_option("--vocab-size", options->vocab_size, "Another vocabulary size than the real model's");
  command->add_option("--labels", options->labels, "Classifiers: labels of the head (default 1, a reranker's relevance)");
  command->callback([options] { std::exit(MakeModel(*options)); });
}

}  // namespace stamen::apps
