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
# dependencies change (docs/RELIABILITY.md). Usage: scripts/fresh_check.sh [--keep]
#   --keep: leave the root (and its build) in place afterwards for a look inside.
set -euo pipefail
source_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
keep=false
[[ "${1:-}" == --keep ]] && keep=true

cache=${STAMEN_FRESH_CACHE:-/var/tmp/stamen-fresh}
base=$cache/bookworm-minbase.tar
root=$cache/root
log=$cache/fresh-check.log
port=${STAMEN_FRESH_PORT:-18080}
say() { echo "fresh-check: $*"; }

[[ $(id -u) -eq 0 ]] || { say "must run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
[[ -d "$source_dir/../shared" ]] || { say "no ../shared beside $source_dir" >&2; exit 1; }
if ! command -v debootstrap > /dev/null; then
  say "installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap > /dev/null ||
    { apt-get update -q > /dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap > /dev/null; }
fi
mkdir -p "$cache"

unmount_all() {
  for mount_point in dev sys proc; do
    mountpoint -q "$root/$mount_point" && umount -R "$root/$mount_point"
  done
  return 0
}
cleanup() {
  unmount_all
  $keep || rm -rf "$root"
}
trap cleanup EXIT

started=$SECONDS
if [[ ! -f "$base" ]]; then
  mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  say "debootstrap --variant=minbase bookworm from $mirror (once; kept as $base)"
  rm -rf "$cache/base.tmp"
  debootstrap --variant=minbase bookworm "$cache/base.tmp" "$mirror" > "$cache/debootstrap.log" 2>&1 ||
    { tail -n 30 "$cache/debootstrap.log"; exit 1; }
  tar -C "$cache/base.tmp" -cf "$base.tmp" . && mv "$base.tmp" "$base"
  rm -rf "$cache/base.tmp"
fi

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

commit=$(git -C "$source_dir" rev-parse HEAD)
mkdir -p "$root/work"
git clone --quiet --no-hardlinks "$source_dir" "$root/work/stamen"
git -C "$root/work/stamen" checkout --quiet "$commit"
cp -a "$source_dir/../shared" "$root/work/shared"
for mount_point in proc sys dev; do
  mount --rbind "/$mount_point" "$root/$mount_point"
  mount --make-rslave "$root/$mount_point"
done

ca=/usr/local/share/fresh-check/host-ca.crt
in_root() {  # command...: runs in the root with a clean environment, from the clone
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_CERT=$ca SSL_CERT_FILE=$ca REQUESTS_CA_BUNDLE=$ca CURL_CA_BUNDLE=$ca PIP_DEFAULT_TIMEOUT=180 \
    /bin/bash -c 'cd /work/stamen && "$@"' bash "$@"
}

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
