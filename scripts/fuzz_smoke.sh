#!/usr/bin/env bash
# A short fuzz run of every fuzz target (fuzz/): a fixed number of
# executions each, seeded from fuzz/seeds (and fuzz/corpus when present,
# copied so the run adds nothing to the repository), with a fixed seed.
# Prints executions and crashes per target; exits 1 on any crash. Skips,
# saying why, where there is no nightly toolchain or cargo-fuzz cannot be
# installed. FUZZ_RUNS (default 10000) sets the executions per target.
set -uo pipefail
cd "$(dirname "$0")/../fuzz"
RUNS=${FUZZ_RUNS:-10000}
TARGETS=${FUZZ_TARGETS:-"graph_json trace_json trace_columns trace_import npu_case toml_configs executorch_program etdump"}

if ! command -v rustup >/dev/null 2>&1 || ! rustup toolchain list | grep -q '^nightly'; then
  echo "fuzz smoke: skipped (no nightly toolchain; rustup toolchain install nightly enables it)"
  exit 0
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz smoke: installing cargo-fuzz"
  if ! cargo install cargo-fuzz --locked --quiet; then
    echo "fuzz smoke: skipped (cargo-fuzz could not be installed)"
    exit 0
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "fuzz smoke: building $(echo $TARGETS | wc -w) targets"
# shellcheck disable=SC2086
if ! cargo +nightly fuzz build >"$work/build.log" 2>&1; then
  tail -20 "$work/build.log"
  echo "fuzz smoke: the fuzz targets do not build" >&2
  exit 1
fi
crashed=0
for t in $TARGETS; do
  mkdir -p "$work/$t"
  cp -r seeds/"$t"/. "$work/$t"/ 2>/dev/null || true
  [ -d corpus/"$t" ] && cp -r corpus/"$t"/. "$work/$t"/
  start=$(date +%s)
  cargo +nightly fuzz run "$t" "$work/$t" -- -runs="$RUNS" -seed=1 \
    -artifact_prefix="$work/" >"$work/$t.log" 2>&1
  rc=$?
  execs=$(grep -oE 'Done [0-9]+ runs' "$work/$t.log" | grep -oE '[0-9]+' || echo 0)
  secs=$(( $(date +%s) - start ))
  if [ $rc -ne 0 ]; then
    crashed=$((crashed + 1))
    echo "fuzz smoke: $t: CRASH after ${execs:-?} executions (${secs} s):"
    grep -E 'panicked|ERROR|SUMMARY|Test unit written' "$work/$t.log" | head -8
    mkdir -p artifacts/"$t" && cp "$work"/crash-* artifacts/"$t"/ 2>/dev/null || true
  else
    echo "fuzz smoke: $t: $execs executions, 0 crashes (${secs} s)"
  fi
done
[ $crashed -eq 0 ] || { echo "fuzz smoke: $crashed target(s) crashed (inputs in fuzz/artifacts/)" >&2; exit 1; }
