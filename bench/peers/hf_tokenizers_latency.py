#!/usr/bin/env python3
"""Hugging Face tokenizers' single-thread encode latency through its Python binding, on the
same inputs as `stamen bench tokenizer`, with the binding's per-call overhead measured on a
one-token input beside it. Like stamen's benchmark it also reads the thread's CPU clock, which
leaves out time spent descheduled on a busy machine.

Usage: hf_tokenizers_latency.py TOKENIZER_JSON INPUT_FILE [ITERATIONS] [WARMUP]
Prints one JSON object: tokens, p50_us, p99_us, cpu_p50_us, cpu_p99_us, overhead_p50_us
(1-token input).
"""
import json
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # single thread, like the C++ benchmark
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from tokenizers import Tokenizer  # noqa: E402


def percentiles(tokenizer, text, iterations, warmup):
    for _ in range(warmup):
        encoding = tokenizer.encode(text)
    durations, cpu_durations = [], []
    for _ in range(iterations):
        start, cpu_start = time.perf_counter_ns(), time.thread_time_ns()
        encoding = tokenizer.encode(text)
        cpu_durations.append((time.thread_time_ns() - cpu_start) / 1000.0)
        durations.append((time.perf_counter_ns() - start) / 1000.0)
    durations.sort()
    cpu_durations.sort()
    pick = lambda values, q: values[min(len(values) - 1, int(q * len(values)))]
    return (len(encoding.ids), pick(durations, 0.50), pick(durations, 0.99), pick(cpu_durations, 0.50),
            pick(cpu_durations, 0.99))


def main() -> int:
    path, input_path = sys.argv[1], sys.argv[2]
    iterations = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    warmup = int(sys.argv[4]) if len(sys.argv) > 4 else 100
    tokenizer = Tokenizer.from_file(path)
    # The Rust Unigram model caches short inputs' results; a fresh tokenizer per run would
    # measure loading, so the cache stays as users get it (it does not hold long inputs).
    with open(input_path, encoding="utf-8") as f:
        text = f.read()
    tokens, p50, p99, cpu_p50, cpu_p99 = percentiles(tokenizer, text, iterations, warmup)
    overhead_p50 = percentiles(tokenizer, "a", iterations, warmup)[1]
    print(json.dumps({"name": "hf-tokenizers-python", "tokens": tokens, "p50_us": round(p50, 2),
                      "p99_us": round(p99, 2), "cpu_p50_us": round(cpu_p50, 2), "cpu_p99_us": round(cpu_p99, 2),
                      "overhead_p50_us": round(overhead_p50, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
