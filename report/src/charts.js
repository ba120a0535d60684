// charts.js: the report's charts, drawn with uPlot (bundled into the page).
// Series labels are our own words or metric names; uPlot writes labels with
// textContent.

import uPlot from 'uplot';
import { fmtDuration, fmtOffset, fmtUnitValue, sig } from './format.js';
import { fmtScaled, trimNumber } from './metrics.js';

const charts = [];
let resizeBound = false;

function width(el) {
  return Math.max(260, Math.floor(el.clientWidth || 600));
}

// Every chart drawn, for the browser tests: [{el, u}] (u: the uPlot).
export function chartInstances() {
  return charts.slice();
}

function track(el, u) {
  charts.push({ el, u });
  if (!resizeBound) {
    resizeBound = true;
    let timer = 0;
    window.addEventListener('resize', () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        for (const c of charts) c.u.setSize({ width: width(c.el), height: c.u.height });
      }, 100);
    });
  }
  return u;
}

const AXIS = {
  stroke: '#4a5361',
  grid: { stroke: '#eef0f3', width: 1 },
  ticks: { stroke: '#d5d9df', width: 1, size: 4 },
  font: '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif',
};

// Time series over report seconds. series: [{label, values, color, unit,
// scale ('pct' | 'y2'), dash, fill}]. The pct scale is a share: its axis is
// bounded to 0-100%. The y2 scale reads `y2Scale` (metrics.js axisScale:
// {div, label}), so its axis says "1.5 GB/s", not 1500000000. `xRange`
// (seconds) fixes the time axis: every time chart of a page passes the
// same, so they line up. onPick(tSeconds) on click.
export function timeChart(el, { x, series, height = 190, onPick, yLabel, y2Label, y2Scale, xRange }) {
  const hasY2 = series.some((s) => s.scale === 'y2');
  const usesPct = series.some((s) => (s.scale || 'pct') === 'pct');
  const span = xRange ? xRange[1] - xRange[0] : x.length > 1 ? x[x.length - 1] - x[0] : 1;
  const y2 = y2Scale || { div: 1, label: '' };
  // With a unit scale, every tick carries its unit ("15 GB/s"); without,
  // plain numbers and y2Label beside them.
  const y2Text = (v) => (y2Scale ? fmtScaled(v, y2) : trimNumber(v));
  const opts = {
    width: width(el),
    height,
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    legend: { live: true },
    scales: {
      x: { time: false, range: xRange ? () => xRange : undefined },
      pct: { range: [0, 100] },
      y2: { range: (u, lo, hi) => [0, (hi || 1) * 1.1] },
    },
    axes: [
      { ...AXIS, values: (u, splits) => splits.map((s) => fmtOffset(s * 1e9, (span / 6) * 1e9)) },
      usesPct ? { ...AXIS, scale: 'pct', size: 52, label: yLabel, labelSize: yLabel ? 16 : 0,
        splits: () => [0, 25, 50, 75, 100], values: (u, splits) => splits.map((s) => `${s}%`) } : null,
      hasY2 ? { ...AXIS, scale: 'y2', side: usesPct ? 1 : 3, size: y2Scale ? 70 : 60, label: y2Scale ? undefined : y2Label,
        labelSize: y2Scale ? 0 : 16,
        grid: usesPct ? { show: false } : AXIS.grid, values: (u, splits) => splits.map((s) => y2Text(s)) } : null,
    ].filter(Boolean),
    series: [
      { label: 'time', value: (u, v) => (v == null ? '—' : fmtOffset(v * 1e9, 1e6)) },
      ...series.map((s) => ({
        label: s.label,
        scale: s.scale || 'pct',
        stroke: s.color,
        width: 1.6,
        dash: s.dash,
        fill: s.fill ? `${s.color}22` : undefined,
        spanGaps: false,
        points: { show: false },
        value: (u, v) => (v == null ? '—' : s.scale === 'y2' && y2Scale ? fmtScaled(v, y2) : fmtUnitValue(v, s.unit)),
      })),
    ],
  };
  const data = [x, ...series.map((s) => s.values)];
  const u = track(el, new uPlot(opts, data, el));
  if (onPick) {
    u.over.addEventListener('click', () => {
      const i = u.cursor.idx;
      if (i != null) onPick(x[i], i);
    });
    u.over.style.cursor = 'pointer';
  }
  return u;
}

// A bitmask metric as a state chart on the same time axis as timeChart:
// one row per named state (e.g. a clock-limiting reason), its spans filled
// in the state's colour. rows: [{name, color, spans: [[t0, t1] seconds]}].
// The legend names each state with its share of the time shown.
export function stateChart(el, { rows, xRange, height, onPick, empty }) {
  const n = Math.max(1, rows.length);
  const h = height || 70 + 22 * n;
  const span = xRange[1] - xRange[0] || 1;
  const names = rows.map((r) => r.name);
  const opts = {
    width: width(el),
    height: h,
    cursor: { drag: { x: false, y: false }, points: { show: false }, y: false },
    legend: { show: false },
    scales: { x: { time: false, range: () => xRange }, st: { range: [0, n] } },
    axes: [
      { ...AXIS, values: (u, splits) => splits.map((s) => fmtOffset(s * 1e9, (span / 6) * 1e9)) },
      { ...AXIS, scale: 'st', size: rows.length ? Math.max(52, 14 + 6.4 * Math.max(...names.map((x) => x.length))) : 52,
        grid: { show: false }, ticks: { show: false },
        splits: () => rows.map((r, i) => n - i - 0.5), values: (u, splits) => splits.map((s, i) => names[i] || '') },
    ],
    series: [{ label: 'time' }, { label: 'state', scale: 'st', show: false }],
    hooks: {
      draw: [(u) => {
        const { ctx } = u;
        ctx.save();
        ctx.beginPath();
        ctx.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
        ctx.clip();
        rows.forEach((r, i) => {
          const top = u.valToPos(n - i, 'st', true);
          const bottom = u.valToPos(n - i - 1, 'st', true);
          const pad = (bottom - top) * 0.16;
          ctx.fillStyle = r.color;
          for (const [a, b] of r.spans) {
            const x0 = u.valToPos(a, 'x', true);
            const x1 = Math.max(x0 + devicePixelRatio, u.valToPos(b, 'x', true));
            ctx.fillRect(x0, top + pad, x1 - x0, bottom - top - 2 * pad);
          }
        });
        if (!rows.length && empty) {
          ctx.fillStyle = '#6b7482';
          ctx.font = `${12 * devicePixelRatio}px system-ui, sans-serif`;
          ctx.textBaseline = 'middle';
          ctx.fillText(empty, u.bbox.left + 10 * devicePixelRatio, u.bbox.top + u.bbox.height / 2);
        }
        ctx.restore();
      }],
    },
  };
  const u = track(el, new uPlot(opts, [[xRange[0], xRange[1]], [null, null]], el));
  if (onPick) {
    u.over.addEventListener('click', () => {
      const left = u.cursor.left;
      if (left != null && left >= 0) onPick(u.posToVal(left, 'x'));
    });
    u.over.style.cursor = 'pointer';
  }
  return u;
}

// Histogram over log-spaced buckets (edges in ns): bars of counts, and a
// line of the share of time in each bucket. `marker` (ns) draws a dashed
// vertical line (e.g. the idle-gap threshold).
export function histogramChart(el, { edges, counts, totals, color = '#4f7cba', height = 200, marker, markerLabel, countLabel, timeLabel }) {
  const n = counts.length;
  const x = Array.from({ length: n }, (_, i) => i + 0.5);
  const sumTotal = totals.reduce((a, b) => a + b, 0) || 1;
  const share = totals.map((t) => (100 * t) / sumTotal);
  const bars = uPlot.paths.bars({ size: [0.86, 60], align: 0 });
  const pos = (ns) => {
    if (!(ns > 0) || edges.length < 2) return null;
    const l0 = Math.log10(edges[0]);
    return (Math.log10(ns) - l0) / (Math.log10(edges[edges.length - 1]) - l0) * n;
  };
  const opts = {
    width: width(el),
    height,
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    scales: { x: { time: false, range: [0, n] }, y: { range: (u, lo, hi) => [0, (hi || 1) * 1.1] }, pct: { range: [0, 100] } },
    axes: [
      { ...AXIS, splits: () => Array.from({ length: n + 1 }, (_, i) => i).filter((i) => i % Math.max(1, Math.ceil(n / 9)) === 0),
        values: (u, splits) => splits.map((i) => fmtDuration(edges[i])) },
      { ...AXIS, size: 50, values: (u, splits) => splits.map((s) => sig(s)) },
      { ...AXIS, scale: 'pct', side: 1, size: 44, grid: { show: false }, values: (u, splits) => splits.map((s) => `${s}%`) },
    ],
    series: [
      { label: 'bucket', value: (u, v) => (v == null ? '—' : `${fmtDuration(edges[Math.floor(v)])} – ${fmtDuration(edges[Math.floor(v) + 1])}`) },
      { label: countLabel || 'count', fill: `${color}cc`, stroke: color, width: 1, paths: bars, points: { show: false },
        value: (u, v) => (v == null ? '—' : Math.round(v).toLocaleString('en-US')) },
      { label: timeLabel || 'share of time', scale: 'pct', stroke: '#d94a4a', width: 1.6, points: { show: true, size: 4 },
        value: (u, v) => (v == null ? '—' : `${v.toFixed(1)}%`) },
    ],
    hooks: {
      draw: [(u) => {
        const p = pos(marker);
        if (p == null) return;
        const cx = u.valToPos(p, 'x', true);
        const { ctx } = u;
        ctx.save();
        ctx.strokeStyle = '#243042';
        ctx.setLineDash([4, 3]);
        ctx.lineWidth = 1.2 * devicePixelRatio;
        ctx.beginPath();
        ctx.moveTo(cx, u.bbox.top);
        ctx.lineTo(cx, u.bbox.top + u.bbox.height);
        ctx.stroke();
        if (markerLabel) {
          ctx.setLineDash([]);
          ctx.fillStyle = '#243042';
          ctx.font = `${11 * devicePixelRatio}px system-ui, sans-serif`;
          ctx.fillText(markerLabel, cx + 4 * devicePixelRatio, u.bbox.top + 12 * devicePixelRatio);
        }
        ctx.restore();
      }],
    },
  };
  return track(el, new uPlot(opts, [x, counts, share], el));
}

// Stacked bars per step: compute, copy-only, idle (ms).
export function stepsChart(el, { compute, copy, idle, height = 210, onPick }) {
  const n = compute.length;
  const x = Array.from({ length: n }, (_, i) => i);
  const c = compute.map((v) => v / 1e6);
  const cc = copy.map((v, i) => c[i] + v / 1e6);
  const all = idle.map((v, i) => cc[i] + v / 1e6);
  const bars = uPlot.paths.bars({ size: [0.9, 40], align: 0 });
  const raw = [null, compute, copy, idle];
  // The warm-up step (autotuning, lazy loading) can be 20x a normal one:
  // scale to the 98th percentile so the others stay readable.
  const sorted = all.slice().sort((a, b) => a - b);
  const p98 = sorted[Math.min(n - 1, Math.floor(0.98 * (n - 1)))] || 1;
  const yMax = sorted[n - 1] > 2 * p98 && n > 5 ? p98 * 1.25 : (sorted[n - 1] || 1) * 1.05;
  const opts = {
    width: width(el),
    height,
    cursor: { drag: { x: false, y: false }, points: { show: false } },
    scales: { x: { time: false, range: [-0.5, n - 0.5] }, y: { range: [0, yMax] } },
    axes: [
      { ...AXIS, label: 'step', labelSize: 16, values: (u, splits) => splits.map((s) => (Number.isInteger(s) ? s : '')) },
      { ...AXIS, size: 56, label: 'ms', labelSize: 16, values: (u, splits) => splits.map((s) => sig(s)) },
    ],
    series: [
      { label: 'step', value: (u, v) => (v == null ? '—' : `#${v}`) },
      { label: 'idle', fill: '#e8a0a0', stroke: '#d94a4a', width: 0, paths: bars, points: { show: false },
        value: (u, v, si, i) => (i == null ? '—' : fmtDuration(raw[3][i])) },
      { label: 'copies / memsets only', fill: '#e08a2c', stroke: '#e08a2c', width: 0, paths: bars, points: { show: false },
        value: (u, v, si, i) => (i == null ? '—' : fmtDuration(raw[2][i])) },
      { label: 'kernels', fill: '#4f7cba', stroke: '#4f7cba', width: 0, paths: bars, points: { show: false },
        value: (u, v, si, i) => (i == null ? '—' : fmtDuration(raw[1][i])) },
    ],
  };
  const u = track(el, new uPlot(opts, [x, all, cc, c], el));
  if (onPick) {
    u.over.addEventListener('click', () => {
      if (u.cursor.idx != null) onPick(u.cursor.idx);
    });
    u.over.style.cursor = 'pointer';
  }
  return u;
}

// At most `max` points: means over equal index buckets (for long counters).
export function downsample(t, v, max = 3000) {
  const n = t.length;
  if (n <= max) return [Array.from(t, (x) => x / 1e9), Array.from(v)];
  const xs = [], ys = [];
  const step = n / max;
  for (let b = 0; b < max; b++) {
    const i0 = Math.floor(b * step), i1 = Math.min(n, Math.floor((b + 1) * step));
    let s = 0;
    for (let i = i0; i < i1; i++) s += v[i];
    xs.push(t[i0] / 1e9);
    ys.push(s / Math.max(1, i1 - i0));
  }
  return [xs, ys];
}
