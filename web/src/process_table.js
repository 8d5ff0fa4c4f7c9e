// ProcessTable: the processes holding the GPUs, from api/v1/gpus (pid, name, user and container when the
// agent knows them, GPU, memory, SM share), biggest memory first within each GPU.

import { bytes, fixed, kMissing } from './format.js';

function cell(text, className) {
  const td = document.createElement('td');
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

export class ProcessTable {
  constructor(table) {
    this.table = table;
    this.body = table.tBodies[0];
  }

  update(gpus, filter) {
    const rows = [];
    for (const g of gpus) {
      if (filter !== 'all' && String(g.index) !== filter) continue;
      for (const p of g.processes || []) rows.push({ gpu: g.index, ...p });
    }
    rows.sort((a, b) => a.gpu - b.gpu || (b.used_memory_bytes ?? 0) - (a.used_memory_bytes ?? 0) || a.pid - b.pid);
    const anyUser = rows.some((r) => r.user);
    this.table.classList.toggle('no-user', !anyUser);
    const trs = rows.map((r) => {
      const tr = document.createElement('tr');
      tr.dataset.pid = String(r.pid);
      tr.dataset.gpu = String(r.gpu);
      const name = cell(r.name || kMissing, 'name');
      name.title = r.name || '';
      const sm = typeof r.sm_utilization_ratio === 'number' ? fixed(r.sm_utilization_ratio * 100, 0, '%') : kMissing;
      tr.append(cell(String(r.gpu)), cell(String(r.pid)), name, cell(r.user || kMissing, 'col-user'),
                cell(r.container_id ? r.container_id.slice(0, 12) : kMissing, 'container'),
                cell(bytes(r.used_memory_bytes), 'num'), cell(sm, 'num'));
      return tr;
    });
    if (trs.length === 0) {
      const tr = document.createElement('tr');
      const td = cell('no processes on these GPUs', 'empty');
      td.colSpan = 7;
      tr.append(td);
      trs.push(tr);
    }
    this.body.replaceChildren(...trs);
  }
}
