#!/usr/bin/env python3
"""MaxSim reranking against the forward pass it needs (docs/BENCHMARKS.md, "MaxSim rerank"):

  - rerank: POST /rerank on a running `stamen serve` of a multi-vector (ColBERT) model, one query
    and --documents documents that the model cuts to exactly its document_length tokens
    (256 for the folder below): end to end, from the request to the answer (tokenizing, the
    query and every document through the model, the MaxSim scores, the JSON);
  - forward: `stamen bench engine` on the same model, --documents sequences of the same length in
    steps of the server's documents per batch (what its chunks hold beside the query), the median
    step time times the steps: the documents' forward pass and projection alone.

Prints both medians and their ratio (the issue's target: at most 1.1).

    tools/make_multi_vector_goldens.py bench-model all-MiniLM-L6-v2-folder /tmp/colbert-minilm   # .venv-heavy
    build/release/apps/stamen serve --model /tmp/colbert-minilm --threads 2 --port 8091 &
    bench/max_sim_rerank.py --url http://127.0.0.1:8091 --cli build/release/apps/stamen \\
        --model /tmp/colbert-minilm --threads 2

Standard library only.
"""
import argparse
import json
import math
import statistics
import subprocess
import time
import urllib.request

# Written for this benchmark: plain English prose, well past 256 tokens once repeated.
PARAGRAPH = (
    "The river runs through the old town, under seven stone bridges, past the market square and the cathedral, "
    "and out into the fields where farmers grow wheat, barley and sunflowers in the long summer months. "
    "In winter the water rises, the meadows flood, and the birds that nest along the banks move south to warmer "
    "places until the spring returns and the ice on the small lakes melts away. ")


def post(url, path, body):
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as answer:
        return json.loads(answer.read())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True)
    parser.add_argument("--cli", required=True, help="the stamen binary, for `stamen bench engine`")
    parser.add_argument("--model", required=True, help="the served folder")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--documents", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=256, help="the model's document_length")
    parser.add_argument("--query-length", type=int, default=32)
    parser.add_argument("--max-batch-tokens", type=int, default=2048, help="the server's")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()

    # Each document its own words first, then the paragraph: every one is cut at document_length.
    documents = [f"Document {i} of the collection. " + PARAGRAPH * 6 for i in range(args.documents)]
    query = "Where do the birds go when the river floods in winter?"
    body = {"query": query, "texts": documents, "raw_scores": True}
    answer = post(args.url, "/rerank", body)  # warm-up, and the answer's shape
    assert len(answer) == args.documents, answer
    seconds = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        post(args.url, "/rerank", body)
        seconds.append(time.perf_counter() - start)
    rerank = statistics.median(seconds)

    # The server's chunks: the query, then as many whole documents as fit in the batch budget.
    per_batch = max(1, (args.max_batch_tokens - args.query_length) // args.tokens)
    steps = math.ceil(args.documents / per_batch)
    engine = json.loads(subprocess.run(
        [args.cli, "bench", "engine", "--model", args.model, "--lengths", str(args.tokens), "--batches",
         f"{per_batch},{args.documents}", "--threads", str(args.threads), "--seconds", "5", "--json"],
        check=True, capture_output=True, text=True).stdout)
    runs = {run["batch"]: run["median_ms"] / 1e3 for run in engine["runs"]}
    forward = runs[per_batch] * args.documents / per_batch
    print(f"{args.documents} documents x {args.tokens} tokens, threads {args.threads}, dtype {engine['dtype']}, "
          f"CPU kernels {engine['cpu']['kernels']}")
    print(f"rerank (HTTP, end to end):        median {rerank * 1e3:9.1f} ms over {args.rounds} rounds")
    print(f"forward ({steps} steps of {per_batch} docs):   {forward * 1e3:9.1f} ms   -> ratio {rerank / forward:.3f}")
    print(f"forward (one step of {args.documents} docs):     {runs[args.documents] * 1e3:9.1f} ms   "
          f"-> ratio {rerank / runs[args.documents]:.3f}")


if __name__ == "__main__":
    main()
