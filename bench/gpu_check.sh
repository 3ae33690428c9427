#!/usr/bin/env bash
# The prepared GPU check of the CUDA backend (issue 6): see bench/gpu/run.sh.
exec "$(dirname "${BASH_SOURCE[0]}")/gpu/run.sh" "$@"
