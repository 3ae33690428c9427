"""Writes tests/engine/data/tiny-qwen3 (a tiny random Qwen3Model and its goldens).

Folded into tools/make_family_goldens.py (family `qwen3`, the same seeds, config and weight
recipe: model.safetensors and golden.safetensors come out byte-identical). Kept as an alias:
    .venv-heavy/bin/python tools/make_qwen3_golden.py tests/engine/data/tiny-qwen3
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_family_goldens  # noqa: E402

if __name__ == "__main__":
    make_family_goldens.make("qwen3", sys.argv[1])
