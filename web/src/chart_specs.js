// What each chart of the dashboard draws: its row, title, the DCGM series (one line per GPU each), how a
// value is scaled for display, and the reference lines that make a failure mode visible at a glance.
// Every chart reads the same SeriesWindow, filled by one query_range for all of them (chartQuery).

const pct = 100;

export const kCharts = [
  {
    id: 'temperature', row: 'health', title: 'Temperature', unit: '°C',
    note: 'dashed: 75 °C warm, 85 °C hot (H100 slows down at 89 °C)',
    metrics: [{ name: 'DCGM_FI_DEV_GPU_TEMP' }],
    thresholds: [{ value: 75, level: 'warn', label: '75 °C' }, { value: 85, level: 'crit', label: '85 °C' }],
    range: (min, max) => [Math.min(min ?? 30, 30), Math.max((max ?? 0) + 5, 90)],
  },
  {
    id: 'power', row: 'health', title: 'Power vs limit', unit: 'W',
    note: 'flat near the limit: power-capped; a sawtooth: the GPU waits for its input',
    metrics: [
      { name: 'DCGM_FI_DEV_POWER_USAGE' },
      { name: 'DCGM_FI_DEV_ENFORCED_POWER_LIMIT', label: 'limit', dash: [6, 4], width: 1 },
    ],
    range: (min, max) => [0, Math.max(100, (max ?? 0) * 1.08)],
  },
  {
    id: 'errors', row: 'health', title: 'XID and ECC errors', unit: 'count since driver load',
    note: 'solid: XID events · dashed: ECC double-bit · dotted: ECC single-bit',
    metrics: [
      { name: 'gpuscope_xid_events_total', label: 'XID' },
      { name: 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', label: 'ECC DBE', dash: [6, 4] },
      { name: 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', label: 'ECC SBE', dash: [2, 3] },
    ],
    quietWhenZero: 'no XID or ECC errors in this window',
    range: (min, max) => [0, Math.max(1, Math.ceil((max ?? 0) * 1.2))],
  },
  {
    id: 'gpu_util', row: 'throughput', title: 'Utilization (nvidia-smi)', unit: '%',
    note: 'a kernel was running, however little of the GPU it used',
    metrics: [{ name: 'DCGM_FI_DEV_GPU_UTIL' }],
    range: () => [0, 100],
  },
  {
    id: 'sm_active', row: 'throughput', title: 'SM active', unit: '%',
    note: 'the share of SMs busy: the truth next to utilization',
    metrics: [{ name: 'DCGM_FI_PROF_SM_ACTIVE', scale: pct }],
    range: () => [0, 100],
  },
  {
    id: 'sm_occupancy', row: 'throughput', title: 'SM occupancy', unit: '%',
    note: 'resident warps of the maximum',
    metrics: [{ name: 'DCGM_FI_PROF_SM_OCCUPANCY', scale: pct }],
    range: () => [0, 100],
  },
  {
    id: 'tensor_active', row: 'throughput', title: 'Tensor pipes active', unit: '%',
    note: 'near 0 while SMs are busy: no tensor cores (FP32 without TF32)',
    metrics: [{ name: 'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', scale: pct }],
    range: () => [0, 100],
  },
  {
    id: 'pcie_dram', row: 'bottlenecks', title: 'PCIe RX over DRAM active', unit: 'GB/s (left) · % (right)',
    note: 'solid: PCIe RX · dashed: DRAM active; RX bursts while DRAM idles: waiting for input',
    metrics: [
      { name: 'DCGM_FI_PROF_PCIE_RX_BYTES', label: 'PCIe RX', scale: 1e-9 },
      { name: 'DCGM_FI_PROF_DRAM_ACTIVE', label: 'DRAM', scale: pct, dash: [5, 3], axis: 'pct' },
    ],
    range: (min, max) => [0, Math.max(1, (max ?? 0) * 1.1)],
    secondAxis: { unit: '%', range: () => [0, 100] },
  },
];

export const kRows = ['health', 'throughput', 'bottlenecks'];

// One range query for every chart: each metric's series, one per GPU and, on a GPU in MIG mode, one per
// GPU instance for the fields a MIG instance has of its own (`max by (__name__, gpu, GPU_I_ID)` drops the
// labels the page does not use, so each refresh's answer is small).
export function chartQuery() {
  const names = [...new Set(kCharts.flatMap((c) => c.metrics.map((m) => m.name)))];
  return `max by (__name__, gpu, GPU_I_ID) ({__name__=~"${names.join('|')}"})`;
}

// "NAME|0" for a GPU's series, "NAME|0/2" for GPU instance 2 of GPU 0.
export const seriesKey = (metric) => `${metric.__name__}|${metric.gpu}${metric.GPU_I_ID ? `/${metric.GPU_I_ID}` : ''}`;
