#!/usr/bin/env bash
# Configures and builds one CMake preset (default: release) into build/<preset>, with ccache.
# Usage: scripts/build.sh [release|debug|fuzz] [extra cmake --build arguments...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

preset="${1:-release}"
shift || true

# One compiler cache per user, shared by every checkout of the project: a fresh clone on a
# machine that built stamen before (CI's clean clones, git worktrees) compiles only what
# changed. Paths below the checkout are hashed relative to it (CCACHE_BASEDIR) and the working
# directory is left out of the hash (CCACHE_NOHASHDIR), so two clones at different paths share
# entries; debug information then names files relative to the checkout. A machine that never
# built stamen starts cold (the cold and warm CI times are in docs/RELIABILITY.md).
export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/stamen/ccache}"
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-5G}"
# Two cores on CI: do not oversubscribe memory with more jobs than cores.
jobs="${STAMEN_BUILD_JOBS:-$(nproc)}"

# Configuring every time is cheap and picks up changed preset variables.
cmake --preset "$preset"
cmake --build --preset "$preset" --parallel "$jobs" "$@"
