#!/usr/bin/env python3
"""A persistent OpenAI-style embeddings server over a sentence-transformers model folder, as a
peer of `stamen serve` for `stamen bench serve`: the same folder, the same routes, one
inference at a time (a lock, like one worker), requests parsed and answered concurrently.

    .venv-heavy/bin/python bench/peers/serve_peer.py --backend torch|onnxruntime|openvino \
        --model DIR --port P [--threads N] [--batch-size 32] [--host 127.0.0.1]

Backends:
  torch        sentence-transformers on PyTorch: SentenceTransformer(DIR, device="cpu").encode
               for text; token-id input goes through the same modules (transformer, the
               folder's pooling, Normalize if present) as features built from the ids.
  onnxruntime  the folder's transformer exported once with torch.onnx (dynamic batch and
               sequence axes; cached under build/bench-models/onnx-cache/, the export runs in
               a child process so that the server never imports torch), tokenised with the
               folder's tokenizer.json through `tokenizers`, run by ONNX Runtime on the CPU,
               then mean pooling over the attention mask and L2 normalisation in numpy.
  openvino     the same graph, tokenizer and pooling, run by OpenVINO's CPU plugin in its default
               precision (bf16 where the CPU has AMX or AVX512-BF16), latency hint.

Both truncate to the folder's max_seq_length (sentence_bert_config.json; 256 for the original
all-MiniLM-L6-v2, 512 for build/bench-models/all-MiniLM-L6-v2-512) and batch a request's
inputs by --batch-size after sorting them by length (what SentenceTransformer.encode does).
Token ids are taken as they are (no [CLS]/[SEP] added, like stamen), truncated the same way.

Routes: POST /v1/embeddings and /embeddings (input: a string, a list of strings, a list of token
ids, or a list of lists of token ids; encoding_format float or base64), GET /health, GET
/v1/models. Only the Python standard library for HTTP (http.server, HTTP/1.1 keep-alive).
"""
import argparse
import base64
import hashlib
import http.server
import json
import os
import pathlib
import platform
import subprocess
import sys
import threading
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_ONNX_CACHE = REPO / "build" / "bench-models" / "onnx-cache"


class RequestError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


def folder_settings(model_dir):
    """max_seq_length and the pooling mode of a sentence-transformers folder."""
    model_dir = pathlib.Path(model_dir)
    config = json.loads((model_dir / "config.json").read_text())
    max_length = config.get("max_position_embeddings", 512)
    st_config = model_dir / "sentence_bert_config.json"
    if st_config.exists():
        max_length = min(max_length, json.loads(st_config.read_text()).get("max_seq_length", max_length))
    pooling = "mean"
    pooling_config = model_dir / "1_Pooling" / "config.json"
    if pooling_config.exists():
        modes = json.loads(pooling_config.read_text())
        chosen = [key[len("pooling_mode_"):].replace("_tokens", "") for key, on in modes.items()
                  if key.startswith("pooling_mode_") and on is True]
        if chosen:
            pooling = "+".join(chosen)
    return max_length, pooling, config


def parse_inputs(body, vocab_size):
    """OpenAI `input`: str | [str] | [int] | [[int]] -> list of str or list-of-int items."""
    if not isinstance(body, dict):
        raise RequestError(400, "the request body must be a JSON object")
    if "input" not in body:
        raise RequestError(400, "'input' is required")
    value = body["input"]
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value:
        raise RequestError(400, "'input' must be a string, a non-empty array of strings, an array of token ids "
                                "or an array of arrays of token ids")

    def ids_of(items, where):
        if not items:
            raise RequestError(400, f"{where} is empty")
        for token in items:
            if isinstance(token, bool) or not isinstance(token, int):
                raise RequestError(400, f"{where}: token ids must be integers")
            if token < 0 or token >= vocab_size:
                raise RequestError(400, f"{where}: token id {token} is outside the vocabulary (0..{vocab_size - 1})")
        return items

    if isinstance(value[0], int) and not isinstance(value[0], bool):
        return [ids_of(value, "'input'")]
    inputs = []
    for index, item in enumerate(value):
        if isinstance(item, str):
            inputs.append(item)
        elif isinstance(item, list):
            inputs.append(ids_of(item, f"'input'[{index}]"))
        else:
            raise RequestError(400, f"'input'[{index}] must be a string or an array of token ids")
    return inputs


def length_sorted_chunks(count, lengths, batch_size):
    """Indices sorted by decreasing length, cut into chunks of batch_size."""
    order = sorted(range(count), key=lambda i: -lengths[i])
    return [order[i:i + batch_size] for i in range(0, count, batch_size)]


class TorchBackend:
    """sentence-transformers on PyTorch, CPU."""

    def __init__(self, model_dir, threads, batch_size):
        import torch
        import transformers
        import sentence_transformers
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(1)
        except RuntimeError:
            pass
        self.torch = torch
        self.model = sentence_transformers.SentenceTransformer(str(model_dir), device="cpu")
        self.model.eval()
        self.batch_size = batch_size
        self.max_length = self.model.max_seq_length
        self.tokenizer = self.model.tokenizer
        self.pad_id = self.tokenizer.pad_token_id or 0
        self.uses_token_types = "token_type_ids" in self.tokenizer.model_input_names
        self.counter = self.tokenizer.backend_tokenizer.__class__.from_str(self.tokenizer.backend_tokenizer.to_str())
        self.counter.no_padding()
        self.counter.enable_truncation(self.max_length)
        self.versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                         "sentence-transformers": sentence_transformers.__version__}

    def count_tokens(self, texts):
        # A separate Rust tokenizer with fixed settings: the model's own (used under the lock by
        # encode) must not be called from two threads at once.
        return sum(len(e.ids) for e in self.counter.encode_batch(texts))

    def embed_texts(self, texts):
        return self.model.encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False).astype(np.float32, copy=False)

    def embed_ids(self, sequences):
        torch = self.torch
        sequences = [ids[:self.max_length] for ids in sequences]
        out = np.empty((len(sequences), self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        for chunk in length_sorted_chunks(len(sequences), [len(s) for s in sequences], self.batch_size):
            width = max(len(sequences[i]) for i in chunk)
            ids = torch.full((len(chunk), width), self.pad_id, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, i in enumerate(chunk):
                ids[row, :len(sequences[i])] = torch.tensor(sequences[i], dtype=torch.long)
                mask[row, :len(sequences[i])] = 1
            features = {"input_ids": ids, "attention_mask": mask}
            if self.uses_token_types:
                features["token_type_ids"] = torch.zeros_like(ids)
            with torch.inference_mode():
                pooled = self.model(features)["sentence_embedding"]
                pooled = torch.nn.functional.normalize(pooled.float(), p=2, dim=1)
            out[chunk] = pooled.numpy()
        return out


def onnx_cache_path(model_dir, cache_dir):
    model_dir = pathlib.Path(model_dir).resolve()
    key = hashlib.sha256()
    key.update(str(model_dir).encode())
    for name in ("config.json", "model.safetensors", "pytorch_model.bin"):
        path = model_dir / name
        if path.exists():
            stat = path.resolve().stat()
            key.update(f"{name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return pathlib.Path(cache_dir) / f"{model_dir.name}-{key.hexdigest()[:16]}.onnx"


def export_onnx(model_dir, path):
    """The folder's transformer (last_hidden_state from input_ids, attention_mask) as one ONNX
    graph with dynamic batch and sequence axes. Checked against PyTorch at two other shapes
    before it is kept: a graph that baked in its tracing shape would fail here."""
    import torch
    import transformers

    def load():
        return transformers.AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class Hidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.partial")
    example_ids = torch.randint(1000, 2000, (2, 16))
    example_mask = torch.ones_like(example_ids)
    example_mask[1, 11:] = 0
    # Exported from a copy that is never run eagerly afterwards, checked against a fresh copy.
    torch.onnx.export(Hidden(load()), (example_ids, example_mask), str(partial),
                      input_names=["input_ids", "attention_mask"], output_names=["last_hidden_state"],
                      dynamic_axes={"input_ids": {0: "batch", 1: "sequence"},
                                    "attention_mask": {0: "batch", 1: "sequence"},
                                    "last_hidden_state": {0: "batch", 1: "sequence"}},
                      opset_version=17, dynamo=False)
    import onnxruntime
    session = onnxruntime.InferenceSession(str(partial), providers=["CPUExecutionProvider"])
    reference = Hidden(load())
    generator = torch.Generator().manual_seed(3)
    for batch, length in ((1, 7), (3, 300)):
        ids = torch.randint(1000, 20000, (batch, length), generator=generator)
        mask = torch.ones_like(ids)
        mask[-1, length // 2:] = 0
        with torch.inference_mode():
            expected = reference(ids, mask).numpy()
        got = session.run(None, {"input_ids": ids.numpy(), "attention_mask": mask.numpy()})[0]
        valid = mask.numpy().astype(bool)
        error = float(np.max(np.abs(got[valid] - expected[valid])))
        if error > 1e-3:
            partial.unlink()
            raise SystemExit(f"serve_peer: the exported graph disagrees with PyTorch at batch {batch} "
                             f"length {length} (max abs error {error})")
    os.replace(partial, path)
    print(f"serve_peer: exported {model_dir} to {path} (torch {torch.__version__})", file=sys.stderr, flush=True)


class OnnxRuntimeBackend:
    """ONNX Runtime, CPU: tokenizers + one dynamic-shape graph + numpy mean pooling."""

    def __init__(self, model_dir, threads, batch_size, cache_dir, max_length, pooling):
        import tokenizers
        if pooling != "mean":
            raise SystemExit(f"serve_peer: the ONNX backends do mean pooling only, the folder says {pooling}")
        path = onnx_cache_path(model_dir, cache_dir)
        if not path.exists():
            # In a child process so that this server never loads torch.
            subprocess.run([sys.executable, __file__, "--export-onnx", str(model_dir), str(path)], check=True)
        self.run, self.dimension, runtime_versions = self.open_graph(path, threads)
        self.onnx_path = path
        self.tokenizer = tokenizers.Tokenizer.from_file(str(pathlib.Path(model_dir) / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(max_length)
        pad = self.tokenizer.token_to_id("[PAD]")
        self.pad_id = 0 if pad is None else pad
        self.max_length = max_length
        self.batch_size = batch_size
        self.versions = {**runtime_versions, "tokenizers": tokenizers.__version__, "numpy": np.__version__}

    @staticmethod
    def open_graph(path, threads):
        """(a function from the feed to the last hidden state, its width, versions) for the graph."""
        import onnxruntime
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        return (lambda feed: session.run(None, feed)[0]), session.get_outputs()[0].shape[-1], {
            "onnxruntime": onnxruntime.__version__}

    def tokenize(self, texts):
        return [encoding.ids for encoding in self.tokenizer.encode_batch(texts)]

    def embed_ids(self, sequences):
        sequences = [ids[:self.max_length] for ids in sequences]
        out = np.empty((len(sequences), self.dimension), dtype=np.float32)
        for chunk in length_sorted_chunks(len(sequences), [len(s) for s in sequences], self.batch_size):
            width = max(len(sequences[i]) for i in chunk)
            ids = np.full((len(chunk), width), self.pad_id, dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, :len(sequences[i])] = sequences[i]
                mask[row, :len(sequences[i])] = 1
            hidden = self.run({"input_ids": ids, "attention_mask": mask})
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[chunk] = pooled
        return out


class OpenVinoBackend(OnnxRuntimeBackend):
    """OpenVINO's CPU plugin on the same dynamic-shape graph, in its default precision (bf16 where
    the CPU has AMX or AVX512-BF16, what an Intel user gets), one stream (the latency hint)."""

    @staticmethod
    def open_graph(path, threads):
        import openvino
        core = openvino.Core()
        compiled = core.compile_model(core.read_model(str(path)), "CPU", {
            "INFERENCE_NUM_THREADS": threads, "PERFORMANCE_HINT": "LATENCY"})
        request = compiled.create_infer_request()
        precision = compiled.get_property("INFERENCE_PRECISION_HINT").to_string()

        def run(feed):
            request.infer(feed)
            return request.get_output_tensor(0).data.copy()

        width = compiled.output(0).get_partial_shape()[-1].get_length()
        return run, width, {"openvino": f"{openvino.__version__} ({precision})"}


class Service:
    def __init__(self, backend, name, model_name, vocab_size):
        self.backend = backend
        self.name = name
        self.model_name = model_name
        self.vocab_size = vocab_size
        self.lock = threading.Lock()  # one inference at a time

    def embed(self, body):
        inputs = parse_inputs(body, self.vocab_size)
        encoding_format = body.get("encoding_format", "float") or "float"
        if encoding_format not in ("float", "base64"):
            raise RequestError(400, "'encoding_format' must be \"float\" or \"base64\"")
        if body.get("dimensions") not in (None, 0):
            raise RequestError(400, "'dimensions' is not supported by this peer")
        texts = [i for i, item in enumerate(inputs) if isinstance(item, str)]
        id_items = [i for i, item in enumerate(inputs) if not isinstance(item, str)]
        vectors = [None] * len(inputs)
        prompt_tokens = 0
        if self.name == "torch":
            if texts:
                text_list = [inputs[i] for i in texts]
                prompt_tokens += self.backend.count_tokens(text_list)
                with self.lock:
                    embedded = self.backend.embed_texts(text_list)
                for row, i in enumerate(texts):
                    vectors[i] = embedded[row]
            if id_items:
                sequences = [inputs[i] for i in id_items]
                prompt_tokens += sum(min(len(s), self.backend.max_length) for s in sequences)
                with self.lock:
                    embedded = self.backend.embed_ids(sequences)
                for row, i in enumerate(id_items):
                    vectors[i] = embedded[row]
        else:
            sequences = list(inputs)
            if texts:
                for i, ids in zip(texts, self.backend.tokenize([inputs[i] for i in texts])):
                    sequences[i] = ids
            prompt_tokens = sum(min(len(s), self.backend.max_length) for s in sequences)
            with self.lock:
                embedded = self.backend.embed_ids(sequences)
            vectors = list(embedded)
        data = []
        for index, vector in enumerate(vectors):
            if encoding_format == "base64":
                value = base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
            else:
                value = vector.tolist()
            data.append({"object": "embedding", "index": index, "embedding": value})
        return {"object": "list", "data": data, "model": body.get("model") or self.model_name,
                "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}}


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # listen backlog (socketserver's default is 5): many clients connect at once


def make_handler(service, access_log):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "stamen-bench-peer"
        # Headers and body leave in two writes: without TCP_NODELAY the body could wait for
        # the client's delayed ACK (tens of milliseconds per response).
        disable_nagle_algorithm = True

        def log_message(self, format, *args):
            if access_log:
                super().log_message(format, *args)

        def reply(self, status, payload):
            body = json.dumps(payload, separators=(",", ":")).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def error(self, status, message):
            kind = "invalid_request_error" if status < 500 else "server_error"
            self.reply(status, {"error": {"message": message, "type": kind, "code": status}})

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path == "/health":
                self.reply(200, {"status": "ok"})
            elif path in ("/v1/models", "/models"):
                self.reply(200, {"object": "list", "data": [{"id": service.model_name, "object": "model",
                                                             "owned_by": "stamen-bench-peer"}]})
            else:
                self.error(404, f"no route GET {path}")

        def do_POST(self):
            path = self.path.split("?", 1)[0]
            try:
                length = int(self.headers.get("Content-Length", "0"))
            except ValueError:
                self.close_connection = True
                return self.error(400, "bad Content-Length")
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                self.close_connection = True
                return self.error(411, "chunked request bodies are not supported; send Content-Length")
            raw = self.rfile.read(length) if length > 0 else b""
            if path not in ("/v1/embeddings", "/embeddings"):
                return self.error(404, f"no route POST {path}")
            try:
                body = json.loads(raw)
            except ValueError as exc:
                return self.error(400, f"the body is not valid JSON: {exc}")
            try:
                self.reply(200, service.embed(body))
            except RequestError as exc:
                self.error(exc.status, str(exc))
            except Exception as exc:  # a bug or a model failure: say so, keep serving
                self.error(500, f"{type(exc).__name__}: {exc}")

    return Handler


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--export-onnx":
        export_onnx(sys.argv[2], sys.argv[3])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=["torch", "onnxruntime", "openvino"], required=True)
    parser.add_argument("--model", required=True, help="a sentence-transformers model folder")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="inference threads (default: all cores)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--served-model-name", default=None)
    parser.add_argument("--onnx-cache", default=str(DEFAULT_ONNX_CACHE))
    parser.add_argument("--access-log", action="store_true")
    args = parser.parse_args()

    model_dir = pathlib.Path(args.model)
    max_length, pooling, config = folder_settings(model_dir)
    started = time.perf_counter()
    if args.backend == "torch":
        backend = TorchBackend(model_dir, args.threads, args.batch_size)
    else:
        backend_class = OpenVinoBackend if args.backend == "openvino" else OnnxRuntimeBackend
        backend = backend_class(model_dir, args.threads, args.batch_size, args.onnx_cache, max_length, pooling)
    model_name = args.served_model_name or model_dir.resolve().name
    service = Service(backend, args.backend, model_name, config.get("vocab_size", 1 << 31))
    # Warm-up: the first call pays for lazy initialisation.
    service.embed({"input": ["warm up"]})
    server = Server((args.host, args.port), make_handler(service, args.access_log))
    versions = " ".join(f"{k} {v}" for k, v in backend.versions.items())
    extra = f" onnx {backend.onnx_path}" if args.backend != "torch" else ""
    print(f"serve_peer: ready backend {args.backend} model {model_dir} max_length {backend.max_length} "
          f"pooling {pooling} threads {args.threads} batch_size {args.batch_size} python {platform.python_version()} "
          f"{versions}{extra} load {time.perf_counter() - started:.1f}s on http://{args.host}:{args.port}",
          file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
