// format.js: numbers for people. Times are ns (report ns or durations).

export function fmtDuration(ns) {
  if (ns == null || !isFinite(ns)) return 'n/a';
  const a = Math.abs(ns);
  if (a < 1e3) return `${Math.round(ns)} ns`;
  if (a < 1e6) return `${sig(ns / 1e3)} µs`;
  if (a < 1e9) return `${sig(ns / 1e6)} ms`;
  if (a < 1e12) return `${sig(ns / 1e9)} s`;
  return `${Math.round(ns / 1e9)} s`;
}

// Three significant digits, no exponent.
export function sig(x) {
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 100) return x.toFixed(0);
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

// Offset on the timeline: "6.3650 s", "12.35 ms", "840 µs": the unit from
// the value's size, enough decimals to resolve `stepNs`.
export function fmtOffset(ns, stepNs) {
  const step = Math.max(1, stepNs || Math.abs(ns) || 1);
  const a = ns === 0 ? step : Math.abs(ns);
  let unit = 1, name = 'ns';
  if (a >= 1e9) { unit = 1e9; name = 's'; }
  else if (a >= 1e6) { unit = 1e6; name = 'ms'; }
  else if (a >= 1e3) { unit = 1e3; name = 'µs'; }
  const decimals = Math.max(0, Math.min(9, Math.ceil(Math.log10(unit / step) - 1e-9)));
  return `${(ns / unit).toFixed(decimals)} ${name}`;
}

export function fmtPercent(ratio, digits = 1) {
  if (ratio == null || !isFinite(ratio)) return 'n/a';
  return `${(100 * ratio).toFixed(digits)}%`;
}

export function fmtBytes(b) {
  if (b == null || !isFinite(b)) return 'n/a';
  if (b < 1e3) return `${Math.round(b)} B`;
  if (b < 1e6) return `${sig(b / 1e3)} kB`;
  if (b < 1e9) return `${sig(b / 1e6)} MB`;
  if (b < 1e12) return `${sig(b / 1e9)} GB`;
  return `${sig(b / 1e12)} TB`;
}

export function fmtCount(n) {
  if (n == null || !isFinite(n)) return 'n/a';
  return Math.round(n).toLocaleString('en-US');
}

// An analyzer evidence value by its unit (summary.h: evidence[].unit).
export function fmtEvidence(value, unit) {
  switch (unit) {
    case 'ratio': return fmtPercent(value);
    case 'ns': return fmtDuration(value);
    case 'bytes': return fmtBytes(value);
    case 'GB/s': return `${sig(value)} GB/s`;
    case 'per_step': return `${value.toFixed(2)}/step`;
    case 'per_s': return `${value.toFixed(1)}/s`;
    case 'bool': return value ? 'yes' : 'no';
    case 'count': return fmtCount(value);
    default: return Number.isInteger(value) ? fmtCount(value) : value.toFixed(2);
  }
}

export function fmtUnitValue(value, unit) {
  if (value == null || !isFinite(value)) return 'n/a';
  switch (unit) {
    case 'percent': return `${value.toFixed(1)}%`;
    case 'ratio': return fmtPercent(value);
    case 'bytes': return fmtBytes(value);
    case 'bytes/s': return `${fmtBytes(value)}/s`;
    case 'W': return `${value.toFixed(1)} W`;
    case 'MHz': return `${Math.round(value)} MHz`;
    case 'C': return `${value.toFixed(0)} °C`;
    case 'per_s': return `${sig(value)}/s`;
    case 'bitmask': return `0x${Math.round(value).toString(16)}`;
    default: return `${sig(value)}${unit ? ' ' + unit : ''}`;
  }
}

// Wall-clock time of report ns `ns` given t0 (a decimal string of ns).
export function fmtWallClock(t0String, ns = 0) {
  const ms = Number(BigInt(t0String) / 1000000n) + ns / 1e6;
  if (!isFinite(ms) || ms <= 0) return 'unknown';
  return new Date(ms).toISOString().replace('T', ' ').replace('Z', ' UTC');
}

// 1-2-5 step near `x`.
export function niceStep(x) {
  const p = Math.pow(10, Math.floor(Math.log10(x)));
  const m = x / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}
