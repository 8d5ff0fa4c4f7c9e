#!/usr/bin/env bash
# Agent footprint: CPU (% of one core) and RSS of `gpuscope serve` on 8 simulated H100s
# (scenarios/demo.yaml) at the default 1 s interval, scraped every 15 s like Prometheus would.
# Goals: <= 0.1 % of one core, peak RSS (VmHWM) <= 16 MiB.
#
# Usage: bench/agent_footprint.sh [DURATION_SECONDS (default 600)] [BINARY (default build/gpuscope)]
# Env:   SCRAPE_EVERY (seconds, default 15), INTERVAL (agent --interval, default 1s),
#        SCRAPE_GZIP=1 sends Accept-Encoding: gzip as Prometheus does (each such scrape costs the
#        agent a deflate of the ~114 KB body; the default is a plain curl scrape),
#        RULES=FILE evaluates that rule file too (e.g. rules/gpu.rules.yml; the rule groups' own
#        evaluation times are printed from /metrics at the end),
#        DIAGNOSIS=0 runs the agent with --no-diagnosis (the diagnosis loop's own cost is the difference;
#        its evaluation count and latest duration are printed from /metrics at the end)
#
# Builds nothing. Traffic goes to 127.0.0.1 only; the agent it starts is killed by PID on any exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"  # --simulate=scenarios/demo.yaml and the default binary are repo-relative

duration=${1:-600}
binary=${2:-build/gpuscope}
scrape_every=${SCRAPE_EVERY:-15}
interval=${INTERVAL:-1s}
scenario=scenarios/demo.yaml

[[ $duration =~ ^[0-9]+$ && $duration -gt 0 ]] || { echo "agent_footprint: DURATION_SECONDS must be a positive integer" >&2; exit 2; }
[[ -x $binary ]] || { echo "agent_footprint: no executable at $binary (build it first)" >&2; exit 2; }
command -v curl >/dev/null || { echo "agent_footprint: curl not found" >&2; exit 2; }

hz=$(getconf CLK_TCK)
curl_args=(-sS --max-time 5 -o /dev/null -w '%{http_code}')
[[ ${SCRAPE_GZIP:-0} == 1 ]] && curl_args+=(-H 'Accept-Encoding: gzip')
work=$(mktemp -d)
agent_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  # Kill exactly the agent we started (never by name), then reap it.
  stop_by_pid "$agent_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # route signals through the EXIT trap

# Fields of /proc/PID/stat after the ")" that closes comm (comm may contain spaces):
# $1 is field 3 (state), so utime (14) = $12, stime (15) = $13, starttime (22) = $20.
stat_fields() { sed 's/^.*) //' "/proc/$1/stat"; }
cpu_ticks() { stat_fields "$1" | awk '{print $12 + $13}'; }
uptime_s() { cut -d' ' -f1 /proc/uptime; }
status_kib() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }

: >"$work/agent.log"  # exists before the wait loop reads it, however slowly the agent starts
rule_args=()
[[ -n ${RULES:-} ]] && rule_args=(--rules "$RULES")
[[ ${DIAGNOSIS:-1} == 0 ]] && rule_args+=(--no-diagnosis)
"$binary" --simulate="$scenario" serve --listen 127.0.0.1:0 --interval "$interval" --data-dir "$work/history" \
  "${rule_args[@]}" 2>"$work/agent.log" >/dev/null &
agent_pid=$!

address=$(listen_address "$work/agent.log" "$agent_pid" 100) || { echo "agent_footprint: no agent" >&2; exit 1; }
case $address in 127.0.0.1:*) ;; *) echo "agent_footprint: unexpected address $address" >&2; exit 1 ;; esac
url="http://$address/metrics"

# Startup (dlopen, NVML init, first reading) is a one-off cost; record it separately from the steady state.
ticks_ready=$(cpu_ticks "$agent_pid")
up_ready=$(uptime_s)
echo "agent pid=$agent_pid url=$url interval=$interval duration=${duration}s scrape_every=${scrape_every}s gzip=${SCRAPE_GZIP:-0} CLK_TCK=$hz"
echo "host: nproc=$(nproc) loadavg(start)=$(cut -d' ' -f1-3 /proc/loadavg)"

scrapes=0 failed=0
end=$((SECONDS + duration))
while (( SECONDS < end )); do
  code=$(curl "${curl_args[@]}" "$url" 2>>"$work/curl.err" || true)
  scrapes=$((scrapes + 1))
  [[ $code == 200 ]] || { failed=$((failed + 1)); echo "scrape $scrapes: HTTP ${code:-none}" >&2; }
  kill -0 "$agent_pid" 2>/dev/null || { echo "agent_footprint: agent died:" >&2; cat "$work/agent.log" >&2; exit 1; }
  left=$((end - SECONDS))
  (( left > 0 )) || break
  sleep $(( left < scrape_every ? left : scrape_every ))
done

# Read everything at the end, while the agent is still running.
read -r ticks starttime < <(stat_fields "$agent_pid" | awk '{print $12 + $13, $20}')
utime_stime=$(stat_fields "$agent_pid" | awk '{print "utime=" $12 " stime=" $13}')
up_end=$(uptime_s)
hwm=$(status_kib "$agent_pid" VmHWM)
rss=$(status_kib "$agent_pid" VmRSS)
threads=$(status_kib "$agent_pid" Threads)
# Per-thread CPU from /proc/PID/task/TID/schedstat (nanoseconds on CPU, far finer than the 10 ms
# ticks of stat), to see which thread (main, sampler, NVML event watcher, HTTP) the time goes to.
# Threads that already exited are missing here but are included in the stat totals above.
per_thread=$(for t in /proc/"$agent_pid"/task/*; do
  printf '%s/%s=%.1fms ' "$(cat "$t/comm")" "${t##*/}" "$(awk '{print $1 / 1e6}' "$t/schedstat")"
done)
sched_ns=$(cat /proc/"$agent_pid"/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}')

awk -v t="$ticks" -v hz="$hz" -v st="$starttime" -v up="$up_end" \
    -v tr="$ticks_ready" -v ur="$up_ready" -v hwm="$hwm" -v rss="$rss" -v uts="$utime_stime" -v ns="$sched_ns" '
  BEGIN {
    wall = up - st / hz; cpu = t / hz; pct = 100 * cpu / wall
    swall = up - ur; scpu = (t - tr) / hz; spct = 100 * scpu / swall
    printf "CPU total:        %.4f %% of one core (%.2f s CPU [%s ticks] over %.1f s wall since exec)\n", pct, cpu, uts, wall
    printf "CPU steady state: %.4f %% of one core (%.2f s CPU over %.1f s after the listening line; startup %.2f s CPU)\n", spct, scpu, swall, tr / hz
    printf "CPU (schedstat):  %.4f %% of one core (%.3f s on CPU, live threads, ns resolution)\n", 100 * ns / 1e9 / wall, ns / 1e9
    printf "Peak RSS (VmHWM): %.2f MiB (%d KiB)\n", hwm / 1024, hwm
    printf "RSS now (VmRSS):  %.2f MiB (%d KiB)\n", rss / 1024, rss
    printf "GOAL CPU <= 0.1 %%: %s; GOAL VmHWM <= 16 MiB: %s\n", (pct <= 0.1 ? "met" : "MISSED"), (hwm <= 16384 ? "met" : "MISSED")
  }'
echo "threads=$threads per-thread CPU: $per_thread"
echo "scrapes=$scrapes failed=$failed loadavg(end)=$(cut -d' ' -f1-3 /proc/loadavg)"
curl -sS --max-time 5 "$url" | grep -E '^gpuscope_diagnosis_(evaluations_total|last_duration_seconds)' || true
if [[ -n ${RULES:-} ]]; then
  # The rules thread's own record: how long each group's latest evaluation took, and failures.
  curl -sS --max-time 5 "$url" | grep -E '^gpuscope_rule_(group_last_duration_seconds|evaluation_failures_total|group_iterations_total)' || true
fi
grep -E 'level=(warn|error)' "$work/agent.log" || true
[[ -s $work/curl.err ]] && { echo "curl errors:"; cat "$work/curl.err"; }
exit 0
