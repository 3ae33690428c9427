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


@contextlib.contextmanager
def serve(cli, model, model_id, timeout=60, extra_args=()):
    """Yields the base URL of `stamen serve --model MODEL [EXTRA_ARGS]` once it listens."""
    server = subprocess.Popen([cli, "serve", "--model", model, "--port", "0", "--served-model-name", model_id, "--threads", "1",
                               *extra_args], stderr=subprocess.PIPE, text=True)
    try:
        port = None
        deadline = time.time() + timeout
        log = ""
        while port is None and time.time() < deadline:
            line = server.stderr.readline()
            if not line and server.poll() is not None:
                break
            log += line
            found = re.search(r"on http://127\.0\.0\.1:(\d+)", line)
            if found:
                port = int(found.group(1))
        if port is None:
            raise RuntimeError("stamen serve did not start:\n" + log)
        # Keep reading its log so that a full pipe never blocks the server.
        threading.Thread(target=server.stderr.read, daemon=True).start()
        yield f"http://127.0.0.1:{port}"
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)


def cli_lines(cli, command, model, lines):
    """`stamen COMMAND --model MODEL` on `lines`: one JSON value per output line."""
    output = subprocess.run([cli, command, "--model", model, "--threads", "1"], input="\n".join(lines) + "\n",
                            capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in output.splitlines()]
