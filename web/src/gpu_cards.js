// GpuCards: one card per GPU (index, name, up or lost, the diagnosis verdict, memory, power against its
// limit, temperature, utilization against SM active, price per hour). The cards are built once per
// inventory; a refresh only rewrites their values. Every shown value carries data-field (the key of
// api/v1/gpus `values`) and data-value (the number as the API gave it) so a test can compare them.

import { gpuColor } from './charts.js';
import { fixed, mibAsGiB, dollars, kMissing } from './format.js';

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

// A labelled value with an optional bar (used / total).
function metric(label, field, withBar) {
  const box = el('div', 'metric');
  box.append(el('span', 'label', label));
  const value = el('span', 'value', kMissing);
  value.dataset.field = field;
  box.append(value);
  let bar = null;
  if (withBar) {
    bar = el('div', 'bar');
    bar.append(el('div', 'fill'));
    box.append(bar);
  }
  return { box, value, bar };
}

function setBar(bar, ratio, level) {
  if (!bar) return;
  const fill = bar.firstChild;
  fill.style.width = `${Math.round(Math.max(0, Math.min(1, ratio || 0)) * 100)}%`;
  fill.dataset.level = level || '';
}

// Sets one value: its text, and the raw number it came from.
function show(target, raw, text, extraFields = {}) {
  target.textContent = text;
  target.dataset.value = typeof raw === 'number' && Number.isFinite(raw) ? String(raw) : '';
  for (const [k, v] of Object.entries(extraFields)) target.dataset[k] = typeof v === 'number' ? String(v) : '';
}

class GpuCard {
  constructor(gpu) {
    this.index = String(gpu.index);
    this.el = el('article', 'card');
    this.el.dataset.gpu = this.index;
    this.el.style.setProperty('--gpu-color', gpuColor(gpu.index));

    const head = el('header');
    head.append(el('span', 'index', `GPU ${gpu.index}`));
    const name = el('span', 'name', gpu.name || gpu.error || '');
    name.title = gpu.uuid || '';
    head.append(name);
    this.state = el('span', 'state');
    this.state.dataset.field = 'up';
    head.append(this.state);

    this.verdict = el('div', 'verdict', 'diagnosis pending');
    this.verdict.dataset.verdict = '';
    this.findings = el('div', 'findings');

    const grid = el('div', 'metrics');
    this.temp = metric('temp', 'gpu_temp_celsius', false);
    this.power = metric('power', 'power_usage_watts', true);
    this.memory = metric('memory', 'fb_used_mib', true);
    this.util = metric('util / SM active', 'gpu_util_percent', true);
    this.price = metric('price', 'hourly_price_dollars', false);
    this.processes = metric('processes', 'process_count', false);
    for (const m of [this.temp, this.power, this.memory, this.util, this.price, this.processes]) grid.append(m.box);
    this.el.append(head, this.verdict, this.findings, grid);
  }

  updateValues(gpu) {
    const up = gpu.up === true;
    this.el.dataset.up = String(up);
    this.state.textContent = up ? 'up' : 'lost';
    this.state.dataset.value = up ? '1' : '0';
    const v = (up && gpu.values) || {};

    const temp = v.gpu_temp_celsius;
    const slowdown = v.slowdown_temp_celsius ?? gpu.slowdown_temp_celsius;
    show(this.temp.value, temp, fixed(temp, 0, '°C'));
    this.temp.value.dataset.level = temp >= 85 || (slowdown && temp >= slowdown) ? 'crit' : temp >= 75 ? 'warn' : '';

    const power = v.power_usage_watts;
    const limit = v.enforced_power_limit_watts ?? v.power_limit_watts;
    show(this.power.value, power, `${fixed(power, 0)} / ${fixed(limit, 0, 'W')}`, { limit });
    setBar(this.power.bar, power / limit, power >= 0.95 * limit ? 'warn' : '');

    const used = v.fb_used_mib;
    const total = v.fb_total_mib;
    show(this.memory.value, used, `${mibAsGiB(used)} / ${mibAsGiB(total)} GiB`, { total });
    setBar(this.memory.bar, used / total, used >= 0.95 * total ? 'crit' : '');

    const util = v.gpu_util_percent;
    const sm = v.sm_active_ratio;
    const smText = typeof sm === 'number' ? `${Math.round(sm * 100)} %` : kMissing;
    show(this.util.value, util, `${fixed(util, 0, '%')} / ${smText}`, { smActive: sm });
    // The bar is the truth (SM active) where the GPU reports it.
    setBar(this.util.bar, typeof sm === 'number' ? sm : util / 100, '');

    const procs = up && Array.isArray(gpu.processes) ? gpu.processes.length : null;
    show(this.processes.value, procs, procs === null ? kMissing : String(procs));
  }

  updatePrice(price) {
    show(this.price.value, price, price === undefined ? kMissing : `${dollars(price)}/h`);
    this.price.value.title = price === undefined ? 'no price series: a model the price catalog does not price, or no history' : '';
  }

  updateVerdict(d) {
    this.verdict.textContent = d ? d.verdict_title || d.verdict : 'no diagnosis';
    this.verdict.dataset.verdict = d ? d.verdict : '';
    this.verdict.title = d ? [d.summary, d.fix].filter(Boolean).join('\n\nFix: ') : '';
    this.findings.replaceChildren(...(d?.findings || []).map((f) => {
      const chip = el('span', 'chip', f.id.replaceAll('_', ' '));
      chip.title = f.summary || '';
      return chip;
    }));
  }
}

export class GpuCards {
  constructor(container) {
    this.container = container;
    this.cards = new Map();
    this.signature = '';
  }

  // Builds the cards when the GPU set changes (by index and UUID), then updates their values.
  update(gpus) {
    const signature = gpus.map((g) => `${g.index}:${g.uuid}`).join(',');
    if (signature !== this.signature) {
      this.signature = signature;
      this.cards = new Map(gpus.map((g) => [String(g.index), new GpuCard(g)]));
      this.container.replaceChildren(...[...this.cards.values()].map((c) => c.el));
      this.container.dataset.count = String(gpus.length);
    }
    for (const g of gpus) this.cards.get(String(g.index))?.updateValues(g);
  }

  updatePrices(byGpu) {
    for (const [index, card] of this.cards) card.updatePrice(byGpu.get(index));
  }

  updateDiagnosis(diagnosis) {
    const byGpu = new Map((diagnosis?.gpus || []).map((d) => [String(d.gpu), d]));
    for (const [index, card] of this.cards) card.updateVerdict(byGpu.get(index));
  }

  filter(gpu) {
    for (const [index, card] of this.cards) card.el.hidden = gpu !== 'all' && gpu !== index;
  }
}
