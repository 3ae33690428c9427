#!/usr/bin/env python3
"""One model folder through stamen and through transformers: the last hidden state of a random
300-token sequence ([CLS]/[SEP] ids 101/102 around ids 1000..29999), from
`stamen embed --token-ids --pooling none --no-normalize` and from `AutoModel` (eager
attention, fp32), and their largest absolute difference. For folders `stamen make-model`
writes (random weights of a real model's shapes), to check that transformers reads them as
stamen does.

    .venv-heavy/bin/python tools/compare_with_transformers.py FOLDER [STAMEN]
"""
import json
import subprocess
import sys

import numpy as np
import torch
import transformers


def main():
    folder = sys.argv[1]
    stamen = sys.argv[2] if len(sys.argv) > 2 else "build/release/apps/stamen"
    ids = [101] + [int(i) for i in np.random.RandomState(0).randint(1000, 30000, size=300)] + [102]
    run = subprocess.run([stamen, "embed", "--model", folder, "--token-ids", "--pooling", "none", "--no-normalize"],
                         input=" ".join(map(str, ids)) + "\n", capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(run.stderr)
    ours = np.array(json.loads(run.stdout.splitlines()[0]))
    model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        reference = model(input_ids=torch.tensor([ids])).last_hidden_state[0].numpy()
    print(f"{folder}: {model.config.architectures[0]}, {len(ids)} tokens, max abs difference "
          f"{np.abs(ours - reference).max():.3g}")


if __name__ == "__main__":
    main()
