# Sourced by the bench scripts (after stop_by_pid.sh): start what they measure on 127.0.0.1 and wait
# for it, bounded.

# listen_address LOG PID [TENTHS]: the address a `gpuscope serve --listen 127.0.0.1:0` logged
# ("msg=listening address=127.0.0.1:PORT"), waiting up to TENTHS tenths of a second (default 600);
# empty, with the log on stderr, when the process exited or never said.
listen_address() {
  local log=$1 pid=$2 tenths=${3:-600} addr=""
  for _ in $(seq 1 "$tenths"); do
    addr=$(sed -n 's/.*msg=listening address=\([^ ]*\).*/\1/p' "$log" | head -n1)
    [[ -n $addr ]] && { echo "$addr"; return 0; }
    kill -0 "$pid" 2>/dev/null || { echo "agent $pid exited:" >&2; cat "$log" >&2; return 1; }
    sleep 0.1
  done
  echo "agent $pid did not log its address within $((tenths / 10)) s" >&2
  return 1
}

# start_prometheus DIR WRITE_CONFIG [PROMETHEUS_ARGS...]: Prometheus on a free 127.0.0.1 port with its
# storage in DIR/prom and its log in DIR/prometheus.log. bash cannot bind port 0, so it picks a port,
# calls WRITE_CONFIG PORT (a function that writes DIR/prometheus.yml; it may name the port, e.g. to
# scrape Prometheus itself), and retries with another port when that one was taken meanwhile. Sets
# prom_pid and prom_addr; returns 1 when Prometheus does not come up.
start_prometheus() {
  local dir=$1 write_config=$2 port
  shift 2
  prom_pid="" prom_addr=""
  for _ in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    [[ -z $(ss -Hltn "sport = :$port") ]] || continue
    "$write_config" "$port"
    "${PROMETHEUS:-prometheus}" --config.file="$dir/prometheus.yml" --storage.tsdb.path="$dir/prom" \
      --web.listen-address="127.0.0.1:$port" "$@" >"$dir/prometheus.log" 2>&1 &
    prom_pid=$!
    for _ in $(seq 1 300); do
      kill -0 "$prom_pid" 2>/dev/null || break
      if curl -fsS --max-time 2 -o /dev/null "http://127.0.0.1:$port/-/ready" 2>/dev/null; then
        prom_addr=127.0.0.1:$port
        return 0
      fi
      sleep 0.1
    done
    stop_by_pid "$prom_pid"
    prom_pid=""
    grep -q 'address already in use' "$dir/prometheus.log" || { cat "$dir/prometheus.log" >&2; return 1; }
  done
  echo "Prometheus did not start on a free port" >&2
  return 1
}
