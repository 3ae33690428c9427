#!/usr/bin/env bash
# Proves a bundle of bench/gpu/pack.sh runs where none of our build packages are: unpacks it in
# a new copy of the fresh-machine check's Debian 12 root (`debootstrap --variant=minbase
# bookworm`, kept as $STAMEN_FRESH_CACHE/bookworm-minbase.tar; scripts/fresh_check.sh makes it)
# and there, with an empty environment and from another working directory:
#   - bin/stamen --help;
#   - the tests the bundle carries (tests/run.sh: graph policy, workspace, loader, ops, and the
#     CUDA tests, which skip there but load the CUDA runtime and the cuBLASLt stub);
#   - `stamen make-model` (the shipped tokenizers) and `stamen serve --device cpu` answering one
#     /v1/embeddings request;
#   - `stamen serve --device cuda` failing with the no-device message, not a missing library.
# Needs root (chroot, mounts). About a minute.
#   bench/gpu/check_bundle.sh BUNDLE.tar.xz
set -euo pipefail
bundle=$(realpath "${1:?usage: bench/gpu/check_bundle.sh BUNDLE.tar.xz}")
cache=${STAMEN_FRESH_CACHE:-/var/tmp/stamen-fresh}
base=$cache/bookworm-minbase.tar
root=$cache/bundle-root
[[ $(id -u) -eq 0 ]] || { echo "check_bundle: must run as root" >&2; exit 1; }
[[ -f "$base" ]] || { echo "check_bundle: no $base (scripts/fresh_check.sh makes it)" >&2; exit 1; }
say() { echo "check_bundle: $*"; }

cleanup() {
  for mount_point in proc dev; do umount -l "$root/$mount_point" 2> /dev/null || true; done
  rm -rf "$root"
}
trap cleanup EXIT
cleanup
mkdir -p "$root"
tar -C "$root" -xf "$base"
mkdir -p "$root/opt"
xz -dc "$bundle" | tar -C "$root/opt" -xf -
mount --bind /proc "$root/proc"
mount --bind /dev "$root/dev"
in_root() {  # command...: in the root, an empty environment, working directory /tmp
  chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin /bin/bash -c 'cd /tmp && "$@"' _ "$@"
}
say "root: $(in_root cat /etc/debian_version), $(in_root dpkg-query -W -f '${binary:Package}\n' | wc -l) packages, bundle $(du -h "$bundle" | cut -f1)"
# None of our build or runtime packages is in the root.
for package in libgrpc++1.51 libdnnl2.6 libsimdjson14 libspdlog1.10 libcurl4 libgomp1 libprotobuf32 ocl-icd-libopencl1; do
  ! in_root dpkg-query -W "$package" > /dev/null 2>&1 || { say "FAILED: $package is installed in the root"; exit 1; }
done

B=/opt/stamen-bundle
in_root "$B/bin/stamen" --help > /dev/null && say "stamen --help: ok"
for test in graph_policy_test workspace_test loader_test ops_test cuda_backend_test; do
  [[ -x "$root$B/tests/bin/$test" ]] || continue
  in_root "$B/tests/run.sh" "$test" > "$cache/bundle-$test.log" 2>&1 ||
    { tail -20 "$cache/bundle-$test.log"; say "FAILED: $test"; exit 1; }
  say "$test: $(grep -E '^\[  PASSED  \]' "$cache/bundle-$test.log" | head -1)"
done

in_root "$B/bin/stamen" make-model --like all-MiniLM-L6-v2 --layers 1 --random-seed 6 --out /tmp/minilm > /dev/null
say "make-model: $(ls "$root/tmp/minilm" | tr '\n' ' ')"
port=$((20000 + RANDOM % 20000))
chroot "$root" /usr/bin/env -i HOME=/root /bin/bash -c \
  "cd /tmp && exec $B/bin/stamen serve --model /tmp/minilm --device cpu --port $port > /tmp/serve.log 2>&1" &
server=$!
answer=
body='{"input": ["Hello"]}'
for _ in $(seq 1 60); do
  sleep 0.5
  # No curl in the root: the request by hand, through bash's /dev/tcp.
  answer=$(in_root timeout 10 /bin/bash -c "exec 3<>/dev/tcp/127.0.0.1/$port && printf 'POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${#body}\r\nConnection: close\r\n\r\n%s' '$body' >&3 && cat <&3" 2> /dev/null || true)
  [[ "$answer" == *'"embedding"'* ]] && break
done
kill "$server" 2> /dev/null || true
pkill -P "$server" 2> /dev/null || true
wait "$server" 2> /dev/null || true
[[ "$answer" == *'"embedding"'* ]] || { cat "$root/tmp/serve.log"; say "FAILED: no embedding from stamen serve --device cpu"; exit 1; }
floats=$(grep -o '"embedding":\[[^]]*\]' <<< "$answer" | tr ',' '\n' | wc -l)
say "serve --device cpu: one /v1/embeddings answer, $floats floats"

set +e
cuda=$(in_root "$B/bin/stamen" serve --model /tmp/minilm --device cuda --port $((port + 1)) 2>&1)
status=$?
set -e
say "serve --device cuda: exit $status: $(tail -1 <<< "$cuda")"
(( status != 0 )) || { say "FAILED: --device cuda started without a GPU"; exit 1; }
grep -q "error while loading shared libraries" <<< "$cuda" && { say "FAILED: a library is missing"; exit 1; }
grep -qi "no CUDA device" <<< "$cuda" || { say "FAILED: not the no-device message"; exit 1; }
say "ok"
