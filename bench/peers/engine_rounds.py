"""stamen's engine against ONNX Runtime, alternated round by round on the same model folder,
shapes and thread count: each round runs `stamen bench engine` once over every shape, then
times ONNX Runtime's sessions (built once, before the first round) on the same shapes. A
shared VM's slow phases last minutes and hit one side or the other; a ratio taken within one
round, with its median over rounds, is the figure that survives them.

Run with the heavy virtualenv (tools/setup_heavy_venv.sh, plus requirements/bench-engine.txt):
    .venv-heavy/bin/python bench/peers/engine_rounds.py --model DIR --threads 2 --lengths 16,48 --rounds 7
Prints a Markdown table for docs/BENCHMARKS.md (or JSON with --json).
"""
import argparse
import json
import os
import statistics
import subprocess

import torch
import transformers

from engine_peers import onnx_session, shapes, timed


def stamen_medians(args):
    """One `stamen bench engine` run over every shape: {(length, batch): median ms}, and its report."""
    command = [args.stamen, "bench", "engine", "--model", args.model, "--threads", str(args.threads),
               "--lengths", args.lengths, "--batches", args.batches, "--seconds", str(args.seconds), "--json"]
    if args.dtype:
        command += ["--dtype", args.dtype]
    environment = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    report = json.loads(subprocess.run(command, check=True, capture_output=True, text=True, env=environment).stdout)
    return {(run["length"], run["batch"]): run["median_ms"] for run in report["runs"]}, report


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--stamen", default="build/release/apps/stamen")
    parser.add_argument("--lengths", default="16,48")
    parser.add_argument("--batches", default="1")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dtype", help="stamen's compute dtype (the peer always computes in float32)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    torch.set_num_threads(args.threads)
    config = transformers.AutoConfig.from_pretrained(args.model)
    generator = torch.Generator().manual_seed(7)
    sessions = {}
    for length, batch in shapes(args.lengths, args.batches):
        ids = torch.randint(5, config.vocab_size, (batch, length), generator=generator)
        sessions[(length, batch)] = (onnx_session(args.model, ids, args.threads), {"input_ids": ids.numpy()})

    rounds = []
    for _ in range(args.rounds):
        ours, report = stamen_medians(args)
        theirs = {shape: timed(lambda: session.run(None, feed), args.seconds)[0] * 1e3
                  for shape, (session, feed) in sessions.items()}
        rounds.append({"stamen_ms": ours, "onnxruntime_ms": theirs})

    results = []
    for shape in sessions:
        stamen_ms = [r["stamen_ms"][shape] for r in rounds]
        ort_ms = [r["onnxruntime_ms"][shape] for r in rounds]
        ratios = [theirs / ours for ours, theirs in zip(stamen_ms, ort_ms)]
        results.append({"length": shape[0], "batch": shape[1], "stamen_ms": stamen_ms, "onnxruntime_ms": ort_ms,
                        "ratios": ratios, "median_ratio": statistics.median(ratios)})
    if args.json:
        print(json.dumps({"model": args.model, "threads": args.threads, "dtype": report["dtype"], "cpu": report["cpu"],
                          "rounds": args.rounds, "results": results}))
        return
    cpu = report["cpu"]
    print(f"threads {args.threads}; stamen {report['dtype']}, kernels {cpu['kernels']}, oneDNN {cpu['gemm']}; "
          f"ONNX Runtime float32; {args.rounds} rounds of {args.seconds} s per shape and side")
    print("| seq × batch | stamen ms per round | ONNX Runtime ms per round | stamen ÷ ORT per round | median |")
    print("|---|---|---|---|---|")
    listed = lambda values: ", ".join(f"{v:.2f}" for v in values)
    for r in results:
        print(f"| {r['length']} × {r['batch']} | {listed(r['stamen_ms'])} | {listed(r['onnxruntime_ms'])} | "
              f"{listed(r['ratios'])} | **{r['median_ratio']:.2f}** |")


if __name__ == "__main__":
    main()
