#!/usr/bin/env bash
# Packs an existing build into one self-contained bundle for a machine that can build nothing
# of ours (the lent GPU machine: CUDA 13, no package registry, none of our Debian packages):
#
#   stamen-bundle/
#     bin/     stamen, stamen_cuda_bench, stamen_make_model (those the build has); RUNPATH
#              $ORIGIN/../lib, then the CUDA toolkit's lib64, then lib/cuda-stubs
#     lib/     every shared library ldd names that a bare debian:12 lacks (RUNPATH $ORIGIN),
#              libcudart included; cuda-stubs/libcublasLt.so.13, a stub whose every function
#              answers CUBLAS_STATUS_NOT_INITIALIZED (the real one is 540 MB: the GPU machine's
#              toolkit has it, and a machine without one never gets past "no CUDA device")
#     share/stamen/tokenizers   the tokenizers stamen ships (make-model's defaults)
#     tests/   bin/ (cuda_backend_test and the CPU engine tests that need no large golden:
#              ops, loader, workspace, graph policy; same RUNPATH), data/ (this project's
#              goldens that those tests name, from tests/engine/data, and those of
#              ../shared/models/golden up to 2 MiB:
#              the 8 MB BERT and XLM-R ones would put the bundle over 40 MiB, and their
#              families are in tests/engine/data too), run.sh TEST [ARGS] (points the tests at
#              data/)
#
# bin/stamen runs from any working directory with no environment set. glibc, libstdc++,
# libgcc_s and zlib are the host's (debian:12 has them); glibc must be 2.36 or newer.
# LD_LIBRARY_PATH, when set, still comes first (RUNPATH), so a cuBLASLt elsewhere (a PyTorch
# wheel's) can be named there.
#
# Usage: bench/gpu/pack.sh [--build-dir DIR] [--lean] BUNDLE.tar.xz     (default DIR: build/release)
#   --lean: without tests/engine/data (about 20 MiB compressed), which the checkout has: the
#   device machine receives the working tree and what is carried, 64 MiB in all, and the
#   tracked tree is about 35 MiB, so the bundle that travels with it must stay under ~28 MiB.
#   bench/gpu/run.sh points the tests at the checkout's copy when the bundle has none.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$ROOT/build/release"
OUTPUT=
LEAN=false
while (( $# > 0 )); do
  case $1 in
    --build-dir) BUILD=$(cd "${2:?--build-dir needs a folder}" && pwd); shift 2 ;;
    --lean) LEAN=true; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    -*) echo "pack.sh: unknown option $1" >&2; exit 2 ;;
    *) OUTPUT=$1; shift ;;
  esac
done
[[ -n "$OUTPUT" ]] || { echo "usage: bench/gpu/pack.sh [--build-dir DIR] BUNDLE.tar.xz" >&2; exit 2; }
[[ -x "$BUILD/apps/stamen" ]] || { echo "pack.sh: no $BUILD/apps/stamen (build first)" >&2; exit 1; }
command -v patchelf > /dev/null || { echo "pack.sh: needs patchelf (apt-get install patchelf)" >&2; exit 1; }
OUTPUT=$(realpath -m "$OUTPUT")
SHARED="${STAMEN_SHARED_DIR:-$ROOT/../shared}"
LIMIT_MIB=40

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
B="$work/stamen-bundle"
mkdir -p "$B/bin" "$B/lib/cuda-stubs" "$B/share/stamen" "$B/tests/bin" "$B/tests/data"

# Executables (what the build has of them).
elfs=()
for program in apps/stamen bench/stamen_cuda_bench bench/stamen_make_model; do
  [[ -x "$BUILD/$program" ]] || continue
  cp "$BUILD/$program" "$B/bin/"
  elfs+=("$B/bin/$(basename "$program")")
done
for test in cuda/cuda_backend_test engine/ops_test engine/loader_test engine/workspace_test engine/graph_policy_test; do
  [[ -x "$BUILD/tests/$test" ]] || continue
  cp "$BUILD/tests/$test" "$B/tests/bin/"
  elfs+=("$B/tests/bin/$(basename "$test")")
done
strip --strip-unneeded "${elfs[@]}"

# Libraries a bare debian:12 has (priority required, or essential's dependencies): left to the
# host. Everything else that ldd resolves is copied. libcuda (the driver) is never linked: the
# CUDA runtime opens it at run time.
host_library() {
  case $1 in
    linux-vdso.so.*|ld-linux-x86-64.so.*|libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|libresolv.so.*|\
    libutil.so.*|libstdc++.so.*|libgcc_s.so.*|libz.so.*) return 0 ;;
  esac
  return 1
}
stubbed_library() { [[ $1 == libcublasLt.so.* || $1 == libcublas.so.* ]]; }
declare -A copied=()
for elf in "${elfs[@]}"; do
  while read -r name arrow path _; do
    [[ $arrow == "=>" ]] || continue
    host_library "$name" && continue
    stubbed_library "$name" && continue
    [[ -n "${copied[$name]:-}" ]] && continue
    [[ -f "$path" ]] || { echo "pack.sh: ldd cannot find $name for $(basename "$elf")" >&2; exit 1; }
    cp -L "$path" "$B/lib/$name"
    chmod u+w "$B/lib/$name"
    copied[$name]=1
  done < <(ldd "$elf")
done
strip --strip-unneeded "$B"/lib/*.so* 2> /dev/null || true

# The cuBLASLt stub: every cublasLt function the executables import, answering
# CUBLAS_STATUS_NOT_INITIALIZED (1), with the real library's soname and symbol version.
symbols=$(for elf in "${elfs[@]}"; do nm -D --undefined-only "$elf"; done |
          sed -nE 's/.* U (cublasLt[A-Za-z0-9_]*)@.*/\1/p' | sort -u)
if [[ -n "$symbols" ]]; then
  {
    echo "// Generated by bench/gpu/pack.sh: the bundle's stand-in for libcublasLt.so.13."
    for symbol in $symbols; do echo "int $symbol(void) { return 1; }"; done
  } > "$work/cublaslt_stub.c"
  echo "libcublasLt.so.13 { global: cublasLt*; local: *; };" > "$work/cublaslt_stub.map"
  cc -shared -fPIC -O1 -o "$B/lib/cuda-stubs/libcublasLt.so.13" -Wl,-soname,libcublasLt.so.13 \
    -Wl,--version-script,"$work/cublaslt_stub.map" "$work/cublaslt_stub.c"
fi

# RUNPATHs: executables find lib/ first, then a CUDA toolkit's cuBLASLt, then the stub.
cuda_paths='/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:/usr/local/cuda-13/lib64'
for elf in "$B"/bin/*; do patchelf --set-rpath "\$ORIGIN/../lib:$cuda_paths:\$ORIGIN/../lib/cuda-stubs" "$elf"; done
for elf in "$B"/tests/bin/*; do patchelf --set-rpath "\$ORIGIN/../../lib:$cuda_paths:\$ORIGIN/../../lib/cuda-stubs" "$elf"; done
for library in "$B"/lib/*.so*; do patchelf --set-rpath '$ORIGIN' "$library"; done

# Data: the shipped tokenizers; the goldens the tests read, laid out as the tests expect them
# (STAMEN_SHARED_DIR/models/golden, STAMEN_SOURCE_DIR/tests/engine/data).
cp -r "$BUILD/share/stamen/tokenizers" "$B/share/stamen/" 2> /dev/null || cp -r "$ROOT/models/tokenizers" "$B/share/stamen/"
mkdir -p "$B/tests/data/shared/models"
if ! $LEAN; then
  # Only the goldens the carried tests name (the "tiny-…" folders in their sources, and the data
  # README): all of tests/engine/data (30 MB, more with each family) would put the bundle over
  # 40 MiB.
  mkdir -p "$B/tests/data/source/tests/engine/data"
  cp "$ROOT/tests/engine/data/README.md" "$B/tests/data/source/tests/engine/data/" 2> /dev/null || true
  for name in $(grep -oh '"tiny-[a-z0-9-]*' "$ROOT"/tests/cuda/*.cc "$ROOT"/tests/cuda/*.h \
                  "$ROOT"/tests/engine/{ops,loader,workspace,graph_policy}_test.cc | tr -d '"' | sort -u); do
    [[ -d "$ROOT/tests/engine/data/$name" ]] && cp -r "$ROOT/tests/engine/data/$name" "$B/tests/data/source/tests/engine/data/"
  done
fi
mkdir -p "$B/tests/data/shared/models/golden"
for golden in "$SHARED"/models/golden/*/; do
  [[ -d "$golden" ]] || continue
  (( $(du -sk "$golden" | cut -f1) <= 2048 )) && cp -r "$golden" "$B/tests/data/shared/models/golden/"
done
cat > "$B/tests/run.sh" <<'EOF'
#!/usr/bin/env bash
# Runs one of the bundle's test binaries against the bundle's data: tests/run.sh TEST [ARGS...]
# (a lean bundle has no tests/engine/data: then STAMEN_SOURCE_DIR and STAMEN_ENGINE_TEST_DATA
# are the caller's, e.g. a checkout's).
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
test=${1:?usage: tests/run.sh TEST [ARGS...] (TEST: $(ls "$here/bin" | tr '\n' ' '))}
shift
export STAMEN_SHARED_DIR="$here/data/shared"
if [[ -d "$here/data/source/tests/engine/data" ]]; then
  export STAMEN_SOURCE_DIR="$here/data/source"
  export STAMEN_ENGINE_TEST_DATA="$here/data/source/tests/engine/data"
fi
exec "$here/bin/$test" "$@"
EOF
chmod +x "$B/tests/run.sh"
{
  echo "stamen bundle: $(git -C "$ROOT" rev-parse --short HEAD 2> /dev/null || echo unknown) $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "build: $BUILD"
  echo "lean: $LEAN (tests/engine/data $($LEAN && echo "left to the checkout" || echo "carried"))"
  echo "libraries: $(ls "$B/lib" | grep -c '\.so')"
} > "$B/BUNDLE.txt"

mkdir -p "$(dirname "$OUTPUT")"
tar -C "$work" -cf - stamen-bundle | xz -T1 -6 > "$OUTPUT"
size=$(stat -c %s "$OUTPUT")
echo "pack.sh: $OUTPUT: $(( size / 1024 )) KiB ($(du -sh "$B" | cut -f1) unpacked, ${#elfs[@]} executables, ${#copied[@]} libraries)"
if (( size > LIMIT_MIB * 1024 * 1024 )); then
  echo "pack.sh: the bundle is over ${LIMIT_MIB} MiB" >&2
  exit 1
fi
