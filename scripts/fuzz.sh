#!/usr/bin/env bash
# Builds the fuzz preset (clang-14, libFuzzer, ASan+UBSan) and runs every fuzz target for
# a while on a working copy of its seed corpus; fails on any crash, leak, UB or hang.
# Usage: scripts/fuzz.sh [seconds-per-target] [target...]
# Reproduce a failure: build/fuzz/fuzz/<target> <artifact file>
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-30}"
shift || true
targets=("$@")
(( ${#targets[@]} > 0 )) || targets=(fuzz_sentencepiece_model fuzz_tokenizer_json fuzz_encode fuzz_safetensors
                                     fuzz_torch_file fuzz_model_config fuzz_http_bodies fuzz_grpc_request)

build_start=$SECONDS
scripts/build.sh fuzz --target "${targets[@]}"
echo "fuzz: built ${targets[*]} in $((SECONDS - build_start)) s"

export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
work=build/fuzz
failed=()
for target in "${targets[@]}"; do
  corpus="$work/corpus/$target"
  artifacts="$work/artifacts/$target"
  log="$work/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  # The committed seeds stay as they are; the working corpus grows across local runs.
  cp -n fuzz/corpus/"$target"/* "$corpus"/ 2>/dev/null || true
  options=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=30 -max_len=8192
           -artifact_prefix="$artifacts/" -print_final_stats=1)
  [[ -f "fuzz/$target.dict" ]] && options+=(-dict="fuzz/$target.dict")
  if "$work/fuzz/$target" "${options[@]}" "$corpus" >"$log" 2>&1; then
    runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    echo "fuzz: $target ok: $runs runs in ${seconds} s, corpus $(ls "$corpus" | wc -l) inputs"
  else
    echo "fuzz: $target FAILED; last lines of $log:"
    tail -n 60 "$log"
    echo "fuzz: reproducer(s): $(ls -d "$artifacts"/* 2>/dev/null | tr '\n' ' ')"
    failed+=("$target")
  fi
done

if (( ${#failed[@]} > 0 )); then
  echo "fuzz: FAILED: ${failed[*]}"
  exit 1
fi
echo "fuzz: all ${#targets[@]} targets ok"
