"""Peers of `stamen bench engine` on the same model folder, shapes and thread count:
PyTorch (transformers' modeling code, what sentence-transformers runs) and ONNX Runtime (the
same model exported with torch.onnx, what CPU embedding servers such as Infinity or fastembed
run). Pre-tokenized random ids, no padding (each step is `batch` sequences of `length`
tokens), mean pooling + L2 normalisation included, median of repeated steps.

Run with the heavy virtualenv (tools/setup_heavy_venv.sh, plus requirements/bench-engine.txt):
    .venv-heavy/bin/python bench/peers/engine_peers.py --model DIR --threads 1 [--json]
"""
import argparse
import json
import pathlib
import statistics
import tempfile
import time

import numpy as np
import onnxruntime
import torch
import transformers


class Pooled(torch.nn.Module):
    """The model's last hidden state, mean-pooled and L2-normalised."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        hidden = self.model(input_ids=input_ids).last_hidden_state
        return torch.nn.functional.normalize(hidden.mean(dim=1), dim=-1)


def timed(run, seconds):
    run()
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < seconds or len(times) < 3:
        begin = time.perf_counter()
        run()
        times.append(time.perf_counter() - begin)
    return statistics.median(times), len(times)


def load_pooled(model, attention):
    return Pooled(transformers.AutoModel.from_pretrained(model, attn_implementation=attention).eval())


def load_torch(model):
    """PyTorch as sentence-transformers runs it (transformers' default attention, SDPA, or
    eager for the families without an SDPA path, such as MPNet)."""
    try:
        return load_pooled(model, "sdpa")
    except ValueError:
        return load_pooled(model, "eager")


def export_onnx(model, ids, path):
    """The model exported to ONNX at the shape of `ids`. One graph per shape: the traced export
    bakes shapes into the attention mask it builds (a graph exported at one shape gave cosine
    0.96 at another), and a fixed shape is the runtimes' best case anyway. The export traces the
    eager attention, which torch.onnx handles at every shape, from a fresh copy: tracing changed
    the traced module's later eager outputs (cosine 0.93 against a copy never traced)."""
    torch.onnx.export(load_pooled(model, "eager"), (ids,), str(path), input_names=["input_ids"],
                      output_names=["embeddings"], dynamo=False)


def onnx_runtime_session(path, threads):
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def onnx_session(model, ids, threads):
    """ONNX Runtime on the model exported at the shape of `ids` (export_onnx)."""
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "model.onnx"
        export_onnx(model, ids, path)
        return onnx_runtime_session(path, threads)


def openvino_request(path, threads, precision):
    """OpenVINO's CPU plugin on the same ONNX graph, computing in `precision` ("bf16", its
    default where the CPU has AMX or AVX512-BF16, or "f32"), with `threads` threads and the
    latency hint (one stream): an infer request to call with {"input_ids": ids}, and the
    precision the plugin reports it runs."""
    import openvino  # only the engine rounds need it (requirements/bench-engine.txt)

    core = openvino.Core()
    compiled = core.compile_model(core.read_model(str(path)), "CPU", {
        "INFERENCE_PRECISION_HINT": precision, "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
    return compiled.create_infer_request(), compiled.get_property("INFERENCE_PRECISION_HINT").to_string()


def shapes(lengths, batches):
    return [(int(length), int(batch)) for length in lengths.split(",") for batch in batches.split(",")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--lengths", default="128,512")
    parser.add_argument("--batches", default="1,32")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    torch.set_num_threads(args.threads)
    config = transformers.AutoConfig.from_pretrained(args.model)
    module = load_torch(args.model)
    generator = torch.Generator().manual_seed(7)
    runs = []
    for length, batch in shapes(args.lengths, args.batches):
        ids = torch.randint(5, config.vocab_size, (batch, length), generator=generator)
        with torch.inference_mode():
            torch_median, torch_steps = timed(lambda: module(ids), args.seconds)
            expected = module(ids).numpy()
        session = onnx_session(args.model, ids, args.threads)
        feed = {"input_ids": ids.numpy()}
        ort_median, ort_steps = timed(lambda: session.run(None, feed), args.seconds)
        got = session.run(None, feed)[0]
        cosine = float(np.min(np.sum(got * expected, axis=1)))
        runs.append({"length": length, "batch": batch,
                     "torch_median_ms": torch_median * 1e3, "torch_tokens_per_second": batch * length / torch_median,
                     "onnxruntime_median_ms": ort_median * 1e3, "onnxruntime_tokens_per_second": batch * length / ort_median,
                     "onnxruntime_vs_torch_min_cosine": cosine, "steps": [torch_steps, ort_steps]})
        if not args.json:
            r = runs[-1]
            print(f"seq {length:5d} batch {batch:3d}: torch {r['torch_tokens_per_second']:10.1f} tokens/s  "
                  f"onnxruntime {r['onnxruntime_tokens_per_second']:10.1f} tokens/s  (cosine {cosine:.6f})")
    if args.json:
        print(json.dumps({"model": args.model, "threads": args.threads, "torch": torch.__version__,
                          "onnxruntime": onnxruntime.__version__, "runs": runs}))


if __name__ == "__main__":
    main()
