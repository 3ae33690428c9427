#!/usr/bin/env bash
# Starts one embeddings peer of `stamen bench serve` in the background on MODEL_DIR, waits until
# it answers, and prints its PID on stdout (and into $PEER_PID_FILE when set). Stop it with
# bench/peers/stop_peer.sh PID (or PID_FILE), which ends its whole process group.
#
#   bench/peers/start_peer.sh NAME MODEL_DIR PORT
#
# NAME:
#   infinity               Infinity (infinity_emb v2, .venv-infinity: bench/peers/setup_infinity_venv.sh),
#                          engine torch (sentence-transformers inside), CPU, no torch.compile,
#                          no BetterTransformer, no disk cache, telemetry off
#   infinity-optimum       Infinity, engine optimum (ONNX Runtime inside). Infinity only loads an
#                          .onnx file that is already in the folder, so the first start exports one
#                          with optimum's exporter into build/bench-models/infinity-onnx/ (a copy of
#                          MODEL_DIR made of symlinks plus model.onnx) and serves that folder
#   sentence-transformers  bench/peers/serve_peer.py --backend torch (.venv-heavy)
#   onnxruntime            bench/peers/serve_peer.py --backend onnxruntime (.venv-heavy)
#   openvino               bench/peers/serve_peer.py --backend openvino (.venv-heavy)
#
# Every peer serves POST /v1/embeddings (Infinity: only that one, with its --url-prefix /v1;
# serve_peer.py: /embeddings too) and GET /health, on 127.0.0.1.
#
# Environment: PEER_LOG (default build/bench-logs/NAME.log), PEER_PID_FILE, PEER_THREADS
# (default: all cores), PEER_BATCH_SIZE (default 32), PEER_TIMEOUT (seconds, default 180),
# PEER_HOST (default 127.0.0.1), PEER_LOG_LEVEL (Infinity's, default warning: no access log line per
# request; info shows its start-up timings), PEER_EXTRA_ARGS (more arguments for the peer's
# command line, split on spaces, e.g. "--lengths-via-tokenize" for Infinity).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "${BASH_SOURCE[0]}")/../.."

if [[ $# -ne 3 ]]; then
  sed -n '2,/^set -e/p' "${BASH_SOURCE[0]}" | grep '^#' | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
name=$1
model=$(readlink -f "$2")
port=$3
host=${PEER_HOST:-127.0.0.1}
threads=${PEER_THREADS:-$(nproc)}
batch=${PEER_BATCH_SIZE:-32}
timeout=${PEER_TIMEOUT:-180}
log=$(realpath -m "${PEER_LOG:-build/bench-logs/$name.log}")
run_dir=.
[[ -f "$model/config.json" ]] || { echo "start_peer: $model is not a model folder (no config.json)" >&2; exit 2; }
mkdir -p "$(dirname "$log")"

# Nothing of ours reaches the network: local folders only, no telemetry.
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_HUB_DISABLE_TELEMETRY=1 DO_NOT_TRACK=1
export INFINITY_ANONYMOUS_USAGE_STATS=0 TOKENIZERS_PARALLELISM=false
export OMP_NUM_THREADS=$threads

infinity_onnx_folder() {
  # MODEL_DIR's files as symlinks plus optimum's ONNX export, once per folder.
  local out=build/bench-models/infinity-onnx/$(basename "$model")-$(echo -n "$model" | sha256sum | cut -c1-12)
  if [[ ! -f "$out/model.onnx" ]]; then
    rm -rf "$out.tmp" && mkdir -p "$out.tmp"
    if ! .venv-infinity/bin/optimum-cli export onnx --model "$model" --task feature-extraction --library-name transformers \
         --opset 17 --device cpu "$out.tmp/export" >> "$log" 2>&1; then
      echo "start_peer: optimum's ONNX export failed; last lines of $log:" >&2
      tail -n 30 "$log" >&2
      return 1
    fi
    for file in "$model"/*; do ln -sfn "$(readlink -f "$file")" "$out.tmp/$(basename "$file")"; done
    mv "$out.tmp/export/model.onnx" "$out.tmp/model.onnx"
    rm -rf "$out.tmp/export" "$out" && mv "$out.tmp" "$out"
  fi
  echo "$out"
}

case "$name" in
  infinity | infinity-optimum)
    [[ -x .venv-infinity/bin/infinity_emb ]] || { echo "start_peer: run bench/peers/setup_infinity_venv.sh first" >&2; exit 2; }
    engine=torch serve_dir=$model extra=()
    if [[ $name == infinity-optimum ]]; then
      : > "$log"
      engine=optimum
      run_dir=$(infinity_onnx_folder) || exit 1
      # Infinity hands optimum the .onnx path as it globbed it under --model-id, and optimum 2
      # (optimum-onnx) matches that against bare file names: a local folder only loads as
      # --model-id . from inside it. Its optimised graph is cached under HF_HUB_CACHE by model
      # id, so that cache is kept inside the folder. The optimum engine also pools the CLS
      # token unless told otherwise (1_Pooling is not read there); the folder's pooling is mean.
      serve_dir=.
      export HF_HUB_CACHE=$PWD/$run_dir/hf-cache
      extra=(--pooling-method mean)
    fi
    command=("$PWD/.venv-infinity/bin/infinity_emb" v2 --model-id "$serve_dir" --served-model-name "$(basename "$model")"
             --engine "$engine" --device cpu --batch-size "$batch" --no-compile --no-bettertransformer
             --no-vector-disk-cache --dtype float32 --url-prefix /v1 --host "$host" --port "$port"
             --log-level "${PEER_LOG_LEVEL:-warning}" "${extra[@]}")
    ;;
  sentence-transformers | onnxruntime | openvino)
    [[ -x .venv-heavy/bin/python ]] || { echo "start_peer: .venv-heavy is missing (tools/setup_heavy_venv.sh)" >&2; exit 2; }
    backend=torch
    [[ $name == onnxruntime || $name == openvino ]] && backend=$name
    command=(.venv-heavy/bin/python bench/peers/serve_peer.py --backend "$backend" --model "$model"
             --host "$host" --port "$port" --threads "$threads" --batch-size "$batch")
    ;;
  *)
    echo "start_peer: unknown peer '$name' (infinity, infinity-optimum, sentence-transformers, onnxruntime, openvino)" >&2
    exit 2
    ;;
esac

read -r -a more <<< "${PEER_EXTRA_ARGS:-}"
command+=("${more[@]}")

if curl -s -o /dev/null --max-time 2 "http://$host:$port/health"; then
  echo "start_peer: something already answers on $host:$port" >&2
  exit 1
fi
[[ $name == infinity-optimum ]] || : > "$log"
echo "start_peer: $(date -u +%FT%TZ) ${command[*]}" >> "$log"
(cd "$run_dir" && exec setsid "${command[@]}") >> "$log" 2>&1 < /dev/null &
pid=$!
[[ -n "${PEER_PID_FILE:-}" ]] && echo "$pid" > "$PEER_PID_FILE"

deadline=$((SECONDS + timeout))
until curl -sf -o /dev/null --max-time 5 "http://$host:$port/health"; do
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "start_peer: $name exited before answering; last lines of $log:" >&2
    tail -n 30 "$log" >&2
    exit 1
  fi
  if ((SECONDS >= deadline)); then
    echo "start_peer: $name did not answer on $host:$port within ${timeout}s; last lines of $log:" >&2
    tail -n 30 "$log" >&2
    kill -- -"$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    exit 1
  fi
  sleep 1
done
# One tiny embeddings request: the route works, not only /health.
if ! curl -sf -o /dev/null --max-time 60 -H 'Content-Type: application/json' \
     -d '{"model":"peer","input":["ready"]}' "http://$host:$port/v1/embeddings"; then
  echo "start_peer: $name answers /health but not POST /v1/embeddings; last lines of $log:" >&2
  tail -n 30 "$log" >&2
  kill -- -"$pid" 2>/dev/null || true
  exit 1
fi
echo "$pid"
