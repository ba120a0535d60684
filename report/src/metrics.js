// metrics.js: what the sampled metrics are called for people, their units,
// how their axes scale, and the named states of a bitmask metric. Metric
// names are the catalogue's (proto/metric_names.h, which the sampler writes);
// a name not listed here keeps its raw name and unit.


// [raw name, human title, chart family]. Families share one unit, so one
// chart holds one family and one axis.
const CATALOG = [
  ['gpm.sm_util', 'SM util', 'util'],
  ['gpm.sm_occupancy', 'SM occupancy', 'util'],
  ['gpm.tensor_util', 'Tensor core util', 'util'],
  ['gpm.dram_bw_util', 'DRAM bandwidth util', 'util'],
  ['gpm.fp16_util', 'FP16 pipe util', 'util'],
  ['gpm.fp32_util', 'FP32 pipe util', 'util'],
  ['gpm.fp64_util', 'FP64 pipe util', 'util'],
  ['nvml.gpu_util', 'GPU util (NVML)', 'util'],
  ['nvml.mem_util', 'Memory util (NVML)', 'util'],
  ['gpm.pcie_tx_bytes_per_s', 'PCIe TX', 'link'],
  ['gpm.pcie_rx_bytes_per_s', 'PCIe RX', 'link'],
  ['nvml.pcie_tx_bytes_per_s', 'PCIe TX (NVML)', 'link'],
  ['nvml.pcie_rx_bytes_per_s', 'PCIe RX (NVML)', 'link'],
  ['gpm.nvlink_tx_bytes_per_s', 'NVLink TX', 'link'],
  ['gpm.nvlink_rx_bytes_per_s', 'NVLink RX', 'link'],
  ['nvml.sm_clock_mhz', 'SM clock', 'clock'],
  ['nvml.mem_clock_mhz', 'Memory clock', 'clock'],
  ['nvml.power_w', 'Power', 'power'],
  ['nvml.power_limit_w', 'Power limit', 'power'],
  ['nvml.temperature_c', 'Temperature', 'temperature'],
  ['nvml.memory_used_bytes', 'GPU memory used', 'memory'],
  ['nvml.clock_event_reasons', 'Clock limits', 'reasons'],
  ['nvml.process_memory_bytes', 'GPU memory of process', 'memory'],
  ['nvml.process_sm_util', 'SM util of process', 'util'],
  ['host.cpu_util_pct', 'Host CPU', 'util'],
  ['host.iowait_pct', 'Host I/O wait', 'util'],
  ['host.process_cpu_user_pct', 'Process CPU, user', 'util'],
  ['host.process_cpu_system_pct', 'Process CPU, system', 'util'],
  ['host.thread_cpu_pct', 'Thread CPU', 'util'],
  ['host.rss_bytes', 'Process memory (RSS)', 'memory'],
  ['gpscope.sampler_cpu_pct', 'gpscope sampler CPU', 'util'],
  ['gpscope.collector_cpu_pct', 'gpscope collector CPU', 'util'],
];
// Percent metrics that are CPU time in % of one core: a process with four
// busy threads reads 400%. Every other percent metric is a share (0-100%).
const PER_CORE = new Set(['host.process_cpu_user_pct', 'host.process_cpu_system_pct', 'host.thread_cpu_pct',
  'gpscope.sampler_cpu_pct', 'gpscope.collector_cpu_pct']);
const BY_NAME = new Map(CATALOG.map(([name, title, family]) => [name, { title, family }]));

// Whether a metric is a share whose axis is bounded to 0-100%.
export function isShare(metric, unit) {
  return unit === 'percent' && !PER_CORE.has(metric);
}

// Chart families in the order a GPU card shows them.
export const FAMILIES = [
  ['util', 'GPU counters'],
  ['link', 'Interconnect'],
  ['clock', 'Clocks'],
  ['power', 'Power'],
  ['temperature', 'Temperature'],
  ['memory', 'GPU memory'],
];

function unitFamily(unit) {
  switch (unit) {
    case 'percent': return 'util';
    case 'bytes/s': return 'link';
    case 'MHz': return 'clock';
    case 'W': return 'power';
    case 'C': return 'temperature';
    case 'bytes': return 'memory';
    case 'bitmask': return 'reasons';
    default: return 'other';
  }
}

// {title, family} of a raw metric name (and its unit, for unknown names).
export function metricInfo(metric, unit) {
  const known = BY_NAME.get(metric);
  if (known) return known;
  return { title: metric || 'metric', family: unitFamily(unit) };
}

// Who a host metric is about: its descriptor label ("python3") or thread,
// from the C++ lane label "host.thread_cpu_pct · tid 867 (python3)".
function laneSubject(lane) {
  const raw = lane.label || '';
  const rest = raw.startsWith(lane.metric) ? raw.slice(lane.metric.length) : '';
  const tid = /· tid (\d+)/.exec(rest);
  const pid = /· pid (\d+)/.exec(rest);
  const paren = /\(([^()]*)\)\s*$/.exec(rest);
  const parts = [];
  if (tid) parts.push(`tid ${tid[1]}`);
  if (pid) parts.push(`pid ${pid[1]}`);
  // A device's descriptor label is its UUID: the GPU's number says it.
  if (paren && !/^GPU-[0-9a-f-]+$/i.test(paren[1])) parts.push(paren[1]);
  return parts.join(' · ');
}

// The lane's name for people: "NVLink RX", "Thread CPU · tid 867 · python3".
export function laneTitle(lane) {
  const { title } = metricInfo(lane.metric, lane.unit);
  const who = laneSubject(lane);
  return who ? `${title} · ${who}` : title;
}

// A chart's axis unit for values of `unit` up to `max`: the divisor and the
// label, so an axis reads "1.5 GB/s" steps, not 1500000000.
export function axisScale(unit, max) {
  const m = Math.abs(max) || 0;
  const si = (base) => {
    if (m >= 1e12) return { div: 1e12, label: `T${base}` };
    if (m >= 1e9) return { div: 1e9, label: `G${base}` };
    if (m >= 1e6) return { div: 1e6, label: `M${base}` };
    if (m >= 1e3) return { div: 1e3, label: `k${base}` };
    return { div: 1, label: base };
  };
  switch (unit) {
    case 'bytes/s': return si('B/s');
    case 'bytes': return si('B');
    case 'percent': return { div: 1, label: '%' };
    case 'C': return { div: 1, label: '°C' };
    case 'per_s': return { div: 1, label: '/s' };
    default: return { div: 1, label: unit || '' };
  }
}

// Three significant digits without trailing zeros: 6, 1.5, 15.2, 1,980.
export function trimNumber(v) {
  if (!isFinite(v)) return '—';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return String(Number(v.toPrecision(3)));
}

// A value on a scaled axis: "1.5 GB/s", "85%", "1,980 MHz".
export function fmtScaled(value, scale) {
  if (value == null || !isFinite(value)) return '—';
  const v = value / scale.div;
  const num = trimNumber(v);
  if (scale.label === '%') return `${num}%`;
  return scale.label ? `${num} ${scale.label}` : num;
}

// The legend of a series: "NVLink RX, GB/s (GPU 0)".
export function legendLabel(title, scale, device) {
  const unit = scale.label && scale.label !== '%' ? `, ${scale.label}` : scale.label === '%' ? ', %' : '';
  return `${title}${unit}${device != null ? ` (GPU ${device})` : ''}`;
}

// NVML clock event reasons (nvml.clock_event_reasons, nvmlClocksEventReason*),
// with the colour of their spans on state lanes.
export const CLOCK_REASONS = [
  { bit: 0x1, name: 'GPU idle', color: '#b9bec4' },
  { bit: 0x2, name: 'application clocks setting', color: '#8a9a5b' },
  { bit: 0x4, name: 'SW power cap', color: '#e08a2c' },
  { bit: 0x8, name: 'HW slowdown', color: '#d94a4a' },
  { bit: 0x10, name: 'sync boost', color: '#5b86c5' },
  { bit: 0x20, name: 'SW thermal slowdown', color: '#c7a028' },
  { bit: 0x40, name: 'HW thermal slowdown', color: '#a8322f' },
  { bit: 0x80, name: 'HW power brake', color: '#8e5cc4' },
  { bit: 0x100, name: 'display clock setting', color: '#7b93b8' },
];
const OTHER_REASON = { bit: 0, name: 'other reason', color: '#394454' };

// The reasons set in `mask`, as CLOCK_REASONS entries (bits NVML may add
// later show as "other reason").
export function reasonsOf(mask) {
  const m = Math.round(mask) >>> 0;
  const out = CLOCK_REASONS.filter((r) => m & r.bit);
  let known = 0;
  for (const r of CLOCK_REASONS) known |= r.bit;
  if (m & ~known) out.push(OTHER_REASON);
  return out;
}

export function clockReasons(mask) {
  const r = reasonsOf(mask);
  return r.length ? r.map((x) => x.name).join(', ') : 'none';
}

// State spans of a bitmask lane: per reason seen, the runs of samples that
// had it, each lasting until the next sample (the last until `endNs`).
// Returns [{reason, spans: [[start, end], ...]}] in CLOCK_REASONS order.
export function reasonSpans(t, v, endNs) {
  const by = new Map();
  const n = t.length;
  for (let i = 0; i < n; i++) {
    const end = i + 1 < n ? t[i + 1] : Math.max(t[i], endNs);
    for (const r of reasonsOf(v[i])) {
      if (!by.has(r)) by.set(r, []);
      const spans = by.get(r);
      const last = spans[spans.length - 1];
      if (last && last[1] === t[i]) last[1] = end;
      else spans.push([t[i], end]);
    }
  }
  return [...CLOCK_REASONS, OTHER_REASON].filter((r) => by.has(r)).map((reason) => ({ reason, spans: by.get(reason) }));
}
