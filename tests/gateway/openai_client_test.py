"""The official OpenAI Python SDK against `stamen serve`: `embeddings.create` with the SDK's
default options (it asks for base64) and with encoding_format="float" must both give what
`stamen embed` prints for the same texts; `models.list()` and `models.retrieve` name the
served model, and an unknown one is the SDK's NotFoundError.

Usage: openai_client_test.py STAMEN_CLI MODEL_DIR
"""
import sys

import openai

from serve_process import cli_lines, serve

TEXTS = ["Hello world", "The quick brown fox jumps over the lazy dog.", "stamen serves embeddings"]


def main() -> int:
    cli, model = sys.argv[1], sys.argv[2]
    expected = cli_lines(cli, "embed", model, TEXTS)
    with serve(cli, model, "tiny-minilm") as url:
        client = openai.OpenAI(base_url=f"{url}/v1", api_key="unused")
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

        models = [(item.id, item.object, item.owned_by) for item in client.models.list()]
        ok = models == [("tiny-minilm", "model", "stamen")]
        print(f"models.list(): {models}: {'ok' if ok else 'WRONG'}")
        failures += not ok
        model_object = client.models.retrieve("tiny-minilm")
        ok = model_object.id == "tiny-minilm" and model_object.created > 0
        print(f"models.retrieve('tiny-minilm'): {model_object.id}, created {model_object.created}: {'ok' if ok else 'WRONG'}")
        failures += not ok
        try:
            client.models.retrieve("no-such-model")
            print("models.retrieve of an unknown model succeeded")
            failures += 1
        except openai.NotFoundError as error:
            ok = error.body.get("code") == "model_not_found" and "no-such-model" in error.body.get("message", "")
            print(f"models.retrieve('no-such-model') -> {error.status_code} {error.body}: {'ok' if ok else 'WRONG'}")
            failures += not ok
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
