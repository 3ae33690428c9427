"""What the SDK tests share: `stamen serve` started on a free loopback port (and stopped),
and the stamen CLI's own answers for the same inputs, the references the SDKs' results are
compared with.
"""
import contextlib
import json
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request


@contextlib.contextmanager
def stamen_process(cli, args, listening, timeout=60):
    """Runs `stamen ARGS` and yields the number its log gives in the regular expression
    `listening` (the port it listens on) once that line appears; stops it with SIGTERM."""
    process = subprocess.Popen([cli, *args], stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.time() + timeout
        log = ""
        while port is None and time.time() < deadline:
            line = process.stderr.readline()
            if not line and process.poll() is not None:
                break
            log += line
            found = re.search(listening, line)
            if found:
                port = int(found.group(1))
        if port is None:
            raise RuntimeError(f"stamen {args[0]} did not start:\n" + log)
        # Keep reading its log so that a full pipe never blocks the process.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield port
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


HTTP_LISTENING = r"on http://127\.0\.0\.1:(\d+)"  # the gateway's start line


@contextlib.contextmanager
def serve(cli, model, model_id, timeout=60, extra_args=()):
    """Yields the base URL of `stamen serve --model MODEL [EXTRA_ARGS]` once it listens."""
    args = ["serve", "--model", model, "--port", "0", "--served-model-name", model_id, "--threads", "1", *extra_args]
    with stamen_process(cli, args, HTTP_LISTENING, timeout) as port:
        yield f"http://127.0.0.1:{port}"


def cli_lines(cli, command, model, lines):
    """`stamen COMMAND --model MODEL` on `lines`: one JSON value per output line."""
    output = subprocess.run([cli, command, "--model", model, "--threads", "1"], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in output.splitlines()]


def post(url, path, body):
    """(status, parsed JSON answer) of a POST."""
    request = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())
