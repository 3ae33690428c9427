// jina-embeddings-v3: an XLM-RoBERTa with rotary positions, post-norm layers, a GELU feed-forward
// and biases on every projection, as transformers 5.25's JinaEmbeddingsV3Model computes it:
//   x = LayerNorm(word[id] + token_type[type])                  no position embeddings
//   per layer:  x = LayerNorm(x + Attention(rotate(x·W_qkvᵀ + b_qkv))·W_oᵀ + b_o)
//               x = LayerNorm(x + gelu(x·W_1ᵀ + b_1)·W_2ᵀ + b_2)
// plus the hub's task LoRA adapters (jinaai/xlm-roberta-flash-implementation, modeling_lora.py):
// with a task t, every adapted weight W acts as W + s·B_t·A_t (s = lora_alpha / lora_rank), the
// word and token-type tables as E + s·A_t·B_t (their roles swap: A_t [rows, rank], B_t [rank,
// hidden]). The adapters are applied per sequence without merging: each run of consecutive
// sequences of one task adds s·(x·A_tᵀ)·B_tᵀ to its rows of every adapted projection (two gemms of
// rank 4), and s·A_t[id]·B_t to its tokens' embeddings; sequences without a task use W alone.
//
// Tensor layouts: the hub's (prefix "roberta.": embeddings.word_embeddings, token_type_embeddings,
// emb_ln, encoder.layers.i.{mixer.Wqkv, mixer.out_proj, norm1, mlp.fc1, mlp.fc2, norm2}; each
// adapted weight stored as <name>.parametrizations.weight.original with .0.lora_A / .0.lora_B
// [tasks, …]), the same names without parametrizations (transformers 5.25's save_pretrained of
// JinaEmbeddingsV3Model), and transformers' in-memory names (layers.i.self_attn.{q,k,v,o}_proj,
// mlp.fc1 / fc2, post_attention_layernorm, post_mlp_layernorm, embeddings.LayerNorm).
#include <string>
#include <vector>

#include "engine/models/family.h"
#include "engine/models/layers.h"
#include "engine/ops/convert.h"
#include "engine/ops/embedding.h"
#include "engine/ops/gemm.h"
#include "engine/ops/norm.h"
#include "engine/ops/rope.h"

namespace stamen::engine {
namespace {

// One adapted weight's LoRA pairs for every task, as the step multiplies them.
struct LowRankAdapters {
  // Linear: A [tasks · rank, in], task t's rows t·rank…; an embedding: A [tasks · rows, rank],
  // task t's table rows t·rows….
  Tensor down;
  // s·B [tasks · out, rank] (an embedding: s·B_tᵀ [hidden, rank] per task), task t's rows t·out….
  Tensor up;
};

struct LayerAdapters {
  LowRankAdapters qkv, output, up, down;
};

struct JinaWeights {
  layers::AbsoluteEmbeddingWeights embeddings;  // no position table
  std::vector<layers::PostNormLayerWeights> layers;
  // Empty without adapters (a native folder).
  LowRankAdapters word_adapters, token_type_adapters;
  std::vector<LayerAdapters> layer_adapters;
};

// Whether the schema reads the adapters: a hub folder with lora_adaptations, unless Load turned
// them off (lora_rank 0) to load a device's base weights without them.
bool ReadsAdapters(const ModelConfig& config) { return !config.adapter_tasks.empty() && config.lora_rank > 0; }

// The hub stores an adapted weight as a parametrization whenever the folder has adapters.
std::string WeightName(const ModelConfig& config, const std::string& base) {
  return base + (config.remote_code_tensors && !config.adapter_tasks.empty() ? ".parametrizations.weight.original"
                                                                             : ".weight");
}

// What follows an adapted weight's name in its adapters' names: lora_A, lora_B.
constexpr std::string_view kAdapterInfix = ".parametrizations.weight.0.lora_";

// lora_A and lora_B of `base` as stored: a linear [out, in] has A [tasks, rank, in] and B [tasks,
// out, rank]; an embedding [rows, hidden] A [tasks, rows, rank] and B [tasks, rank, hidden].
void VisitAdapters(TensorVisitor& visit, const ModelConfig& config, const std::string& base, int64_t out, int64_t in,
                   bool embedding, LowRankAdapters& adapters) {
  if (!ReadsAdapters(config)) return;
  const int64_t tasks = static_cast<int64_t>(config.adapter_tasks.size());
  const int64_t rank = config.lora_rank;
  const std::string name = base + std::string(kAdapterInfix);
  visit.Tensor(adapters.down, {name + "A", embedding ? Shape{tasks, out, rank} : Shape{tasks, rank, in}});
  visit.Tensor(adapters.up, {name + "B", embedding ? Shape{tasks, rank, in} : Shape{tasks, out, rank}});
}

void VisitNorm(TensorVisitor& visit, const std::string& name, int64_t size, Tensor& gamma, Tensor& beta) {
  visit.Tensor(gamma, {name + ".weight", {size}, TensorInit::kNormOne});
  visit.Tensor(beta, {name + ".bias", {size}});
}

void VisitTensors(const ModelConfig& config, const std::string& prefix, JinaWeights& weights, TensorVisitor& visit) {
  const int64_t h = config.hidden_size;
  const int64_t ffn = config.intermediate_size;
  const bool hub = config.remote_code_tensors;
  layers::AbsoluteEmbeddingWeights& embeddings = weights.embeddings;
  const std::string word = prefix + "embeddings.word_embeddings";
  const std::string token_type = prefix + "embeddings.token_type_embeddings";
  visit.Tensor(embeddings.word, {WeightName(config, word), {config.vocab_size, h}});
  VisitAdapters(visit, config, word, config.vocab_size, h, /*embedding=*/true, weights.word_adapters);
  visit.Tensor(embeddings.token_type, {WeightName(config, token_type), {config.type_vocab_size, h}});
  VisitAdapters(visit, config, token_type, config.type_vocab_size, h, /*embedding=*/true, weights.token_type_adapters);
  VisitNorm(visit, prefix + (hub ? "emb_ln" : "embeddings.LayerNorm"), h, embeddings.norm_gamma, embeddings.norm_beta);
  weights.layers.resize(config.num_hidden_layers);
  weights.layer_adapters.resize(config.num_hidden_layers);
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layers::PostNormLayerWeights& layer = weights.layers[i];
    LayerAdapters& adapters = weights.layer_adapters[i];
    layers::AttentionWeights& attention = layer.attention;
    layers::FeedForwardWeights& feed_forward = layer.feed_forward;
    if (!hub) {
      const std::string base = prefix + "layers." + std::to_string(i) + ".";
      std::vector<TensorSpec> weights_qkv, biases_qkv;
      for (const char* part : {"q", "k", "v"}) {
        weights_qkv.push_back({base + "self_attn." + part + "_proj.weight", {h, h}});
        biases_qkv.push_back({base + "self_attn." + part + "_proj.bias", {h}});
      }
      visit.Stacked(attention.qkv_weight, weights_qkv);
      visit.Stacked(attention.qkv_bias, biases_qkv);
      visit.Tensor(attention.output_weight, {base + "self_attn.o_proj.weight", {h, h}});
      visit.Tensor(attention.output_bias, {base + "self_attn.o_proj.bias", {h}});
      VisitNorm(visit, base + "post_attention_layernorm", h, layer.attention_norm_gamma, layer.attention_norm_beta);
      visit.Tensor(feed_forward.up_weight, {base + "mlp.fc1.weight", {ffn, h}});
      visit.Tensor(feed_forward.up_bias, {base + "mlp.fc1.bias", {ffn}});
      visit.Tensor(feed_forward.down_weight, {base + "mlp.fc2.weight", {h, ffn}});
      visit.Tensor(feed_forward.down_bias, {base + "mlp.fc2.bias", {h}});
      VisitNorm(visit, base + "post_mlp_layernorm", h, layer.output_norm_gamma, layer.output_norm_beta);
      continue;
    }
    const std::string base = prefix + "encoder.layers." + std::to_string(i) + ".";
    struct Projection {
      std::string name;
      int64_t out, in;
      Tensor &weight, &bias;
      LowRankAdapters& adapters;
    };
    const Projection projections[] = {
        {base + "mixer.Wqkv", 3 * h, h, attention.qkv_weight, attention.qkv_bias, adapters.qkv},
        {base + "mixer.out_proj", h, h, attention.output_weight, attention.output_bias, adapters.output},
        {base + "mlp.fc1", ffn, h, feed_forward.up_weight, feed_forward.up_bias, adapters.up},
        {base + "mlp.fc2", h, ffn, feed_forward.down_weight, feed_forward.down_bias, adapters.down},
    };
    for (const Projection& projection : projections) {
      visit.Tensor(projection.weight, {WeightName(config, projection.name), {projection.out, projection.in}});
      visit.Tensor(projection.bias, {projection.name + ".bias", {projection.out}});
      VisitAdapters(visit, config, projection.name, projection.out, projection.in, false, projection.adapters);
      if (projection.name.ends_with("out_proj")) {
        VisitNorm(visit, base + "norm1", h, layer.attention_norm_gamma, layer.attention_norm_beta);
      }
    }
    VisitNorm(visit, base + "norm2", h, layer.output_norm_gamma, layer.output_norm_beta);
  }
}

// The adapters as the step multiplies them (LowRankAdapters), from the stored lora_A / lora_B:
// A viewed flat, B scaled by s (and an embedding's B_t transposed) into a new F32 host tensor.
StatusOr<LowRankAdapters> PrepareAdapters(const LowRankAdapters& stored, bool embedding, float scale) {
  const int64_t tasks = stored.up.dim(0);
  LowRankAdapters prepared;
  prepared.down = stored.down.View({tasks * stored.down.dim(1), stored.down.dim(2)});
  // Linear B_t [out, rank] is kept; an embedding's B_t [rank, hidden] becomes [hidden, rank].
  const int64_t out = embedding ? stored.up.dim(2) : stored.up.dim(1);
  const int64_t rank = embedding ? stored.up.dim(1) : stored.up.dim(2);
  auto up = Tensor::Allocate(DataType::kF32, {tasks * out, rank});
  if (!up.ok()) return up.status();
  const float* source = stored.up.data<float>();
  float* target = up->data<float>();
  for (int64_t t = 0; t < tasks; ++t) {
    for (int64_t row = 0; row < out; ++row) {
      for (int64_t r = 0; r < rank; ++r) {
        const int64_t from = embedding ? (t * rank + r) * out + row : (t * out + row) * rank + r;
        target[(t * out + row) * rank + r] = scale * source[from];
      }
    }
  }
  prepared.up = std::move(up.value());
  return prepared;
}

// A run of consecutive tokens whose sequences share one task adapter.
struct AdapterRun {
  int64_t begin, end;
  int64_t task;
};

// The step's runs, from each sequence's adapter (input.adapters_host; −1 and an empty list: none).
std::vector<AdapterRun> AdapterRuns(const ModelInput& input) {
  std::vector<AdapterRun> runs;
  for (size_t s = 0; s < input.adapters_host.size(); ++s) {
    const int64_t task = input.adapters_host[s];
    const int64_t begin = input.cu_seqlens_host[s], end = input.cu_seqlens_host[s + 1];
    if (task < 0 || begin == end) continue;
    if (!runs.empty() && runs.back().task == task && runs.back().end == begin) {
      runs.back().end = end;
    } else {
      runs.push_back({begin, end, task});
    }
  }
  return runs;
}

// output[rows of each run] += s·(input·A_tᵀ)·B_tᵀ through `codes` [T, rank].
Status AddAdapters(const LowRankAdapters& adapters, const std::vector<AdapterRun>& runs, int64_t rank,
                   const Tensor& input, Tensor& codes, Tensor& output) {
  const int64_t out = output.dim(1);
  for (const AdapterRun& run : runs) {
    Tensor run_codes = codes.Rows(run.begin, run.end);
    Tensor run_output = output.Rows(run.begin, run.end);
    STAMEN_RETURN_IF_ERROR(ops::Gemm(input.Rows(run.begin, run.end),
                                     adapters.down.Rows(run.task * rank, (run.task + 1) * rank), Tensor(), run_codes));
    STAMEN_RETURN_IF_ERROR(ops::Gemm(run_codes, adapters.up.Rows(run.task * out, (run.task + 1) * out), Tensor(),
                                     run_output, {.accumulate = true}));
  }
  return Status();
}

// hidden[rows of each run] += s·A_t[ids]·B_t: an embedding table's adapter, through `codes`.
Status AddEmbeddingAdapters(const LowRankAdapters& adapters, const std::vector<AdapterRun>& runs, int64_t table_rows,
                            const Tensor& ids, Tensor& codes, Tensor& hidden) {
  const int64_t width = hidden.dim(1);
  for (const AdapterRun& run : runs) {
    Tensor run_codes = codes.Rows(run.begin, run.end);
    Tensor run_hidden = hidden.Rows(run.begin, run.end);
    STAMEN_RETURN_IF_ERROR(ops::Gather(adapters.down.Rows(run.task * table_rows, (run.task + 1) * table_rows),
                                       ids.Rows(run.begin, run.end), run_codes));
    STAMEN_RETURN_IF_ERROR(ops::Gemm(run_codes, adapters.up.Rows(run.task * width, (run.task + 1) * width), Tensor(),
                                     run_hidden, {.accumulate = true}));
  }
  return Status();
}

class JinaEmbeddingsV3Model final : public FamilyModel<JinaWeights> {
 public:
  using FamilyModel::FamilyModel;
  StatusOr<Tensor> Forward(const ModelInput& input) override;
  int64_t max_sequence_length() const override { return config_.max_position_embeddings; }

 private:
  Status Embed(const ModelInput& input, const std::vector<AdapterRun>& runs, layers::Slots slots, Tensor& hidden);
  Status AdaptedLayer(size_t index, const layers::AttentionSettings& attention, const std::vector<AdapterRun>& runs,
                      const ModelInput& input, layers::Slots slots, Tensor& hidden);
};

Status JinaEmbeddingsV3Model::Embed(const ModelInput& input, const std::vector<AdapterRun>& runs, layers::Slots slots,
                                    Tensor& hidden) {
  const float eps = static_cast<float>(config_.norm_eps);
  if (runs.empty()) return layers::EmbedAbsolute(weights_.embeddings, input, 0, eps, slots, hidden);
  const int64_t tokens = input.token_ids.dim(0);
  Tensor zeros = slots.Get(DataType::kI32, {tokens});
  Tensor codes = slots.Get(placement_.dtype, {tokens, config_.lora_rank});
  STAMEN_RETURN_IF_ERROR(slots.status());
  Tensor token_types = input.token_type_ids;
  if (token_types.empty()) {
    STAMEN_RETURN_IF_ERROR(ops::Zero(zeros));
    token_types = zeros;
  }
  STAMEN_RETURN_IF_ERROR(ops::Gather(weights_.embeddings.word, input.token_ids, hidden));
  Status types = ops::Gather(weights_.embeddings.token_type, token_types, hidden, /*accumulate=*/true);
  if (!types.ok()) return Status::Error("token type ids: " + types.message());
  STAMEN_RETURN_IF_ERROR(
      AddEmbeddingAdapters(weights_.word_adapters, runs, config_.vocab_size, input.token_ids, codes, hidden));
  STAMEN_RETURN_IF_ERROR(AddEmbeddingAdapters(weights_.token_type_adapters, runs, config_.type_vocab_size,
                                              token_types, codes, hidden));
  const layers::AbsoluteEmbeddingWeights& embeddings = weights_.embeddings;
  return ops::LayerNorm(hidden, Tensor(), embeddings.norm_gamma, embeddings.norm_beta, eps, hidden);
}

// layers::PostNormLayer with each projection's adapter added for the rows of its task's runs.
Status JinaEmbeddingsV3Model::AdaptedLayer(size_t index, const layers::AttentionSettings& attention,
                                           const std::vector<AdapterRun>& runs, const ModelInput& input,
                                           layers::Slots slots, Tensor& hidden) {
  const layers::PostNormLayerWeights& layer = weights_.layers[index];
  const LayerAdapters& adapters = weights_.layer_adapters[index];
  const int64_t tokens = hidden.dim(0);
  const int64_t rank = config_.lora_rank;
  const float eps = static_cast<float>(config_.norm_eps);
  const DataType type = hidden.dtype();
  Tensor qkv = slots.Get(type, {tokens, attention.layout.row_size()});
  Tensor context = slots.Get(type, {tokens, config_.hidden_size});
  Tensor projected = slots.Get(type, hidden.shape());
  Tensor intermediate = slots.Get(type, {tokens, config_.intermediate_size});
  Tensor codes = slots.Get(type, {tokens, rank});
  STAMEN_RETURN_IF_ERROR(slots.status());
  STAMEN_RETURN_IF_ERROR(ops::Gemm(hidden, layer.attention.qkv_weight, layer.attention.qkv_bias, qkv));
  STAMEN_RETURN_IF_ERROR(AddAdapters(adapters.qkv, runs, rank, hidden, codes, qkv));
  STAMEN_RETURN_IF_ERROR(ops::ApplyRope(qkv, attention.layout, *attention.rope));
  STAMEN_RETURN_IF_ERROR(ops::Attention(qkv, input.cu_seqlens, attention.layout, attention.options, context));
  STAMEN_RETURN_IF_ERROR(
      ops::Gemm(context, layer.attention.output_weight, layer.attention.output_bias, projected));
  STAMEN_RETURN_IF_ERROR(AddAdapters(adapters.output, runs, rank, context, codes, projected));
  STAMEN_RETURN_IF_ERROR(
      ops::LayerNorm(projected, hidden, layer.attention_norm_gamma, layer.attention_norm_beta, eps, hidden));
  // The activation follows the adapter's sum, so fc1 cannot fuse it as FeedForwardGemms does.
  STAMEN_RETURN_IF_ERROR(ops::Gemm(hidden, layer.feed_forward.up_weight, layer.feed_forward.up_bias, intermediate));
  STAMEN_RETURN_IF_ERROR(AddAdapters(adapters.up, runs, rank, hidden, codes, intermediate));
  STAMEN_RETURN_IF_ERROR(ops::Activate(config_.hidden_act, intermediate, intermediate));
  STAMEN_RETURN_IF_ERROR(
      ops::Gemm(intermediate, layer.feed_forward.down_weight, layer.feed_forward.down_bias, projected));
  STAMEN_RETURN_IF_ERROR(AddAdapters(adapters.down, runs, rank, intermediate, codes, projected));
  return ops::LayerNorm(projected, hidden, layer.output_norm_gamma, layer.output_norm_beta, eps, hidden);
}

StatusOr<Tensor> JinaEmbeddingsV3Model::Forward(const ModelInput& input) {
  layers::Slots slots(workspace_);
  const int64_t tokens = input.token_ids.dim(0);
  Tensor hidden = slots.Get(placement_.dtype, {tokens, config_.hidden_size});
  Tensor positions = slots.Get(DataType::kI32, {tokens});
  Tensor rope = slots.Get(DataType::kF32, {tokens, config_.head_dim});
  STAMEN_RETURN_IF_ERROR(slots.status());
  const std::vector<AdapterRun> runs = AdapterRuns(input);
  if (!runs.empty() && weights_.word_adapters.up.empty()) {
    return Status::Error("task adapters are not loaded on this device");
  }
  // Positions restart at 0 in every sequence, made on the device so a replayed graph recomputes them.
  STAMEN_RETURN_IF_ERROR(ops::SequencePositions(input.cu_seqlens, 0, positions));
  STAMEN_RETURN_IF_ERROR(ops::RopeTable(positions, config_.rope_theta, rope, config_.rope_scaling));
  STAMEN_RETURN_IF_ERROR(Embed(input, runs, slots.Nested(), hidden));
  const layers::AttentionSettings attention{
      .layout = {config_.num_attention_heads, config_.num_attention_heads, config_.head_dim},
      .options = {},
      .norm_eps = 0.0f,
      .rope = &rope};
  const layers::FeedForwardSettings feed_forward{
      .activation = config_.hidden_act, .gated = false, .intermediate_size = config_.intermediate_size};
  const float eps = static_cast<float>(config_.norm_eps);
  for (size_t i = 0; i < weights_.layers.size(); ++i) {
    if (runs.empty()) {
      STAMEN_RETURN_IF_ERROR(layers::PostNormLayer(weights_.layers[i], attention, feed_forward, eps, input.cu_seqlens,
                                                   slots.Nested(), hidden));
    } else {
      STAMEN_RETURN_IF_ERROR(AdaptedLayer(i, attention, runs, input, slots.Nested(), hidden));
    }
  }
  return hidden;
}

constexpr std::string_view kPrefixes[] = {"", "roberta."};

// Hands on only the task adapters' tensors (lora_A, lora_B) of the schema.
class AdapterFilter final : public TensorVisitor {
 public:
  explicit AdapterFilter(TensorVisitor& inner) : inner_(inner) {}
  void Tensor(engine::Tensor& target, const TensorSpec& spec) override {
    if (spec.name.find(kAdapterInfix) != std::string::npos) inner_.Tensor(target, spec);
  }
  void Stacked(engine::Tensor&, std::span<const TensorSpec>) override {}

 private:
  TensorVisitor& inner_;
};

// The schema's adapters alone: a device placement reads them on the host first (PrepareAdapters
// reshapes and scales them there), then places the prepared ones.
void VisitAdapterTensors(const ModelConfig& config, const std::string& prefix, JinaWeights& weights,
                         TensorVisitor& visit) {
  AdapterFilter adapters(visit);
  VisitTensors(config, prefix, weights, adapters);
}

// The layout is the tensors': transformers' in-memory names when present under a prefix, else
// the hub's (with parametrizations when the config has adapters). On the CPU the adapters load
// with the base weights; on a device the base weights load there, the adapters on the host, and
// the prepared adapters are then placed on the device.
StatusOr<std::unique_ptr<Model>> Load(const ModelConfig& config, const WeightStore& weights,
                                      const Placement& placement) {
  ModelConfig layout = config;
  layout.remote_code_tensors = true;
  for (std::string_view prefix : kPrefixes) {
    if (weights.Contains(std::string(prefix) + "layers.0.post_mlp_layernorm.weight")) layout.remote_code_tensors = false;
  }
  if (!layout.remote_code_tensors && !config.adapter_tasks.empty()) {
    return Status::Error("config.json names task adapters (lora_adaptations), but the weights carry transformers' "
                         "names without them");
  }
  auto model = std::make_unique<JinaEmbeddingsV3Model>(layout, placement);
  const bool on_host = placement.device == Device::kCpu;
  ModelConfig visited = layout;
  if (!on_host) visited.lora_rank = 0;  // ReadsAdapters: false (read below, on the host)
  STAMEN_RETURN_IF_ERROR(LoadTensors(visited, weights, placement, VisitTensors, model->weights_));
  if (!ReadsAdapters(layout)) return std::unique_ptr<Model>(std::move(model));
  JinaWeights& loaded = model->weights_;
  if (!on_host) STAMEN_RETURN_IF_ERROR(LoadTensors(layout, weights, Placement{}, VisitAdapterTensors, loaded));
  const float scale = static_cast<float>(config.lora_alpha / static_cast<double>(config.lora_rank));
  // Prepared on the host (F32), then put where the step multiplies them.
  auto prepare = [&](LowRankAdapters& adapters, bool embedding) -> Status {
    auto prepared = PrepareAdapters(adapters, embedding, scale);
    if (!prepared.ok()) return prepared.status();
    for (engine::Tensor* part : {&prepared->down, &prepared->up}) {
      auto placed = model_weights::Place(*part, placement);
      if (!placed.ok()) return placed.status();
      *part = std::move(placed.value());
    }
    adapters = std::move(prepared.value());
    return Status();
  };
  for (LowRankAdapters* embedding : {&loaded.word_adapters, &loaded.token_type_adapters}) {
    STAMEN_RETURN_IF_ERROR(prepare(*embedding, /*embedding=*/true));
  }
  for (LayerAdapters& layer : loaded.layer_adapters) {
    for (LowRankAdapters* linear : {&layer.qkv, &layer.output, &layer.up, &layer.down}) {
      STAMEN_RETURN_IF_ERROR(prepare(*linear, /*embedding=*/false));
    }
  }
  return std::unique_ptr<Model>(std::move(model));
}

}  // namespace

extern const FamilyDefinition kJinaEmbeddingsV3Family{
    .weight_prefixes = kPrefixes,
    .tensors = SchemaTensors<JinaWeights, VisitTensors>, .load = Load};

}  // namespace stamen::engine
