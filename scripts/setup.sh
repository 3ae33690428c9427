#!/usr/bin/env bash
# Installs every Debian and PyPI dependency of the project on Debian 12 (run as root).
# Idempotent: a machine that already has everything touches neither apt nor pip.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# Debian packages the project builds, tests and fuzzes with. Add new dependencies here
# (e.g. libgrpc++-dev protobuf-compiler-grpc libboost-dev libdnnl-dev) and nowhere else.
DEBIAN_PACKAGES=(
  # toolchain
  build-essential g++ cmake ninja-build ccache pkg-config git
  # Python for the reference virtualenv
  python3 python3-venv
  # tests and micro-benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # reference tokenizer (C++ API and spm_* tools)
  libsentencepiece-dev sentencepiece
  # libraries the code links
  libsimdjson-dev libcli11-dev libspdlog-dev libfmt-dev
  libdnnl-dev  # oneDNN: the CPU GEMM of src/engine
  # oneDNN's CMake config (dnnl-config.cmake) calls find_package(OpenCL REQUIRED), but
  # libdnnl-dev only recommends these and we install without recommends.
  ocl-icd-opencl-dev opencl-headers
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc  # worker gRPC
  libboost-dev  # Boost.Beast/Asio: the HTTP server
  wrk  # HTTP load generator of the gateway benchmark and soak test
  gnuplot-nox curl  # plots of the serving benchmarks (stamen bench report); readiness probes of scripts/bench.sh
  libcurl4-openssl-dev  # HTTPS downloads from the Hugging Face hub (src/hub)
  # tooling: callgrind, libFuzzer (fuzz preset)
  valgrind clang-14 libclang-rt-14-dev
  libomp-14-dev  # OpenMP for clang: the fuzz preset links the engine (find_package(OpenMP))
  # the GPU machine's bundle: bench/gpu/pack.sh sets RUNPATHs and compresses
  patchelf xz-utils
)

missing_packages() {
  local package status
  for package in "${DEBIAN_PACKAGES[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [[ "$status" == "install ok installed" ]] || echo "$package"
  done
}

mapfile -t missing < <(missing_packages)
if (( ${#missing[@]} > 0 )); then
  echo "setup: installing Debian packages: ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: need root to install packages" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python reference virtualenv, built with Debian's python3 (not a pyenv shim) when it exists
# so that CI and developer machines get the same interpreter.
PYTHON=/usr/bin/python3
[[ -x "$PYTHON" ]] || PYTHON=$(command -v python3)
REQUIREMENTS=requirements/test.txt
VENV=.venv
stamp_file="$VENV/.requirements.sha256"
wanted_stamp="$(sha256sum "$REQUIREMENTS" | cut -d' ' -f1) $("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"

if [[ ! -x "$VENV/bin/python" ]] || ! "$VENV/bin/python" -c 'pass' 2>/dev/null \
   || [[ "$(cat "$stamp_file" 2>/dev/null)" != "$wanted_stamp" ]]; then
  echo "setup: creating $VENV from $REQUIREMENTS"
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQUIREMENTS"
  echo "$wanted_stamp" > "$stamp_file"
fi
echo "setup: ok"
