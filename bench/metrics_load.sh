#!/usr/bin/env bash
# /metrics latency under load: 64 concurrent keep-alive clients against `gpuscope serve` on 8
# simulated H100s (scenarios/demo.yaml), once plain and once with Accept-Encoding: gzip.
# Goal: p99 <= 1 ms.
#
# Usage: bench/metrics_load.sh [BINARY (default build/gpuscope)]
# Env:   DURATION (wrk seconds per run, default 20), CONNECTIONS (default 64), THREADS (default 2),
#        SERVICE_TIME=1 adds a run with one connection (-t 1 -c 1): the per-request service time
#        without queueing. wrk is closed-loop, so with 64 busy connections latency ~= 64 / (req/s):
#        the 64-client p99 mostly measures queueing behind the other 63 clients on a saturated agent.
#
# Builds nothing: point it at an already-built binary (and its build/sim/libnvidia-ml.so.1).
# Traffic goes to 127.0.0.1 only; the agent it starts is killed by PID on any exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"  # --simulate=scenarios/demo.yaml and the default binary are repo-relative

binary=${1:-build/gpuscope}
duration=${DURATION:-20}
connections=${CONNECTIONS:-64}
threads=${THREADS:-2}
scenario=scenarios/demo.yaml

[[ -x $binary ]] || { echo "metrics_load: no executable at $binary (build it first)" >&2; exit 2; }
command -v wrk >/dev/null || { echo "metrics_load: wrk not found (apt-get install wrk)" >&2; exit 2; }
command -v curl >/dev/null || { echo "metrics_load: curl not found" >&2; exit 2; }

work=$(mktemp -d)
agent_pid=""
cleanup() {
  # Kill exactly the agent we started (never by name), then reap it so no zombie/orphan is left.
  stop_by_pid "$agent_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # route signals through the EXIT trap

# --listen 127.0.0.1:0: the kernel picks a free port; the agent logs the real one on stderr.
: >"$work/agent.log"  # exists before the wait loop reads it, however slowly the agent starts
"$binary" --simulate="$scenario" serve --listen 127.0.0.1:0 --data-dir "$work/history" 2>"$work/agent.log" >/dev/null &
agent_pid=$!

address=$(listen_address "$work/agent.log" "$agent_pid" 100) || { echo "metrics_load: no agent" >&2; exit 1; }
case $address in 127.0.0.1:*) ;; *) echo "metrics_load: unexpected address $address" >&2; exit 1 ;; esac
url="http://$address/metrics"

# Let the sampler publish a first reading so /metrics serves real data, and show what a response is.
sleep 1.5
plain_bytes=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code} %{size_download}' "$url")
gzip_bytes=$(curl -sS --max-time 5 -H 'Accept-Encoding: gzip' -o /dev/null -w '%{http_code} %{size_download}' "$url")
series=$(curl -sS --max-time 5 "$url" | grep -vc '^#' || true)
echo "agent pid=$agent_pid url=$url binary=$binary scenario=$scenario"
echo "response: plain status/bytes=$plain_bytes gzip status/bytes=$gzip_bytes series=$series"
echo "host: nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"

# wrk prints latencies as e.g. 512.00us / 1.23ms / 1.01s; normalise to ms for the summary.
to_ms() {
  awk -v v="$1" 'BEGIN {
    n = v; sub(/[a-z]+$/, "", n); u = v; sub(/^[0-9.]+/, "", u)
    f = (u == "us") ? 0.001 : (u == "ms") ? 1 : (u == "s") ? 1000 : (u == "m") ? 60000 : -1
    if (f < 0) printf "%s", v; else printf "%.3f", n * f }'
}

run_wrk() {
  local label=$1; shift
  local out="$work/wrk_$label.txt"
  echo
  echo "=== wrk $label: -t $threads -c $connections -d ${duration}s --latency $* $url"
  # --timeout 2s: a request slower than that is counted as a timeout error rather than hiding in p99.
  wrk -t "$threads" -c "$connections" -d "${duration}s" --timeout 2s --latency "$@" "$url" | tee "$out"
  local p50 p90 p99 rps non2xx errors
  p50=$(awk '$1 == "50%" {print $2}' "$out")
  p90=$(awk '$1 == "90%" {print $2}' "$out")
  p99=$(awk '$1 == "99%" {print $2}' "$out")
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  non2xx=$(awk -F': *' '/Non-2xx or 3xx responses/ {print $2}' "$out")
  errors=$(sed -n 's/^ *Socket errors: *//p' "$out")
  echo "SUMMARY $label: p50=$(to_ms "$p50")ms p90=$(to_ms "$p90")ms p99=$(to_ms "$p99")ms" \
       "req/s=$rps non2xx=${non2xx:-0} socket_errors=${errors:-none}"
  awk -v p99="$(to_ms "$p99")" -v l="$label" 'BEGIN { printf "GOAL %s p99 <= 1 ms: %s\n", l, (p99 + 0 <= 1.0 ? "met" : "MISSED") }'
}

run_wrk plain
run_wrk gzip -H 'Accept-Encoding: gzip'
if [[ ${SERVICE_TIME:-0} == 1 ]]; then
  threads=1 connections=1 run_wrk plain_c1
  threads=1 connections=1 run_wrk gzip_c1 -H 'Accept-Encoding: gzip'
fi

# The agent must still be alive and healthy after the load (a crash would otherwise look like errors only).
kill -0 "$agent_pid" 2>/dev/null || { echo "metrics_load: agent died during the run:" >&2; cat "$work/agent.log" >&2; exit 1; }
echo
echo "agent log (warnings/errors):"
grep -E 'level=(warn|error)' "$work/agent.log" || echo "  none"
