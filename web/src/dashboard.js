// The dashboard's main loop: what is fetched when, and what is redrawn from it. While the page is
// visible it refreshes once a second: the GPUs' latest values (api/v1/gpus, the snapshot the agent
// already holds) and the charts' new points (one incremental query_range for all charts). The verdicts,
// alerts and cost move slower and are asked for every few seconds; build info once. A hidden page asks
// for nothing. When the agent does not answer, a banner says so and the page retries, backing off.

import * as api from './api.js';
import { AlertList } from './alert_list.js';
import { chartQuery, seriesKey } from './chart_specs.js';
import { ChartPanels } from './charts.js';
import { CostSummary, costQuery } from './cost_summary.js';
import { GpuCards } from './gpu_cards.js';
import { ProcessTable } from './process_table.js';
import { SeriesWindow } from './series_window.js';

const kRefreshMs = 1000;
// The diagnosis loop evaluates every 5 s by default, rules every few seconds; cost moves by cents.
const kSlowTasksMs = { diagnosis: 5000, alerts: 5000, cost: 10000 };
const kMaxBackoffMs = 10000;
const kRanges = { '5m': 300, '15m': 900, '1h': 3600, '6h': 21600, '24h': 86400 };
const kDefaultRange = '15m';

const $ = (id) => document.getElementById(id);

const state = {
  rangeName: kDefaultRange,
  gpu: 'all',
  window: new SeriesWindow(kRanges[kDefaultRange]),
  gpus: null, // the last api/v1/gpus answer
  offset: 0, // agent clock minus this browser's clock, in seconds
  lastRun: {}, // slow task → Date.now() of its last start
  failures: 0,
  timer: null,
  running: false,
  rerun: false,
  buildInfo: null,
  inventory: '',
};

const cards = new GpuCards($('cards'));
const charts = new ChartPanels({
  health: $('charts-health'), throughput: $('charts-throughput'), bottlenecks: $('charts-bottlenecks'),
});
const processes = new ProcessTable($('processes'));
const alerts = new AlertList($('alert-list'), $('alerts-count'));
const cost = new CostSummary({ total: $('cost-total'), idle: $('cost-idle'), unused: $('cost-unused'), rate: $('cost-rate') });

const hidden = () => document.visibilityState !== 'visible';
const agentNow = () => Date.now() / 1000 + state.offset;
const shownGpus = () => (state.gpus?.gpus || [])
  .map((g) => String(g.index)).filter((i) => state.gpu === 'all' || state.gpu === i);

// ---- what each refresh fetches ----

async function refreshGpus() {
  const sent = Date.now();
  const body = await api.fetchGpus();
  const received = Date.now();
  if (body.sample && Number.isFinite(body.sample.time_seconds)) {
    // The agent's clock at the answer, against ours halfway through the request: query ranges are asked
    // in the agent's time, so a browser whose clock is off still gets the newest points and no future ones.
    state.offset = body.sample.time_seconds + (body.sample.age_seconds || 0) - (sent + received) / 2000;
  }
  state.gpus = body;
  const inventory = body.gpus.map((g) => `${g.index}:${g.uuid}`).join(',');
  cards.update(body.gpus);
  if (inventory !== state.inventory) {
    state.inventory = inventory;
    showInventory(body);
    cards.filter(state.gpu);
  }
  processes.update(body.gpus, state.gpu);
}

async function refreshCharts() {
  const win = state.window;
  const range = win.nextRange(agentNow());
  if (!range) return;
  const result = await api.queryRange(chartQuery(), range.start, range.end, win.step);
  if (win !== state.window) return; // the range changed while this was in flight
  win.apply(range, result, seriesKey);
  drawCharts();
}

function drawCharts() {
  charts.update(state.window, shownGpus());
}

const slowTasks = {
  diagnosis: async () => {
    try {
      cards.updateDiagnosis(await api.fetchDiagnosis());
    } catch (e) {
      if (e.unreachable) throw e;
      cards.updateDiagnosis(null); // --no-diagnosis, or none evaluated yet: the cards say so
    }
  },
  alerts: async () => alerts.update(await api.fetchAlerts()),
  cost: async () => cards.updatePrices(cost.update(await api.query(costQuery()))),
};

async function loadBuildInfo() {
  state.buildInfo = await api.fetchBuildInfo();
  $('version').textContent = state.buildInfo.application || `gpuscope ${state.buildInfo.version}`;
}

// ---- the loop ----

async function tick() {
  state.timer = null;
  if (hidden()) return;
  state.running = true;
  const started = Date.now();
  const errors = [];
  const run = async (fn) => {
    try {
      await fn();
    } catch (e) {
      errors.push(e);
    }
  };
  // The first answer gives the agent's clock and GPUs, which the range query needs.
  const first = !state.gpus;
  if (first) await run(refreshGpus);
  if (state.gpus) {
    const jobs = [run(refreshCharts)];
    if (!first) jobs.push(run(refreshGpus));
    for (const [name, task] of Object.entries(kSlowTasksMs)) {
      if (!(started - (state.lastRun[name] ?? 0) >= task)) continue;
      state.lastRun[name] = started;
      jobs.push(run(slowTasks[name]));
    }
    if (!state.buildInfo) jobs.push(run(loadBuildInfo));
    await Promise.all(jobs);
  }
  state.running = false;
  report(errors);
  const delay = state.failures > 0
    ? Math.min(kMaxBackoffMs, kRefreshMs * 2 ** (state.failures - 1))
    : Math.max(200, kRefreshMs - (Date.now() - started));
  schedule(state.rerun ? 0 : delay);
  state.rerun = false;
}

function schedule(delayMs) {
  if (state.timer) clearTimeout(state.timer);
  state.timer = null;
  if (hidden()) {
    setLive('paused', 'paused while the page is hidden');
    return;
  }
  state.timer = setTimeout(tick, delayMs);
}

// Refresh now (a control changed): at once, or right after the refresh in flight.
function refreshSoon() {
  if (state.running) state.rerun = true;
  else schedule(0);
}

function report(errors) {
  const banner = $('banner');
  const bugs = errors.filter((e) => !(e instanceof api.ApiError));
  // A fault of the page itself is not the agent's: let it reach the console (and the tests).
  for (const e of bugs) setTimeout(() => { throw e; });
  const apiErrors = errors.filter((e) => e instanceof api.ApiError);
  const down = apiErrors.find((e) => e.unreachable);
  if (down) {
    state.failures++;
    banner.textContent = 'agent unreachable, retrying';
    banner.title = down.message;
    banner.dataset.kind = 'down';
    banner.hidden = false;
    setLive('retrying', down.message);
    return;
  }
  state.failures = 0;
  if (apiErrors.length) {
    banner.textContent = apiErrors.map((e) => e.message).join('; ');
    banner.title = '';
    banner.dataset.kind = 'warn';
    banner.hidden = false;
  } else {
    banner.hidden = true;
    banner.textContent = '';
  }
  setLive('live', 'refreshes every second while this page is visible');
}

function setLive(text, title) {
  const live = $('live');
  live.textContent = text;
  live.dataset.state = text;
  live.title = title;
}

// ---- controls and static parts ----

function showInventory(body) {
  const { system, gpus } = body;
  const host = system?.hostname || '';
  $('host').textContent = host;
  $('footer-host').textContent = host;
  document.title = host ? `gpuscope · ${host}` : 'gpuscope';
  const facts = [`${gpus.length} GPU${gpus.length === 1 ? '' : 's'}`];
  if (system?.driver_version) facts.push(`driver ${system.driver_version}`);
  if (system?.cuda_driver_version) facts.push(`CUDA ${system.cuda_driver_version}`);
  if (system?.simulated) facts.push('simulated');
  $('gpu-count').textContent = facts.join(' · ');

  const select = $('gpu-filter');
  const options = [new Option('all', 'all')];
  for (const g of gpus) options.push(new Option(`${g.index}${g.name ? ` · ${g.name.replace(/^NVIDIA /, '')}` : ''}`, String(g.index)));
  select.replaceChildren(...options);
  if (state.gpu !== 'all' && !gpus.some((g) => String(g.index) === state.gpu)) state.gpu = 'all';
  select.value = state.gpu;
}

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.get('range') in kRanges) state.rangeName = params.get('range');
  if (params.get('gpu')) state.gpu = params.get('gpu');
}

function writeHash() {
  const params = new URLSearchParams({ range: state.rangeName, gpu: state.gpu });
  history.replaceState(null, '', `#${params}`);
}

function showRange() {
  for (const b of $('range').querySelectorAll('button')) b.setAttribute('aria-pressed', String(b.textContent === state.rangeName));
}

function setRange(name) {
  if (!(name in kRanges) || name === state.rangeName) return;
  state.rangeName = name;
  state.window = new SeriesWindow(kRanges[name]);
  showRange();
  writeHash();
  drawCharts();
  refreshSoon();
}

function setGpu(gpu) {
  state.gpu = gpu;
  writeHash();
  cards.filter(gpu);
  if (state.gpus) processes.update(state.gpus.gpus, gpu);
  drawCharts();
}

readHash();
state.window = new SeriesWindow(kRanges[state.rangeName]);
showRange();
$('range').addEventListener('click', (e) => {
  const b = e.target.closest('button');
  if (b) setRange(b.textContent);
});
$('gpu-filter').addEventListener('change', (e) => setGpu(e.target.value));
document.addEventListener('visibilitychange', () => {
  if (hidden()) schedule(0); // clears the timer and says "paused"
  else if (!state.running) schedule(0);
});
schedule(0);
