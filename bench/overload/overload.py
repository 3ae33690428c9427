"""Overload against `stamen serve`: N clients send one /v1/embeddings body of INPUTS texts each,
all at once, and the answers are counted by status with their latencies (issue 45's probe:
16 and 256 clients of 2,048 inputs of about 42 tokens). First one client alone gives the rate
a request gets by itself; admitted throughput is the tokens of the 200 answers over the time
until the last of them. A 429 is counted apart ("429 shed") when the request had been admitted
and was given up later because the workers slowed down.

The clients are coroutines of one asyncio loop writing prepared bytes to raw sockets, so that
on a small machine the load generator's own CPU (Python threads each serialising and sending
500 kB under the GIL) does not stand in the server's latencies.

Usage: overload.py PORT CLIENTS [INPUTS]   (prints one JSON line)
"""
import asyncio
import json
import sys
import time

WORDS = ("the quick brown fox jumps over a lazy dog while seven wise owls watch quietly from "
         "old oak trees near the river bank under a pale morning sky").split()


def body(inputs):
    # About 42 tokens each (40 words and the special tokens), each text different.
    texts = [" ".join(WORDS[(i + k) % len(WORDS)] for k in range(40)) + f" {i}" for i in range(inputs)]
    return json.dumps({"input": texts, "model": "m"}).encode()


async def post(port, request, start):
    """One request on its own connection once `start` is set: (status, seconds, Retry-After,
    prompt tokens of a 200, time of the answer)."""
    await start.wait()
    began = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(request)
        try:
            await writer.drain()
        except ConnectionError:
            pass  # answered and closed before the whole body was read: read that answer
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {name.strip().lower(): value.strip()
                   for name, value in (line.split(":", 1) for line in lines[1:] if ":" in line)}
        length = headers.get("content-length")
        data = await (reader.readexactly(int(length)) if length is not None else reader.read())
        writer.close()
        tokens = json.loads(data)["usage"]["prompt_tokens"] if status == 200 else 0
        if status == 429 and b"given up" in data:
            status = "429 shed"  # admitted, then given up when the workers slowed down
        retry_after = headers.get("retry-after")
    except Exception as error:  # noqa: BLE001 - a refused or cut connection is a result too
        status, retry_after, tokens = f"error: {error}", None, 0
    return (status, time.monotonic() - began, retry_after, tokens, time.monotonic())


async def run(port, payload, clients):
    request = (b"POST /v1/embeddings HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               b"Connection: close\r\nContent-Length: %d\r\n\r\n" % len(payload)) + payload
    start = asyncio.Event()
    tasks = [asyncio.create_task(post(port, request, start)) for _ in range(clients)]
    await asyncio.sleep(0)  # every client waits on the event before any starts
    began = time.monotonic()
    start.set()
    return began, await asyncio.gather(*tasks)


def percentiles(values):
    if not values:
        return None
    values = sorted(values)
    pick = lambda q: round(values[min(len(values) - 1, int(q * len(values)))], 3)
    return {"p50": pick(0.5), "p90": pick(0.9), "max": round(values[-1], 3)}


def main():
    port, clients = int(sys.argv[1]), int(sys.argv[2])
    inputs = int(sys.argv[3]) if len(sys.argv) > 3 else 2048
    payload = body(inputs)
    alone = asyncio.run(run(port, payload, 1))[1]
    single_rate = alone[0][3] / alone[0][1] if alone[0][0] == 200 else None
    start, results = asyncio.run(run(port, payload, clients))
    counts = {}
    for status, *_ in results:
        counts[str(status)] = counts.get(str(status), 0) + 1
    ok = [r for r in results if r[0] == 200]
    admitted_tokens = sum(r[3] for r in ok)
    last = max((r[4] for r in ok), default=start) - start
    print(json.dumps({
        "clients": clients, "inputs": inputs,
        "alone": {"status": alone[0][0], "seconds": round(alone[0][1], 2), "tokens": alone[0][3],
                  "tokens_per_second": round(single_rate) if single_rate else None},
        "statuses": counts,
        "seconds_by_status": {status: percentiles([r[1] for r in results if str(r[0]) == status]) for status in counts},
        "retry_after": sorted({r[2] for r in results if r[2]}),
        "admitted_tokens_per_second": round(admitted_tokens / last) if ok and last > 0 else None,
        "admitted_over_alone": round(admitted_tokens / last / single_rate, 2) if ok and single_rate and last > 0 else None,
    }))


if __name__ == "__main__":
    main()
