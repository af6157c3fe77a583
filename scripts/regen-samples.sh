#!/usr/bin/env bash
# Regenerates every trace in sample-traces/ with this build of spillscope.
# Usage: scripts/regen-samples.sh [path/to/spillscope]
# The traces carry the per-op bound (`--ilp-time 0`: the exact program has a
# time limit, so its result could differ between machines); the .md tables
# beside them are the `sim` tables with the exact program's line.
set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:-target/debug/spillscope}
[ -x "$S" ] || cargo build --quiet
sample() { # NAME MODEL ARGS...
  local name=$1 model=$2
  shift 2
  "$S" sim "$model" "$@" -o "sample-traces/$name.json" --force --ilp-time 0 --format json > /dev/null
  "$S" sim "$model" "$@" --format markdown > "sample-traces/$name.md"
}
# The seed's experiment set-up: 32 MiB SRAM, 60 GB/s DDR, a residual CNN at a
# batch where peak activations are ~28 MB (ResNet-50, batch 3: 28.9 MB).
sample seed-resnet50-b3 sample-traces/resnet50_b8.shapes.onnx --batch 3 --hw seed-npu
# The same network on the 16 MiB edge NPU preset (sync DMA, LPDDR4): the bundled default.
sample edge-resnet50-b3 sample-traces/resnet50_b8.shapes.onnx --batch 3 --hw edge-npu-16m
# A 6+6-layer encoder-decoder (graph JSON) whose encoder output every decoder layer reads.
sample encdec-1mib tests/data/encoder_decoder.json --hw seed-npu --capacity 1MiB
