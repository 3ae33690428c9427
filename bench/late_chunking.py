#!/usr/bin/env python3
"""Late chunking against the naive way, on a running `stamen serve` (docs/BENCHMARKS.md,
"Late chunking"): a long document cut into sentence chunks, embedded
  - late: one POST /embed with "chunks" (the document runs through the model once, each chunk
    pools its own tokens), and
  - naive: one POST /embed with every chunk as its own input,
each `--rounds` times; prints chunks per second of both and their ratio, then the two vectors'
cosine with a query per chunk, side by side (the paper's example: a chunk that says "its" or
"the city" instead of "Berlin" is found by a "Berlin" query only when it was embedded late).

    bench/late_chunking.py URL [--rounds 20] [--paragraphs 4]      # URL e.g. http://127.0.0.1:8080

Standard library and numpy only (the test venv has both).
"""
import argparse
import json
import re
import time
import urllib.request

import numpy as np

# A Wikipedia-style paragraph (written for this benchmark), about 175 tokens; the document is
# it, then copies that say "the city" for "Berlin". Four paragraphs (about 700 tokens) are longer
# than all-MiniLM-L6-v2's 256, so the late pass runs in windows; one fits in a single pass.
PARAGRAPH = (
    "Berlin is the capital and largest city of Germany, both by area and by population. "
    "Its more than 3.85 million inhabitants make it the European Union's most populous city. "
    "The city is also one of the states of Germany, and is the third smallest state in the country in terms of area. "
    "It lies on the banks of the rivers Spree and Havel, in the centre of the Berlin-Brandenburg region. "
    "First documented in the 13th century, it became the capital of the Margraviate of Brandenburg. "
    "After the Second World War its eastern part served as the capital of East Germany. "
    "Since reunification in 1990 it has again been the seat of the federal government. "
    "Its economy is based on high tech firms and the service sector, with a diverse range of creative industries. "
)
QUERY = "Berlin"


def post(url, path, body):
    request = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)


def sentence_spans(text):
    return [[m.start(), m.end()] for m in re.finditer(r"\S.*?\.(?=\s|$)", text)]


def best_seconds(function, rounds):
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times), sorted(times)[len(times) // 2]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--paragraphs", type=int, default=4)
    arguments = parser.parse_args()
    url = arguments.url.rstrip("/")
    document = PARAGRAPH + PARAGRAPH.replace("Berlin", "the city") * (arguments.paragraphs - 1)
    spans = sentence_spans(document)
    chunk_texts = [document[start:end].strip() for start, end in spans]
    late = lambda: post(url, "/embed", {"inputs": document, "chunks": spans})[0]
    naive = lambda: post(url, "/embed", {"inputs": chunk_texts})
    late_vectors, naive_vectors = np.array(late()), np.array(naive())  # also warms both paths up
    late_best, late_median = best_seconds(late, arguments.rounds)
    naive_best, naive_median = best_seconds(naive, arguments.rounds)
    chunks = len(spans)
    print(f"late chunking: {len(document)} bytes, {chunks} sentence chunks, {arguments.rounds} rounds each")
    print(f"  late  (one pass, chunks pooled): median {late_median * 1e3:.1f} ms, {chunks / late_median:.0f} chunks/s")
    print(f"  naive (each chunk alone):        median {naive_median * 1e3:.1f} ms, {chunks / naive_median:.0f} chunks/s")
    print(f"  late / naive throughput: {naive_median / late_median:.2f}x (best of rounds: {naive_best / late_best:.2f}x)")
    query = np.array(post(url, "/embed", {"inputs": QUERY})[0])
    print(f"\ncosine with the query {QUERY!r}, per chunk (vectors are unit length):")
    print("  naive   late    chunk")
    for k, text in enumerate(chunk_texts[:8]):
        print(f"  {naive_vectors[k] @ query:6.3f}  {late_vectors[k] @ query:6.3f}  {text[:70]}")


if __name__ == "__main__":
    main()
