#!/usr/bin/env bash
# `gpuscope top`'s CPU: % of one core (utime+stime from /proc/PID/stat) at the default 1 s refresh on
# 8 simulated H100s (scenarios/demo.yaml, the live simulated clock), drawn in a detached tmux window of
# 200x50 (the full layout: bars and sparklines for every GPU). The first readings (startup, NVML
# discovery) are left out: the figure is what top costs while it runs.
#
# Usage: bench/top_cpu.sh [DURATION_SECONDS (default 60)] [BINARY (default build/gpuscope)]
# Env:   SIZE (WIDTHxHEIGHT, default 200x50), INTERVAL (top --interval, default 1s)
#
# Builds nothing. Its tmux server has a socket of its own and is killed on any exit.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

duration=${1:-60}
binary=${2:-build/gpuscope}
size=${SIZE:-200x50}
interval=${INTERVAL:-1s}
[[ $duration =~ ^[0-9]+$ && $duration -gt 0 ]] || { echo "top_cpu: DURATION_SECONDS must be a positive integer" >&2; exit 2; }
[[ -x $binary ]] || { echo "top_cpu: no executable at $binary (build it first)" >&2; exit 2; }
command -v tmux >/dev/null || { echo "top_cpu: tmux is not installed (scripts/setup)" >&2; exit 2; }

dir=$(mktemp -d)
sock="$dir/sock"
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$dir"' EXIT

# exec: the window's process is gpuscope itself, so its pid is the pane's.
tmux -u -S "$sock" -f /dev/null new-session -d -s top -x "${size%x*}" -y "${size#*x}" \
  "exec env LANG=C.UTF-8 $(printf '%q' "$root/$binary") --simulate=scenarios/demo.yaml top --interval $interval"
pid=$(tmux -S "$sock" display-message -p -t top '#{pane_pid}')
[[ $(cat "/proc/$pid/comm" 2>/dev/null) == gpuscope ]] || { echo "top_cpu: gpuscope top did not start" >&2; exit 1; }
sleep 3  # discovery and the first readings

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
t0=$(ticks "$pid"); s0=$(date +%s.%N)
sleep "$duration"
t1=$(ticks "$pid"); s1=$(date +%s.%N)
rss=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status")
tmux -S "$sock" capture-pane -p -t top | head -3
awk -v t="$((t1 - t0))" -v hz="$hz" -v a="$s0" -v b="$s1" -v rss="$rss" -v size="$size" -v iv="$interval" 'BEGIN {
  secs = b - a; cpu = t / hz
  printf "top_cpu: %.2f s CPU over %.1f s = %.2f %% of one core (%s, --interval %s, 8 GPUs); peak RSS %.1f MiB\n",
         cpu, secs, 100 * cpu / secs, size, iv, rss / 1024
}'
