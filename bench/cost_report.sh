#!/usr/bin/env bash
# `gpuscope cost --since 30d` over 30 days of an 8-GPU node's history at 15 s readings (issue 17's
# measurement): wall time, CPU time and peak RSS of the command, by --by grouping.
#
#  1. history_fixture writes 30 days of 8 simulated-looking H100s (12 DCGM families, 96 series, the
#     energy counter integrating power; 16.6 M samples) into a gpuscope data dir, as the agent writes it.
#     It records no price series, so the cost is priced from the catalog (as for a dcgm-exporter history).
#  2. `gpuscope cost --data-dir DIR --since 30d --end LAST` runs REPS times per grouping; the median wall
#     time and the largest peak RSS (getrusage of the child) are printed.
#
# Usage: bench/cost_report.sh [BUILD_DIR (default build)]
# Env:   HOURS (default 720), INTERVAL_MS (default 15000), REPS (default 3), KEEP=1 keeps the work dir.
# Builds gpuscope and history_fixture in BUILD_DIR (no-ops when up to date). Not a CI test.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-build}
hours=${HOURS:-720}
interval_ms=${INTERVAL_MS:-15000}
reps=${REPS:-3}
[[ -d $build ]] || { echo "cost_report: no build dir $build (configure it first)" >&2; exit 2; }
cmake --build "$build" --target gpuscope history_fixture >/dev/null

work=$(mktemp -d)
[[ ${KEEP:-0} == 1 ]] || trap 'rm -rf "$work"' EXIT
echo "writing ${hours} h of 8 GPUs at ${interval_ms} ms into $work/data ..."
"$build/bench/history_fixture" write --out "$work" --interval-ms "$interval_ms" --hours "$hours" --no-openmetrics \
  > "$work/fixture.txt"
grep -E '^(series|samples|tsdb_file_bytes|generate_s|tsdb_write_s)=' "$work/fixture.txt"
last_ms=$(sed -n 's/^last_ms=//p' "$work/fixture.txt")
end=$(( last_ms / 1000 + 1 ))

python3 - "$build/gpuscope" "$work/data" "$end" "$reps" <<'PY'
import resource, statistics, subprocess, sys, time
exe, data, end, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for by in ("gpu", "process"):
    walls, cpus, rss = [], [], 0
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        r = subprocess.run([exe, "cost", "--data-dir", data, "--since", "30d", "--end", end, "--by", by,
                            "--format", "json"], capture_output=True)
        walls.append(time.monotonic() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
        rss = max(rss, after.ru_maxrss)
        if r.returncode != 0:
            sys.exit(f"cost_report: gpuscope cost failed ({r.returncode}): {r.stderr.decode()[:500]}")
    print(f"cost --since 30d --by {by}: wall median {statistics.median(walls):.2f} s, "
          f"cpu median {statistics.median(cpus):.2f} s, peak RSS {rss / 1024:.1f} MiB (max over {reps} runs)")
PY
