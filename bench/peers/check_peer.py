#!/usr/bin/env python3
"""Checks a running embeddings peer (bench/peers/start_peer.sh) against stamen's own vectors on
the same model folder: cosine of every text (and, with --token-ids, of the same texts sent as
token ids), then the single-request latency of the longest text. Standard library only, plus
`tokenizers` for --token-ids (the project's .venv has it).

    .venv/bin/python bench/peers/check_peer.py --url http://127.0.0.1:P --model DIR \
        [--path /v1/embeddings] [--texts FILE] [--token-ids] [--latency-requests 5]

Without --texts, it takes a few lines of ../shared/corpus/botchan.txt, one paragraph of about
500 tokens and one of more than 512 (which every server truncates). The references come from
`stamen embed --model DIR` (build/release/apps/stamen unless --stamen says otherwise).
Prints one JSON object: worst cosine per input kind, latency figures.
"""
import argparse
import http.client
import json
import math
import pathlib
import statistics
import subprocess
import sys
import time
import urllib.parse

REPO = pathlib.Path(__file__).resolve().parents[2]


def default_texts():
    lines = [line.strip() for line in (REPO.parent / "shared" / "corpus" / "botchan.txt").read_text().splitlines()]
    lines = [line for line in lines if line]
    short = lines[40:46]
    long_text = " ".join(lines[100:136])   # about 500 tokens
    longer = " ".join(lines[200:300])      # past 512 tokens: truncated
    return short + ["a", long_text, longer]


def stamen_vectors(stamen, model, lines, token_ids):
    command = [stamen, "embed", "--model", model] + (["--token-ids"] if token_ids else [])
    out = subprocess.run(command, input="\n".join(lines) + "\n", capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


class Client:
    def __init__(self, url, path):
        parsed = urllib.parse.urlparse(url)
        self.connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=600)
        self.path = path

    def embed(self, inputs):
        body = json.dumps({"model": "peer", "input": inputs, "encoding_format": "float"})
        self.connection.request("POST", self.path, body, {"Content-Type": "application/json"})
        response = self.connection.getresponse()
        payload = response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}: {payload[:500]!r}")
        data = sorted(json.loads(payload)["data"], key=lambda item: item["index"])
        return [item["embedding"] for item in data]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--path", default="/v1/embeddings")
    parser.add_argument("--model", required=True)
    parser.add_argument("--texts", help="one text per line (default: lines of botchan.txt)")
    parser.add_argument("--stamen", default=str(REPO / "build" / "release" / "apps" / "stamen"))
    parser.add_argument("--token-ids", action="store_true", help="also send the texts as token ids")
    parser.add_argument("--latency-requests", type=int, default=5)
    args = parser.parse_args()

    texts = pathlib.Path(args.texts).read_text().splitlines() if args.texts else default_texts()
    client = Client(args.url, args.path)
    report = {"url": args.url + args.path, "model": args.model, "texts": len(texts)}

    expected = stamen_vectors(args.stamen, args.model, texts, False)
    got = client.embed(texts)            # one request, all texts
    one_by_one = [client.embed(text)[0] for text in texts]  # a string input each
    cosines = [cosine(a, b) for a, b in zip(expected, got)] + [cosine(a, b) for a, b in zip(expected, one_by_one)]
    report["text_min_cosine"] = min(cosines)
    report["text_cosines"] = [round(c, 7) for c in cosines[:len(texts)]]

    if args.token_ids:
        from tokenizers import Tokenizer
        tokenizer = Tokenizer.from_file(str(pathlib.Path(args.model) / "tokenizer.json"))
        tokenizer.no_padding()
        tokenizer.no_truncation()
        ids = [encoding.ids for encoding in tokenizer.encode_batch(texts)]
        # The peers truncate token ids to the folder's max_seq_length like text; stamen embed
        # --token-ids runs what it is given, so the ids sent are cut to that length here.
        settings = pathlib.Path(args.model) / "sentence_bert_config.json"
        limit = json.loads(settings.read_text()).get("max_seq_length", 512) if settings.exists() else 512
        ids = [row[:limit] for row in ids]
        expected_ids = stamen_vectors(args.stamen, args.model, [" ".join(map(str, row)) for row in ids], True)
        try:
            got_ids = client.embed(ids)
            report["ids_min_cosine"] = min(cosine(a, b) for a, b in zip(expected_ids, got_ids))
        except RuntimeError as exc:
            report["ids_error"] = str(exc)

    longest = max(range(len(texts)), key=lambda i: len(texts[i]) if len(texts[i]) < 3000 else 0)
    times = []
    for _ in range(args.latency_requests):
        start = time.perf_counter()
        client.embed([texts[longest]])
        times.append((time.perf_counter() - start) * 1e3)
    report["latency_text_chars"] = len(texts[longest])
    report["latency_ms_median"] = round(statistics.median(times), 1)
    report["latency_ms_min"] = round(min(times), 1)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
