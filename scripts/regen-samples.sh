#!/usr/bin/env bash
# Regenerates every trace in sample-traces/ with this build of spillscope.
# Usage: scripts/regen-samples.sh [path/to/spillscope]
set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:-target/debug/spillscope}
[ -x "$S" ] || cargo build --quiet
# The seed's experiment set-up: 32 MiB SRAM, 60 GB/s DDR, a residual CNN at a
# batch where peak activations are ~28 MB (ResNet-50, batch 3: 28.9 MB).
"$S" sim sample-traces/resnet50_b8.shapes.onnx --batch 3 --hw seed-npu \
  -o sample-traces/seed-resnet50-b3.json --force --format markdown > sample-traces/seed-resnet50-b3.md
# The same network on the 16 MiB edge NPU preset (sync DMA, LPDDR4): the bundled default.
"$S" sim sample-traces/resnet50_b8.shapes.onnx --batch 3 --hw edge-npu-16m \
  -o sample-traces/edge-resnet50-b3.json --force --format markdown > sample-traces/edge-resnet50-b3.md
# A 6+6-layer encoder-decoder (graph JSON) whose encoder output every decoder layer reads.
"$S" sim tests/data/encoder_decoder.json --hw seed-npu --capacity 1MiB \
  -o sample-traces/encdec-1mib.json --force --format markdown > sample-traces/encdec-1mib.md
