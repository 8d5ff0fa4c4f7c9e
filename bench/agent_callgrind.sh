#!/usr/bin/env bash
# Where the agent's steady-state CPU goes: runs `gpuscope serve` on 8 simulated H100s under
# valgrind --tool=callgrind, collects only after the listening line (startup excluded), scrapes
# /metrics every SCRAPE_EVERY seconds like Prometheus, then stops the agent and prints the top
# functions by inclusive instruction count.
#
# Usage: bench/agent_callgrind.sh [SECONDS (default 20)] [BINARY (default build/gpuscope)]
# Env:   SCRAPE_EVERY (default 15), INTERVAL (default 1s), OUT (output dir, default a new temp dir),
#        TOP (rows to print, default 40), SCRAPE_GZIP=1 sends Accept-Encoding: gzip as Prometheus does,
#        WRK_ARGS (e.g. "-t 1 -c 4 -d 5s"): also put wrk load on /metrics at the start of the window
#        (with the gzip header when SCRAPE_GZIP=1), to see the per-request cost when the rendered GPU
#        text is cached (the common case under load) rather than once-per-reading scrapes
#
# Builds nothing. Traffic goes to 127.0.0.1 only; the process it starts is killed by PID on any exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=${1:-20}
binary=${2:-build/gpuscope}
scrape_every=${SCRAPE_EVERY:-15}
interval=${INTERVAL:-1s}
top=${TOP:-40}
curl_args=(-sS --max-time 10 -o /dev/null -w '%{http_code}')
[[ ${SCRAPE_GZIP:-0} == 1 ]] && curl_args+=(-H 'Accept-Encoding: gzip')
out=${OUT:-$(mktemp -d /tmp/gpuscope-callgrind.XXXXXX)}
mkdir -p "$out"

for tool in valgrind callgrind_control callgrind_annotate curl; do
  command -v "$tool" >/dev/null || { echo "agent_callgrind: $tool not found" >&2; exit 2; }
done
[[ -x $binary ]] || { echo "agent_callgrind: no executable at $binary" >&2; exit 2; }

pid=""
cleanup() {
  stop_by_pid "$pid" 100
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --instr-atstart=no: dlopen, NVML init and scenario parsing are one-off; switch on after startup.
valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$out/callgrind.out.%p" \
  "$binary" --simulate=scenarios/demo.yaml serve --listen 127.0.0.1:0 --interval "$interval" --data-dir "$out/history" \
  2>"$out/agent.log" >/dev/null &
pid=$!

# valgrind startup is slow: wait up to 60 s
address=$(listen_address "$out/agent.log" "$pid" 600) || { echo "agent_callgrind: no agent" >&2; exit 1; }
case $address in 127.0.0.1:*) ;; *) echo "agent_callgrind: unexpected address $address" >&2; exit 1 ;; esac

callgrind_control -i on "$pid" >/dev/null
echo "callgrind pid=$pid address=$address collecting for ${seconds}s (interval=$interval, scrape every ${scrape_every}s)"
if [[ -n ${WRK_ARGS:-} ]]; then
  wrk_hdr=(); [[ ${SCRAPE_GZIP:-0} == 1 ]] && wrk_hdr=(-H 'Accept-Encoding: gzip')
  # shellcheck disable=SC2086  # WRK_ARGS is a list of wrk flags
  wrk $WRK_ARGS "${wrk_hdr[@]}" "http://$address/metrics" | grep -E 'requests in|Non-2xx|Socket errors' || true
fi
scrapes=0
end=$((SECONDS + seconds))
next_scrape=$((SECONDS + scrape_every))
while (( SECONDS < end )); do
  if (( SECONDS >= next_scrape )); then
    code=$(curl "${curl_args[@]}" "http://$address/metrics" || true)
    scrapes=$((scrapes + 1)); echo "scrape $scrapes at +$((SECONDS - end + seconds))s: HTTP $code"
    next_scrape=$((next_scrape + scrape_every))
  fi
  sleep 1
done
callgrind_control -i off "$pid" >/dev/null

pid_started=$pid
kill -TERM "$pid"
for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
wait "$pid" 2>/dev/null || true
pid=""

profile="$out/callgrind.out.$pid_started"
[[ -f $profile ]] || { echo "agent_callgrind: no profile written in $out" >&2; exit 1; }
echo "profile: $profile (scrapes=$scrapes)"
grep -E '^(summary|totals):' "$profile" || true
callgrind_annotate --inclusive=yes "$profile" 2>/dev/null | sed -n '1,/^$/d; p' | head -n "$((top + 12))"
