// How numbers read on the page: units beside the value, a fixed number of significant digits, and "–"
// for what the GPU does not report (never a made-up 0).

export const kMissing = '–';

const ok = (v) => typeof v === 'number' && Number.isFinite(v);

export function fixed(v, digits = 0, unit = '') {
  if (!ok(v)) return kMissing;
  return `${v.toFixed(digits)}${unit ? ` ${unit}` : ''}`;
}

export function mibAsGiB(mib) {
  return ok(mib) ? `${(mib / 1024).toFixed(mib >= 10240 ? 0 : 1)}` : kMissing;
}

export function bytes(b) {
  if (!ok(b)) return kMissing;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (Math.abs(b) >= 1024 && i < units.length - 1) { b /= 1024; i++; }
  return `${b.toFixed(b >= 100 || i === 0 ? 0 : 1)} ${units[i]}`;
}

export function dollars(v) {
  if (!ok(v)) return kMissing;
  if (Math.abs(v) >= 1000) return `$${Math.round(v).toLocaleString('en-US')}`;
  return `$${v.toFixed(2)}`;
}

// Axis ticks: short, with SI prefixes for large numbers (PCIe bytes/s).
export function tick(v) {
  if (!ok(v)) return '';
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toFixed(1)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${+(v / 1e3).toFixed(1)}k`;
  return `${+v.toFixed(a < 10 ? 2 : 0)}`;
}

// "3 m ago" for an RFC 3339 time.
export function since(rfc3339, nowMs = Date.now()) {
  const t = Date.parse(rfc3339);
  if (!Number.isFinite(t)) return '';
  let s = Math.max(0, Math.round((nowMs - t) / 1000));
  if (s < 60) return `${s} s`;
  s = Math.round(s / 60);
  if (s < 60) return `${s} min`;
  s = Math.round(s / 60);
  return s < 48 ? `${s} h` : `${Math.round(s / 24)} d`;
}
