#!/usr/bin/env bash
# /metrics latency with TLS (and TLS + basic auth) against plain HTTP, 64 connections: the cost of
# serve --web.config.file. Three agents on the 8-GPU demo node, one after the other on this host; wrk
# (Debian's) keeps 64 connections open for DURATION and reports the latency distribution.
#
# Usage: bench/tls_latency.sh [BUILD_DIR (default build)]
# Env:   DURATION seconds per run (default 20), CONNECTIONS (default 64), THREADS wrk threads
#        (default 2), KEEP=1 keeps the work dir.
# Not a CI test. Traffic goes to 127.0.0.1 only; every process started is stopped by PID on exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${1:-build}
duration=${DURATION:-20}
conns=${CONNECTIONS:-64}
threads=${THREADS:-2}
for tool in wrk openssl htpasswd curl; do
  command -v "$tool" >/dev/null || { echo "tls_latency: $tool not found" >&2; exit 2; }
done
[[ -x $build/gpuscope ]] || { echo "tls_latency: no $build/gpuscope (build it first)" >&2; exit 2; }

work=$(mktemp -d /tmp/gpuscope-tls.XXXXXX)
agent_pid=""
cleanup() {
  stop_by_pid "$agent_pid" 50
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A self-signed server certificate (ECDSA P-256, what a cert-manager issuer hands out by default).
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=127.0.0.1 \
  -addext subjectAltName=IP:127.0.0.1 -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
printf 'tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n' >"$work/tls.yml"
hash=$(htpasswd -nbBC 10 "" bench | tr -d ':\n')
printf 'tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\nbasic_auth_users:\n  prometheus: %s\n' \
  "$hash" >"$work/tls_auth.yml"

# wrk's Lua hook for the Authorization header (base64 of prometheus:bench).
printf 'wrk.headers["Authorization"] = "Basic %s"\n' "$(printf 'prometheus:bench' | base64)" >"$work/auth.lua"

echo "host: nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg); wrk -t$threads -c$conns -d${duration}s"
printf '%-14s %10s %10s %10s %10s %12s\n' mode p50_ms p90_ms p99_ms req_s agent_cpu_%
run() {
  local mode=$1 scheme=$2 config=$3 lua=$4
  local args=(--simulate=scenarios/demo.yaml serve --listen 127.0.0.1:0 --no-history --events-socket none)
  [[ -n $config ]] && args+=(--web.config.file "$work/$config")
  "$build/gpuscope" "${args[@]}" >/dev/null 2>"$work/$mode.log" &
  agent_pid=$!
  local addr
  addr=$(listen_address "$work/$mode.log" "$agent_pid") || exit 1
  sleep 2  # first readings
  local cpu0 cpu1
  cpu0=$(awk '{print $14+$15}' "/proc/$agent_pid/stat")
  local wrk_args=(-t"$threads" -c"$conns" -d"${duration}s" --latency)
  [[ -n $lua ]] && wrk_args+=(-s "$work/$lua")
  wrk "${wrk_args[@]}" "$scheme://$addr/metrics" >"$work/$mode.wrk" 2>&1
  cpu1=$(awk '{print $14+$15}' "/proc/$agent_pid/stat")
  grep -q 'Non-2xx' "$work/$mode.wrk" && { echo "tls_latency: $mode answered non-2xx:" >&2; cat "$work/$mode.wrk" >&2; exit 1; }
  python3 - "$mode" "$work/$mode.wrk" "$cpu0" "$cpu1" "$duration" <<'PY'
import re, sys
mode, path, c0, c1, dur = sys.argv[1:]
text = open(path).read()
def ms(label):
    m = re.search(rf"^\s*{label}\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u == "us" else v * 1000 if u == "s" else v
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
cpu = (int(c1) - int(c0)) / 100 / float(dur) * 100
print(f"{mode:<14} {ms('50%'):>10.2f} {ms('90%'):>10.2f} {ms('99%'):>10.2f} {rps:>10.0f} {cpu:>12.0f}")
PY
  stop_by_pid "$agent_pid" 50
  agent_pid=""
}
run plain http "" ""
run tls https tls.yml ""
run tls+basic https tls_auth.yml auth.lua
