// SeriesWindow: the last `windowSeconds` of many series on one time grid (every `step` seconds), kept
// up to date incrementally. The whole window is fetched once; after that each refresh asks only for
// the grid points after the last one held, appends them and drops those older than the window, so the
// agent evaluates one new step per refresh instead of the whole window.
//
// The layout is what uPlot draws: one shared array of times and, per series, an array of values with
// null where the series had no sample (a GPU lost, a series that started later).

// At most this many points per series across a window: 15 minutes at 1 s, and a coarser step for longer
// windows (24 h: 96 s), which is also finer than a laptop screen's width in pixels per chart.
const kMaxPoints = 900;

export function stepFor(windowSeconds) {
  return Math.max(1, Math.ceil(windowSeconds / kMaxPoints));
}

export class SeriesWindow {
  constructor(windowSeconds) {
    this.windowSeconds = windowSeconds;
    this.step = stepFor(windowSeconds);
    this.times = [];
    this.series = new Map(); // key → { metric, values }
  }

  get empty() { return this.times.length === 0; }
  get lastTime() { return this.times.length ? this.times[this.times.length - 1] : null; }

  // The range the next fetch should ask for at agent time `now` (seconds), or null when no new grid
  // point is due yet. Grid points are multiples of the step, so every answer lands on the grid.
  nextRange(now) {
    const end = Math.floor(now / this.step) * this.step;
    const oldest = end - this.windowSeconds;
    // Nothing held, or a gap longer than the window (the page was hidden, the agent away): fetch it all.
    if (this.empty || this.lastTime < oldest) return { start: oldest, end, full: true };
    const start = this.lastTime + this.step;
    return start <= end ? { start, end, full: false } : null;
  }

  // Takes a query_range answer for `range` (from nextRange). `keyOf(metric)` names a series.
  apply(range, result, keyOf) {
    if (range.full) {
      this.times = [];
      this.series.clear();
    }
    const before = this.times.length;
    for (let t = range.start; t <= range.end; t += this.step) this.times.push(t);
    const added = this.times.length - before;
    for (const s of this.series.values()) {
      for (let i = 0; i < added; i++) s.values.push(null);
    }
    for (const r of result) {
      const key = keyOf(r.metric);
      let s = this.series.get(key);
      if (!s) {
        s = { metric: r.metric, values: new Array(this.times.length).fill(null) };
        this.series.set(key, s);
      }
      for (const [t, v] of r.values) {
        const i = before + Math.round((t - range.start) / this.step);
        if (i >= before && i < this.times.length) s.values[i] = parseValue(v);
      }
    }
    this.trim(range.end - this.windowSeconds);
  }

  // Drops the points before `oldest`, and the series left with no value at all.
  trim(oldest) {
    let drop = 0;
    while (drop < this.times.length && this.times[drop] < oldest) drop++;
    if (drop > 0) {
      this.times.splice(0, drop);
      for (const s of this.series.values()) s.values.splice(0, drop);
    }
    for (const [key, s] of this.series) {
      if (!s.values.some((v) => v !== null)) this.series.delete(key);
    }
  }
}

// Prometheus sends values as strings ("NaN", "+Inf" included); uPlot wants numbers or null for a gap.
function parseValue(text) {
  const v = Number(text);
  return Number.isFinite(v) ? v : null;
}
