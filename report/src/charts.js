// charts.js: the report's charts, drawn with uPlot (bundled into the page).
// Series labels are our own words or metric names; uPlot writes labels with
// textContent.

import uPlot from 'uplot';
import { fmtDuration, fmtOffset, fmtUnitValue, sig } from './format.js';

const charts = [];
let resizeBound = false;

function width(el) {
  return Math.max(260, Math.floor(el.clientWidth || 600));
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
// scale ('pct' | 'y2'), dash}]. onPick(tSeconds) on click.
export function timeChart(el, { x, series, height = 190, onPick, yLabel, y2Label, pctMax = 100 }) {
  const hasY2 = series.some((s) => s.scale === 'y2');
  const usesPct = series.some((s) => (s.scale || 'pct') === 'pct');
  const span = x.length > 1 ? x[x.length - 1] - x[0] : 1;
  const opts = {
    width: width(el),
    height,
    cursor: { drag: { x: false, y: false }, points: { size: 6 } },
    legend: { live: true },
    scales: {
      x: { time: false },
      pct: { range: (u, lo, hi) => [0, Math.max(pctMax === 100 ? 100 : 1, hi || 1) * 1.02] },
      y2: { range: (u, lo, hi) => [0, (hi || 1) * 1.1] },
    },
    axes: [
      { ...AXIS, values: (u, splits) => splits.map((s) => fmtOffset(s * 1e9, (span / 6) * 1e9)) },
      usesPct ? { ...AXIS, scale: 'pct', size: 52, label: yLabel, labelSize: 16,
        values: (u, splits) => splits.map((s) => `${sig(s)}%`) } : null,
      hasY2 ? { ...AXIS, scale: 'y2', side: usesPct ? 1 : 3, size: 60, label: y2Label, labelSize: 16,
        grid: usesPct ? { show: false } : AXIS.grid, values: (u, splits) => splits.map((s) => sig(s)) } : null,
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
        value: (u, v) => (v == null ? '—' : fmtUnitValue(v, s.unit)),
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
