# Sourced by the bench scripts. stop_by_pid PID [TENTHS]: SIGTERM exactly the process this script
# started (never by name), give it TENTHS tenths of a second (default 20) to exit, then SIGKILL, and
# reap it so no orphan or zombie is left.
stop_by_pid() {
  local pid=$1 tenths=${2:-20}
  [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 "$tenths"); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
