#!/usr/bin/env bash
# Peak RSS and wall time of `spillscope sim` on generated transformer-like
# graphs of growing size: memory should grow linearly with the op count.
# Usage: scripts/sim_memory.sh [POLICY] (default lru). Needs GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
policy="${1:-lru}"
cargo build --release --no-default-features -q
bin=target/release/spillscope
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '%8s %12s %10s %12s\n' ops peak_rss_kib wall_s rss_per_op_b
for n in 25000 50000 100000 200000; do
  "$bin" gen graph --kind transformer --ops "$n" -o "$dir/g.json" --force >/dev/null
  /usr/bin/time -f '%M %e' -o "$dir/t" "$bin" sim "$dir/g.json" --policy "$policy" --format json >/dev/null
  read -r kib secs <"$dir/t"
  printf '%8d %12d %10s %12d\n' "$n" "$kib" "$secs" $((kib * 1024 / n))
done
