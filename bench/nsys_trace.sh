#!/usr/bin/env bash
# `gpuscope trace` on a synthetic Nsight Systems SQLite export of SIZE_MB (default 1024), written by
# bench/tools/nsys_synthetic.py (the exporter's documented schema, invented rows: 8 GPUs, kernels with
# their launches, copies, memsets, NVTX ranges, an unread OS-runtime table). Prints wall time, CPU time,
# peak RSS (GNU time) and MB/s for the full analysis and for --report kernels, RUNS times each.
# The database is kept in NSYS_BENCH_DB if set (it takes a minute or two to write), else removed on exit.
# Not run by CI (minutes, a GB of disk).
# Usage: bench/nsys_trace.sh [BUILD_DIR] [SIZE_MB] [RUNS]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(dirname "$here")"
build="${1:-$repo/build}"
size_mb="${2:-1024}"
runs="${3:-2}"
gpuscope="${GPUSCOPE_EXE:-$build/gpuscope}"
[ -x "$gpuscope" ] || { echo "no $gpuscope (build first)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (GNU time)" >&2; exit 2; }

if [ -n "${NSYS_BENCH_DB:-}" ]; then
  db="$NSYS_BENCH_DB"
else
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/gpuscope-nsys-bench.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  db="$tmp/report.sqlite"
fi
if [ ! -s "$db" ]; then
  start=$(date +%s.%N)
  python3 "$here/tools/nsys_synthetic.py" "$db" "$size_mb"
  echo "generated in $(echo "$(date +%s.%N) - $start" | bc) s"
fi
bytes=$(stat -c %s "$db")
echo "input: $db, $((bytes / 1048576)) MiB; $(nproc) cores"
printf '%-22s %9s %9s %10s %10s\n' "run" "wall s" "cpu s" "MB/s wall" "peak RSS"
for what in analysis kernels; do
  for ((r = 1; r <= runs; r++)); do
    log="$(mktemp)"
    /usr/bin/time -v "$gpuscope" trace "$db" --report "$what" >/dev/null 2>"$log" || { cat "$log" >&2; exit 1; }
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$log")
    cpu=$(awk -F': ' '/User time/ {u = $2} /System time/ {s = $2} END {print u + s}' "$log")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f MiB", $2 / 1024}' "$log")
    mbs=$(awk -v b="$bytes" -v w="$wall" 'BEGIN {printf "%.0f", b / 1e6 / w}')
    printf '%-22s %9s %9s %10s %10s\n' "$what #$r" "$wall" "$cpu" "$mbs" "$rss"
    rm -f "$log"
  done
done
