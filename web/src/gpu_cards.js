// GpuCards: one card per GPU (index, name, up or lost, the diagnosis verdict, memory, power against its
// limit, temperature, utilization against SM active, price per hour), and on a GPU in MIG mode one row
// per GPU instance (its id "0/2", profile, SM active, memory, own verdict). The cards are built once per
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

// The GPU instances of a GPU in MIG mode, each once: the API lists every MIG device, and the devices of
// one GPU instance (its compute instances) share its memory and activity.
function gpuInstances(gpu) {
  if (gpu.mig_enabled !== true || !Array.isArray(gpu.mig_instances)) return [];
  const seen = new Set();
  return gpu.mig_instances.filter((m) => !seen.has(m.gpu_instance_id) && seen.add(m.gpu_instance_id));
}

// One GPU instance's row: id and profile, SM active, memory used / total, its verdict.
class MigRow {
  constructor(gpuIndex, instance) {
    this.el = el('div', 'mig-row');
    this.el.dataset.gpuInstance = String(instance.gpu_instance_id);
    const id = el('span', 'mig-id', `${gpuIndex}/${instance.gpu_instance_id}`);
    id.title = instance.uuid || '';
    this.profile = el('span', 'mig-profile', instance.profile || '');
    this.sm = el('span', 'mig-sm', kMissing);
    this.sm.dataset.field = 'sm_active_ratio';
    this.memory = el('span', 'mig-memory', kMissing);
    this.memory.dataset.field = 'fb_used_mib';
    this.verdict = el('span', 'mig-verdict', '');
    this.verdict.dataset.verdict = '';
    this.pod = el('span', 'mig-pod', '');
    this.el.append(id, this.profile, this.sm, this.memory, this.verdict, this.pod);
  }

  update(instance) {
    const v = instance.values || {};
    const sm = v.sm_active_ratio;
    show(this.sm, sm, typeof sm === 'number' ? `SM ${Math.round(sm * 100)} %` : `SM ${kMissing}`);
    const used = v.fb_used_mib;
    const total = v.fb_total_mib;
    show(this.memory, used, `${mibAsGiB(used)} / ${mibAsGiB(total)} GiB`, { total });
    this.pod.textContent = instance.pod ? `${instance.namespace}/${instance.pod}` : '';
  }

  updateVerdict(d) {
    this.verdict.textContent = d ? d.verdict_title || d.verdict : '';
    this.verdict.dataset.verdict = d ? d.verdict : '';
    this.verdict.title = d ? [d.summary, d.fix].filter(Boolean).join('\n\nFix: ') : '';
  }
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
    this.mig = el('div', 'mig');
    this.mig.hidden = true;
    this.migRows = new Map();
    this.migSignature = '';
    this.migVerdicts = new Map();
    this.el.append(head, this.verdict, this.findings, grid, this.mig);
  }

  // The GPU instance rows, rebuilt when the instances change (created, destroyed, MIG turned off).
  updateMig(gpu) {
    const instances = gpu.up === true ? gpuInstances(gpu) : [];
    const signature = instances.map((m) => `${m.gpu_instance_id}:${m.uuid}`).join(',');
    if (signature !== this.migSignature) {
      this.migSignature = signature;
      this.migRows = new Map(instances.map((m) => [String(m.gpu_instance_id), new MigRow(this.index, m)]));
      this.mig.replaceChildren(...[...this.migRows.values()].map((r) => r.el));
      for (const [gi, row] of this.migRows) row.updateVerdict(this.migVerdicts.get(gi));
    }
    this.mig.hidden = instances.length === 0;
    this.el.dataset.mig = String(instances.length > 0);
    for (const m of instances) this.migRows.get(String(m.gpu_instance_id))?.update(m);
  }

  updateMigVerdicts(byInstance) {
    this.migVerdicts = byInstance;
    for (const [gi, row] of this.migRows) row.updateVerdict(byInstance.get(gi));
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
    this.updateMig(gpu);
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

  // A MIG instance's verdict (its series carry GPU_I_ID) goes to its row, never to its GPU's card.
  updateDiagnosis(diagnosis) {
    const byGpu = new Map();
    const byInstance = new Map();
    for (const d of diagnosis?.gpus || []) {
      const gi = d.labels?.GPU_I_ID;
      if (!gi) {
        byGpu.set(String(d.gpu), d);
        continue;
      }
      if (!byInstance.has(String(d.gpu))) byInstance.set(String(d.gpu), new Map());
      byInstance.get(String(d.gpu)).set(gi, d);
    }
    for (const [index, card] of this.cards) {
      card.updateVerdict(byGpu.get(index));
      card.updateMigVerdicts(byInstance.get(index) || new Map());
    }
  }

  filter(gpu) {
    for (const [index, card] of this.cards) card.el.hidden = gpu !== 'all' && gpu !== index;
  }
}
