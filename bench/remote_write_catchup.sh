#!/usr/bin/env bash
# serve --remote-write's throughput and catch-up: an hour of 8 GPUs' history (75 series each, one reading a
# second: 2.16 M samples) as the store holds it after a receiver outage of that length, sent by the agent's
# RemoteWriter to Debian's Prometheus (--web.enable-remote-write-receiver) on 127.0.0.1 until caught up.
# Prints the catch-up time and samples/s, the encoding alone in samples/s, and Prometheus's CPU time.
#
# Usage: bench/remote_write_catchup.sh [BUILD_DIR (default build)] [MINUTES (default 60)]
# Builds remote_write_catchup in BUILD_DIR (a no-op when up to date). Not a CI test.
set -euo pipefail
build=${1:-build}
minutes=${2:-60}
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

if [[ -z ${GPUSCOPE_NO_BUILD:-} ]]; then
  if [[ -e /tmp/gpuscope-build.lock ]]; then
    flock /tmp/gpuscope-build.lock ninja -C "$build" remote_write_catchup >/dev/null
  else
    ninja -C "$build" remote_write_catchup >/dev/null
  fi
fi
work=$(mktemp -d /tmp/gpuscope-rw-bench-XXXXXX)
trap 'stop_by_pid "${prom_pid:-}"; rm -rf "$work"' EXIT
write_config() { printf 'global:\n  scrape_interval: 15s\n' >"$work/prometheus.yml"; }
start_prometheus "$work" write_config --web.enable-remote-write-receiver
"$build/bench/remote_write_catchup" --url "http://$prom_addr/api/v1/write" --data-dir "$work/agent" --minutes "$minutes"
echo "prometheus: $(ps -o cputime= -p "$prom_pid") CPU; out-of-order rejections logged: $(grep -ci 'out of order' "$work/prometheus.log" || true)"
