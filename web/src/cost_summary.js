// CostSummary: what the GPUs cost today and what they cost per hour now, from the agent's cost counters
// (one instant query every few seconds, not every refresh: the figures move by cents).

import { dollars, kMissing } from './format.js';

// What a counter added since local midnight, summed over the GPUs: each series' value now less its value at
// midnight (`offset`, when the agent ran then), else its lowest value at a minute boundary today (a
// subquery at 1 m steps: 1,440 points a day rather than increase(x[since midnight]) reading every one of
// the day's 86,400 samples per GPU and counter, every refresh), else, in an agent's first minute, its
// lowest value in the last minute. So an agent started today misses at most the seconds before its first
// minute boundary.
function sinceMidnight(counter, seconds) {
  const baseline = `(${counter} offset ${seconds}s) or min_over_time(${counter}[${seconds}s:1m]) or min_over_time(${counter}[1m])`;
  return `sum(${counter} - (${baseline}))`;
}

const tag = (expr, name) => `label_replace(${expr}, "cost", "${name}", "", "")`;

export function costQuery(now = new Date()) {
  const midnight = new Date(now.getFullYear(), now.getMonth(), now.getDate());
  const seconds = Math.max(1, Math.ceil((now - midnight) / 1000));
  return [
    tag(sinceMidnight('gpuscope_cost_dollars_total', seconds), 'total'),
    tag(sinceMidnight('gpuscope_cost_idle_dollars_total', seconds), 'idle'),
    tag(sinceMidnight('gpuscope_cost_unused_dollars_total', seconds), 'unused'),
    tag('sum(gpuscope_gpu_hourly_price_dollars)', 'rate'),
    'max by (gpu) (gpuscope_gpu_hourly_price_dollars)',
  ].join(' or ');
}

export class CostSummary {
  constructor(elements) {
    this.e = elements; // { total, idle, unused, rate }
  }

  // Takes the costQuery answer; returns each GPU's hourly price (gpu index → USD/h) for the cards.
  update(result) {
    const totals = {};
    const prices = new Map();
    for (const r of result) {
      const v = Number(r.value[1]);
      if (r.metric.cost) totals[r.metric.cost] = v;
      else if (r.metric.gpu !== undefined) prices.set(String(r.metric.gpu), v);
    }
    const set = (el, v, suffix = '') => {
      el.textContent = v === undefined ? kMissing : `${dollars(v)}${suffix}`;
      el.dataset.value = v === undefined ? '' : String(v);
      el.title = v === undefined ? 'no cost series: a GPU model the price catalog does not price, or no history' : '';
    };
    set(this.e.total, totals.total);
    set(this.e.idle, totals.idle);
    set(this.e.unused, totals.unused);
    set(this.e.rate, totals.rate, '/h');
    return prices;
  }
}
