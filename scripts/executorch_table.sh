#!/usr/bin/env bash
# Prints the README's ExecuTorch tables: ExecuTorch's greedy arena, the
# liveness peak and each policy's zero-traffic capacity per model; and at
# each BankedGreedy SRAM size, BankedGreedy's DRAM traffic beside each
# spillscope policy's and the bound. Usage:
#   scripts/executorch_table.sh [DATA [arenas|banked]]
# DATA defaults to ../shared/data/executorch; one table, or both.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
data=${1:-$here/../shared/data/executorch}
cd "$here"
cargo run --quiet --release --no-default-features --example executorch_table -- "$data" "${2:-}"
