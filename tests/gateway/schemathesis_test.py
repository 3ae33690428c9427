"""schemathesis against `stamen serve`'s own /openapi.json, for a bounded time: requests
generated from the schemas (valid ones and, in its negative mode, invalid ones) on every
operation, on an embedding model and on a cross-encoder. Every answer must be below 500,
have a documented status and content type, and match its schema.

Usage: schemathesis_test.py STAMEN_CLI EMBEDDING_MODEL_DIR CROSS_ENCODER_DIR [SECONDS_PER_MODEL]
"""
import json
import os
import subprocess
import sys
import tempfile
import time

from serve_process import serve

CHECKS = ",".join(["not_a_server_error", "status_code_conformance", "content_type_conformance",
                   "response_headers_conformance", "response_schema_conformance"])


def run_schemathesis(url, seconds, report_folder):
    """schemathesis's exit code and the number of test cases it generated."""
    schemathesis = os.path.join(os.path.dirname(sys.executable), "schemathesis")
    command = [schemathesis, "run", f"{url}/openapi.json", "--url", url, "--checks", CHECKS,
               "--max-time", str(seconds), "--workers", "1", "--seed", "1", "--generation-database", "none",
               "--request-timeout", "30", "--no-color", "--report", "ndjson",
               # Failures are shown once each; shrinking them costs time the bounded run does not have.
               "--no-shrink", "--report-ndjson-path", os.path.join(report_folder, "events.ndjson")]
    # One worker: with two threads Hypothesis 6.170 once failed inside its own lambda-source reader
    # ("AST constructor recursion depth mismatch"), an error of the tool, not of the server.
    print(" ".join(command), flush=True)
    # Run in the report folder: Hypothesis and schemathesis leave their own folders in the current one.
    code = subprocess.run(command, stdin=subprocess.DEVNULL, cwd=report_folder).returncode
    cases = 0
    with open(os.path.join(report_folder, "events.ndjson")) as events:
        for line in events:
            event = json.loads(line)
            # One ScenarioFinished per generated scenario; its recorder holds the cases sent.
            finished = event.get("ScenarioFinished")
            if finished:
                cases += len(finished.get("recorder", {}).get("cases", {}))
    return code, cases


def main():
    cli, embedding_model, cross_encoder = sys.argv[1:4]
    seconds = int(sys.argv[4]) if len(sys.argv) > 4 else 20
    failures = 0
    total_cases = 0
    start = time.monotonic()
    for model in (embedding_model, cross_encoder):
        with serve(cli, model, "schemathesis-model") as url, tempfile.TemporaryDirectory() as report_folder:
            model_start = time.monotonic()
            code, cases = run_schemathesis(url, seconds, report_folder)
            print(f"{os.path.basename(model)}: {cases} test cases in {time.monotonic() - model_start:.1f} s, "
                  f"schemathesis exit {code}", flush=True)
            total_cases += cases
            failures += code != 0 or cases == 0
    print(f"schemathesis: {total_cases} test cases on 2 models in {time.monotonic() - start:.1f} s, "
          f"{failures} failing runs")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
