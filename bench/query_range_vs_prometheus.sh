#!/usr/bin/env bash
# query_range over 24 h at 15 s steps (5761 points per series) for 8 GPUs, gpuscope side by side with
# Prometheus 2.42 on the same data in the same run. Goal (issue 4): gpuscope not slower than Prometheus.
#
#  1. history_fixture writes 25.5 h of 8 simulated-looking H100s (12 DCGM families, 96 series) twice:
#     a gpuscope data dir (through store::Tsdb, as the agent writes it) and an OpenMetrics file.
#  2. promtool backfills the OpenMetrics file into Prometheus blocks.
#  3. Prometheus (no scrape targets, retention 10y, compaction off so it does not run mid-measurement)
#     and `gpuscope --simulate serve --data-dir FIXTURE` start on 127.0.0.1. The fixture ends 10 min
#     before the run, so the agent's own live readings fall after every queried range.
#  4. Per expression: both answer once and must agree (1e-6 relative; the range is offset by 7.5 s from
#     the sample grid, as Prometheus 2.42 closes windows on the left), then WARMUP + REPS timed curl
#     requests each, alternating which goes first; median and p90 (nearest rank) in ms, and the ratio.
#
# Usage: bench/query_range_vs_prometheus.sh [BUILD_DIR (default build)]
# Env:   INTERVAL_MS fixture reading interval: default 15000, so a run takes ~3 min on 2 cores; 1000 is
#        the agent's default --interval, 15x the samples, but promtool re-reads the whole OpenMetrics
#        file once per 2 h block: ~260 s for its 2.2 GB (vs ~20 s), ~7 min in all.
#        REPS (default 10), WARMUP (default 2), KEEP=1 keeps the work dir,
#        PROMETHEUS / PROMTOOL (default: from PATH).
# Builds gpuscope and history_fixture in BUILD_DIR (no-ops when up to date). Not a CI test.
# Traffic goes to 127.0.0.1 only; the processes it starts are stopped by PID on any exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

build=${1:-build}
interval_ms=${INTERVAL_MS:-15000}
reps=${REPS:-10}
warmup=${WARMUP:-2}
prometheus=${PROMETHEUS:-prometheus}
promtool=${PROMTOOL:-promtool}

for tool in "$prometheus" "$promtool" curl cmake ss; do
  command -v "$tool" >/dev/null || { echo "query_range_vs_prometheus: $tool not found" >&2; exit 2; }
done
[[ -d $build ]] || { echo "query_range_vs_prometheus: no build dir $build (configure it first)" >&2; exit 2; }
cmake --build "$build" --target gpuscope history_fixture gpuscope_sim >/dev/null
agent_bin=$build/gpuscope
fixture_bin=$build/bench/history_fixture

work=$(mktemp -d /tmp/gpuscope-qbench.XXXXXX)
agent_pid="" prom_pid=""
cleanup() {
  # Exactly the processes started here (never by name), then the temp dir.
  stop_by_pid "$agent_pid" 100
  stop_by_pid "$prom_pid" 100
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "host: nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) $("$prometheus" --version 2>&1 | head -n1)"

# 1. The fixture.
"$fixture_bin" write --out "$work/fixture" --interval-ms "$interval_ms" --hours 25.5 >"$work/fixture.txt"
sed 's/^/fixture: /' "$work/fixture.txt"
kv() { sed -n "s/^$1=//p" "$work/fixture.txt"; }
first_ms=$(kv first_ms)

# 2. Backfill.
start_s=$SECONDS
"$promtool" tsdb create-blocks-from openmetrics -q "$work/fixture/history.om" "$work/prom" >"$work/promtool.log" 2>&1 ||
  { echo "query_range_vs_prometheus: promtool failed:" >&2; cat "$work/promtool.log" >&2; exit 1; }
echo "backfill: $(find "$work/prom" -name meta.json | wc -l) blocks in $((SECONDS - start_s)) s," \
     "$(du -sb "$work/prom" | cut -f1) bytes; gpuscope data dir $(du -sb "$work/fixture/data" | cut -f1) bytes"
rm -f "$work/fixture/history.om"  # not needed any more (1 s data makes it GBs)

# 3. Prometheus (no scrape targets; min = max block duration, so the compactor merges nothing during
# the timings) and the agent on port 0.
no_targets() { printf 'global:\n  scrape_interval: 15s\n' >"$work/prometheus.yml"; }
start_prometheus "$work" no_targets --storage.tsdb.retention.time=10y --storage.tsdb.min-block-duration=2h \
  --storage.tsdb.max-block-duration=2h || { echo "query_range_vs_prometheus: Prometheus did not start" >&2; exit 1; }
"$agent_bin" --simulate serve --listen 127.0.0.1:0 --data-dir "$work/fixture/data" --retention 10y \
  2>"$work/agent.log" >/dev/null &
agent_pid=$!
agent_addr=$(listen_address "$work/agent.log" "$agent_pid") || { echo "query_range_vs_prometheus: no agent" >&2; exit 1; }
echo "prometheus pid=$prom_pid http://$prom_addr  agent pid=$agent_pid http://$agent_addr"

# 4. The range: 24 h at 15 s from 1 h after the fixture's start, off the sample grid by 7.5 s.
start_ms=$((first_ms + 3600000 + 7500))
end_ms=$((start_ms + 24 * 3600000))
fmt_s() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
start=$(fmt_s "$start_ms") end=$(fmt_s "$end_ms") step=15
echo "range: start=$start end=$end step=${step}s ($(((end_ms - start_ms) / 15000 + 1)) points), warmup=$warmup reps=$reps"

exprs=(
  'DCGM_FI_DEV_GPU_UTIL'
  'avg_over_time(DCGM_FI_DEV_GPU_UTIL[10m])'
  'rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION[5m])'
  'sum by (Hostname) (DCGM_FI_DEV_POWER_USAGE)'
  '(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE)) * 100'
  'max_over_time(DCGM_FI_DEV_GPU_TEMP[1h])'
  'deriv(DCGM_FI_DEV_FB_USED[1h])'
  '(DCGM_FI_PROF_DRAM_ACTIVE > 0.8) and (DCGM_FI_PROF_SM_ACTIVE < 0.3)'
)

# query ADDR EXPR OUTFILE: prints the request's total time in ms (curl's clock, connect included).
query() {
  local t
  t=$(curl -sS --max-time 120 -o "$3" -w '%{time_total}' -G "http://$1/api/v1/query_range" \
        --data-urlencode "query=$2" --data-urlencode "start=$start" --data-urlencode "end=$end" \
        --data-urlencode "step=$step")
  awk -v t="$t" 'BEGIN { printf "%.3f\n", t * 1000 }'
}
# nearest-rank percentile P of the numbers in FILE
pct() { sort -n "$2" | awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p / 100 + 0.999999); if (i < 1) i = 1; print v[i] }'; }

mismatch=0
rows=()
for i in "${!exprs[@]}"; do
  e=${exprs[$i]}
  query "$prom_addr" "$e" "$work/p.json" >/dev/null
  query "$agent_addr" "$e" "$work/g.json" >/dev/null
  check=$("$fixture_bin" compare "$work/g.json" "$work/p.json") || { mismatch=1; check="DIFFERENT: $check"; }
  echo "check $i: $e -> $check"
  series=$(sed -n 's/^series=\([0-9]*\)\/.*/\1/p' <<<"$check")
  bytes_g=$(stat -c %s "$work/g.json") bytes_p=$(stat -c %s "$work/p.json")
  : >"$work/tg" ; : >"$work/tp"
  for r in $(seq 1 $((warmup + reps))); do
    if ((r % 2)); then
      tp=$(query "$prom_addr" "$e" /dev/null); tg=$(query "$agent_addr" "$e" /dev/null)
    else
      tg=$(query "$agent_addr" "$e" /dev/null); tp=$(query "$prom_addr" "$e" /dev/null)
    fi
    if ((r > warmup)); then echo "$tg" >>"$work/tg"; echo "$tp" >>"$work/tp"; fi
  done
  gm=$(pct 50 "$work/tg") g9=$(pct 90 "$work/tg") pm=$(pct 50 "$work/tp") p9=$(pct 90 "$work/tp")
  rows+=("$(awk -v gm="$gm" -v g9="$g9" -v pm="$pm" -v p9="$p9" -v s="${series:-?}" -v bg="$bytes_g" -v bp="$bytes_p" -v e="$e" \
    'BEGIN { printf "%8.1f %8.1f | %8.1f %8.1f | %6.2f | %3s %6dk %6dk | %s", gm, g9, pm, p9, gm / pm, s, bg / 1024, bp / 1024, e }')")
done

echo
echo "query_range, 24 h at ${step}s steps, fixture interval ${interval_ms} ms, $reps runs (ms, nearest rank)"
echo "gpuscope          | prometheus 2.42   | ratio  | result"
echo "  median      p90 |   median      p90 | g/p md | ser  bytes(g,p) | expression"
printf '%s\n' "${rows[@]}"
awk '{ if ($7 + 0 > 1.0) slower++ } END { printf "GOAL gpuscope not slower than Prometheus: %s\n", slower ? "MISSED on " slower " expression(s)" : "met" }' \
  < <(printf '%s\n' "${rows[@]}")

# Memory after the queries: peak (VmHWM) and current (VmRSS) resident set of each server.
mem() { awk '/^(VmHWM|VmRSS):/ { printf "%s %.1f MiB  ", $1, $2 / 1024 }' "/proc/$1/status"; }
echo "memory: gpuscope $(mem "$agent_pid")| prometheus $(mem "$prom_pid")"
grep -E 'level=(warn|error)' "$work/agent.log" | head -n 5 | sed 's/^/agent log: /' || true
[[ $mismatch == 0 ]] || { echo "query_range_vs_prometheus: results differ (see the check lines)" >&2; exit 1; }
