#!/usr/bin/env bash
# gpuscope trace against the documents' Python approach (json.load + busy/idle + top kernels), same run,
# same files: MB/s of uncompressed JSON on one core and peak RSS (VmHWM via /usr/bin/time -v).
#   1. the ~35 MB real trace (../shared/conformance/traces), decompressed to a temp file;
#   2. a synthetic Kineto-like trace of SIZE_MB (default 2048) written by trace_synthetic.py.
# Python on the big file needs ~10x its size in RAM, so it runs on it only when MemAvailable allows;
# otherwise on a 256 MB synthetic trace. Temp files are removed on exit. Not run by CI (minutes, GBs).
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

# measure NAME FILE CMD...: prints one row; single core for gpuscope (taskset) so MB/s is per core.
measure() {
  local name="$1" file="$2"
  shift 2
  local bytes log
  bytes=$(stat -c %s "$file")
  log="$tmp/time.log"
  /usr/bin/time -v "$@" >/dev/null 2>"$log"
  local wall cpu rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2,p,":"); s=0; for(i=1;i<=n;i++) s=s*60+p[i]; print s}' "$log")
  cpu=$(awk -F': ' '/User time|System time/ {s+=$2} END {print s}' "$log")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
  # MB/s per CPU-second as well as per wall second: on a shared machine the wall clock also counts the
  # time other processes held the core.
  awk -v n="$name" -v b="$bytes" -v w="$wall" -v c="$cpu" -v r="$rss" 'BEGIN {
    printf "%-36s %8.1f MB  wall %7.2f s %7.1f MB/s  cpu %7.2f s %7.1f MB/s  peak RSS %7.1f MB (%.3fx file)\n",
           n, b/1e6, w, b/1e6/w, c, b/1e6/c, r/1024, r*1024/b }'
  echo "$cpu" > "$tmp/last_wall"
}

pin=()
if command -v taskset >/dev/null; then pin=(taskset -c 0); fi

echo "== real trace: trace_diff__control__control.json (decompressed)"
zcat "$traces/trace_diff__control__control.json.gz" > "$tmp/control.json"
"$gpuscope" trace "$tmp/control.json" >/dev/null  # warm the page cache
measure "gpuscope trace" "$tmp/control.json" "${pin[@]}" "$gpuscope" trace "$tmp/control.json"
g=$(cat "$tmp/last_wall")
measure "python json.load baseline" "$tmp/control.json" python3 "$here/trace_python_baseline.py" "$tmp/control.json"
p=$(cat "$tmp/last_wall")
awk -v g="$g" -v p="$p" 'BEGIN { printf "speed-up (cpu time): %.1fx\n", p/g }'

if [ "$size_mb" -gt 0 ]; then
  echo "== synthetic Kineto-like trace, ${size_mb} MB"
  python3 "$here/trace_synthetic.py" "$tmp/synthetic.json" $((size_mb * 1000000)) >/dev/null
  cat "$tmp/synthetic.json" >/dev/null  # page cache, as the real trace
  measure "gpuscope trace" "$tmp/synthetic.json" "${pin[@]}" "$gpuscope" trace "$tmp/synthetic.json"
  g=$(cat "$tmp/last_wall")
  avail_mb=$(awk '/MemAvailable/ {print int($2/1024)}' /proc/meminfo)
  if [ "$avail_mb" -gt $((size_mb * 12)) ]; then
    measure "python json.load baseline" "$tmp/synthetic.json" python3 "$here/trace_python_baseline.py" "$tmp/synthetic.json"
    p=$(cat "$tmp/last_wall")
    awk -v g="$g" -v p="$p" 'BEGIN { printf "speed-up (cpu time): %.1fx\n", p/g }'
  else
    echo "(python needs ~$((size_mb * 12)) MB for this file, $avail_mb MB available: comparing on 256 MB instead)"
    rm -f "$tmp/synthetic.json"
    python3 "$here/trace_synthetic.py" "$tmp/small.json" 256000000 >/dev/null
    measure "gpuscope trace (256 MB)" "$tmp/small.json" "${pin[@]}" "$gpuscope" trace "$tmp/small.json"
    g=$(cat "$tmp/last_wall")
    measure "python json.load baseline (256 MB)" "$tmp/small.json" python3 "$here/trace_python_baseline.py" "$tmp/small.json"
    p=$(cat "$tmp/last_wall")
    awk -v g="$g" -v p="$p" 'BEGIN { printf "speed-up (cpu time): %.1fx\n", p/g }'
  fi
fi
