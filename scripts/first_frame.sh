#!/usr/bin/env bash
# Times `spillscope view TRACE` to its first frame in tmux (120x40), the way
# a person sees it, and reads the viewer's peak and current resident memory
# once its background analyses have settled. Runs it N times (default 5)
# and prints each run and the median first frame.
#
#   scripts/first_frame.sh [-n N] [-s SETTLE_SECONDS] TRACE [VIEW FLAGS...]
#
# With the default cache directory the first run reads the JSON and keeps
# the trace's columns; the later ones open from the cache. Pass --no-cache
# to time the JSON every run, or set SPILLSCOPE_CACHE_DIR to a fresh
# directory to start cold. Needs tmux and a release build
# (target/release/spillscope, or SPILLSCOPE_BIN).
set -euo pipefail
runs=5
settle=8
while getopts "n:s:" o; do
  case $o in
    n) runs=$OPTARG ;;
    s) settle=$OPTARG ;;
    *) echo "usage: $0 [-n N] [-s SETTLE] TRACE [FLAGS...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-n N] [-s SETTLE] TRACE [FLAGS...]" >&2; exit 2; }
trace=$1
shift
bin=${SPILLSCOPE_BIN:-$(dirname "$0")/../target/release/spillscope}
command -v tmux >/dev/null || { echo "tmux is not installed" >&2; exit 2; }
times=()
for i in $(seq "$runs"); do
  # A server of its own per run: a new session on a server still shutting
  # down from the run before can fail.
  sock="first-frame-$$-$i"
  trap 'tmux -L "$sock" kill-server 2>/dev/null || true' EXIT
  start=$(date +%s%N)
  tmux -L "$sock" new-session -d -x 120 -y 40 "exec $bin view $(printf '%q' "$trace") $*"
  until tmux -L "$sock" capture-pane -p -t 0 2>/dev/null | grep -q latency; do
    sleep 0.01
    tmux -L "$sock" has-session 2>/dev/null || { echo "the viewer exited" >&2; exit 1; }
  done
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  pid=$(tmux -L "$sock" display-message -p -t 0 '#{pane_pid}')
  sleep "$settle"
  mem=$(grep -E 'VmHWM|VmRSS' "/proc/$pid/status" | awk '{printf "%s %d MB  ", $1, $2/1024}')
  echo "run $i: first frame ${ms} ms; after ${settle} s: $mem"
  times+=("$ms")
  tmux -L "$sock" kill-server
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "median first frame: ${median} ms over $runs runs"
