#!/usr/bin/env bash
# Runs a libFuzzer target for a bounded time over a fresh copy of its seed corpus.
# Usage: run_fuzzer.sh FUZZER CORPUS_DIR [SEEDS_DIR]   (KVOL_FUZZ_SECONDS, default 30)
# SEEDS_DIR adds its YAML manifests (and those under original/) to the corpus.
# A crash leaves its input printed in base64, to reproduce with: FUZZER file
set -uo pipefail
fuzzer=$1
corpus=$2
seeds=${3:-}
seconds=${KVOL_FUZZ_SECONDS:-30}

if [ ! -x "$fuzzer" ]; then
  echo "fuzzer $fuzzer was not built" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/artifacts"
cp "$corpus"/* "$work/corpus/"
if [ -n "$seeds" ]; then
  for f in "$seeds"/*.yml "$seeds"/original/*.yml; do cp "$f" "$work/corpus/$(basename "$(dirname "$f")")-$(basename "$f")"; done
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
"$fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
  -artifact_prefix="$work/artifacts/" -print_final_stats=1 "$work/corpus" 2>"$work/log"
rc=$?
tail -n 25 "$work/log"
if [ "$rc" != 0 ]; then
  for a in "$work"/artifacts/*; do
    [ -f "$a" ] || continue
    echo "crashing input $(basename "$a") (base64):"
    base64 -w0 "$a"; echo
  done
  exit "$rc"
fi
runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
echo "fuzzer: ${runs:-?} inputs in ${seconds}s, no crash, leak or sanitizer report"
