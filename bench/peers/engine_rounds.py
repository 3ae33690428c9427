"""stamen's engine against ONNX Runtime (fp32) and OpenVINO (bf16 and fp32), alternated round by
round on the same model folder, shapes and thread count: each round runs `stamen bench engine`
once over every shape, then times each peer's sessions (built once, before the first round, from
one ONNX export per shape) on the same shapes. A shared VM's slow phases last minutes and hit one
side or the other; a ratio taken within one round, with its median over rounds, is the figure
that survives them. `--peers` picks the peers: onnxruntime, openvino-bf16, openvino-f32.

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

import pathlib
import tempfile

from engine_peers import export_onnx, onnx_runtime_session, openvino_request, shapes, timed


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
    parser.add_argument("--dtype", help="stamen's compute dtype (default: the engine's for this CPU and model)")
    parser.add_argument("--peers", default="onnxruntime,openvino-bf16",
                        help="comma-separated: onnxruntime (fp32), openvino-bf16, openvino-f32")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    torch.set_num_threads(args.threads)
    config = transformers.AutoConfig.from_pretrained(args.model)
    generator = torch.Generator().manual_seed(7)
    peers = args.peers.split(",")
    for peer in peers:
        if peer not in ("onnxruntime", "openvino-bf16", "openvino-f32"):
            parser.error(f"unknown peer {peer}")
    # Per shape: {peer: a function running one step}, all from one ONNX export of that shape.
    runs, precisions = {}, {}
    for length, batch in shapes(args.lengths, args.batches):
        ids = torch.randint(5, config.vocab_size, (batch, length), generator=generator)
        feed = {"input_ids": ids.numpy()}
        runs[(length, batch)] = {}
        with tempfile.TemporaryDirectory() as folder:
            path = pathlib.Path(folder) / "model.onnx"
            export_onnx(args.model, ids, path)
            for peer in peers:
                if peer == "onnxruntime":
                    session = onnx_runtime_session(path, args.threads)
                    runs[(length, batch)][peer] = lambda session=session, feed=feed: session.run(None, feed)
                    precisions[peer] = "float32"
                else:
                    request, precisions[peer] = openvino_request(path, args.threads, peer.split("-")[1])
                    runs[(length, batch)][peer] = lambda request=request, feed=feed: request.infer(feed)

    rounds = []
    for _ in range(args.rounds):
        ours, report = stamen_medians(args)
        theirs = {peer: {shape: timed(run[peer], args.seconds)[0] * 1e3 for shape, run in runs.items()}
                  for peer in peers}
        rounds.append({"stamen_ms": ours, **{f"{peer}_ms": theirs[peer] for peer in peers}})

    results = []
    for shape in runs:
        stamen_ms = [r["stamen_ms"][shape] for r in rounds]
        result = {"length": shape[0], "batch": shape[1], "stamen_ms": stamen_ms}
        for peer in peers:
            peer_ms = [r[f"{peer}_ms"][shape] for r in rounds]
            ratios = [theirs / ours for ours, theirs in zip(stamen_ms, peer_ms)]
            result.update({f"{peer}_ms": peer_ms, f"{peer}_ratios": ratios,
                           f"{peer}_median_ratio": statistics.median(ratios)})
        results.append(result)
    if args.json:
        print(json.dumps({"model": args.model, "threads": args.threads, "dtype": report["dtype"], "cpu": report["cpu"],
                          "peer_precisions": precisions, "rounds": args.rounds, "results": results}))
        return
    cpu = report["cpu"]
    print(f"threads {args.threads}; stamen {report['dtype']}, kernels {cpu['kernels']}, GEMM {cpu['gemm']}; peers "
          + ", ".join(f"{peer} ({precisions[peer]})" for peer in peers)
          + f"; {args.rounds} rounds of {args.seconds} s per shape and side; ratio = peer ms ÷ stamen ms")
    listed = lambda values: ", ".join(f"{v:.2f}" for v in values)
    print("| seq × batch | stamen ms per round | " + " | ".join(f"{peer} ms per round | {peer} ÷ stamen median"
                                                          for peer in peers) + " |")
    print("|---|---|" + "---|---|" * len(peers))
    for r in results:
        print(f"| {r['length']} × {r['batch']} | {listed(r['stamen_ms'])} | "
              + " | ".join(f"{listed(r[f'{peer}_ms'])} | **{r[f'{peer}_median_ratio']:.2f}**" for peer in peers) + " |")


if __name__ == "__main__":
    main()
