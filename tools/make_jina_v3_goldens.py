#!/usr/bin/env python3
"""jina-embeddings-v3 goldens (issue 48): tiny random folders with outputs of transformers 5.25.

    .venv-heavy/bin/python tools/make_jina_v3_goldens.py tests/engine/data

writes three folders under the given directory:
  - tiny-jina-v3-hub-bf16: the hub's layout (jinaai/jina-embeddings-v3 as users download it): its
    remote-code config.json (model_type "xlm-roberta", architectures ["XLMRobertaModel"], auto_map to
    jinaai/xlm-roberta-flash-implementation, rotary_emb_base, lora_adaptations, lora_rank, lora_alpha,
    task_instructions), tensors under "roberta." with every adapted weight stored as
    <name>.parametrizations.weight.original plus .0.lora_A / .0.lora_B for the five tasks (the
    pooler too, which embeddings never read), stored in BF16;
  - tiny-jina-v3: transformers' own JinaEmbeddingsV3Model save_pretrained (no adapters);
  - tiny-jina-v3-state-dict: the same weights under transformers' in-memory names.

The reference rule for a task (the remote code's, modeling_lora.py LoRAParametrization.lora_forward,
which vLLM's JinaRobertaModel.jina_merge_lora_weights restates): every adapted weight becomes
    linear      W + (lora_alpha / lora_rank) · B_t · A_t     lora_A [tasks, rank, in], lora_B [tasks, out, rank]
    embedding   E + (lora_alpha / lora_rank) · A_t · B_t     lora_A [tasks, rows, rank], lora_B [tasks, rank, hidden]
(the word and token-type tables, mixer.Wqkv, mixer.out_proj, mlp.fc1, mlp.fc2 of every layer); no task
is the base weights. Each task's golden is transformers 5.25's JinaEmbeddingsV3Model (eager, float64)
run on the stored (BF16-rounded) weights with that task's adapter merged so, one sequence per batch.

golden.safetensors: for i = 0..5 (lengths 1, 3, 7, 16, 64, 130) `input_ids_i` (I64) and, for each
task k of TASKS plus "none", `last_hidden_state_<k>_i` [L, 64] and `mean_pooled_<k>_i` [1, 64] (F32
casts). The native folders hold the "none" outputs only. report.json records the rule, versions,
tensor names and checks (how far each task's outputs are from the base's; the native folders'
reload through AutoModel).
"""
import json
import pathlib
import sys

import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file

LENGTHS = [1, 3, 7, 16, 64, 130]
VOCAB = 1000
HIDDEN, LAYERS, HEADS, INTERMEDIATE = 64, 2, 4, 128
TASKS = ["retrieval.query", "retrieval.passage", "separation", "classification", "text-matching"]
# jina-embeddings-v3's own task_instructions.
INSTRUCTIONS = {"retrieval.query": "Represent the query for retrieving evidence documents: ",
                "retrieval.passage": "Represent the document for retrieval: ",
                "separation": "", "classification": "", "text-matching": ""}
RANK, ALPHA = 4, 1
THETA = 20000.0  # jina-embeddings-v3's rotary_emb_base; XLMRobertaFlashConfig's default is 10000
AUTO_MAP = {
    "AutoConfig": "jinaai/xlm-roberta-flash-implementation--configuration_xlm_roberta.XLMRobertaFlashConfig",
    "AutoModel": "jinaai/xlm-roberta-flash-implementation--modeling_lora.XLMRobertaLoRA",
    "AutoModelForPreTraining": "jinaai/xlm-roberta-flash-implementation--modeling_xlm_roberta.XLMRobertaForPreTraining",
    "AutoModelForMaskedLM": "jinaai/xlm-roberta-flash-implementation--modeling_xlm_roberta.XLMRobertaForMaskedLM",
    "AutoModelForSequenceClassification":
        "jinaai/xlm-roberta-flash-implementation--modeling_xlm_roberta.XLMRobertaForSequenceClassification"}
# jina-embeddings-v3's config.json, at the tiny shapes.
HUB_CONFIG = {
    "architectures": ["XLMRobertaModel"], "attention_probs_dropout_prob": 0.1, "auto_map": AUTO_MAP,
    "bos_token_id": 0, "classifier_dropout": None, "emb_pooler": None, "eos_token_id": 2, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": HIDDEN, "initializer_range": 0.02, "intermediate_size": INTERMEDIATE,
    "layer_norm_eps": 1e-05, "load_trained_adapters": True, "lora_adaptations": TASKS, "lora_alpha": ALPHA,
    "lora_dropout_p": 0.0, "lora_main_params_trainable": False, "lora_rank": RANK,
    "matryoshka_dimensions": [16, 32, 64], "max_position_embeddings": 514, "model_type": "xlm-roberta",
    "num_attention_heads": HEADS, "num_hidden_layers": LAYERS, "output_past": True, "pad_token_id": 1,
    "position_embedding_type": "rotary", "rotary_emb_base": THETA, "task_instructions": INSTRUCTIONS,
    "torch_dtype": "bfloat16", "truncate_dim": None, "type_vocab_size": 1, "use_cache": True,
    "use_flash_attn": True, "use_reentrant": False, "vocab_size": VOCAB}
# The adapted modules: in-memory name (transformers) -> hub name (remote code), and whether an embedding.
LINEARS = {"mixer.Wqkv": ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj"],
           "mixer.out_proj": ["self_attn.o_proj"], "mlp.fc1": ["mlp.fc1"], "mlp.fc2": ["mlp.fc2"]}


def make_config():
    return transformers.JinaEmbeddingsV3Config(
        vocab_size=VOCAB, hidden_size=HIDDEN, num_hidden_layers=LAYERS, num_attention_heads=HEADS,
        intermediate_size=INTERMEDIATE, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
        hidden_act="gelu", pad_token_id=1, bos_token_id=0, eos_token_id=2,
        rope_parameters={"rope_type": "default", "rope_theta": THETA}, attn_implementation="eager")


def perturb(model):
    """make_family_goldens.py's default recipe: norm weights 1+0.1N, norm biases 0.1N, other biases
    0.05N, non-embedding matrices x5."""
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            is_norm = "norm" in name.lower()
            if is_norm and name.endswith("weight"):
                parameter.copy_(1 + 0.1 * torch.randn_like(parameter))
            elif name.endswith("bias"):
                parameter.copy_((0.1 if is_norm else 0.05) * torch.randn_like(parameter))
            elif parameter.dim() == 2 and "embed" not in name:
                parameter.mul_(5)


def bf16(tensor):
    return tensor.to(torch.bfloat16)


def hub_tensors(state, adapters, cast=bf16, layers=LAYERS):
    """The hub's names for transformers' in-memory `state` (cast by `cast`), with `adapters` {hub module:
    (A, B)}; `adapters` None stores every adapted weight under its plain name, as the remote code's
    XLMRobertaModel (no LoRA) holds it (jina-colbert-v2, tools/make_multi_vector_goldens.py)."""
    hub = {}

    def parametrized(module, weight):
        if adapters is None:
            hub[f"roberta.{module}.weight"] = cast(weight)
            return
        lora_a, lora_b = adapters[module]
        hub[f"roberta.{module}.parametrizations.weight.original"] = cast(weight)
        hub[f"roberta.{module}.parametrizations.weight.0.lora_A"] = cast(lora_a)
        hub[f"roberta.{module}.parametrizations.weight.0.lora_B"] = cast(lora_b)

    for table in ("word_embeddings", "token_type_embeddings"):
        parametrized(f"embeddings.{table}", state[f"embeddings.{table}.weight"])
    for suffix in ("weight", "bias"):
        hub[f"roberta.emb_ln.{suffix}"] = cast(state[f"embeddings.LayerNorm.{suffix}"])
    parametrized("pooler.dense", state["pooler.dense.weight"])
    hub["roberta.pooler.dense.bias"] = cast(state["pooler.dense.bias"])
    for i in range(layers):
        old, new = f"layers.{i}.", f"encoder.layers.{i}."
        for module, parts in LINEARS.items():
            parametrized(new + module, torch.cat([state[old + p + ".weight"] for p in parts]))
            hub[f"roberta.{new}{module}.bias"] = cast(torch.cat([state[old + p + ".bias"] for p in parts]))
        for norm, hub_norm in (("post_attention_layernorm", "norm1"), ("post_mlp_layernorm", "norm2")):
            for suffix in ("weight", "bias"):
                hub[f"roberta.{new}{hub_norm}.{suffix}"] = cast(state[old + f"{norm}.{suffix}"])
    return hub


def merged_state(hub, task):
    """transformers' in-memory state dict (float64) of the hub tensors with `task`'s adapter merged
    by the reference rule (None: the base weights)."""
    scale = ALPHA / RANK
    weights = {}
    for name, tensor in hub.items():
        if name.endswith(".0.lora_A") or name.endswith(".0.lora_B"):
            continue
        tensor = tensor.double()
        if name.endswith(".parametrizations.weight.original"):
            module = name[:-len(".parametrizations.weight.original")]
            if task is not None:
                t = TASKS.index(task)
                lora_a = hub[module + ".parametrizations.weight.0.lora_A"][t].double()
                lora_b = hub[module + ".parametrizations.weight.0.lora_B"][t].double()
                product = lora_a @ lora_b if "embeddings" in module else lora_b @ lora_a
                tensor = tensor + scale * product
            name = module + ".weight"
        weights[name[len("roberta."):]] = tensor
    state = {}
    for name, tensor in weights.items():
        if name.startswith("emb_ln."):
            state["embeddings.LayerNorm." + name[len("emb_ln."):]] = tensor
        elif name.startswith("encoder.layers."):
            _, _, i, rest = name.split(".", 3)
            module, suffix = rest.rsplit(".", 1)
            base = f"layers.{i}."
            if module in LINEARS:
                parts = LINEARS[module]
                for part, chunk in zip(parts, tensor.chunk(len(parts), dim=0)):
                    state[f"{base}{part}.{suffix}"] = chunk
            else:
                state[base + {"norm1": "post_attention_layernorm", "norm2": "post_mlp_layernorm"}[module]
                      + "." + suffix] = tensor
        else:
            state[name] = tensor
    return state


def make_ids(generator):
    """<s> body </s> (length 1: <s> alone); random ids never hit <s>, <pad>, </s>."""
    rows = []
    for length in LENGTHS:
        body = torch.randint(3, VOCAB, (max(length - 2, 0),), generator=generator)
        row = [0] if length == 1 else [0] + body.tolist() + [2]
        rows.append(torch.tensor(row, dtype=torch.int64))
    return rows


def run(model, ids):
    with torch.no_grad():
        return model(input_ids=ids[None]).last_hidden_state[0]


def tensor_names(path):
    with safe_open(path, "pt") as f:
        return {name: [str(f.get_slice(name).get_dtype()), list(f.get_slice(name).get_shape())] for name in f.keys()}


def write_golden(out, rows, outputs):
    golden = {}
    for i, ids in enumerate(rows):
        golden[f"input_ids_{i}"] = ids
        for task, hiddens in outputs.items():
            golden[f"last_hidden_state_{task}_{i}"] = hiddens[i].float()
            golden[f"mean_pooled_{task}_{i}"] = hiddens[i].mean(0, keepdim=True).float()
    save_file({k: v.contiguous() for k, v in golden.items()}, out / "golden.safetensors")
    return golden


def report(out, layout, extra):
    data = {"generator": "tools/make_jina_v3_goldens.py", "transformers": transformers.__version__,
            "torch": torch.__version__, "class": "JinaEmbeddingsV3Model", "lengths": LENGTHS,
            "dtype": "float64 run, float32 outputs", "attn_implementation": "eager", "layout": layout,
            "reference_rule": __doc__.split("The reference rule")[1].split("golden.safetensors:")[0].strip(),
            "config": json.loads((out / "config.json").read_text()),
            "tensors": tensor_names(out / "model.safetensors")}
    data.update(extra)
    (out / "report.json").write_text(json.dumps(data, indent=1) + "\n")


def main():
    root = pathlib.Path(sys.argv[1])
    torch.manual_seed(4803)
    config = make_config()
    model = transformers.JinaEmbeddingsV3Model(config).eval()
    perturb(model)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    generator = torch.Generator().manual_seed(7)
    # Task adapters large enough that every task's outputs differ clearly from the others'.
    adapters = {}
    modules = [f"embeddings.{t}" for t in ("word_embeddings", "token_type_embeddings")] + ["pooler.dense"] + [
        f"encoder.layers.{i}.{m}" for i in range(LAYERS) for m in LINEARS]
    for module in modules:
        if module.startswith("embeddings."):
            rows = VOCAB if "word" in module else 1
            adapters[module] = (0.3 * torch.randn(len(TASKS), rows, RANK, generator=generator),
                                0.3 * torch.randn(len(TASKS), RANK, HIDDEN, generator=generator))
        else:
            out_features, in_features = (3 * HIDDEN, HIDDEN) if module.endswith("Wqkv") else \
                (INTERMEDIATE, HIDDEN) if module.endswith("fc1") else \
                (HIDDEN, INTERMEDIATE) if module.endswith("fc2") else (HIDDEN, HIDDEN)
            adapters[module] = (0.3 * torch.randn(len(TASKS), RANK, in_features, generator=generator),
                                0.3 * torch.randn(len(TASKS), out_features, RANK, generator=generator))
    hub = hub_tensors(state, adapters)
    rows = make_ids(torch.Generator().manual_seed(11))

    # The hub folder: every task and none, each on its merged float64 weights.
    out = root / "tiny-jina-v3-hub-bf16"
    out.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in hub.items()}, out / "model.safetensors", metadata={"format": "pt"})
    (out / "config.json").write_text(json.dumps(HUB_CONFIG, indent=2, sort_keys=True) + "\n")
    outputs = {}
    for task in [None] + TASKS:
        reference = transformers.JinaEmbeddingsV3Model(make_config()).double().eval()
        missing, unexpected = reference.load_state_dict(merged_state(hub, task), strict=False)
        assert not missing and not unexpected, (missing, unexpected)
        outputs[task or "none"] = [run(reference, ids) for ids in rows]
    write_golden(out, rows, outputs)
    spread = {task: min(float(torch.nn.functional.cosine_similarity(
        outputs[task][i].mean(0), outputs["none"][i].mean(0), dim=0)) for i in range(len(rows))) for task in TASKS}
    checks = {"lowest_mean_cosine_of_each_task_to_none": spread, "lora_scale": ALPHA / RANK}
    report(out, "the hub's remote code (tensors and config.json as jinaai/jina-embeddings-v3 ships them), BF16",
           {"tasks": TASKS, "checks": checks})
    print(f"wrote {out}: task-to-none mean cosines {spread}")

    # The native folders: the base weights (BF16-rounded, as the hub's) without adapters.
    base = transformers.JinaEmbeddingsV3Model(make_config()).eval()
    base.load_state_dict({k: v.float() for k, v in merged_state(hub, None).items()}, strict=True)
    for name, state_dict_names in (("tiny-jina-v3", False), ("tiny-jina-v3-state-dict", True)):
        out = root / name
        out.mkdir(parents=True, exist_ok=True)
        base.save_pretrained(out, safe_serialization=True)
        if state_dict_names:
            save_file({k: v.detach().contiguous() for k, v in base.state_dict().items()}, out / "model.safetensors",
                      metadata={"format": "pt"})
        write_golden(out, rows, {"none": outputs["none"]})
        reloaded = transformers.AutoModel.from_pretrained(out, attn_implementation="eager").double().eval()
        worst = max(float((run(reloaded, ids) - outputs["none"][i]).abs().max()) for i, ids in enumerate(rows))
        layout = "transformers' in-memory tensor names (state_dict)" if state_dict_names else \
            "transformers 5.25 save_pretrained (its conversion mapping writes the hub's names, no adapters)"
        report(out, layout, {"checks": {"reloaded_class": type(reloaded).__name__, "reload_max_abs_diff": worst}})
        print(f"wrote {out}: reload diff {worst:.2e}")


if __name__ == "__main__":
    main()
