"""The official OpenAI Python SDK against `stamen serve`: `embeddings.create` with the SDK's
default options (it asks for base64) and with encoding_format="float" must both give what
`stamen embed` prints for the same texts.

Usage: openai_client_test.py STAMEN_CLI MODEL_DIR
"""
import json
import os
import re
import signal
import subprocess
import sys
import time

import openai

TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "stamen serves embeddings"]


def main() -> int:
    cli, model = sys.argv[1], sys.argv[2]
    expected = [json.loads(line) for line in subprocess.run(
        [cli, "embed", "--model", model, "--threads", "1"], input="\n".join(TEXTS) + "\n",
        capture_output=True, text=True, check=True).stdout.splitlines()]

    server = subprocess.Popen([cli, "serve", "--model", model, "--port", "0", "--model-id", "tiny-minilm",
                               "--threads", "1"], stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.time() + 60
        log = ""
        while port is None and time.time() < deadline:
            line = server.stderr.readline()
            log += line
            found = re.search(r"on http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
        if port is None:
            print("stamen serve did not start:\n" + log)
            return 1
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused")
        failures = 0
        for options in ({}, {"encoding_format": "float"}):
            response = client.embeddings.create(model="tiny-minilm", input=TEXTS, **options)
            vectors = [item.embedding for item in response.data]
            worst = max(abs(a - b) for got, want in zip(vectors, expected) for a, b in zip(got, want))
            ok = len(vectors) == len(TEXTS) and all(len(v) == len(e) for v, e in zip(vectors, expected)) and worst <= 1e-5
            print(f"embeddings.create({options}): {len(vectors)} vectors, max |difference| vs stamen embed {worst:.2e}, "
                  f"usage {response.usage.prompt_tokens} tokens: {'ok' if ok else 'MISMATCH'}")
            failures += not ok
            if [item.index for item in response.data] != list(range(len(TEXTS))):
                print("indices out of order")
                failures += 1
        try:
            client.embeddings.create(model="tiny-minilm", input=[])
            print("an empty input list was accepted")
            failures += 1
        except openai.BadRequestError as error:
            print(f"empty input -> {error.status_code}: ok")
        return 1 if failures else 0
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main())
