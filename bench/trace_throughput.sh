#!/usr/bin/env bash
# gpuscope trace against the documents' Python approach (json.load + busy/idle + top kernels), same run,
# same files: MB/s of uncompressed JSON on one core and peak RSS (GNU time).
#   1. the ~35 MB real trace (../shared/conformance/traces), decompressed to a temp file, and as it is
#      stored, gzipped;
#   2. a synthetic trace of SIZE_MB (default 2048) in the real trace's layout and mix of events, written
#      by trace_synthetic.py;
#   3. the dense synthetic shape (compact JSON, 3.6x the kernels per byte), at up to 256 MB: a worst case.
# Python on a big file needs ~10x its size in RAM, so it runs on it only when MemAvailable allows;
# otherwise on 256 MB of the same shape. Temp files are removed on exit. Not run by CI (minutes, GBs).
# Usage: bench/trace_throughput.sh [BUILD_DIR] [SIZE_MB]     (SIZE_MB=0 skips the synthetic part)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
build="${1:-$repo/build}"
size_mb="${2:-2048}"
gpuscope="${GPUSCOPE_EXE:-$build/gpuscope}"
traces="${GPUSCOPE_TRACES:-$repo/../shared/conformance/traces}"
[ -x "$gpuscope" ] || { echo "no $gpuscope (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time)" >&2; exit 2; }

tmp="$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-trace-bench.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

# measure NAME FILE RUNS CMD...: prints one row. CPU is the least of RUNS runs' user + system time, read
# with wait4 (microseconds; GNU time's 10 ms steps are too coarse for a 35 ms run), so MB/s is per core
# and other processes on a shared machine only ever make it look slower; wall is that run's. Both tools
# run pinned to the same core by the harness itself (a taskset in front would add its own start-up to
# the figure). Peak RSS comes from one more run under GNU time (Python's own pages would leak into
# wait4's ru_maxrss).
measure() {
  local name="$1" file="$2" runs="$3"
  shift 3
  local bytes
  bytes=$(stat -c %s "$file")
  read -r wall cpu < <(python3 - "$runs" "$@" <<'PY'
import os, subprocess, sys, time
runs, cmd = int(sys.argv[1]), sys.argv[2:]
if hasattr(os, "sched_setaffinity"):
    os.sched_setaffinity(0, {max(os.sched_getaffinity(0))})
best = None
for _ in range(runs):
    started = time.monotonic()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    if status != 0:
        sys.exit(f"{cmd[0]} exited with status {status}")
    cpu = usage.ru_utime + usage.ru_stime
    if best is None or cpu < best[1]:
        best = (wall, cpu)
print(f"{best[0]:.6f} {best[1]:.6f}")
PY
)
  /usr/bin/time -f %M -o "$tmp/rss" "$@" >/dev/null
  local rss
  rss=$(tail -1 "$tmp/rss")
  awk -v n="$name" -v b="$bytes" -v w="$wall" -v c="$cpu" -v r="$rss" 'BEGIN {
    printf "%-36s %8.1f MB  wall %8.3f s %7.1f MB/s  cpu %8.3f s %7.1f MB/s  peak RSS %7.1f MB (%.3fx file)\n",
           n, b/1e6, w, b/1e6/w, c, b/1e6/c, r*1024/1e6, r*1024/b }'
  echo "$cpu" > "$tmp/last_cpu"
}

echo "== real trace: trace_diff__control__control.json (decompressed)"
zcat "$traces/trace_diff__control__control.json.gz" > "$tmp/control.json"
"$gpuscope" trace "$tmp/control.json" >/dev/null  # warm the page cache
measure "gpuscope trace" "$tmp/control.json" 20 "$gpuscope" trace "$tmp/control.json"
g=$(cat "$tmp/last_cpu")
measure "python json.load baseline" "$tmp/control.json" 3 python3 "$here/trace_python_baseline.py" "$tmp/control.json"
p=$(cat "$tmp/last_cpu")
awk -v g="$g" -v p="$p" 'BEGIN { printf "speed-up (cpu time): %.1fx\n", p/g }'

# The sizes are the JSON's (MB/s of JSON, RSS against the JSON), the input the .gz file.
echo "== real trace as written, gzipped: trace_diff__control__control.json.gz (1.8 MB)"
measure "gpuscope trace" "$tmp/control.json" 20 "$gpuscope" trace "$traces/trace_diff__control__control.json.gz"
g=$(cat "$tmp/last_cpu")
measure "python json.load baseline" "$tmp/control.json" 3 python3 "$here/trace_python_baseline.py" "$traces/trace_diff__control__control.json.gz"
p=$(cat "$tmp/last_cpu")
awk -v g="$g" -v p="$p" 'BEGIN { printf "speed-up (cpu time): %.1fx\n", p/g }'

# synthetic SHAPE MB: gpuscope and Python on a synthetic trace of that shape (trace_synthetic.py) and size.
synthetic() {
  local shape="$1" mb="$2"
  echo "== synthetic trace, $shape shape, ${mb} MB"
  python3 "$here/trace_synthetic.py" "$tmp/synthetic.json" $((mb * 1000000)) "$shape" >/dev/null
  cat "$tmp/synthetic.json" >/dev/null  # page cache, as the real trace
  measure "gpuscope trace" "$tmp/synthetic.json" 2 "$gpuscope" trace "$tmp/synthetic.json"
  g=$(cat "$tmp/last_cpu")
  avail_mb=$(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo)
  if [ "$avail_mb" -gt $((mb * 12)) ]; then
    measure "python json.load baseline" "$tmp/synthetic.json" 1 python3 "$here/trace_python_baseline.py" "$tmp/synthetic.json"
    p=$(cat "$tmp/last_cpu")
    awk -v g="$g" -v p="$p" 'BEGIN { printf "speed-up (cpu time): %.1fx\n", p/g }'
    rm -f "$tmp/synthetic.json"
  else
    echo "(python needs ~$((mb * 12)) MB for this file, $avail_mb MB available: comparing on 256 MB instead)"
    rm -f "$tmp/synthetic.json"
    python3 "$here/trace_synthetic.py" "$tmp/small.json" 256000000 "$shape" >/dev/null
    measure "gpuscope trace (256 MB)" "$tmp/small.json" 3 "$gpuscope" trace "$tmp/small.json"
    g=$(cat "$tmp/last_cpu")
    measure "python json.load baseline (256 MB)" "$tmp/small.json" 1 python3 "$here/trace_python_baseline.py" "$tmp/small.json"
    p=$(cat "$tmp/last_cpu")
    awk -v g="$g" -v p="$p" 'BEGIN { printf "speed-up (cpu time): %.1fx\n", p/g }'
    rm -f "$tmp/small.json"
  fi
}

if [ "$size_mb" -gt 0 ]; then
  synthetic kineto "$size_mb"
  # The worst case, smaller: compact JSON, 3.6x the real trace's kernels per byte.
  synthetic dense $((size_mb < 256 ? size_mb : 256))
fi
