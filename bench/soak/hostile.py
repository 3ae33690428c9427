"""Hostile load for the soak (scripts/soak.sh, issue 45): CLIENTS threads send, for SECONDS, the
shapes issue 45's probe used against `stamen serve`, one after another, each over a new raw
connection, and count how each was answered. A shape's answer is expected when it is one of the
statuses listed for it (or the server closing the connection where that is the right answer);
anything else (a 5xx, no answer within 30 s) is counted as unexpected. Prints one JSON line.

Usage: hostile.py PORT SECONDS [CLIENTS]
"""
import json
import random
import socket
import sys
import threading
import time

TIMEOUT = 30.0


def connect(port):
    connection = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def status_of(connection):
    """The status code of the answer, "closed" when the server closed without one, "timeout"."""
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = connection.recv(4096)
            if not chunk:
                return "closed" if not data else "partial"
            data += chunk
    except socket.timeout:
        return "timeout"
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    parts = data.split(b"\r\n", 1)[0].split()
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else "garbled"


def send_and_read(port, payload, pieces=1, pause=0.0, half_close=False, wait=TIMEOUT):
    connection = connect(port)
    try:
        step = max(1, len(payload) // pieces)
        for begin in range(0, len(payload), step):
            connection.sendall(payload[begin:begin + step])
            if pause:
                time.sleep(pause)
        if half_close:
            connection.shutdown(socket.SHUT_WR)
        connection.settimeout(wait)
        return status_of(connection)
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    except socket.timeout:
        return "timeout"
    finally:
        connection.close()


def post(path, body, extra=b""):
    return (b"POST " + path + b" HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)


def slow_headers(port):
    # Headers a few bytes at a time, 0.5 s apart, for 10 s, never finished: the server must close
    # the connection at its header deadline (the idle timeout, 60 s, as nginx's
    # client_header_timeout), and the connection must not disturb the others meanwhile.
    head = b"POST /v1/embeddings HTTP/1.1\r\nHost: soak\r\nX-Slow: " + b"a" * 20
    return send_and_read(port, head, pieces=20, pause=0.5, wait=75.0)


def huge_header(port):
    return send_and_read(port, b"GET /health HTTP/1.1\r\nHost: soak\r\nX-Big: " + b"b" * 200_000 + b"\r\n\r\n")


def huge_trailer(port):
    # A chunked POST with no key, one chunk, then 4 MB of trailer lines (issue 45, defect 1).
    trailer = b"X-Trailer: " + b"t" * 1000 + b"\r\n"
    payload = (b"POST /health HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"2\r\n{}\r\n0\r\n" + trailer * 4000 + b"\r\n")
    return send_and_read(port, payload, pieces=40)


def chunk_extension(port):
    payload = (b"POST /v1/embeddings HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"2;" + b"e" * 1_000_000 + b"\r\n{}\r\n0\r\n\r\n")
    return send_and_read(port, payload, pieces=10)


def bad_chunk_size(port):
    payload = (b"POST /v1/embeddings HTTP/1.1\r\nHost: soak\r\nTransfer-Encoding: chunked\r\n\r\n"
               b"zz\r\n{}\r\n0\r\n\r\n")
    return send_and_read(port, payload)


def invalid_utf8(port):
    return send_and_read(port, post(b"/v1/embeddings", b'{"input": "caf\xc3\x28 \xff\xfe", "model": "m"}'))


def deep_nesting(port):
    return send_and_read(port, post(b"/v1/embeddings", b'{"input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))


def oversized_body(port):
    # Announces 64 MB (over the 16 MB limit), sends 1 MB: refused from the header.
    head = (b"POST /v1/embeddings HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\n"
            b"Content-Length: 67108864\r\n\r\n")
    return send_and_read(port, head + b'{"input": "' + b"x" * 1_000_000)


def tokenize_flood(port):
    # About 2.5 M tokens, over --max-tokenize-tokens (1 M): 413, not a 100 MB answer.
    return send_and_read(port, post(b"/tokenize", b'{"inputs": "' + b"a b " * 1_250_000 + b'"}'), pieces=8)


def garbage(port):
    return send_and_read(port, bytes(random.getrandbits(8) for _ in range(4096)) + b"\r\n\r\n")


def half_close(port):
    # A complete small request, then the client shuts its sending side. The server cannot tell
    # this end of stream from a client that went away, and cancels abandoned work (the
    # client-gone cancellation of issue 45's overload), so the answer is 200 when the work
    # finished first and the cancellation's 499 otherwise; never a 5xx or a hang.
    return send_and_read(port, post(b"/v1/embeddings", b'{"input": "half closed", "model": "m"}'), half_close=True)


# Each shape and the answers that are right for it.
SHAPES = {
    slow_headers: {408, "closed"},
    huge_header: {431, 400, "closed"},
    huge_trailer: {431, 400, "closed"},
    chunk_extension: {431, 400, "closed"},
    bad_chunk_size: {400, "closed"},
    invalid_utf8: {400, 422},
    deep_nesting: {400, 422},
    oversized_body: {413, "closed"},
    tokenize_flood: {413},
    garbage: {400, "closed"},
    half_close: {200, 499, "closed"},
}


def client(port, deadline, counts, lock, rng):
    shapes = list(SHAPES)
    while time.monotonic() < deadline:
        shape = rng.choice(shapes)
        try:
            outcome = shape(port)
        except OSError as error:
            outcome = f"error: {error.__class__.__name__}"
        with lock:
            row = counts.setdefault(shape.__name__, {})
            row[str(outcome)] = row.get(str(outcome), 0) + 1


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    clients = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    counts, lock = {}, threading.Lock()
    deadline = time.monotonic() + seconds
    threads = [threading.Thread(target=client, args=(port, deadline, counts, lock, random.Random(index)))
               for index in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    expected = {shape.__name__: {str(answer) for answer in answers} for shape, answers in SHAPES.items()}
    unexpected = {name: {outcome: n for outcome, n in row.items() if outcome not in expected[name]}
                  for name, row in counts.items()}
    unexpected = {name: row for name, row in unexpected.items() if row}
    print(json.dumps({"seconds": seconds, "clients": clients, "shapes": counts,
                      "sent": sum(sum(row.values()) for row in counts.values()),
                      "unexpected": unexpected}))


if __name__ == "__main__":
    main()
