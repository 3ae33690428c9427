#!/usr/bin/env bash
# Stops a peer started by bench/peers/start_peer.sh: SIGTERM to its process group (the peer was
# started with setsid, so this reaches any child it made), SIGKILL after 20 s.
#   bench/peers/stop_peer.sh PID|PID_FILE
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 PID|PID_FILE" >&2; exit 2; }
pid=$1
[[ -f "$pid" ]] && pid=$(cat "$pid")
[[ "$pid" =~ ^[0-9]+$ ]] || { echo "stop_peer: '$pid' is not a PID" >&2; exit 2; }
kill -0 "$pid" 2>/dev/null || { echo "stop_peer: no process $pid" >&2; exit 0; }
kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid"
# Done when no process of the group is left (a child may hold the port after the leader exits).
alive() { kill -0 -- "-$pid" 2>/dev/null || kill -0 "$pid" 2>/dev/null; }
for _ in $(seq 40); do
  alive || exit 0
  sleep 0.5
done
kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
for _ in $(seq 20); do
  alive || exit 0
  sleep 0.25
done
