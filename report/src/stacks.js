// stacks.js: call stacks in the report (issue 20): the source-lines table
// (summary.source_lines, tools/render/sites_render.h), a flame-style view
// of every stack that cost something (data.stacks, tools/render/
// report_stacks.h: a prefix tree, outermost frame at the top, widths by the
// chosen measure), and the stack of a clicked API call or idle gap on the
// timeline. Frame text is trace data: it is set as text only (dom.js).

import { clear, h, section } from './dom.js';
import { fmtCount, fmtDuration, fmtPercent } from './format.js';

const MEASURES = [
  ['gpu_lost_ns', 'GPU time lost', 'GPU idle attributed to the stack (waits in its syncs, host code after them or before its launches)'],
  ['sync_blocked_ns', 'host blocked', 'host time blocked in the synchronizing calls taken at the stack'],
  ['kernel_ns', 'kernel time (est.)', 'kernel time estimated from sampled launches'],
];
// Boxes narrower than this share of the view are not drawn.
const MIN_SHARE = 0.002;

function lowerBound(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

export function hasStacks(data) {
  return !!(data && data.stacks && data.stacks.nodes && data.summary && data.summary.source_lines);
}

// Frame names from the innermost frame (node) out.
export function framesOf(st, node) {
  const out = [];
  for (let n = node, guard = 0; n >= 0 && guard < 4096; n = st.nodes.parent[n], guard++) {
    out.push({ node: n, name: st.nodes.name[n], category: st.nodes.category[n] });
  }
  return out;
}

export function stackList(st, node, onShow) {
  const frames = framesOf(st, node);
  return h('div', { class: 'stack-box' },
    h('ol', { class: 'stack-list', 'data-node': node },
      frames.map((f, i) => h('li', { class: `frame ${f.category}${i === 0 ? ' innermost' : ''}` }, f.name))),
    onShow ? h('button', { type: 'button', class: 'range-link stack-show', onclick: () => onShow(node) },
      'show in the flame view') : null);
}

// The node of the API call of lane `laneIndex` that starts at `startNs`, or -1.
export function callStackAt(data, laneIndex, startNs) {
  const calls = callsByLane(data).get(laneIndex);
  if (!calls) return -1;
  const i = lowerBound(calls.t, startNs);
  return i < calls.t.length && calls.t[i] === startNs ? calls.node[i] : -1;
}

function callsByLane(data) {
  if (!data.stacks._byLane) {
    const m = new Map();
    for (const c of data.stacks.calls || []) m.set(c.lane, c);
    data.stacks._byLane = m;
  }
  return data.stacks._byLane;
}

// The stacks around an idle gap [a, b) of a GPU of process `process`: the
// stacked call the host was in when the gap began (if one spans a), and the
// last stacked call that started inside the gap (the launch that ended it).
export function gapStacks(data, lanes, process, a, b) {
  const groups = data.timeline.groups;
  let began = -1, beganT = -Infinity, ended = -1, endedT = -Infinity;
  for (const [laneIndex, c] of callsByLane(data)) {
    const lane = lanes[laneIndex];
    if (!lane || !groups[lane.group] || groups[lane.group].process !== process) continue;
    // Ended: the latest call starting in [a, b).
    const j = lowerBound(c.t, b) - 1;
    if (j >= 0 && c.t[j] >= a && c.t[j] > endedT) {
      ended = c.node[j];
      endedT = c.t[j];
    }
    // Began: the latest call starting before a whose event spans a.
    const k = lowerBound(c.t, a) - 1;
    if (k >= 0 && lane.start) {
      const e = lowerBound(lane.start, c.t[k]);
      if (e < lane.start.length && lane.start[e] === c.t[k] && lane.start[e] + lane.dur[e] >= a && c.t[k] > beganT) {
        began = c.node[k];
        beganT = c.t[k];
      }
    }
  }
  return { began, ended };
}

// ------------------------------------------------------------ flame view --

class Flame {
  constructor(data) {
    this.st = data.stacks;
    const n = this.st.nodes.name.length;
    this.children = Array.from({ length: n }, () => []);
    this.roots = [];
    this.st.nodes.parent.forEach((p, i) => (p >= 0 ? this.children[p].push(i) : this.roots.push(i)));
    this.measure = 'gpu_lost_ns';
    this.selected = -1;
    this.body = h('div', { class: 'flame', role: 'tree' });
    this.info = h('div', { class: 'flame-info muted' }, 'Click a frame to see its stack.');
    this.buttons = MEASURES.map(([key, label, title]) => h('button', {
      type: 'button', class: 'tl-btn flame-measure', 'data-measure': key, title,
      onclick: () => { this.measure = key; this.draw(); },
    }, label));
    this.el = h('div', { class: 'card flame-card' },
      h('div', { class: 'flame-head' }, h('h3', null, 'Stacks'), h('span', { class: 'muted' }, 'width by'), this.buttons),
      this.body, this.info);
    this.draw();
  }

  totals(measure = this.measure) {
    const n = this.st.nodes.name.length;
    const v = new Float64Array(n);
    for (const leaf of this.st.leaves) v[leaf.node] += leaf[measure] || 0;
    // Children have larger indexes than their parents (the tree is built
    // outermost first), so one backward pass sums every subtree.
    for (let i = n - 1; i >= 0; i--) {
      const p = this.st.nodes.parent[i];
      if (p >= 0) v[p] += v[i];
    }
    return v;
  }

  draw() {
    this.buttons.forEach((b) => b.classList.toggle('on', b.dataset.measure === this.measure));
    clear(this.body);
    const v = this.totals();
    const total = this.roots.reduce((s, r) => s + v[r], 0);
    if (!(total > 0)) {
      this.body.append(h('div', { class: 'muted' }, 'Nothing to show for this measure.'));
      return;
    }
    const rows = [];
    const place = (node, depth, left) => {
      const share = v[node] / total;
      if (share < MIN_SHARE) return;
      if (!rows[depth]) rows[depth] = h('div', { class: 'flame-row' });
      const box = h('div', {
        class: `flame-box ${this.st.nodes.category[node]}${node === this.selected ? ' selected' : ''}`,
        'data-node': node, title: `${this.st.nodes.name[node]}\n${fmtDuration(v[node])} (${fmtPercent(share)})`,
        style: { left: `${(left * 100).toFixed(4)}%`, width: `${(share * 100).toFixed(4)}%` },
        onclick: () => this.select(node),
      }, this.st.nodes.name[node]);
      rows[depth].append(box);
      let at = left;
      for (const c of this.children[node].slice().sort((x, y) => v[y] - v[x])) {
        place(c, depth + 1, at);
        at += v[c] / total;
      }
    };
    let at = 0;
    for (const r of this.roots.slice().sort((x, y) => v[y] - v[x])) {
      place(r, 0, at);
      at += v[r] / total;
    }
    this.body.append(...rows.filter(Boolean));
    this.values = v;
  }

  select(node) {
    this.selected = node;
    // A frame that costs nothing by this measure is not drawn: switch to one
    // by which it costs something.
    if (!(this.totals()[node] > 0)) {
      const m = MEASURES.find(([key]) => this.totals(key)[node] > 0);
      if (m) this.measure = m[0];
    }
    this.draw();
    const v = this.values ? this.values[node] : 0;
    clear(this.info).classList.remove('muted');
    this.info.append(
      h('div', { class: 'flame-sel' }, `${fmtDuration(v)} ${MEASURES.find((m) => m[0] === this.measure)[1]} under this frame`),
      stackList(this.st, node));
  }
}

// ------------------------------------------------------------ the section --

export function renderSourceLines(data, state) {
  if (!hasStacks(data)) return null;
  const sl = data.summary.source_lines;
  const flame = new Flame(data);
  state.flame = flame;
  const sites = sl.sites || [];
  const rows = sites.map((s, i) => ({ ...s, index: i, node: (data.stacks.sites || [])[i] ?? -1 }));
  const table = h('table', { class: 'data source-lines' },
    h('thead', null, h('tr', null, ['#', 'site', 'GPU lost', 'host blocked', 'calls', 'kernel time (est.)', 'next launch']
      .map((x, i) => h('th', { class: i >= 2 && i <= 5 ? 'num' : null }, x)))),
    h('tbody', null, rows.map((r) => h('tr', {
      class: 'clickable', 'data-site': r.index, title: 'show its stack in the flame view',
      onclick: () => showSite(state, r.index),
    },
    h('td', null, `${r.index + 1}`),
    h('td', { class: 'kname', title: r.stack.join('\n') }, r.label, r.user ? null : h('span', { class: 'muted' }, ' (no user frame)')),
    h('td', { class: 'num', 'data-col': 'gpu_lost_ns', 'data-value': String(r.gpu_lost_ns) }, fmtDuration(r.gpu_lost_ns)),
    h('td', { class: 'num', 'data-col': 'sync_blocked_ns', 'data-value': String(r.sync_blocked_ns) }, fmtDuration(r.sync_blocked_ns)),
    h('td', { class: 'num' }, fmtCount(r.sync_calls)),
    h('td', { class: 'num' }, r.kernel ? `${fmtDuration(r.kernel.ns)} ± ${fmtDuration(r.kernel.error_ns)}` : '—'),
    h('td', null, r.next ? `${r.next.site} (${fmtDuration(r.next.host_ns_mean)} later)` : '')))));
  const procs = (sl.processes || []).map((p) => h('p', { class: 'muted' },
    `pid ${p.pid}: ${fmtCount(p.stack_samples)} stacks taken at CUDA calls, ${fmtCount(p.joined)} joined to their call; `
    + `GPU idle attributed ${fmtDuration(p.gpu_idle_attributed_ns)}, not attributed ${fmtDuration(p.gpu_idle_unattributed_ns)}; `
    + (p.sampled_launches >= 2 ? `kernel time by line from ${fmtCount(p.sampled_launches)} sampled launches (± the 95% interval of the sampling).`
      : 'too few sampled launches for kernel time by line.')));
  const body = h('div', { class: 'gpus' },
    h('div', { class: 'card' }, procs, h('div', { class: 'table-wrap' }, table)), flame.el);
  return section('source-lines', 'Source lines',
    'Where in the code the GPU time went, from call stacks taken at CUDA calls: sites by the innermost frame of your code, GPU time lost first, whole run. Click a row, a finding\'s site or a call on the timeline to see its stack.',
    body);
}

export function showSite(state, index) {
  const data = state.data;
  const node = (data.stacks.sites || [])[index];
  document.getElementById('source-lines').scrollIntoView({ block: 'start' });
  if (node != null && node >= 0 && state.flame) state.flame.select(node);
  document.querySelectorAll('table.source-lines tr.selected').forEach((tr) => tr.classList.remove('selected'));
  const tr = document.querySelector(`table.source-lines tr[data-site="${index}"]`);
  if (tr) tr.classList.add('selected');
}

export function showNode(state, node) {
  document.getElementById('source-lines').scrollIntoView({ block: 'start' });
  if (state.flame) state.flame.select(node);
}

// What the timeline shows under a clicked event (an API call with a
// stack) or beside events (an idle gap of a GPU stream): null if nothing.
export function timelineStackDetails(state, lanes, selected, where) {
  const data = state.data;
  if (!hasStacks(data)) return null;
  const st = data.stacks;
  const show = (node) => showNode(state, node);
  if (selected && selected.event != null) {
    const lane = selected.lane;
    const node = callStackAt(data, lane.index, lane.start[selected.event]);
    if (node < 0) return null;
    return h('div', { class: 'tl-stack' }, h('div', { class: 'desc-sub' }, 'call stack (innermost first)'),
      stackList(st, node, show));
  }
  if (!where || !where.lane || where.lane.kind !== 'stream' || !where.lane.start) return null;
  const lane = where.lane;
  const i = lowerBound(lane.start, where.t);
  if (i === 0 || i >= lane.start.length) return null;
  if (lane.tileState) {
    // A tiled lane (decode.js): only where its tiles are decoded; elsewhere
    // its starts are placeholders and a gap would be made up.
    const T = lane.tiles.events;
    for (let t = Math.floor(Math.max(0, i - 64) / T); t <= Math.floor(i / T); t++) {
      if (lane.tileState[t] !== 2) return null;
    }
  }
  let a = 0;
  for (let j = i - 1, steps = 0; j >= 0 && steps < 64; j--, steps++) a = Math.max(a, lane.start[j] + lane.dur[j]);
  const b = lane.start[i];
  if (!(where.t >= a && where.t < b)) return null;
  const group = data.timeline.groups[lane.group];
  const { began, ended } = gapStacks(data, lanes, group ? group.process : -1, a, b);
  if (began < 0 && ended < 0) return null;
  return h('div', { class: 'tl-stack' },
    h('div', { class: 'desc-title' }, `idle ${fmtDuration(b - a)} on ${lane.label}`),
    began >= 0 ? [h('div', { class: 'desc-sub' }, 'the host was in this call when the GPU ran dry'), stackList(st, began, show)] : null,
    ended >= 0 ? [h('div', { class: 'desc-sub' }, 'the call that ended the gap'), stackList(st, ended, show)] : null);
}
