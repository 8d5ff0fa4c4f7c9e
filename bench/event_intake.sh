#!/usr/bin/env bash
# Training-event intake of `gpuscope serve` (8 simulated H100s, scenarios/demo.yaml): for each rate,
# bench/tools' event_load sends step events to the agent's Unix socket for SECONDS and the agent's
# gpuscope_events_received_total says how many it took; "lost" is what the sender's kernel refused
# (the agent's queue full) plus what was sent but never counted. Goal: none lost at >= 100k events/s
# on 2 cores. Then the agent's CPU at a training job's rate, 10 steps/s x 8 ranks, beside the same
# agent without events.
#
# Usage: bench/event_intake.sh [SECONDS (default 5)] [RATES (default "25000 50000 100000 200000 400000")]
#        [BINARY (default build/gpuscope)] [EVENT_LOAD (default build/bench/event_load)]
# Builds nothing. Traffic stays on this machine; the agent it starts is killed by PID on any exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=${1:-5}
rates=${2:-"25000 50000 100000 200000 400000"}
binary=${3:-build/gpuscope}
load=${4:-build/bench/event_load}
[[ -x $binary ]] || { echo "event_intake: no executable at $binary (build it first)" >&2; exit 2; }
[[ -x $load ]] || { echo "event_intake: no executable at $load (ninja -C build event_load)" >&2; exit 2; }

hz=$(getconf CLK_TCK)
work=$(mktemp -d /tmp/gpuscope-intake-XXXXXX)
agent_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  stop_by_pid "$agent_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

start_agent() {
  : >"$work/agent.log"
  "$binary" --simulate=scenarios/demo.yaml serve --listen 127.0.0.1:0 --data-dir "$work/history-$1" \
    --events-socket "$work/events.sock" 2>"$work/agent.log" >/dev/null &
  agent_pid=$!
  local address
  address=$(listen_address "$work/agent.log" "$agent_pid" 100) || { echo "event_intake: the agent did not start" >&2; exit 1; }
  port=${address##*:}
}

received() {
  curl -sS --max-time 5 "http://127.0.0.1:$port/metrics" |
    awk '/^gpuscope_events_received_total\{transport="socket"\}/ {print $2}'
}

start_agent rates
echo "rate/s   sent      refused   counted   lost      sent >1ms late (most late)"
for rate in $rates; do
  before=$(received)
  out=$("$load" "$work/events.sock" "$rate" "$seconds" 8)
  sleep 0.5  # what is queued is read
  after=$(received)
  sent=$(sed 's/.*sent=\([0-9]*\).*/\1/' <<<"$out")
  refused=$(sed 's/.*refused=\([0-9]*\).*/\1/' <<<"$out")
  counted=$((after - before))
  late=$(sed 's/.*late_over_1ms=\([0-9]*\).*/\1/' <<<"$out")
  most_late=$(sed 's/.*most_late_ms=\([0-9.]*\).*/\1/' <<<"$out")
  printf '%-8s %-9s %-9s %-9s %-9s %s (%s ms)\n' "$rate" "$sent" "$refused" "$counted" "$((refused + sent - counted))" "$late" "$most_late"
done
stop_by_pid "$agent_pid"
agent_pid=""

# CPU of a training job's rate (10 steps/s x 8 ranks) against none, 60 s each.
for case in ${CPU_CASES-none job}; do
  start_agent "$case"
  sleep 2
  t0=$(cpu_ticks "$agent_pid")
  if [[ $case == job ]]; then
    "$load" "$work/events.sock" 80 60 8 >/dev/null
  else
    sleep 60
  fi
  t1=$(cpu_ticks "$agent_pid")
  awk -v t="$((t1 - t0))" -v hz="$hz" -v c="$case" 'BEGIN {printf "agent CPU, %s: %.2f %% of one core\n", c == "job" ? "80 events/s (10 steps/s x 8 ranks)" : "no events", 100 * t / hz / 60}'
  stop_by_pid "$agent_pid"
  agent_pid=""
done
