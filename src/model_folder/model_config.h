// The model description a Hugging Face folder carries: config.json (architecture and shapes)
// and the sentence-transformers files (pooling, normalisation, prompts, maximum length).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model_folder/kinds.h"
#include "common/status.h"

namespace stamen::engine {

// Families share one forward pass each, one value per row of families.inc, in its order. Each
// has a config definition (model_folder/family_config.h), what config.json says, and an engine
// definition (engine/models/family.h), how it runs.
enum class ModelFamily {
#define STAMEN_FAMILY(name) k##name,
#include "model_folder/families.inc"
#undef STAMEN_FAMILY
};
// kMaskedLm: the masked-language-model head (…ForMaskedLM), used for SPLADE sparse vectors.
enum class ModelHead { kNone, kSequenceClassification, kMaskedLm };

// DeBERTa-v2/v3's position settings (models/deberta.cc reads and uses them).
struct DisentangledAttentionConfig {
  bool relative_attention = false;
  bool content_to_position = false;  // pos_att_type has "c2p"
  bool position_to_content = false;  // pos_att_type has "p2c"
  int64_t position_buckets = 0;      // 0: no log buckets
  int64_t max_relative_positions = 0;  // resolved: max_position_embeddings when the config gives < 1
  bool share_att_key = false;  // position queries/keys through the layer's query_proj / key_proj
  bool norm_relative_embeddings = false;  // norm_rel_ebd has "layer_norm"
  bool position_biased_input = true;      // absolute position embeddings added to the input
  // Half the relative embedding rows: position_buckets, else max_relative_positions.
  int64_t RelativeSpan() const { return position_buckets > 0 ? position_buckets : max_relative_positions; }
};

// A static embedding model (model2vec, sentence-transformers StaticEmbedding): the vector of a
// text is the mean of its tokens' rows. The tokenizer rules differ by the library the folder
// was made for, and the engine follows the folder's own library:
//   - model2vec (config.json "model_type": "model2vec"): StaticModel.encode cuts the text to
//     max_length · (median vocabulary piece length) characters, tokenizes it without special
//     tokens, keeps the first max_length tokens, then drops the unknown token;
//   - sentence-transformers (modules.json names a StaticEmbedding module, no model2vec
//     config.json): the text without special tokens, unknown tokens kept, cut only by the
//     truncation its tokenizer.json carries.
// A text with no token left has the zero vector in both: the engine's table has one zero row
// after the vocabulary (empty_bag_id) that the tokenizer gives such a text.
struct StaticEmbeddingConfig {
  std::string folder;         // holds model.safetensors and tokenizer.json (the module's folder)
  bool model2vec_rules = false;
  // Tokens kept: model2vec's max_length (config.json, default 512), or the truncation of a
  // StaticEmbedding's tokenizer.json; 0: no limit.
  int64_t max_length = 0;
  int64_t vocabulary_rows = 0;  // token ids with a row (the tokenizer's vocabulary)
  int64_t empty_bag_id() const { return vocabulary_rows; }
};

// bge-m3 (BAAI/bge-m3; FlagEmbedding's BGEM3FlagModel): an XLM-RoBERTa encoder folder with two torch.save
// state dicts beside config.json, colbert_linear.pt (Linear hidden → hidden) and sparse_linear.pt
// (Linear hidden → 1). One forward gives its three outputs (StepOutput::kDenseSparseColbert,
// model_folder/bge_m3.h): the CLS state normalised (dense), relu(sparse_linear(h)) per token
// (the lexical weights before FlagEmbedding keeps each id's largest), and colbert_linear(h) of the
// tokens after CLS, normalised. ReadModelFolder sets it when both files are there.
struct BgeM3Config {
  bool enabled = false;
  std::string colbert_linear_path;
  std::string sparse_linear_path;
};

struct ModelConfig {
  std::string architecture;  // as config.json names it, e.g. "XLMRobertaForSequenceClassification"
  std::string model_type;
  ModelFamily family = ModelFamily::kBert;
  ModelHead head = ModelHead::kNone;
  bool decoder = false;  // from the family: RoPE, causal by default, last-token pooling by default
  int64_t hidden_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // = num_attention_heads unless grouped-query
  int64_t head_dim = 0;             // = hidden_size / num_attention_heads unless given
  int64_t intermediate_size = 0;
  ops::Activation hidden_act = ops::Activation::kGeluErf;
  double norm_eps = 1e-12;  // layer_norm_eps (encoders) or rms_norm_eps (decoders)
  int64_t max_position_embeddings = 0;
  int64_t type_vocab_size = 0;  // 0 for decoders
  int64_t vocab_size = 0;
  std::optional<int64_t> pad_token_id;
  int64_t position_offset = 0;  // the first position id (RoBERTa: pad_token_id + 1)
  bool gated_feed_forward = false;  // act(x·W_gateᵀ) ⊙ x·W_upᵀ instead of act(x·W_iᵀ)
  bool attention_bias = false;  // decoders: biases on the q/k/v projections (encoders always have them)
  double rope_theta = 10000.0;
  ops::RopeScaling rope_scaling;  // Llama 3's, GTE's NTK or dynamic NTK rescaled frequencies, or none
  // The leading dimensions of each head RoPE turns (NomicBERT's rotary_emb_fraction · head_dim);
  // 0: all head_dim. Only the rotary encoders (engine/models/rotary_encoder.cc) read it.
  int64_t rotary_dim = 0;
  // A mixture-of-experts feed-forward (NomicBERT's nomic-embed-text-v2-moe; only the rotary
  // encoders read it): with num_experts > 0, layer i with i % moe_every_n_layers == 1 routes
  // each token to the moe_top_k of its num_experts experts its router ranks highest.
  int64_t num_experts = 0;
  int64_t moe_top_k = 0;
  int64_t moe_every_n_layers = 0;
  bool IsMixtureOfExpertsLayer(int64_t layer) const {
    return num_experts > 0 && moe_every_n_layers > 0 && layer % moe_every_n_layers == 1;
  }
  double attention_scale = 0.0;  // multiplies q·k; 0: 1/sqrt(head_dim) (Gemma3: query_pre_attn_scalar^-0.5)
  // Gemma 2's soft-capping, 0 for none: every scaled attention score becomes
  // cap·tanh(score / cap) before the mask and softmax (attn_logit_softcapping), and so does every
  // logit of the LM head (final_logit_softcapping), the logits a yes/no reranker scores included.
  double attention_logit_softcap = 0.0;
  double final_logit_softcap = 0.0;
  // Decoders attend causally unless config.json says "is_causal": false (bidirectional
  // fine-tunes); encoders are always bidirectional.
  bool causal = false;
  // config.json's sliding_window (Mistral, Gemma3), before transformers halves it for a
  // bidirectional model: a causal query sees its last `sliding_window` keys, itself included;
  // 0: all of them.
  int64_t sliding_window = 0;
  // Layers that attend within a sliding window (ModernBERT's local layers, Gemma3's sliding
  // ones): per layer, true when it sees only nearby keys and rotates by local_rope_theta
  // instead of rope_theta; empty when every layer is alike (Mistral: all windowed).
  std::vector<bool> sliding_window_layers;
  int64_t attention_window = 0;  // ModernBERT: the ops::AttentionOptions::window of local layers
  // The ops::AttentionOptions::window of layer `layer`: sliding_window for every layer when no
  // layer is marked (Mistral), else attention_window for marked layers and 0 (all keys) for the others.
  int64_t AttentionWindow(size_t layer) const {
    if (sliding_window_layers.empty()) return sliding_window;
    return sliding_window_layers[layer] ? attention_window : 0;
  }
  double local_rope_theta = 10000.0;  // ModernBERT's local_rope_theta, Gemma3's rope_local_base_freq
  bool norm_bias = true;          // LayerNorms carry a bias (ModernBERT's norm_bias: false)
  bool feed_forward_bias = true;  // the feed-forward projections carry biases (ModernBERT's mlp_bias)
  // The classification head where the config chooses it (ModernBERT); other families fix theirs.
  ops::PoolingMode classifier_pooling = ops::PoolingMode::kCls;
  ops::Activation classifier_activation = ops::Activation::kTanh;
  bool classifier_bias = true;
  // The head runs on every token and its logits are averaged (EuroBERT's classifier_pooling
  // "late"; classifier_pooling is then kMean): the dense layer and activation on every token, the
  // mean of those, then the output layer, which is linear, so the mean of its outputs.
  bool classifier_late_pooling = false;
  // pplx-embed-v1: every pooled vector is served as round(127·tanh(x)) (its remote code's int8
  // embedding, TEI's pplx1.rs), before any normalisation, which would undo it.
  bool pooled_tanh_int8 = false;
  // NomicBERT and GTE: the tensors carry the names of the hub's remote code (NomicBERT's
  // encoder.layers.i.attn.Wqkv, mlp.fc11 / fc12, …; GTE's encoder.layer.i.attention.qkv_proj,
  // mlp.up_gate_proj, …), as the hub's folders and transformers 5.25's save_pretrained write
  // them, instead of transformers' in-memory names (layers.i.self_attn.q_proj, …). The reader
  // sets it; loading decides it from the tensors present. EuroBertForSequenceClassification: the
  // head's output layer is out_proj (the hub's first remote code) instead of classifier, set at load.
  bool remote_code_tensors = false;
  // JinaBERT from jinaai/jina-bert-v2-qk-post-norm (jina-embeddings-v2-base-code): LayerNorms on
  // each token's whole query and key, a second LayerNorm after the attention's, the feed-forward's
  // own names and up|gate order (engine/models/jina_bert.cc). The reader sets it from auto_map.
  bool qk_post_norm = false;
  // jina-embeddings-v3's task adapters (config.json's lora_adaptations, in the order of the
  // adapter tensors' first axis): a step may name one per sequence, and each of its LoRA
  // weights then adds (lora_alpha / lora_rank) · B_task · A_task to W for that sequence only.
  // adapter_prompts[i] is task i's task_instructions ("" when none). Empty: no adapters.
  std::vector<std::string> adapter_tasks;
  std::vector<std::string> adapter_prompts;
  int64_t lora_rank = 0;
  double lora_alpha = 0.0;
  // Decoders: the output projection is the token embedding table (no lm_head.weight).
  bool tie_word_embeddings = false;
  // A yes/no LLM reranker (Qwen3-Reranker): a *ForCausalLM whose score is
  // logit("yes") − logit("no") at the last token, these two ids as {no, yes}; the engine sets
  // them (with head kSequenceClassification, one label) when it loads such a folder as a
  // reranker, and the head is the difference of the two lm_head rows; {yes} alone when the
  // template scores one token's logit (layers::LoadYesNoHead). Empty otherwise.
  std::vector<int32_t> yes_no_token_ids;
  // A layer-wise reranker (CostWiseGemmaForCausalLM with layer_wise, bge-reranker-v2.5-gemma2-
  // lightweight; FlagEmbedding's gemma_model.py): lm_head is a list of one-output heads,
  // lm_head.k.linear_head.weight [1, hidden], one per layer start_layer + k·layer_sep up to
  // num_hidden_layers (layer_wise_start, layer_wise_step; both 0 for any other model). As a
  // reranker (model_folder/yes_no_reranker.h) cutoff_layer is the number of layers run: the
  // final norm of the hidden state after them, through a head, soft-capped, is the score, and
  // the layers after it are neither loaded nor computed. 0: every layer (not a reranker).
  int64_t layer_wise_start = 0;
  int64_t layer_wise_step = 0;
  int64_t cutoff_layer = 0;
  // Scored as a yes/no or layer-wise reranker: one label, the prompt template around each pair.
  bool yes_no_reranker() const { return !yes_no_token_ids.empty() || cutoff_layer > 0; }
  // The layers a forward pass runs: cutoff_layer when set, else all.
  int64_t RunLayers() const { return cutoff_layer > 0 ? cutoff_layer : num_hidden_layers; }
  // A cross-encoder whose training put each (query, document) pair into one text, tokenized as a
  // single sequence with the tokenizer's special tokens (llama-nemotron-rerank: "question:{query}
  // \n \n passage:{document}", its model card's prompt_template and NeMo Automodel's
  // CrossEncoderCollator default): the text before the query and between the two. Both empty:
  // the tokenizer's own pair template.
  std::string pair_text_before_query;
  std::string pair_text_before_document;
  DisentangledAttentionConfig disentangled;  // DeBERTa only
  int64_t num_labels = 0;            // classification heads only
  std::vector<std::string> id2label;  // num_labels names, "LABEL_i" when not given
  StaticEmbeddingConfig static_embedding;  // kStaticEmbedding only
  // Where model.safetensors (or its index) is: the model folder, or for a sentence-transformers
  // StaticEmbedding module its own folder. Empty: the model folder.
  std::string weights_folder;
  BgeM3Config bge_m3;  // bge-m3's ColBERT and sparse heads (beside an encoder), else disabled
};

// The index of `task` among config.adapter_tasks, or -1 when the model has no such adapter.
int AdapterIndex(const ModelConfig& config, std::string_view task);
// The adapter tasks as an error message lists them: "'a', 'b'", or "none" without adapters.
std::string AdapterTaskList(const ModelConfig& config);

// The architectures a model folder may name, in the order error messages list them.
const std::vector<std::string>& SupportedArchitectures();

// Reads config.json; errors name the file and the key, and an unsupported architecture lists
// the supported ones.
StatusOr<ModelConfig> ReadModelConfig(const std::string& path);

// A sentence-transformers Dense module: pooled = act(pooled · Wᵀ + b), W [out, in] stored
// as linear.weight (and linear.bias) in the module folder's model.safetensors.
struct DenseModuleConfig {
  std::string folder;  // the module's folder, under the model folder
  int64_t in_features = 0;
  int64_t out_features = 0;
  bool bias = true;
  ops::Activation activation = ops::Activation::kTanh;  // sentence-transformers' default
};

// A multi-vector (late-interaction, ColBERT) model as PyLate saves it: the transformer, then Dense
// modules on every token, no Pooling, and these settings in config_sentence_transformers.json
// (PyLate's defaults where a key is absent). PyLate's ColBERT.tokenize and encode give the rules:
// the text is tokenized with its special tokens and cut to length − 1 tokens, the prefix token
// goes after the first one (CLS); a query is padded with the mask token to query_length when
// do_query_expansion, the padding attended only when attend_to_expansion_tokens (else the
// expansion tokens see the query but no token sees them) and every query token gives a vector; a
// document keeps the vectors of the tokens whose ids are not those of skiplist_words. Vectors are
// L2-normalised per token.
struct MultiVectorConfig {
  bool enabled = false;  // the folder is a multi-vector model
  std::string query_prefix = "[Q] ";
  std::string document_prefix = "[D] ";
  int64_t query_length = 32;
  int64_t document_length = 180;
  bool do_query_expansion = true;
  bool attend_to_expansion_tokens = false;
  std::vector<std::string> skiplist_words;  // default: Python's string.punctuation, one character each
};

// What sentence-transformers adds to a model folder (all optional).
struct SentenceTransformersConfig {
  bool has_modules = false;                 // modules.json exists
  std::optional<ops::PoolingMode> pooling;  // from the Pooling module's config.json
  bool include_prompt = true;               // pooling counts the prompt's tokens
  bool normalize = false;                   // a Normalize module follows pooling
  std::vector<DenseModuleConfig> dense;     // run in order after pooling, before Normalize
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;  // empty when none
  int64_t max_seq_length = 0;       // 0 when not given
  // The folder of a StaticEmbedding module (the model folder itself for model2vec's "."
  // path); empty when there is none. Such a module pools (mean) by itself.
  std::string static_embedding_folder;
  // Dense modules on every token without pooling: a multi-vector (ColBERT) model.
  MultiVectorConfig multi_vector;

  // The width of the embeddings users get: the last Dense module's out_features, else the
  // transformer's hidden size.
  int64_t EmbeddingWidth(int64_t hidden_size) const { return dense.empty() ? hidden_size : dense.back().out_features; }
};

// The pooling a step uses when it names none: the sentence-transformers Pooling (or
// SpladePooling) module, else last-token for causal decoders, mean for bidirectional ones and
// splade for …ForMaskedLM models; nullopt for other encoders without one. Engine::Load and
// whoever describes a model folder without loading it (the gateway) agree through this.
std::optional<ops::PoolingMode> DefaultPooling(const ModelConfig& config, const SentenceTransformersConfig& st);
// The width of the embeddings a step gives by default: the vocabulary size when that pooling
// is splade, else the last Dense module's out_features, else the hidden size (the
// embedding_width of ProfileOf, model_profile.h).
int64_t DefaultEmbeddingWidth(const ModelConfig& config, const SentenceTransformersConfig& st);

// A projection stored beside the transformer in the folder's model.safetensors as "linear.weight"
// [out, hidden], without bias (HF_ColBERT's and Qwen3BidirectionalModel's `linear`): the Dense module
// that applies it. `owner` names the checkpoint kind in the error when the tensor is missing or
// of another width (root_projection.cc).
StatusOr<DenseModuleConfig> ReadRootProjection(const std::string& model_dir, const ModelConfig& config,
                                               std::string_view owner);

// voyage-4-nano's remote class (families/qwen.cc): Qwen3 attending bidirectionally, its last hidden
// state projected by `linear` [num_labels, hidden] (ReadModelFolder adds it as the first Dense module).
inline constexpr std::string_view kQwen3BidirectionalArchitecture = "Qwen3BidirectionalModel";

// Stanford ColBERT's checkpoint class: the ColBERT library saves config.json naming it over
// whichever backbone it trained, BERT's by default (families/bert.cc).
inline constexpr std::string_view kStanfordColbertArchitecture = "HF_ColBERT";
// jina-colbert-v2: an HF_ColBERT checkpoint over jina's XLM-RoBERTa (its auto_map's AutoConfig is
// XLMRobertaFlashConfig), named as vLLM names it (families/jina_embeddings_v3.cc).
inline constexpr std::string_view kJinaColbertArchitecture = "ColBERTJinaRobertaModel";
// Whether `config` is a Stanford ColBERT checkpoint, over BERT or jina's XLM-RoBERTa.
bool IsStanfordColbert(const ModelConfig& config);

// A Stanford ColBERT checkpoint (IsStanfordColbert, no modules.json): its projection
// "linear.weight" as one Dense module and artifact.metadata's settings into `st` as PyLate reads
// them (stanford_colbert.cc).
Status ReadStanfordColbert(const std::string& model_dir, const ModelConfig& config, SentenceTransformersConfig* st);

// Reads modules.json, the Pooling module's config, config_sentence_transformers.json and
// sentence_*_config.json from `model_dir`; a folder without them gives the defaults.
StatusOr<SentenceTransformersConfig> ReadSentenceTransformersConfig(const std::string& model_dir);

// Everything a model folder says of its model: config.json and the sentence-transformers files,
// or for a static embedding folder (model2vec's config.json, or a StaticEmbedding module) the
// shapes of its embedding table and its tokenizer rules (static_embedding.cc). The engine and
// the gateway read a folder through this.
struct ModelFolder {
  ModelConfig config;
  SentenceTransformersConfig sentence_transformers;
};
StatusOr<ModelFolder> ReadModelFolder(const std::string& model_dir);

}  // namespace stamen::engine
