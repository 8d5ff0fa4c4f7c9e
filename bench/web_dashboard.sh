#!/usr/bin/env bash
# The web dashboard's weight and cost on 8 simulated H100s (scenarios/demo.yaml, a reading every 1 s):
#  - page weight: every file the page loads (HTML, CSS, JS, uPlot) as sent gzip-encoded; goal < 150 KB.
#    The API answers of the first load are printed apart (they are data, not the page).
#  - first paint / first contentful paint on loopback (the Performance API, median of 5 cold loads in
#    Debian's Chromium), and when all charts first hold points; goal FCP < 300 ms.
#  - agent CPU (utime+stime from /proc/PID/stat, and schedstat's ns) over DURATION seconds with no page
#    open, then over DURATION seconds with one visible page refreshing every second; goal: the page adds
#    < 1 % of one core.
#
# Usage: bench/web_dashboard.sh [DURATION_SECONDS (default 60)] [BINARY (default build/gpuscope)]
# Needs node, /usr/bin/chromium and web/node_modules (npm ci in web/). Builds nothing. Traffic stays on
# 127.0.0.1; the agent it starts is stopped by PID on any exit (the browser by playwright).
set -euo pipefail
# shellcheck source=bench/stop_by_pid.sh
source "$(dirname "${BASH_SOURCE[0]}")/stop_by_pid.sh"
# shellcheck source=bench/local_services.sh
source "$(dirname "${BASH_SOURCE[0]}")/local_services.sh"

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

duration=${1:-60}
binary=${2:-build/gpuscope}
[[ $duration =~ ^[0-9]+$ && $duration -gt 0 ]] || { echo "web_dashboard: DURATION_SECONDS must be a positive integer" >&2; exit 2; }
[[ -x $binary ]] || { echo "web_dashboard: no executable at $binary (build it first)" >&2; exit 2; }
command -v node >/dev/null || { echo "web_dashboard: node not found" >&2; exit 2; }
[[ -x /usr/bin/chromium ]] || { echo "web_dashboard: /usr/bin/chromium not found" >&2; exit 2; }
[[ -d web/node_modules/playwright-core ]] || { echo "web_dashboard: web/node_modules missing (npm ci in web/)" >&2; exit 2; }

hz=$(getconf CLK_TCK)
work=$(mktemp -d)
agent_pid=""
# shellcheck disable=SC2317  # invoked by the EXIT trap
cleanup() {
  stop_by_pid "$agent_pid"
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }
sched_ns() { cat /proc/"$1"/task/*/schedstat | awk '{s += $1} END {printf "%.0f", s}'; }
now_s() { cut -d' ' -f1 /proc/uptime; }

: >"$work/agent.log"
"$binary" --simulate=scenarios/demo.yaml serve --listen 127.0.0.1:0 --data-dir "$work/history" \
  --events-socket none 2>"$work/agent.log" >/dev/null &
agent_pid=$!
address=$(listen_address "$work/agent.log" "$agent_pid" 100) || { echo "web_dashboard: no agent" >&2; exit 1; }
url="http://$address/"
echo "agent pid=$agent_pid url=$url duration=${duration}s nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"

# The browser part: MODE=load (weight and paint timings) or MODE=hold (one page open for HOLD seconds).
read -r -d '' browser_js <<'EOF' || true
import { chromium } from 'playwright-core';
const url = process.env.URL;
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
try {
  if (process.env.MODE === 'load') {
    const fp = [], fcp = [], charts = [];
    let files = null, api = null;
    for (let i = 0; i < 5; i++) {
      const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
      const page = await context.newPage();
      const seen = [];
      page.on('requestfinished', async (r) => seen.push({ url: r.url(), type: r.resourceType(), sizes: await r.sizes() }));
      await page.goto(url);
      await page.waitForFunction(() => [...document.querySelectorAll('[data-chart]')]
        .every((p) => Number(p.dataset.points) > 0 || p.querySelector('.overlay:not([hidden])')), null, { timeout: 30000 });
      const t = await page.evaluate(() => Object.fromEntries(performance.getEntriesByType('paint').map((e) => [e.name, e.startTime])));
      charts.push(await page.evaluate(() => performance.now()));
      fp.push(t['first-paint']);
      fcp.push(t['first-contentful-paint']);
      await new Promise((r) => setTimeout(r, 500));
      if (i === 0) {
        files = seen.filter((s) => ['document', 'script', 'stylesheet'].includes(s.type));
        api = seen.filter((s) => s.type === 'fetch');
      }
      await context.close();
    }
    let total = 0;
    for (const f of files) {
      total += f.sizes.responseBodySize;
      console.log(`  file ${new URL(f.url).pathname.padEnd(28)} ${(f.sizes.responseBodySize / 1024).toFixed(1).padStart(6)} KB sent`);
    }
    console.log(`page weight: ${(total / 1024).toFixed(1)} KB in ${files.length} files (gzip as sent); GOAL < 150 KB: ${total < 150 * 1024 ? 'met' : 'MISSED'}`);
    const apiBytes = api.reduce((s, f) => s + f.sizes.responseBodySize, 0);
    console.log(`first load's API answers: ${(apiBytes / 1024).toFixed(1)} KB in ${api.length} requests`);
    console.log(`first paint: median ${median(fp).toFixed(0)} ms, first contentful paint: median ${median(fcp).toFixed(0)} ms `
                + `(5 cold loads: ${fcp.map((x) => x.toFixed(0)).join(', ')}); GOAL FCP < 300 ms: ${median(fcp) < 300 ? 'met' : 'MISSED'}`);
    console.log(`all charts drawn by (page time, at most): median ${median(charts).toFixed(0)} ms`);
  } else {
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    const page = await context.newPage();
    let requests = 0, bytes = 0;
    page.on('requestfinished', async (r) => { requests++; bytes += (await r.sizes()).responseBodySize; });
    await page.goto(url);
    console.log('page open');
    await new Promise((r) => setTimeout(r, Number(process.env.HOLD) * 1000));
    console.log(`page made ${requests} requests, ${(bytes / 1024).toFixed(0)} KB received, over ${process.env.HOLD} s`);
    await context.close();
  }
} finally {
  await browser.close();
}
EOF

run_browser() { (cd web && URL=$url MODE=$1 HOLD=${2:-0} node --input-type=module -e "$browser_js"); }

# Measures the agent's CPU over `duration` seconds; prints "% of one core" by ticks and by schedstat.
measure() {
  local t0 n0 u0 t1 n1 u1
  t0=$(cpu_ticks "$agent_pid"); n0=$(sched_ns "$agent_pid"); u0=$(now_s)
  sleep "$duration"
  t1=$(cpu_ticks "$agent_pid"); n1=$(sched_ns "$agent_pid"); u1=$(now_s)
  awk -v t="$((t1 - t0))" -v hz="$hz" -v n="$((n1 - n0))" -v w0="$u0" -v w1="$u1" -v what="$1" 'BEGIN {
    w = w1 - w0
    printf "agent CPU %-22s %.3f %% of one core (utime+stime %d ticks over %.1f s), schedstat %.3f %%\n", what, 100 * t / hz / w, t, w, 100 * n / 1e9 / w
  }'
}

echo "== page weight and paint (agent warming up meanwhile)"
run_browser load

echo "== agent CPU"
sleep 5  # the loads above have ended
no_page=$(measure "with no page open:")
echo "$no_page"
run_browser hold $((duration + 10)) >"$work/hold.log" 2>&1 &
browser_pid=$!
for _ in $(seq 1 300); do grep -q 'page open' "$work/hold.log" && break; sleep 0.1; done
sleep 5  # past the page's first full-window fetch, into its steady 1 s refresh
with_page=$(measure "with one page open:")
echo "$with_page"
wait "$browser_pid" || { echo "web_dashboard: the browser run failed:" >&2; cat "$work/hold.log" >&2; exit 1; }
grep -v 'page open' "$work/hold.log"
awk -v a="${no_page#*: }" -v b="${with_page#*: }" 'BEGIN {
  split(a, x, " "); split(b, y, " "); d = y[1] - x[1]
  printf "the open page costs the agent %.3f %% of one core; GOAL < 1 %%: %s\n", d, (d < 1 ? "met" : "MISSED")
}'
grep -E 'level=(warn|error)' "$work/agent.log" | grep -v 'events socket' || true
