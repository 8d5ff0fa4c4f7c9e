// The agent's web dashboard in a real browser (Debian's Chromium driven by playwright-core) against
// agents on the simulator that this test starts: the page shows what the API says, draws its charts,
// works below a route prefix, for 1 and 16 GPUs and on a phone, shows a MIG GPU's instances, stops
// asking while hidden, and says when the agent is away. Run: GPUSCOPE_EXE=build/gpuscope node --test web/test/dashboard.test.mjs
// Screenshots go to $GPUSCOPE_SCREENSHOT_DIR (default: the working directory, CTest's build dir).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { chromium } from 'playwright-core';

import { Agent, sourceDir, tempDir } from './agent_process.mjs';

// Deadlines are failure-only fallbacks for polls; nothing here waits a fixed time to judge speed.
const kDeadlineMs = 30000;
const kPollMs = 100;
const kDesktop = { width: 1440, height: 900 };
const kPhone = { width: 390, height: 844 };
const kAllCharts = ['temperature', 'power', 'errors', 'gpu_util', 'sm_active', 'sm_occupancy', 'tensor_active', 'pcie_dram'];

const scenarios = path.join(sourceDir(), 'scenarios');
const screenshotDir = process.env.GPUSCOPE_SCREENSHOT_DIR || process.cwd();
const scratch = tempDir('gpuscope-web-test-');

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});
after(async () => {
  await browser?.close();
  fs.rmSync(scratch, { recursive: true, force: true });
});

async function until(what, probe, timeoutMs = kDeadlineMs) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    last = await probe();
    if (last) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, kPollMs));
  }
}

// A page that records what would be a fault: console errors, uncaught exceptions, requests that failed
// or answered >= 400; and each api/v1/gpus and api/v1/diagnosis answer it got (what it shows).
async function openPage(url, viewport = kDesktop, colorScheme = 'dark') {
  const context = await browser.newContext({ viewport, colorScheme });
  const page = await context.newPage();
  const rec = { problems: [], requests: [], inflight: 0, gpus: null, diagnosis: null, context, page };
  page.on('request', () => { rec.inflight++; });
  page.on('requestfinished', () => { rec.inflight--; });
  page.on('requestfailed', () => { rec.inflight--; });
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') rec.problems.push(`console ${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => rec.problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => rec.problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('request', (r) => rec.requests.push({ url: r.url(), at: Date.now() }));
  page.on('response', async (r) => {
    if (r.status() >= 400) rec.problems.push(`HTTP ${r.status()}: ${r.url()}`);
    const u = new URL(r.url());
    rec.inflight++; // until its body is read, for freeze()
    try {
      if (u.pathname.endsWith('/api/v1/gpus')) rec.gpus = await r.json();
      else if (u.pathname.endsWith('/api/v1/diagnosis')) rec.diagnosis = (await r.json()).data;
    } catch { /* a body gone with its page */ } finally {
      rec.inflight--;
    }
  });
  await page.goto(url);
  return rec;
}

const setVisibility = (page, state) => page.evaluate((s) => {
  Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => s });
  Object.defineProperty(document, 'hidden', { configurable: true, get: () => s === 'hidden' });
  document.dispatchEvent(new Event('visibilitychange'));
}, state);

// Stops the page's refresh and waits for what was in flight, so the DOM holds the last answers recorded;
// the number of requests made by then.
async function freeze(rec) {
  await setVisibility(rec.page, 'hidden');
  await until('the page to pause', () => rec.page.evaluate(() => document.getElementById('live').dataset.state === 'paused'));
  await until('the requests in flight to end', () => rec.inflight === 0);
  return rec.requests.length;
}

// What each card shows, as its data-* attributes.
const readCards = (page) => page.evaluate(() => [...document.querySelectorAll('#cards .card')].map((c) => {
  const f = (name) => c.querySelector(`[data-field="${name}"]`);
  return {
    gpu: c.dataset.gpu,
    up: c.dataset.up,
    hidden: c.hidden,
    verdict: c.querySelector('.verdict').dataset.verdict,
    temp: f('gpu_temp_celsius').dataset.value,
    power: f('power_usage_watts').dataset.value,
    powerLimit: f('power_usage_watts').dataset.limit,
    memUsed: f('fb_used_mib').dataset.value,
    memTotal: f('fb_used_mib').dataset.total,
    util: f('gpu_util_percent').dataset.value,
    smActive: f('gpu_util_percent').dataset.smActive,
    processes: f('process_count').dataset.value,
    price: f('hourly_price_dollars').dataset.value,
  };
}));

const num = (s) => (s === '' || s === undefined ? undefined : Number(s));

// Every card's values are the API answer's for the same reading (the last api/v1/gpus the page got).
function assertCardsEqualApi(cards, body) {
  assert.equal(cards.length, body.gpus.length, 'one card per GPU');
  for (const g of body.gpus) {
    const c = cards.find((x) => x.gpu === String(g.index));
    assert.ok(c, `a card for GPU ${g.index}`);
    assert.equal(c.up, String(g.up));
    const v = g.values || {};
    assert.equal(num(c.temp), v.gpu_temp_celsius, `GPU ${g.index} temperature`);
    assert.equal(num(c.power), v.power_usage_watts, `GPU ${g.index} power`);
    assert.equal(num(c.powerLimit), v.enforced_power_limit_watts, `GPU ${g.index} power limit`);
    assert.equal(num(c.memUsed), v.fb_used_mib, `GPU ${g.index} memory used`);
    assert.equal(num(c.memTotal), v.fb_total_mib, `GPU ${g.index} memory total`);
    assert.equal(num(c.util), v.gpu_util_percent, `GPU ${g.index} utilization`);
    assert.equal(num(c.smActive), v.sm_active_ratio, `GPU ${g.index} SM active`);
    assert.equal(num(c.processes), (g.processes || []).length, `GPU ${g.index} processes`);
  }
}

// What a chart's canvas shows: `painted`, pixels not transparent at all (axes, grid, lines), and `line`,
// pixels of a GPU's line colour (as the page gives it to the GPU's card) for the GPUs listed, or for all
// GPUs but those whose colour is near a threshold line's. The canvas is copied to one meant for reading
// back (reading uPlot's own canvas again and again makes Chromium warn on the console).
const canvasStats = (page, chart, gpus = null) => page.evaluate(([id, only]) => {
  const src = document.querySelector(`[data-chart="${id}"] canvas`);
  if (!src || src.width === 0) return { painted: 0, line: 0 };
  const copy = document.createElement('canvas');
  copy.width = src.width;
  copy.height = src.height;
  const ctx = copy.getContext('2d', { willReadFrequently: true });
  ctx.drawImage(src, 0, 0);
  const data = ctx.getImageData(0, 0, copy.width, copy.height).data;
  const rgb = (css) => {
    const probe = document.createElement('div');
    probe.style.color = css;
    document.body.append(probe);
    const m = getComputedStyle(probe).color.match(/\d+/g).map(Number);
    probe.remove();
    return m.slice(0, 3);
  };
  const near = (p, q, tol) => Math.abs(p[0] - q[0]) <= tol && Math.abs(p[1] - q[1]) <= tol && Math.abs(p[2] - q[2]) <= tol;
  const root = getComputedStyle(document.documentElement);
  const thresholds = ['--warn', '--crit'].map((v) => rgb(root.getPropertyValue(v).trim()));
  const colors = [...document.querySelectorAll('#cards .card')]
    .filter((c) => (only ? only.includes(c.dataset.gpu) : true))
    .map((c) => rgb(c.style.getPropertyValue('--gpu-color')))
    .filter((c) => only || !thresholds.some((t) => near(c, t, 40)));
  let painted = 0;
  let line = 0;
  for (let i = 0; i < data.length; i += 4) {
    if (data[i + 3] > 0) painted++;
    if (data[i + 3] >= 200 && colors.some((c) => near([data[i], data[i + 1], data[i + 2]], c, 12))) line++;
  }
  return { painted, line };
}, [chart, gpus]);

const linePixels = async (page, chart, gpus = null) => (await canvasStats(page, chart, gpus)).line;
const paintedPixels = async (page, chart) => (await canvasStats(page, chart)).painted;

const chartAttrs = (page) => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('[data-chart]')].map((p) => [
  p.dataset.chart, { lines: Number(p.dataset.lines || 0), points: Number(p.dataset.points || 0), overlay: p.querySelector('.overlay').hidden ? '' : p.querySelector('.overlay').textContent },
])));

const noHorizontalOverflow = (page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

function writeScenario(name, text) {
  const file = path.join(scratch, name);
  fs.writeFileSync(file, text);
  return file;
}

describe('the demo node (8 GPUs) with alerting rules', () => {
  let agent;
  before(async () => {
    const rules = writeScenario('web.rules.yml', `groups:
  - name: web
    rules:
      - alert: WebTestGpuWarm
        expr: DCGM_FI_DEV_GPU_TEMP{gpu="0"} > 0
        labels: {severity: warning}
        annotations: {summary: 'GPU {{ $labels.gpu }} at {{ $value }} C'}
      - alert: WebTestGpuWarmForAnHour
        expr: DCGM_FI_DEV_GPU_TEMP{gpu="1"} > 0
        for: 1h
`);
    agent = await new Agent({
      scenario: path.join(scenarios, 'demo.yaml'),
      args: ['--rules', rules, '--evaluation-interval', '1s', '--diagnosis.interval', '1s'],
    }).start();
  });
  after(async () => { await agent?.dispose(); });

  test('cards show the API values, charts draw, the verdict and alerts appear, with no errors', async () => {
    const rec = await openPage(agent.url());
    const { page } = rec;
    try {
      await until('8 cards', async () => (await readCards(page)).length === 8);
      await until('the charts to hold points of all 8 GPUs', async () => {
        const a = await chartAttrs(page);
        return a.temperature.lines === 8 && a.temperature.points >= 2 && a.pcie_dram.lines === 16;
      });
      // The data-starved GPU's verdict, as the diagnosis says it.
      await until('GPU 2 diagnosed as input starved', async () =>
        (await readCards(page)).find((c) => c.gpu === '2').verdict === 'input_starved');
      await until('a firing and a pending alert', () => page.evaluate(() =>
        !!document.querySelector('#alert-list li[data-state="firing"][data-alertname="WebTestGpuWarm"]')
        && !!document.querySelector('#alert-list li[data-state="pending"][data-alertname="WebTestGpuWarmForAnHour"]')));
      await until('the hourly prices', async () => (await readCards(page)).every((c) => Number(c.price) > 0));
      await until('a cost so far today', () => page.evaluate(() => Number(document.getElementById('cost-total').dataset.value) > 0));

      for (const chart of kAllCharts) {
        assert.ok(await paintedPixels(page, chart) > 0, `${chart}: the canvas is blank`);
      }
      // A fresh agent's few seconds are a short stub at the right of a 15-minute chart: poll until it shows.
      for (const chart of kAllCharts.filter((c) => c !== 'errors')) {
        await until(`${chart}: a GPU's line drawn`, async () => (await linePixels(page, chart)) > 20);
      }
      assert.equal((await chartAttrs(page)).errors.overlay, 'no XID or ECC errors in this window');

      await freeze(rec);
      const cards = await readCards(page);
      assertCardsEqualApi(cards, rec.gpus);
      for (const d of rec.diagnosis.gpus) {
        assert.equal(cards.find((c) => c.gpu === String(d.gpu)).verdict, d.verdict, `GPU ${d.gpu} verdict`);
      }
      // Prices as the agent's series has them.
      const prices = await agent.json(`api/v1/query?query=${encodeURIComponent('gpuscope_gpu_hourly_price_dollars')}`);
      for (const p of prices.data.result) {
        assert.equal(num(cards.find((c) => c.gpu === p.metric.gpu).price), Number(p.value[1]), `GPU ${p.metric.gpu} price`);
      }
      const header = await page.evaluate(() => ({
        host: document.getElementById('host').textContent,
        version: document.getElementById('version').textContent,
        links: [...document.querySelectorAll('footer nav a')].map((a) => a.getAttribute('href')),
        processes: document.querySelectorAll('#processes tbody tr[data-pid]').length,
        costToday: document.getElementById('cost-total').dataset.value,
        rate: document.getElementById('cost-rate').dataset.value,
      }));
      assert.equal(header.host, rec.gpus.system.hostname);
      const build = await agent.json('api/v1/status/buildinfo');
      assert.equal(header.version, build.data.application);
      for (const href of header.links) assert.ok(!href.startsWith('/') && !href.includes('//'), `${href} is relative`);
      assert.ok(header.links.includes('metrics') && header.links.includes('api/v1/query?query=DCGM_FI_DEV_GPU_TEMP'));
      assert.equal(header.processes, rec.gpus.gpus.reduce((n, g) => n + (g.processes || []).length, 0));
      // This agent started today with its counters at 0: today's cost is at most what they hold now.
      const spent = await agent.json(`api/v1/query?query=${encodeURIComponent('sum(gpuscope_cost_dollars_total)')}`);
      assert.ok(Number(header.costToday) > 0 && Number(header.costToday) <= Number(spent.data.result[0].value[1]) + 1e-9,
                `cost today ${header.costToday} of ${spent.data.result[0].value[1]} counted`);
      assert.ok(Math.abs(Number(header.rate) - prices.data.result.reduce((s, p) => s + Number(p.value[1]), 0)) < 1e-9, '$/h now');

      // The screenshot for the README, once the window holds some history.
      await setVisibility(page, 'visible');
      await until('the charts to hold 20 s', async () => (await chartAttrs(page)).temperature.points >= 20);
      fs.mkdirSync(screenshotDir, { recursive: true });
      await page.screenshot({ path: path.join(screenshotDir, 'dashboard-desktop.png') });
      await page.screenshot({ path: path.join(screenshotDir, 'dashboard-desktop-full.png'), fullPage: true });
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });

  test('on a phone: no horizontal scroll, charts full width', async () => {
    const rec = await openPage(agent.url(), kPhone, 'light');
    const { page } = rec;
    try {
      await until('the charts to draw', async () => (await chartAttrs(page)).temperature.points >= 2);
      await until('GPU 0 drawn', async () => (await linePixels(page, 'temperature')) > 20);
      assert.ok(await noHorizontalOverflow(page), 'the page scrolls sideways at 390 px');
      const widths = await page.evaluate(() => [...document.querySelectorAll('[data-chart]')].map((p) => p.getBoundingClientRect().width));
      for (const w of widths) assert.ok(w >= 390 - 40 && w <= 390, `a chart ${w} px wide on a 390 px screen`);
      await page.screenshot({ path: path.join(screenshotDir, 'dashboard-phone.png') });
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });

  test('a hidden page asks for nothing, and refreshes again once visible', async () => {
    const rec = await openPage(agent.url());
    const { page } = rec;
    try {
      await until('a few refreshes', async () => (await chartAttrs(page)).temperature.points >= 3);
      const n = await freeze(rec);
      // Three refresh periods: a page still polling would have asked several times.
      const quiet = Date.now() + 3000;
      await until('three refresh periods', () => Date.now() >= quiet, 10000);
      assert.equal(rec.requests.length, n, `requests while hidden: ${rec.requests.slice(n).map((r) => r.url).join(', ')}`);
      await setVisibility(page, 'visible');
      await until('refreshes after the page is shown again', () => rec.requests.length > n + 2);
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });

  test('the range picker and the GPU filter', async () => {
    const rec = await openPage(agent.url());
    const { page } = rec;
    try {
      await until('the charts to draw', async () => (await chartAttrs(page)).temperature.lines === 8);
      await page.selectOption('#gpu-filter', '3');
      await until('only GPU 3', async () => {
        const a = await chartAttrs(page);
        const cards = await readCards(page);
        return a.temperature.lines === 1 && a.pcie_dram.lines === 2 && cards.filter((c) => !c.hidden).map((c) => c.gpu).join() === '3';
      });
      const rows = await page.evaluate(() => [...document.querySelectorAll('#processes tbody tr[data-gpu]')].map((r) => r.dataset.gpu));
      assert.ok(rows.length > 0 && rows.every((g) => g === '3'), `process rows of GPU 3 only: ${rows}`);
      await until('GPU 3 drawn', async () => (await linePixels(page, 'temperature', ['3'])) > 20);
      assert.equal(await linePixels(page, 'temperature', ['0']), 0, 'GPU 0 still drawn');

      const before = rec.requests.length;
      await page.click('#range button[data-range="3600"]');
      await until('the 1h window fetched', () => rec.requests.slice(before).some((r) => {
        const u = new URL(r.url);
        return u.pathname.endsWith('query_range') && Number(u.searchParams.get('end')) - Number(u.searchParams.get('start')) === 3600;
      }));
      assert.match(await page.evaluate(() => location.hash), /range=1h/);
      assert.match(await page.evaluate(() => location.hash), /gpu=3/);
      // Each later refresh asks only for the steps after the last one held.
      const mark = rec.requests.length;
      await until('an incremental refresh', () => rec.requests.slice(mark).some((r) => {
        const u = new URL(r.url);
        return u.pathname.endsWith('query_range') && Number(u.searchParams.get('end')) - Number(u.searchParams.get('start')) < 60;
      }));
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });

  test('the agent going away shows a banner, and the page recovers when it returns', async () => {
    const rec = await openPage(agent.url());
    const { page } = rec;
    try {
      await until('the charts to draw', async () => (await chartAttrs(page)).temperature.points >= 2);
      await agent.stop();
      await until('the banner', () => page.evaluate(() => {
        const b = document.getElementById('banner');
        return !b.hidden && b.textContent === 'agent unreachable, retrying';
      }));
      await agent.start(); // the same port and history
      await until('the banner to go', () => page.evaluate(() => document.getElementById('banner').hidden), 45000);
      const points = (await chartAttrs(page)).temperature.points;
      await until('new points', async () => (await chartAttrs(page)).temperature.points > points || points >= 900);
      // The refused connections are the browser's own console lines, and a query in flight when the agent
      // stops is answered 503 ("canceled", as Prometheus answers it); nothing else may have gone wrong.
      const other = rec.problems.filter((p) => !/ERR_CONNECTION_REFUSED|Failed to load resource: net::|^HTTP 503: |the server responded with a status of 503/.test(p));
      assert.deepEqual(other, []);
    } finally {
      await rec.context.close();
    }
  });
});

describe('16 GPUs, one of them failing', () => {
  let agent;
  before(async () => {
    const scenario = writeScenario('sixteen.yaml', `description: '16 H100s training, GPU 3 gets a double-bit ECC error and XID 79'
seed: 7
gpus:
  count: 16
  model: NVIDIA H100 80GB HBM3
workload:
  profile: training
processes:
  - pid: 7000
    name: python train.py
    per_gpu: true
    memory: 40GiB
events:
  - {at: 1s, gpu: 3, ecc: double_bit}
  - {at: 1s, gpu: 3, xid: 79}
`);
    agent = await new Agent({ scenario, args: ['--diagnosis.interval', '1s'] }).start();
  });
  after(async () => { await agent?.dispose(); });

  test('16 cards equal the API, 16 lines per chart, the failing GPU is unhealthy, its errors drawn', async () => {
    const rec = await openPage(agent.url());
    const { page } = rec;
    try {
      await until('16 cards', async () => (await readCards(page)).length === 16);
      await until('16 lines per chart', async () => {
        const a = await chartAttrs(page);
        return a.temperature.lines === 16 && a.sm_active.lines === 16 && a.pcie_dram.lines === 32;
      });
      await until('GPU 3 unhealthy', async () => (await readCards(page)).find((c) => c.gpu === '3').verdict === 'unhealthy');
      await until('its errors on the chart', async () => (await chartAttrs(page)).errors.overlay === ''
        && (await linePixels(page, 'errors', ['3'])) > 20);
      await freeze(rec);
      assertCardsEqualApi(await readCards(page), rec.gpus);
      assert.ok(await noHorizontalOverflow(page));
      await page.setViewportSize(kPhone);
      await until('the layout to settle at 390 px', () => noHorizontalOverflow(page));
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });
});

describe('1 GPU without profiling fields, below --web.route-prefix /gpuscope', () => {
  let agent;
  before(async () => {
    const scenario = writeScenario('one_l4.yaml', `description: 'one L4, no GPM, so no DCGM_FI_PROF_* fields'
gpus:
  count: 1
  model: NVIDIA L4
workload:
  profile: training
processes:
  - {pid: 900, name: python serve.py, gpu: 0, memory: 12GiB}
`);
    agent = await new Agent({ scenario, args: ['--web.route-prefix', '/gpuscope'] }).start();
  });
  after(async () => { await agent?.dispose(); });

  test('the page at /gpuscope/ asks only below the prefix and says what the GPU does not report', async () => {
    const rec = await openPage(agent.url('gpuscope/'));
    const { page } = rec;
    try {
      await until('1 card', async () => (await readCards(page)).length === 1);
      await until('the charts to draw', async () => (await chartAttrs(page)).temperature.points >= 2);
      await until('GPU 0 drawn', async () => (await linePixels(page, 'temperature', ['0'])) > 20);
      assert.ok(await linePixels(page, 'power', ['0']) > 20, 'power line');
      assert.ok(await linePixels(page, 'gpu_util', ['0']) > 20, 'utilization line');
      const a = await chartAttrs(page);
      for (const chart of ['sm_active', 'sm_occupancy', 'tensor_active']) {
        assert.equal(a[chart].lines, 0);
        assert.equal(a[chart].overlay, 'not reported by these GPUs');
      }
      await freeze(rec);
      assertCardsEqualApi(await readCards(page), rec.gpus);
      assert.ok(rec.requests.length > 5);
      for (const r of rec.requests) {
        const u = new URL(r.url);
        if (u.protocol === 'data:') continue;
        assert.ok(u.pathname.startsWith('/gpuscope/'), `${r.url} is outside the prefix`);
      }
      const href = await page.evaluate(() => new URL(document.querySelector('footer a[href="metrics"]').href).pathname);
      assert.equal(href, '/gpuscope/metrics');
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });
});

// What each MIG row of a card shows, as its data-* attributes.
const readMigRows = (page) => page.evaluate(() => [...document.querySelectorAll('#cards .card')].map((c) => ({
  gpu: c.dataset.gpu,
  hidden: c.querySelector('.mig').hidden,
  rows: [...c.querySelectorAll('.mig .mig-row')].map((r) => ({
    gi: r.dataset.gpuInstance,
    text: r.textContent,
    profile: r.querySelector('.mig-profile').textContent,
    smActive: r.querySelector('[data-field="sm_active_ratio"]').dataset.value,
    memUsed: r.querySelector('[data-field="fb_used_mib"]').dataset.value,
    memTotal: r.querySelector('[data-field="fb_used_mib"]').dataset.total,
    verdict: r.querySelector('.mig-verdict').dataset.verdict,
  })),
  verdict: c.querySelector('.verdict').dataset.verdict,
})));

describe('a GPU in MIG mode (scenarios/mig.yaml)', () => {
  let agent;
  before(async () => {
    agent = await new Agent({ scenario: path.join(scenarios, 'mig.yaml'), args: ['--diagnosis.interval', '1s'] }).start();
  });
  after(async () => { await agent?.dispose(); });

  test('the profiling charts draw a line per MIG instance beside the whole GPUs', async () => {
    const rec = await openPage(agent.url());
    const { page } = rec;
    try {
      // GPU 1 whole; GPU 0's profiling series are its 4 instances' (none of its own in MIG mode).
      await until('SM active: GPU 1 and the 4 instances of GPU 0', async () => (await chartAttrs(page)).sm_active.lines === 5);
      const a = await chartAttrs(page);
      assert.equal(a.tensor_active.lines, 5);
      // GPU-wide fields stay one line per GPU; utilization.gpu only on the whole GPU (NVML has none in MIG mode).
      assert.equal(a.temperature.lines, 2);
      assert.equal(a.gpu_util.lines, 1);
      // PCIe RX per GPU (2) and DRAM active per instance (4) and for GPU 1 (1).
      assert.equal(a.pcie_dram.lines, 7);
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });

  test('each GPU instance is a row under its GPU with the API values and its own verdict', async () => {
    const rec = await openPage(agent.url());
    const { page } = rec;
    try {
      await until('4 instance rows on GPU 0', async () => (await readMigRows(page)).find((c) => c.gpu === '0')?.rows.length === 4);
      await until('the instances diagnosed', async () =>
        (await readMigRows(page)).find((c) => c.gpu === '0').rows.every((r) => r.verdict !== ''));
      await until('SM active of the instances', async () =>
        (await readMigRows(page)).find((c) => c.gpu === '0').rows.some((r) => r.smActive !== ''));
      await freeze(rec);
      const cards = await readMigRows(page);
      assertCardsEqualApi(await readCards(page), rec.gpus);
      for (const g of rec.gpus.gpus) {
        const card = cards.find((c) => c.gpu === String(g.index));
        // One row per GPU instance (its first MIG device), in the API's order.
        const seen = new Set();
        const want = (g.mig_enabled ? g.mig_instances : []).filter((m) => !seen.has(m.gpu_instance_id) && seen.add(m.gpu_instance_id));
        assert.equal(card.hidden, want.length === 0, `GPU ${g.index} instance list shown`);
        assert.deepEqual(card.rows.map((r) => r.gi), want.map((m) => String(m.gpu_instance_id)), `GPU ${g.index} instances`);
        for (const [i, m] of want.entries()) {
          const r = card.rows[i];
          assert.equal(r.profile, m.profile);
          assert.ok(r.text.startsWith(`${g.index}/${m.gpu_instance_id}`), r.text);
          assert.equal(num(r.smActive), m.values.sm_active_ratio, `${g.index}/${m.gpu_instance_id} SM active`);
          assert.equal(num(r.memUsed), m.values.fb_used_mib, `${g.index}/${m.gpu_instance_id} memory used`);
          assert.equal(num(r.memTotal), m.values.fb_total_mib, `${g.index}/${m.gpu_instance_id} memory total`);
        }
      }
      assert.deepEqual(cards.find((c) => c.gpu === '0').rows.map((r) => r.profile), ['3g.40gb', '2g.20gb', '1g.10gb', '1g.10gb']);
      // Verdicts: an instance's on its row, the GPU's own on its card (never its last instance's).
      for (const d of rec.diagnosis.gpus) {
        const card = cards.find((c) => c.gpu === String(d.gpu));
        const gi = d.labels?.GPU_I_ID;
        if (gi) assert.equal(card.rows.find((r) => r.gi === gi).verdict, d.verdict, `${d.gpu}/${gi} verdict`);
        else assert.equal(card.verdict, d.verdict, `GPU ${d.gpu} verdict`);
      }
      assert.ok(rec.diagnosis.gpus.some((d) => d.labels?.GPU_I_ID), 'the diagnosis has instances');
      assert.ok(await noHorizontalOverflow(page));
      await page.setViewportSize(kPhone);
      await until('the layout to settle at 390 px', () => noHorizontalOverflow(page));
      await page.screenshot({ path: path.join(screenshotDir, 'dashboard-mig.png'), fullPage: true });
      assert.deepEqual(rec.problems, []);
    } finally {
      await rec.context.close();
    }
  });
});
