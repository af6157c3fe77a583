#!/usr/bin/env bash
# Measures docs/vela.md's "Ethos-U: spillscope next to Vela" table: for each
# shared TFLite model at 256 KiB and 1 MiB of SRAM, Vela's DRAM feature-map
# bytes (its `_nocascade` and cascaded plans, raw bytes of the feature maps
# both graphs have, + those of Vela's own scratch and split tensors),
# spillscope's four policies and its lower bound at the same SRAM on the
# ethos-u65-high-end profile, and the spilled-set agreement of Vela's
# `_nocascade` plan with belady. Usage: scripts/vela-table.sh [SPILLSCOPE]
set -euo pipefail
bin=${1:-target/release/spillscope}
data=${VELA_DATA:-../shared/data/vela}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mib() { awk -v b="$1" 'BEGIN { if (b == 0) print "0"; else if (b < 1048576) printf "%.1f KiB", b / 1024; else printf "%.2f MiB", b / 1048576 }'; }
echo "| model | SRAM | Vela | Vela cascaded | lru | belady | lifetime | planned | bound | spilled set: Vela vs belady | Vela vs planned |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
for m in ds_cnn_l kwt_tiny mobilenet_v2 mobilenet_v3_small; do
  for cap in 256k 1024k; do
    kib=${cap%k}
    "$bin" sim "$data/$m/${m}_int8.tflite" --hw ethos-u65-high-end --capacity "${kib}KiB" \
      --policy lru,belady,lifetime,planned -o "$tmp/s.json" --force >/dev/null
    row="| $m | ${kib} KiB"
    nc=$("$bin" diff "$data/$m/u65_dedicated_perf_${cap}_nocascade" "$tmp/s.belady.json" --format json)
    ca=$("$bin" diff "$data/$m/u65_dedicated_perf_${cap}" "$tmp/s.belady.json" --format json)
    # Vela: the feature maps both graphs have, then (+) its own tensors.
    vela_cell() {
      local same own
      same=$(jq .vela.vela_matched_bytes <<<"$1")
      own=$(( $(jq .vela.vela_dram_bytes <<<"$1") - same ))
      if [ "$own" -gt 0 ]; then echo "$(mib "$same") (+$(mib "$own"))"; else mib "$same"; fi
    }
    row+=" | $(vela_cell "$nc") | $(vela_cell "$ca")"
    for p in lru belady lifetime planned; do
      row+=" | $(mib "$(jq .vela.sim_dram_bytes <<<"$("$bin" diff "$data/$m/u65_dedicated_perf_${cap}_nocascade" "$tmp/s.$p.json" --format json)")")"
    done
    row+=" | $(mib "$(jq .summary.lower_bound_traffic_bytes "$tmp/s.belady.json")") ($(jq -r .summary.lower_bound_method "$tmp/s.belady.json"))"
    for p in belady planned; do
      row+=" | $("$bin" diff "$data/$m/u65_dedicated_perf_${cap}_nocascade" "$tmp/s.$p.json" --format json |
        jq -r --arg p "$p" '.vela | "\(.agreement_pct * 10 | round / 10)% of \(.matched) (\(.both_spilled | length) both in DRAM, \(.only_vela_spilled | length) only Vela, \(.only_sim_spilled | length) only \($p))"')"
    done
    row+=" |"
    echo "$row"
  done
done
