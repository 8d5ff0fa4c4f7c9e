// ChartPanels: one uPlot chart per spec of chart_specs.js, in its row, drawn from the shared
// SeriesWindow. A chart is rebuilt only when the set of lines changes (a GPU appears, the GPU filter, the
// colour scheme); otherwise a refresh is one setData per chart.

import { kCharts } from './chart_specs.js';
import { tick } from './format.js';

const kHeight = 190;
const kPhoneHeight = 160;

// One colour per GPU index, the same in every chart and on the cards; readable on dark and light.
const kPalette = ['#5b8ff9', '#f6903d', '#e8684a', '#3fbf8f', '#9270ca', '#e0b400', '#ff7eb6', '#4ec3e0',
                  '#269a99', '#c55a8e', '#8fbf1f', '#b37feb', '#ff7a45', '#2fb8b0', '#d4a017', '#8c8c8c'];
export const gpuColor = (index) => kPalette[Number(index) % kPalette.length];

// "0", or "0/2" for GPU instance 2 of GPU 0 (dmon's and top's spelling).
const lineName = (line) => (line.instance === undefined ? `${line.gpu}` : `${line.gpu}/${line.instance}`);

function cssVar(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}

function theme() {
  return { fg: cssVar('--muted'), grid: cssVar('--grid'), warn: cssVar('--warn'), crit: cssVar('--crit') };
}

class Chart {
  constructor(spec, container) {
    this.spec = spec;
    this.el = document.createElement('figure');
    this.el.className = 'panel';
    this.el.dataset.chart = spec.id;
    const caption = document.createElement('figcaption');
    const title = document.createElement('span');
    title.className = 'title';
    title.textContent = spec.title;
    const unit = document.createElement('span');
    unit.className = 'unit';
    unit.textContent = spec.unit;
    caption.append(title, unit);
    this.plotEl = document.createElement('div');
    this.plotEl.className = 'plot';
    this.overlay = document.createElement('div');
    this.overlay.className = 'overlay';
    this.overlay.hidden = true;
    // The note under the chart says how to read it; while the cursor is on a chart it shows the values there.
    this.note = document.createElement('p');
    this.note.className = 'note';
    this.note.textContent = spec.note || '';
    this.el.append(caption, this.plotEl, this.note);
    this.plotEl.append(this.overlay);
    container.append(this.el);
    this.plot = null;
    this.signature = '';
    this.lines = [];
    new ResizeObserver(() => this.resize()).observe(this.plotEl);
  }

  size() {
    const height = window.matchMedia('(max-width: 600px)').matches ? kPhoneHeight : kHeight;
    return { width: Math.max(100, this.plotEl.clientWidth), height };
  }

  resize() {
    if (!this.plot) return;
    const s = this.size();
    if (s.width !== this.plot.width || s.height !== this.plot.height) this.plot.setSize(s);
  }

  // The lines to draw for the GPUs shown: each metric's series of each GPU that has one, and of each of
  // its MIG instances (a GPU in MIG mode has memory and profiling series per GPU instance only).
  linesFor(window, gpus) {
    const lines = [];
    for (const m of this.spec.metrics) {
      for (const gpu of gpus) {
        const key = `${m.name}|${gpu}`;
        if (window.series.has(key)) lines.push({ key, gpu, metric: m });
        const prefix = `${key}/`;
        const instances = [...window.series.keys()].filter((k) => k.startsWith(prefix))
          .map((k) => k.slice(prefix.length)).sort((a, b) => Number(a) - Number(b));
        for (const instance of instances) lines.push({ key: `${prefix}${instance}`, gpu, instance, metric: m });
      }
    }
    return lines;
  }

  build(lines, colors) {
    if (this.plot) this.plot.destroy();
    this.lines = lines;
    const spec = this.spec;
    const axisStyle = { stroke: colors.fg, grid: { stroke: colors.grid, width: 1 }, ticks: { stroke: colors.grid, width: 1 } };
    const axes = [
      { ...axisStyle, size: 28, space: 60 },
      { ...axisStyle, size: 44, values: (u, splits) => splits.map(tick) },
    ];
    const scales = { x: { time: true }, y: { range: (u, min, max) => spec.range(min, max) } };
    if (spec.secondAxis) {
      scales.pct = { range: () => spec.secondAxis.range() };
      axes.push({ ...axisStyle, scale: 'pct', side: 1, size: 36, grid: { show: false }, values: (u, splits) => splits.map(tick) });
    }
    const series = [{}];
    for (const line of lines) {
      series.push({
        label: `GPU ${lineName(line)}${line.metric.label ? ` ${line.metric.label}` : ''}`,
        // A MIG instance in its GPU's color, thinner and dotted unless the metric has its own dash.
        stroke: gpuColor(line.gpu),
        width: line.instance === undefined ? line.metric.width ?? 1.5 : 1,
        dash: line.metric.dash ?? (line.instance === undefined ? undefined : [2, 2]),
        scale: line.metric.axis || 'y',
        points: { show: false },
        spanGaps: false,
      });
    }
    this.plot = new uPlot({
      ...this.size(),
      legend: { show: false },
      cursor: { sync: { key: 'gpuscope' }, points: { show: false }, drag: { x: false, y: false } },
      scales,
      axes,
      series,
      hooks: { draw: [(u) => this.drawThresholds(u, colors)], setCursor: [(u) => this.showCursorValues(u)] },
    }, this.data(null), this.plotEl);
  }

  drawThresholds(u, colors) {
    const thresholds = this.spec.thresholds;
    if (!thresholds) return;
    const { ctx } = u;
    const { left, top, width, height } = u.bbox;
    const px = window.devicePixelRatio || 1;
    ctx.save();
    ctx.lineWidth = px;
    ctx.setLineDash([5 * px, 4 * px]);
    ctx.font = `${11 * px}px system-ui, sans-serif`;
    ctx.textAlign = 'right';
    for (const t of thresholds) {
      const y = Math.round(u.valToPos(t.value, 'y', true));
      if (y < top || y > top + height) continue;
      const color = t.level === 'crit' ? colors.crit : colors.warn;
      ctx.strokeStyle = color;
      ctx.fillStyle = color;
      ctx.beginPath();
      ctx.moveTo(left, y);
      ctx.lineTo(left + width, y);
      ctx.stroke();
      ctx.fillText(t.label, left + width - 4 * px, y - 3 * px);
    }
    ctx.restore();
  }

  showCursorValues(u) {
    const i = u.cursor.idx;
    if (i === null || i === undefined || !u.data[0].length) {
      this.note.textContent = this.spec.note || '';
      this.note.classList.remove('values');
      return;
    }
    const parts = [];
    this.lines.forEach((line, k) => {
      const v = u.data[k + 1][i];
      if (v !== null && v !== undefined) parts.push(`${lineName(line)}${line.metric.label ? ` ${line.metric.label}` : ''}: ${tick(v)}`);
    });
    const time = new Date(u.data[0][i] * 1000).toLocaleTimeString();
    this.note.textContent = `${time}  GPU ${parts.join(' · ') || 'no data'}`;
    this.note.classList.add('values');
  }

  data(window) {
    if (!window) return [[], ...this.lines.map(() => [])];
    const out = [window.times];
    for (const line of this.lines) {
      const s = window.series.get(line.key);
      const k = line.metric.scale ?? 1;
      out.push(s ? (k === 1 ? s.values : s.values.map((v) => (v === null ? null : v * k))) : window.times.map(() => null));
    }
    return out;
  }

  update(window, gpus, colors, force, noHistory) {
    const lines = this.linesFor(window, gpus);
    const signature = lines.map((l) => l.key).join(',');
    if (force || !this.plot || signature !== this.signature) {
      this.signature = signature;
      this.build(lines, colors);
    }
    const data = this.data(window);
    this.plot.setData(data);
    this.el.dataset.lines = String(lines.length);
    this.el.dataset.points = String(window.times.length);
    this.showOverlay(data, noHistory);
  }

  showOverlay(data, noHistory) {
    let text = '';
    if (noHistory) {
      text = 'no recorded history to draw (is the agent running with --no-history?)';
    } else if (this.lines.length === 0) {
      text = 'not reported by these GPUs';
    } else if (this.spec.quietWhenZero) {
      const anyNonZero = data.slice(1).some((values) => values.some((v) => v !== null && v !== 0));
      if (!anyNonZero) text = this.spec.quietWhenZero;
    }
    this.overlay.textContent = text;
    this.overlay.hidden = text === '';
  }
}

export class ChartPanels {
  constructor(rowContainers) {
    this.charts = kCharts.map((spec) => new Chart(spec, rowContainers[spec.row]));
    this.colors = null;
    this.forceNext = false;
    window.matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
      this.forceNext = true;
      if (this.last) this.update(...this.last);
    });
  }

  // Draws `window` for the GPU indices `gpus` (strings, as the `gpu` label).
  update(window, gpus) {
    this.last = [window, gpus];
    const force = this.forceNext || !this.colors;
    if (force) this.colors = theme();
    this.forceNext = false;
    // Not one series of any chart over a fetched window: the agent keeps no history, rather than every
    // GPU lacking every field.
    const noHistory = !window.empty && window.series.size === 0;
    for (const c of this.charts) c.update(window, gpus, this.colors, force, noHistory);
  }
}
