"""Writes tests/engine/data/tiny-qwen3: a tiny random Qwen3Model folder and golden outputs from
the real transformers modeling code, in the layout of ../shared/models/golden (see its README):
`golden.safetensors` with input_ids_i, last_hidden_state_i, mean_pooled_i, cls_pooled_i and
last_token_i for six sequences of lengths 1, 3, 7, 16, 64, 130.

Run with the heavy reference virtualenv (tools/setup_heavy_venv.sh):
    .venv-heavy/bin/python tools/make_qwen3_golden.py tests/engine/data/tiny-qwen3
"""
import json
import pathlib
import sys

import torch
import transformers
from safetensors.torch import save_file

LENGTHS = [1, 3, 7, 16, 64, 130]


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(20261130)
    config = transformers.Qwen3Config(
        vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, intermediate_size=128, max_position_embeddings=512, rope_theta=1_000_000.0,
        rms_norm_eps=1e-6, tie_word_embeddings=False, attn_implementation="eager")
    model = transformers.Qwen3Model(config).eval()
    # Perturb as the shared goldens do, so that outputs are not degenerate.
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.copy_(1 + 0.1 * torch.randn_like(parameter))
            elif parameter.dim() == 2 and "embed" not in name:
                parameter.mul_(5)
    model.save_pretrained(out, safe_serialization=True)
    model = model.double()

    generator = torch.Generator().manual_seed(7)
    golden = {}
    with torch.no_grad():
        for i, length in enumerate(LENGTHS):
            ids = torch.randint(0, config.vocab_size, (1, length), generator=generator)
            hidden = model(input_ids=ids).last_hidden_state[0]
            golden[f"input_ids_{i}"] = ids[0].to(torch.int64)
            golden[f"last_hidden_state_{i}"] = hidden.float()
            golden[f"mean_pooled_{i}"] = hidden.mean(0, keepdim=True).float()
            golden[f"cls_pooled_{i}"] = hidden[:1].float()
            golden[f"last_token_{i}"] = hidden[-1:].float()
    save_file({k: v.contiguous() for k, v in golden.items()}, out / "golden.safetensors")
    (out / "report.json").write_text(json.dumps({
        "transformers": transformers.__version__, "torch": torch.__version__, "class": "Qwen3Model",
        "lengths": LENGTHS, "dtype": "float64 run, float32 outputs"}, indent=2) + "\n")
    print(f"wrote {out} with transformers {transformers.__version__}")


if __name__ == "__main__":
    main()
