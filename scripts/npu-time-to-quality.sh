#!/usr/bin/env bash
# Measures docs/npu.md's time-to-quality table: generated cases of the
# benchmark's Matmul family at about 2k, 8k, 16k and 32k nodes (the 32k one
# is the 16x16x16 tiling, the size of the benchmark's held-out Matmul), and
# FlashAttention_Case0 replicated four times (6,864 nodes, near the held-out
# 6,952); for each, the lowest extra traffic `npu solve --goal traffic`
# reaches and the peak `npu schedule` reaches after 10 s and 60 s of search
# (plus the heuristics, timed in the wall column), every written solution
# passing `npu check`. Usage: scripts/npu-time-to-quality.sh [SPILLSCOPE] [TIMES...]
set -euo pipefail
bin=${1:-target/release/spillscope}
shift || true
times=${*:-10s 60s}
data=${NPU_DATA:-../shared/data/npu}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bin" npu gen matmul 8 8 4 -o "$tmp/Matmul_8x8x4.json" >/dev/null
"$bin" npu gen matmul 8 8 16 -o "$tmp/Matmul_8x8x16.json" >/dev/null
"$bin" npu gen matmul 16 16 8 -o "$tmp/Matmul_16x16x8.json" >/dev/null
"$bin" npu gen matmul 16 16 16 -o "$tmp/Matmul_16x16x16.json" >/dev/null
cases="$tmp/Matmul_8x8x4.json $tmp/Matmul_8x8x16.json $tmp/Matmul_16x16x8.json $tmp/Matmul_16x16x16.json"
if [ -f "$data/FlashAttention_Case0.json" ]; then
  "$bin" npu gen replicate "$data/FlashAttention_Case0.json" 4 -o "$tmp/FlashAttention_x4.json" >/dev/null
  cases="$cases $tmp/FlashAttention_x4.json"
fi
echo "| case | nodes | search | extra traffic (heuristics) | extra traffic | wall | peak (heuristics) | peak | wall |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|"
for c in $cases; do
  name=$(basename "$c" .json)
  nodes=$(jq '.Nodes | length' "$c")
  h_traffic=$("$bin" npu solve "$c" --goal traffic --out "$tmp/h" --force --format json | jq .lowest_traffic.extra_traffic)
  h_peak=$("$bin" npu schedule "$c" --format json | jq .peak_residency)
  for t in $times; do
    s=$(date +%s.%N)
    traffic=$("$bin" npu solve "$c" --time "$t" --goal traffic --out "$tmp/s" --force --format json | jq .lowest_traffic.extra_traffic)
    e=$(date +%s.%N)
    checked=$("$bin" npu check "$c" "$tmp/s" --format json | jq .metrics.extra_traffic)
    if [ "$checked" != "$traffic" ]; then
      echo "$name: npu check says $checked, solve said $traffic" >&2
      exit 1
    fi
    wall_t=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.0f s", b - a }')
    s=$(date +%s.%N)
    peak=$("$bin" npu schedule "$c" --time "$t" --format json | jq .peak_residency)
    e=$(date +%s.%N)
    wall_p=$(awk -v a="$s" -v b="$e" 'BEGIN { printf "%.0f s", b - a }')
    echo "| $name | $nodes | $t | $h_traffic | $traffic | $wall_t | $h_peak | $peak | $wall_p |"
  done
done
