#!/usr/bin/env bash
# Configures and builds one CMake preset (default: release) into build/<preset>, with ccache.
# Usage: scripts/build.sh [release|debug|fuzz] [extra cmake --build arguments...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

preset="${1:-release}"
shift || true

# The cache lives in the repo's ignored .cache/: a fresh CI clone starts cold, local reruns are fast.
export CCACHE_DIR="${CCACHE_DIR:-$PWD/.cache/ccache}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-2G}"
# Two cores on CI: do not oversubscribe memory with more jobs than cores.
jobs="${STAMEN_BUILD_JOBS:-$(nproc)}"

# Configuring every time is cheap and picks up changed preset variables.
cmake --preset "$preset"
cmake --build --preset "$preset" --parallel "$jobs" "$@"
