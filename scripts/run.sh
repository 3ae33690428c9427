#!/usr/bin/env bash
# The project's run command: installs dependencies, builds the release preset and runs the
# demo. For now the demo tokenizes a small sample with the bundled XLM-R tokenizer (later:
# `stamen serve`). Extra arguments go to `stamen tokenize` (e.g. --pieces).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/setup.sh >&2
scripts/build.sh release >&2

sample=$'Hello world! This is stamen, a text-embedding server.\nBonjour le monde, ceci est un test.\nDas ist ein kleines Beispiel auf Deutsch.\nEsto es un ejemplo en español.'
echo "sample text:"
printf '%s\n' "$sample"
echo "token ids (models/demo/tokenizer.json, one line per input line):"
printf '%s\n' "$sample" | build/release/apps/stamen tokenize --model models/demo/tokenizer.json "$@"
