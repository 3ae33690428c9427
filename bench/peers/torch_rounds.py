"""stamen's engine against PyTorch eager (transformers 5.25, sdpa attention; fp32, or both sides in bf16 with
`--dtype bfloat16`: PyTorch's bf16 matrix products run through oneDNN, on AMX where the CPU has it), alternated round by
round on the same model folder, one sequence of each length, same thread count: each round runs
`stamen bench engine` once, then times transformers' model on the same shapes. For families ONNX
export does not cover yet (NomicBERT, GTE's hub folders, JinaBERT); engine_rounds.py is the ONNX Runtime /
OpenVINO peer. Before timing, both embed one random sequence of the longest length and the
largest absolute difference of the last hidden states is printed (the two must agree).

    .venv-heavy/bin/python bench/peers/torch_rounds.py --model DIR --threads 2 --lengths 512 --rounds 5

A hub GTE folder (model_type "new") loads as transformers' GteModel with its config restated and
the hub's NTK scaling registered as tools/make_family_goldens.py does. A JinaBERT folder (auto_map
naming JinaBertConfig; transformers has no JinaBERT) runs as transformers' BERT modules with ALiBi
added to their SDPA attention's mask and the gated feed-forward (make_family_goldens.load_jina_bert).
A nomic-embed-text-v2-moe folder (moe_every_n_layers) runs as make_family_goldens' nomic_moe_model,
transformers' NomicBertModel with nomic's expert layers put in (transformers has none). pplx-embed-v1 and
llama-nemotron-embed folders run as transformers' Qwen3Model / LlamaModel attending bidirectionally, and
so does voyage-4-nano's backbone (its `linear` projection, 0.5% of the step at 512 tokens, is left out:
both sides' last hidden states are the backbone's). A jina-embeddings-v3 hub folder (auto_map naming
XLMRobertaLoRA) runs as transformers' JinaEmbeddingsV3Model on its base weights
(make_jina_v3_goldens.merged_state with no task), which is what stamen runs without a task; with
`--task T` stamen's timed steps apply T's adapters per sequence (unmerged) while the peer's timed model
has T merged into its weights (as vLLM serves one task), so the peer pays nothing for the task.
"""
import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

import torch
import transformers

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
from make_family_goldens import load_jina_bert, load_nomic_moe, new_impl_ntk_parameters  # noqa: E402  (registers the "ntk" rope_type)
import make_jina_v3_goldens  # noqa: E402
from safetensors.torch import load_file  # noqa: E402


def load_nomic_moe_reference(folder, config):
    """nomic-embed-text-v2-moe's hub folder as make_family_goldens.nomic_moe_model: transformers'
    NomicBertModel (SDPA attention) with nomic's biased projections, plain gelu MLPs and expert layers
    (router softmax, top k, one loop over the experts as nomic's remote code runs on the CPU)."""
    native = transformers.NomicBertConfig(
        vocab_size=config["vocab_size"], hidden_size=config["n_embd"], num_hidden_layers=config["n_layer"],
        num_attention_heads=config["n_head"], intermediate_size=config["n_inner"],
        max_position_embeddings=config["n_positions"], type_vocab_size=config["type_vocab_size"],
        layer_norm_eps=config["layer_norm_epsilon"], hidden_act=config["activation_function"],
        pad_token_id=config["pad_token_id"],
        rope_parameters={"rope_type": "default", "rope_theta": float(config["rotary_emb_base"])},
        attn_implementation="sdpa")
    native.num_experts, native.moe_top_k = config["num_experts"], config["moe_top_k"]
    native.moe_every_n_layers = config["moe_every_n_layers"]
    return load_nomic_moe({"config": native}, pathlib.Path(folder))


def load_bidirectional_decoder(folder, model_type):
    """pplx-embed-v1 (bidirectional_pplx_qwen3) and llama-nemotron-embed (llama_bidirec): their remote
    code is transformers' Qwen3Model / LlamaModel with every layer's is_causal off and no causal mask
    (one unpadded sequence here: no mask at all), as the goldens' reference."""
    cls = transformers.Qwen3Model if model_type == "bidirectional_pplx_qwen3" else transformers.LlamaModel
    sys.modules[cls.__module__].create_causal_mask = lambda *args, **kwargs: None
    model = cls.from_pretrained(folder, attn_implementation="sdpa")
    for layer in model.layers:
        layer.self_attn.is_causal = False
    return model


def load_jina_v3(folder, config, task=None):
    """A jina-embeddings-v3 hub folder as transformers' JinaEmbeddingsV3Model (SDPA) on its base
    weights: the hub's names mapped back and no adapter merged (make_jina_v3_goldens.merged_state)."""
    native = transformers.JinaEmbeddingsV3Config(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"], intermediate_size=config["intermediate_size"],
        max_position_embeddings=config["max_position_embeddings"], type_vocab_size=config["type_vocab_size"],
        layer_norm_eps=config["layer_norm_eps"], hidden_act=config["hidden_act"], pad_token_id=config["pad_token_id"],
        rope_parameters={"rope_type": "default", "rope_theta": float(config["rotary_emb_base"])},
        attn_implementation="sdpa")
    hub = load_file(str(pathlib.Path(folder) / "model.safetensors"))
    model = transformers.JinaEmbeddingsV3Model(native)
    state = {name: tensor.float() for name, tensor in make_jina_v3_goldens.merged_state(hub, task).items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert all(name.startswith("pooler.") for name in missing), missing  # the pooler: never read for embeddings
    return model


def load_reference(folder):
    config = json.loads((pathlib.Path(folder) / "config.json").read_text())
    if "JinaBertConfig" in config.get("auto_map", {}).get("AutoConfig", ""):
        return load_jina_bert(folder)
    if "XLMRobertaLoRA" in config.get("auto_map", {}).get("AutoModel", ""):
        return load_jina_v3(folder, config)
    if config.get("moe_every_n_layers"):
        return load_nomic_moe_reference(folder, config)
    if config.get("model_type") in ("bidirectional_pplx_qwen3", "llama_bidirec"):
        return load_bidirectional_decoder(folder, config["model_type"])
    if config.get("model_type") == "qwen3" and config.get("use_bidirectional_attention"):
        return load_bidirectional_decoder(folder, "bidirectional_pplx_qwen3")  # voyage-4-nano's backbone
    if config.get("model_type") != "new":
        return transformers.AutoModel.from_pretrained(folder, attn_implementation="sdpa")
    scaling = config.get("rope_scaling")
    rope = {"rope_type": "ntk", "rope_theta": float(config["rope_theta"]), "factor": scaling["factor"]} if scaling \
        else {"rope_type": "default", "rope_theta": float(config["rope_theta"])}
    native = transformers.GteConfig(
        vocab_size=config["vocab_size"], hidden_size=config["hidden_size"], num_hidden_layers=config["num_hidden_layers"],
        num_attention_heads=config["num_attention_heads"], intermediate_size=config["intermediate_size"],
        max_position_embeddings=config["max_position_embeddings"], type_vocab_size=config["type_vocab_size"],
        layer_norm_eps=config["layer_norm_eps"], hidden_act=config["hidden_act"], rope_parameters=rope)
    return transformers.GteModel.from_pretrained(folder, config=native, attn_implementation="sdpa")


def stamen_hidden(args, ids):
    """Last hidden state of one sequence from `stamen embed --pooling none`."""
    command = [args.stamen, "embed", "--token-ids", "--pooling", "none", "--no-normalize", "--model", args.model]
    out = subprocess.run(command, input=" ".join(map(str, ids)) + "\n", capture_output=True, text=True, check=True).stdout
    return torch.tensor(json.loads(out.strip().splitlines()[0]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--stamen", default="build/release/apps/stamen")
    parser.add_argument("--lengths", default="512")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--task", help="jina-embeddings-v3: time with this task's adapter (see above)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lengths = [int(n) for n in args.lengths.split(",")]
    model = load_reference(args.model).float().eval()
    generator = torch.Generator().manual_seed(7)
    vocab = min(model.config.vocab_size, 30000)
    inputs = {n: torch.randint(1000, vocab, (1, n), generator=generator) for n in lengths}

    longest = inputs[max(lengths)][0].tolist()
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([longest])).last_hidden_state[0]
    ours = stamen_hidden(args, longest).reshape(reference.shape)
    print(f"agreement at length {len(longest)}: max abs diff {float((ours - reference).abs().max()):.2e}, "
          f"cosine {float(torch.nn.functional.cosine_similarity(ours.flatten().double(), reference.flatten().double(), dim=0)):.7f}")

    # The timed model: the one just compared, or with --task that task merged in; cast in place to
    # bf16 with --dtype bfloat16, now that the fp32 agreement is taken.
    timed = model
    if args.task:
        timed = load_jina_v3(args.model, json.loads((pathlib.Path(args.model) / "config.json").read_text()),
                             args.task).float().eval()
    if args.dtype == "bfloat16":
        timed = timed.to(torch.bfloat16)

    ratios = {n: [] for n in lengths}
    stamen_ms = {n: [] for n in lengths}
    torch_ms = {n: [] for n in lengths}
    environment = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    for _ in range(args.rounds):
        command = [args.stamen, "bench", "engine", "--model", args.model, "--threads", str(args.threads), "--lengths",
                   args.lengths, "--batches", "1", "--seconds", str(args.seconds), "--dtype", args.dtype, "--json"]
        command += ["--task", args.task] if args.task else []
        report = json.loads(subprocess.run(command, check=True, capture_output=True, text=True, env=environment).stdout)
        ours_by_length = {run["length"]: run["median_ms"] for run in report["runs"]}
        for n in lengths:
            times = []
            with torch.no_grad():
                timed(input_ids=inputs[n])  # warm
                start = time.perf_counter()
                while time.perf_counter() - start < args.seconds:
                    begin = time.perf_counter()
                    timed(input_ids=inputs[n])
                    times.append((time.perf_counter() - begin) * 1e3)
            peer = statistics.median(times)
            stamen_ms[n].append(ours_by_length[n])
            torch_ms[n].append(peer)
            ratios[n].append(peer / ours_by_length[n])
    print(f"| length × batch | stamen {args.dtype} ms | PyTorch {args.dtype} ms | PyTorch / stamen (median of rounds) |")
    print("|---|---|---|---|")
    for n in lengths:
        print(f"| {n} × 1 | {min(stamen_ms[n]):.1f}–{max(stamen_ms[n]):.1f} | {min(torch_ms[n]):.1f}–{max(torch_ms[n]):.1f} "
              f"| **{statistics.median(ratios[n]):.2f}** |")


if __name__ == "__main__":
    main()
