#!/usr/bin/env bash
# Regenerates cmake/gpuscope_symbol_order.txt: the functions of the gpuscope executable that `serve` runs
# (startup, readings and a Prometheus scrape of /metrics), which the release link (lld) places next to each
# other. The kernel maps a touched executable page together with its neighbours (fault-around, 64 KiB), so
# code scattered over the 6 MB text made ~3.3 MB of it resident; clustered, about 1 MB is (issue 23).
# The list only orders: a function missing from it (new code) still links, it just lands among the cold ones.
#
# Usage: bench/rss_symbol_order.sh [SECONDS (default 70: a minute of periodic work)] [BINARY (default build/gpuscope)]
# Env:   OUT (the list, default cmake/gpuscope_symbol_order.txt), SCENARIO (default bench/h100_costs.yaml),
#        GPUSCOPE_SIM_LIB (default build/sim/libnvidia-ml.so.1), FRESH=1 (drop the previous list's names
#        instead of keeping those the new profile missed after its own)
#
# Run it on a quiet machine: with another agent on /run/gpuscope/events.sock, or a profile shorter than the
# first diagnosis (the price catalog), what the agent skips is missing from the list and lands among the cold.
# Builds nothing: run it on a release build, then rebuild gpuscope. Traffic goes to 127.0.0.1 only; the
# process it starts is stopped by PID on any exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=${1:-70}
binary=${2:-build/gpuscope}
out=${OUT:-cmake/gpuscope_symbol_order.txt}
scenario=${SCENARIO:-bench/h100_costs.yaml}
export GPUSCOPE_SIM_LIB=${GPUSCOPE_SIM_LIB:-build/sim/libnvidia-ml.so.1}  # found next to BINARY otherwise
for tool in valgrind callgrind_annotate curl; do
  command -v "$tool" >/dev/null || { echo "rss_symbol_order: $tool not found" >&2; exit 2; }
done
[[ -x $binary ]] || { echo "rss_symbol_order: no executable at $binary" >&2; exit 2; }
work=$(mktemp -d /tmp/gpuscope-symbol-order.XXXXXX)

pid=""
cleanup() {
  stop_by_pid "$pid" 100
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --demangle=no: the linker's ordering file takes mangled names. Startup is profiled too: its code is
# resident at the peak.
valgrind --tool=callgrind --demangle=no --callgrind-out-file="$work/callgrind.out" \
  "$binary" --simulate="$scenario" serve --listen 127.0.0.1:0 --no-history 2>"$work/agent.log" >/dev/null &
pid=$!

# valgrind startup is slow: wait up to 60 s
address=$(listen_address "$work/agent.log" "$pid" 600) || { echo "rss_symbol_order: the agent did not start under valgrind" >&2; exit 1; }
case $address in 127.0.0.1:*) ;; *) echo "rss_symbol_order: unexpected address $address" >&2; exit 1 ;; esac

sleep "$((seconds / 2))"
curl -sS --max-time 30 -o /dev/null "http://$address/metrics"
sleep "$((seconds - seconds / 2))"
stop_by_pid "$pid" 300
pid=""

# callgrind_annotate's rows: "IR (PCT)  FILE:FUNCTION [OBJECT]"; the executable's functions, hottest first.
exe=$(realpath "$binary")
callgrind_annotate --threshold=100 "$work/callgrind.out" 2>/dev/null |
  awk -v obj="[$exe]" '$NF == obj { f = $(NF - 1); sub(/^.*:/, "", f); sub(/'"'"'[0-9]+$/, "", f);
                                     if (f ~ /^_Z|^[A-Za-z_][A-Za-z0-9_.]*$/) print f }' |
  # A constructor's or destructor's complete and base variants (C1/C2, D1/D2) are one function under two
  # names, and a local copy (.constprop, .isra) in another object may carry the other one: list both.
  sed -E 'p; s/([CD])1([EI])/\1@\2/g; s/([CD])2([EI])/\11\2/g; s/([CD])@([EI])/\12\2/g' |
  awk '!seen[$0]++' >"$work/order.txt"
count=$(wc -l <"$work/order.txt")
(( count > 100 )) || { echo "rss_symbol_order: only $count functions profiled; is $binary built with symbols?" >&2; exit 1; }
# One profile can miss periodic work that came late under valgrind (a regeneration once lost the price
# catalog's load and the counters' readers: +0.5 MB resident). The previous list's names follow the new
# ones: a name the binary no longer has is ignored by the linker, so keeping it costs nothing.
kept=0
if [[ -f $out && ${FRESH:-} != 1 ]]; then
  awk 'NR == FNR { seen[$0] = 1; next } !seen[$0]++' "$work/order.txt" "$out" >"$work/kept.txt"
  kept=$(wc -l <"$work/kept.txt")
  cat "$work/kept.txt" >>"$work/order.txt"
fi
mv "$work/order.txt" "$out"
echo "rss_symbol_order: $count functions profiled, $kept more kept from the previous list -> $out"
