#!/usr/bin/env bash
# The simulator under a per-call cost profile against the real H100's footprint: `gpuscope serve`
# with defaults (--no-history, 1 s readings) and the bare NVML loop (bench/tools/bare_nvml_loop.cc,
# the real probes/floor.c's calls + GPM), each for DURATION seconds on the simulated driver charging
# what driver 580 charges (cost_profile h100-580). Prints CPU % of one core (utime+stime from /proc)
# beside the real figures (shared/reference/real-h100/README.md: 0.55 % and 0.53 %, one GPU) with the
# ratio, and the agent's NVML calls per reading by function (from the simulator's call counts).
# Third, the same seconds: bench/tools/nvitop_exporter_replay.py, nvitop-exporter's NVML calls replayed
# the way NVIDIA's Python binding makes them (real nvitop-exporter on the H100: 0.81 %); it is the calls
# and their Python, not the exporter (no Prometheus client, HTTP server or psutil host metrics: see the
# file). Skipped, with a message, where python3 is missing. Its calls per reading are printed too.
# Fourth, where NVITOP_PYTHONPATH names folders holding nvitop-exporter itself and what it imports
# (nvitop, nvitop_exporter, NVIDIA's pynvml, prometheus_client >= 0.19, psutil), the real exporter at
# --interval 1 on the same simulated driver, the same seconds, unscraped like the agent: CPU %, peak RSS
# and its calls per reading. Of those only psutil is a Debian package in a version that serves; the
# README ("The driver's cost, simulated") says how to lay the others out from their source. It is
# stopped with SIGINT, so that its atexit nvmlShutdown writes the call counts.
#
# Usage: bench/sim_cost_profile.sh [DURATION_SECONDS (default 120)]
# Env:   GPUSCOPE (default build/gpuscope), SIM_LIB (default build/sim/libnvidia-ml.so.1),
#        BARE (default build/bench/bare_nvml_loop), PROFILE (default h100-580; "none" is today's free
#        simulator), GPUS=8 runs scenarios/demo.yaml (8 H100s) instead of bench/h100_costs.yaml (1),
#        AGENT_ARGS (extra `serve` flags, e.g. "--counter-interval 0s": real 1.25 %), FIELDS=all
#        (a collectors file of every DCGM field gpuscope has) and HISTORY=1 (history on, in a temp dir):
#        both together are the real H100's "all 61 fields with history" run (0.76 %),
#        MIG=1 runs bench/h100_mig_costs.yaml (the same H100 in MIG mode with 7 1g.10gb instances: what
#        per-instance reading costs; no real figure to compare with), NVITOP_PYTHONPATH (above)
#
# The real agent figures were measured before the cost-based read schedule (the counters' and rarely
# changing gauges' cadence, violation times batched, process utilization in one call): they are the
# "before" beside the simulated "after", not a target to match.
#
# Builds nothing. Traffic goes to 127.0.0.1 only; the processes it starts are stopped by PID on any exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

duration=${1:-120}
binary=${GPUSCOPE:-build/gpuscope}
sim_lib=${SIM_LIB:-build/sim/libnvidia-ml.so.1}
bare=${BARE:-build/bench/bare_nvml_loop}
profile=${PROFILE:-h100-580}
gpus=${GPUS:-1}
case $gpus in
  1) scenario=bench/h100_costs.yaml
     [[ ${MIG:-} == 1 ]] && scenario=bench/h100_mig_costs.yaml ;;
  8) scenario=scenarios/demo.yaml ;;
  *) echo "sim_cost_profile: GPUS must be 1 or 8" >&2; exit 2 ;;
esac
# The real H100's figures (1 GPU, 1 s readings): gpuscope serve --no-history, and probes/floor.c with GPM.
real_agent=0.55
real_bare=0.53
real_replay=0.81
[[ ${AGENT_ARGS:-} == *"--counter-interval 0s"* ]] && real_agent=1.25
[[ ${FIELDS:-} == all && ${HISTORY:-} == 1 ]] && real_agent=0.76

[[ $duration =~ ^[0-9]+$ && $duration -gt 0 ]] || { echo "sim_cost_profile: DURATION_SECONDS must be a positive integer" >&2; exit 2; }
for f in "$binary" "$bare"; do [[ -x $f ]] || { echo "sim_cost_profile: no executable at $f (build it first)" >&2; exit 2; }; done
[[ -f $sim_lib ]] || { echo "sim_cost_profile: no simulated NVML at $sim_lib (build gpuscope_sim)" >&2; exit 2; }

hz=$(getconf CLK_TCK)
work=$(mktemp -d)
agent_pid=""
exporter_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  stop_by_pid "$agent_pid"
  stop_by_pid "$exporter_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

stat_fields() { sed 's/^.*) //' "/proc/$1/stat"; }
cpu_ticks() { stat_fields "$1" | awk '{print $12 + $13}'; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }

echo "scenario=$scenario gpus=$gpus profile=$profile duration=${duration}s CLK_TCK=$hz nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"

# 1. gpuscope serve with defaults; the simulator writes its call counts at the agent's nvmlShutdown.
: >"$work/agent.log"
extra=(--no-history)
[[ ${HISTORY:-} == 1 ]] && extra=(--data-dir "$work/data")
if [[ ${FIELDS:-} == all ]]; then
  "$binary" query --help-query-gpu | grep -o 'DCGM_FI_[A-Z0-9_]*' | sort -u | awk '{ print $1 ", gauge, all fields" }' >"$work/all.csv"
  extra+=(--collectors "$work/all.csv")
fi
# shellcheck disable=SC2086  # AGENT_ARGS is a list of flags
GPUSCOPE_SIM_LIB="$sim_lib" GPUSCOPE_SIM_COST_PROFILE="$profile" GPUSCOPE_SIM_CALL_COUNTS="$work/agent_calls.tsv" \
  "$binary" --simulate="$scenario" serve --listen 127.0.0.1:0 "${extra[@]}" ${AGENT_ARGS:-} 2>"$work/agent.log" >/dev/null &
agent_pid=$!
# bounded wait (30 s: the first reading pays the profile's slow calls)
listen_address "$work/agent.log" "$agent_pid" 300 >/dev/null || { echo "sim_cost_profile: the agent did not start" >&2; exit 1; }
sleep 2  # past the first reading and the discovery
t0=$(cpu_ticks "$agent_pid") u0=$(uptime_s)
sleep "$duration"
t1=$(cpu_ticks "$agent_pid") u1=$(uptime_s)
agent_hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$agent_pid/status")
total_ticks=$t1
stop_by_pid "$agent_pid" 50
agent_pid=""
[[ -s $work/agent_calls.tsv ]] || { echo "sim_cost_profile: the simulator wrote no call counts (did the agent shut NVML down?)" >&2; cat "$work/agent.log" >&2; exit 1; }
agent_pct=$(awk -v a="$t0" -v b="$t1" -v ua="$u0" -v ub="$u1" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz / (ub - ua) * 100 }')

# 2. The bare loop, the same seconds.
bare_line=$(GPUSCOPE_SIM_SCENARIO="$scenario" GPUSCOPE_SIM_COST_PROFILE="$profile" "$bare" "$duration" gpm "$sim_lib")
bare_pct=$(sed -n 's/.* \([0-9.]*\) % of one core.*/\1/p' <<<"$bare_line")

# 3. nvitop-exporter's NVML calls replayed in Python, the same seconds.
replay_line="" replay_pct=""
if command -v python3 >/dev/null 2>&1; then
  replay_line=$(GPUSCOPE_SIM_SCENARIO="$scenario" GPUSCOPE_SIM_COST_PROFILE="$profile" GPUSCOPE_SIM_CALL_COUNTS="$work/replay_calls.tsv" \
    python3 bench/tools/nvitop_exporter_replay.py "$duration" "$sim_lib")
  replay_pct=$(sed -n 's/.* \([0-9.]*\) % of one core.*/\1/p' <<<"$replay_line")
else
  echo "sim_cost_profile: python3 not found: skipping the nvitop-exporter replay" >&2
fi

# 4. nvitop-exporter itself, where NVITOP_PYTHONPATH lays it out, the same seconds.
exporter_pct="" exporter_hwm=""
if [[ -n ${NVITOP_PYTHONPATH:-} ]]; then
  : >"$work/exporter.log"
  # LD_LIBRARY_PATH: pynvml opens libnvidia-ml.so.1 by name, and finds the simulator's first.
  # env --default-signal: a background job of a script starts with SIGINT ignored, and Python keeps it so.
  GPUSCOPE_SIM_SCENARIO="$scenario" GPUSCOPE_SIM_COST_PROFILE="$profile" GPUSCOPE_SIM_CALL_COUNTS="$work/exporter_calls.tsv" \
    LD_LIBRARY_PATH="$(cd "$(dirname "$sim_lib")" && pwd)" PYTHONPATH="$NVITOP_PYTHONPATH" \
    env --default-signal=INT python3 -m nvitop_exporter --bind-address 127.0.0.1 --port 0 --interval 1 2>"$work/exporter.log" >/dev/null &
  exporter_pid=$!
  started=""
  for _ in $(seq 1 300); do  # bounded wait (30 s: imports and the first collection)
    grep -q 'Start the exporter' "$work/exporter.log" && { started=1; break; }
    kill -0 "$exporter_pid" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $started ]] || { echo "sim_cost_profile: nvitop-exporter did not start:" >&2; cat "$work/exporter.log" >&2; exit 1; }
  sleep 2  # past the first collection
  e0=$(cpu_ticks "$exporter_pid") v0=$(uptime_s)
  sleep "$duration"
  kill -0 "$exporter_pid" 2>/dev/null || { echo "sim_cost_profile: nvitop-exporter exited during the run:" >&2; cat "$work/exporter.log" >&2; exit 1; }
  e1=$(cpu_ticks "$exporter_pid") v1=$(uptime_s)
  exporter_hwm=$(awk '/^VmHWM/ { print $2 }' "/proc/$exporter_pid/status")
  kill -INT "$exporter_pid" 2>/dev/null || true  # KeyboardInterrupt: atexit's nvmlShutdown writes the counts
  for _ in $(seq 1 50); do kill -0 "$exporter_pid" 2>/dev/null || break; sleep 0.1; done
  stop_by_pid "$exporter_pid"
  exporter_pid=""
  exporter_pct=$(awk -v a="$e0" -v b="$e1" -v ua="$v0" -v ub="$v1" -v hz="$hz" 'BEGIN { printf "%.3f", (b - a) / hz / (ub - ua) * 100 }')
fi

# Simulated per GPU over the real 1-GPU figure (no real 8-GPU figure exists).
ratio() { awk -v s="$1" -v r="$2" -v g="$gpus" 'BEGIN { printf "%.2f", s / g / r }'; }
echo
echo "| process (${gpus} GPU, 1 s readings) | simulated, $profile | real H100 (1 GPU) | ratio per GPU |"
echo "| --- | --- | --- | --- |"
echo "| gpuscope serve ${extra[*]} ${AGENT_ARGS:-}(steady; real: before the cost-based schedule) | ${agent_pct} % | ${real_agent} % | $(ratio "$agent_pct" "$real_agent") |"
echo "| bare NVML loop + GPM (whole run) | ${bare_pct} % | ${real_bare} % | $(ratio "$bare_pct" "$real_bare") |"
replay_note=""
[[ ${MIG:-} == 1 ]] && replay_note="; its MIG devices not replayed"
[[ -n $replay_pct ]] &&
  echo "| nvitop-exporter's NVML calls replayed in Python (steady; no exporter around them${replay_note}) | ${replay_pct} % | ${real_replay} % | $(ratio "$replay_pct" "$real_replay") |"
[[ -n $exporter_pct ]] &&
  echo "| nvitop-exporter $(PYTHONPATH="$NVITOP_PYTHONPATH" python3 -c 'import nvitop_exporter; print(nvitop_exporter.__version__)' 2>/dev/null) itself, --interval 1 (steady, unscraped) | ${exporter_pct} % | ${real_replay} % | $(ratio "$exporter_pct" "$real_replay") |"
echo
echo "agent: $total_ticks CPU ticks since its start (startup included), peak RSS ${agent_hwm} KiB; $bare_line"
[[ -n $replay_line ]] && echo "$replay_line"
[[ -n $exporter_hwm ]] && echo "nvitop-exporter: peak RSS ${exporter_hwm} KiB"
echo
# Readings: every reading makes one nvmlDeviceGetUtilizationRates call per GPU.
readings=$(awk -F'\t' -v g="$gpus" '$1 == "nvmlDeviceGetUtilizationRates" { print $2 / g }' "$work/agent_calls.tsv")
echo "gpuscope serve's NVML calls per reading per GPU (${readings} readings; discovery's one-off calls included):"
sort -t$'\t' -k2,2nr "$work/agent_calls.tsv" |
  awk -F'\t' -v r="$readings" -v g="$gpus" '{ printf "  %-46s %8.2f\n", $1, $2 / r / g }'
if [[ -s $work/replay_calls.tsv ]]; then
  replay_readings=$(sed -n 's/.* readings \([0-9]*\),.*/\1/p' <<<"$replay_line")
  echo
  echo "the nvitop-exporter replay's NVML calls per reading per GPU (${replay_readings} readings; start-up's one-off calls included):"
  sort -t$'\t' -k2,2nr "$work/replay_calls.tsv" |
    awk -F'\t' -v r="$replay_readings" -v g="$gpus" '{ printf "  %-46s %8.2f\n", $1, $2 / r / g }'
fi
if [[ -s $work/exporter_calls.tsv ]]; then
  exporter_readings=$(awk -F'\t' -v g="$gpus" '$1 == "nvmlDeviceGetUtilizationRates" { print $2 / g }' "$work/exporter_calls.tsv")
  echo
  echo "nvitop-exporter's NVML calls per reading per GPU (${exporter_readings} readings; start-up's one-off calls included):"
  sort -t$'\t' -k2,2nr "$work/exporter_calls.tsv" |
    awk -F'\t' -v r="$exporter_readings" -v g="$gpus" '{ printf "  %-46s %8.2f\n", $1, $2 / r / g }'
fi
