#!/usr/bin/env bash
# A simulated fleet: N gpuscope agents (mixed scenarios, each its own node name through NODE_NAME, as
# the DaemonSet sets it) scraped by one real Prometheus that runs the fleet roll-ups
# (deploy/prometheus/fleet.rules.yml). Reports what a central Prometheus pays per node: series, bytes
# per scrape (plain and gzip, as Prometheus asks), samples ingested per second, scrape time, its own
# memory and CPU per node, and what that comes to at 1,000 and 10,000 nodes; then the roll-ups'
# answers, to show they run over a real fleet's series.
#
# Usage: bench/fleet.sh [BUILD_DIR (default build)]
# Env:   N agents (default 50), DURATION seconds of scraping before the figures (default 150),
#        SCRAPE_INTERVAL (default 15s), INTERVAL the agents' reading interval (default 1s),
#        KEEP=1 keeps the work dir, PROMETHEUS (default: from PATH).
# Not a CI test. Traffic goes to 127.0.0.1 only; every process started is stopped by PID on exit.
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

build=${1:-build}
n=${N:-50}
duration=${DURATION:-150}
scrape_interval=${SCRAPE_INTERVAL:-15s}
interval=${INTERVAL:-1s}
prometheus=${PROMETHEUS:-prometheus}
for tool in "$prometheus" curl ss python3; do
  command -v "$tool" >/dev/null || { echo "fleet: $tool not found" >&2; exit 2; }
done
[[ -x $build/gpuscope ]] || { echo "fleet: no $build/gpuscope (build it first)" >&2; exit 2; }
agent_bin=$build/gpuscope

# A mix of nodes: mostly healthy training and inference, some idle, a straggler, an unhealthy node, a
# node with a GPU in MIG mode.
scenarios=(demo.yaml inference_bursty.yaml idle.yaml straggler.yaml data_starved.yaml mixed_a100.yaml
           unhealthy_node.yaml small_kernels.yaml memory_bound.yaml power_cap.yaml mig.yaml)

work=$(mktemp -d /tmp/gpuscope-fleet.XXXXXX)
pids=() prom_pid=""
cleanup() {
  for p in "${pids[@]}"; do stop_by_pid "$p" 50; done
  stop_by_pid "$prom_pid" 100
  if [[ ${KEEP:-0} == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "host: nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg) $("$prometheus" --version 2>&1 | head -n1)"
echo "fleet: $n agents, readings every $interval, scraped every $scrape_interval for ${duration}s"

# 1. The agents, each on a port of its own (port 0; each logs the address it got).
addrs=()
for i in $(seq 0 $((n - 1))); do
  scen=${scenarios[$((i % ${#scenarios[@]}))]}
  node=$(printf 'gpu-node-%03d' "$i")
  mkdir -p "$work/agent-$i"
  NODE_NAME=$node "$agent_bin" --simulate="scenarios/$scen" serve --listen 127.0.0.1:0 --interval "$interval" \
    --data-dir "$work/agent-$i" --events-socket none >/dev/null 2>"$work/agent-$i.log" &
  pids+=($!)
done
for i in $(seq 0 $((n - 1))); do
  addr=$(listen_address "$work/agent-$i.log" "${pids[$i]}") || { echo "fleet: agent $i did not come up" >&2; exit 1; }
  addrs+=("$addr")
done

# 2. Prometheus: every agent a target, itself too (its ingestion figures), the fleet rules evaluated at
# the scrape interval.
cp deploy/prometheus/fleet.rules.yml "$work/"
fleet_config() {
  {
    printf 'global:\n  scrape_interval: %s\n  evaluation_interval: %s\nrule_files:\n  - fleet.rules.yml\n' \
      "$scrape_interval" "$scrape_interval"
    printf 'scrape_configs:\n  - job_name: prometheus\n    static_configs:\n      - targets: ["127.0.0.1:%s"]\n' "$1"
    printf '  - job_name: gpuscope\n    static_configs:\n      - targets:\n'
    for a in "${addrs[@]}"; do printf '          - "%s"\n' "$a"; done
  } >"$work/prometheus.yml"
}
start_prometheus "$work" fleet_config || { echo "fleet: Prometheus did not start" >&2; exit 1; }
prom_rss_start=$(ps -o rss= -p "$prom_pid")

# 3. Bytes per scrape, once per agent while Prometheus warms up.
plain=0 gz=0
for a in "${addrs[@]}"; do
  plain=$((plain + $(curl -fsS --max-time 10 "http://$a/metrics" | wc -c)))
  gz=$((gz + $(curl -fsS --max-time 10 -H 'Accept-Encoding: gzip' "http://$a/metrics" | wc -c)))
done

sleep "$duration"

# 4. The figures, from Prometheus itself.
q() { curl -fsS --max-time 30 --data-urlencode "query=$1" "http://$prom_addr/api/v1/query"; }
val() { q "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "nan")'; }
series_per_node=$(val 'avg(scrape_samples_scraped{job="gpuscope"})')
up=$(val 'sum(up{job="gpuscope"})')
scrape_ms=$(val 'avg(scrape_duration_seconds{job="gpuscope"}) * 1000')
samples_s=$(val 'sum(rate(prometheus_tsdb_head_samples_appended_total[1m]))')
head_series=$(val 'prometheus_tsdb_head_series')
prom_cpu=$(awk -v p="$prom_pid" 'BEGIN{getline l < ("/proc/" p "/stat"); split(l,f," "); print (f[14]+f[15])/100}')
prom_rss=$(ps -o rss= -p "$prom_pid")
elapsed=$(awk -v p="$prom_pid" 'BEGIN{getline u < "/proc/uptime"; split(u,a," "); getline l < ("/proc/" p "/stat"); split(l,f," "); print a[1]-f[22]/100}')
agents_cpu=0
for p in "${pids[@]}"; do
  agents_cpu=$(awk -v p="$p" -v s="$agents_cpu" 'BEGIN{getline l < ("/proc/" p "/stat"); split(l,f," "); print s+(f[14]+f[15])/100}')
done

python3 - "$n" "$up" "$series_per_node" "$plain" "$gz" "$scrape_ms" "$samples_s" "$head_series" \
  "$prom_rss_start" "$prom_rss" "$prom_cpu" "$elapsed" "$agents_cpu" "$scrape_interval" <<'PY'
import sys
n, up, spn, plain, gz, scrape_ms, samples_s, head, rss0, rss, pcpu, el, acpu, si = sys.argv[1:]
n=int(n); spn=float(spn); plain=int(plain); gz=int(gz); samples_s=float(samples_s); head=float(head)
rss0=int(rss0)*1024; rss=int(rss)*1024; pcpu=float(pcpu); el=float(el); acpu=float(acpu)
print(f"targets up: {up} of {n}")
print(f"series per node (samples per scrape): {spn:.0f}")
print(f"bytes per scrape: {plain/n:.0f} plain, {gz/n:.0f} gzip")
print(f"scrape duration: {float(scrape_ms):.1f} ms (avg)")
si_s = float(si[:-1]) * {"s": 1, "m": 60}[si[-1]]
per_node_s = spn / si_s
print(f"Prometheus ingestion: {per_node_s:.1f} samples/s per node ({spn:.0f} series every {si}); measured "
      f"{samples_s:.0f} samples/s in all (with its own series and the roll-ups); head series {head:.0f}")
per_series = (rss - rss0) / head if head else float('nan')
print(f"Prometheus: RSS {rss/2**20:.0f} MiB ({rss0/2**20:.0f} at start; ~{per_series:.0f} B per head series), "
      f"CPU {100*pcpu/el:.1f} % of a core over {el:.0f} s")
print(f"agents: {100*acpu/el/n:.2f} % of a core each (simulated GPUs, all on this host)")
for nodes in (1000, 10000):
    print(f"at {nodes} nodes: {per_node_s*nodes:,.0f} samples/s, {spn*nodes:,.0f} head series,"
          f" ~{per_series*spn*nodes/2**30:.1f} GiB of Prometheus head memory at this run's bytes per series,"
          f" {gz/n*nodes*8/si_s/1e6:.1f} Mbit/s of scrapes (gzip)")
PY

echo "fleet roll-ups:"
for e in cluster:gpus:count cluster:sm_active:avg10m cluster:gpus_idle:count cluster:gpus_unhealthy:count \
         cluster:gpu_cost_dollars_per_hour:rate1h cluster:gpu_idle_cost_dollars_per_hour:rate1h \
         'count(node_model:sm_active:ratio_to_median < 0.6)' cluster:mig_gpus_idle:sum \
         'sum(cluster_profile:mig_instances_idle:count)'; do
  printf '  %-50s %s\n' "$e" "$(val "$e")"
done
