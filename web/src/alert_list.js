// AlertList: the agent's firing and pending alerts (api/v1/alerts, the --rules groups), firing first.

import { since } from './format.js';

const kOrder = { firing: 0, pending: 1 };

function span(className, text) {
  const s = document.createElement('span');
  s.className = className;
  s.textContent = text;
  return s;
}

export class AlertList {
  constructor(list, count) {
    this.list = list;
    this.count = count;
  }

  update(alerts) {
    const shown = alerts.filter((a) => a.state in kOrder)
      .sort((a, b) => kOrder[a.state] - kOrder[b.state] || (a.labels.alertname || '').localeCompare(b.labels.alertname || '')
                      || (a.labels.gpu || '').localeCompare(b.labels.gpu || '', undefined, { numeric: true }));
    const firing = shown.filter((a) => a.state === 'firing').length;
    this.count.textContent = shown.length ? `${firing} firing, ${shown.length - firing} pending` : '';
    const items = shown.map((a) => {
      const li = document.createElement('li');
      li.dataset.state = a.state;
      li.dataset.alertname = a.labels.alertname || '';
      li.append(span('state', a.state), span('name', a.labels.alertname || '(unnamed)'));
      if (a.labels.gpu !== undefined) li.append(span('gpu', `GPU ${a.labels.gpu}`));
      if (a.labels.severity) li.append(span('severity', a.labels.severity));
      const summary = a.annotations?.summary || a.annotations?.description || '';
      if (summary) li.append(span('summary', summary));
      if (a.activeAt) li.append(span('since', `for ${since(a.activeAt)}`));
      return li;
    });
    if (items.length === 0) {
      const li = document.createElement('li');
      li.className = 'empty';
      li.textContent = 'no alerts firing or pending';
      items.push(li);
    }
    this.list.replaceChildren(...items);
  }
}
