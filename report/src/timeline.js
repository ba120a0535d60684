// timeline.js: the waterfall timeline, drawn by hand on a canvas (no chart
// library handles a million intervals in lanes well).
//
// Lanes come grouped per process (rank), then per GPU (one lane per stream,
// a sync-wait lane), the GPU's counters, host threads (NVTX, CUDA API) and
// host metrics, all on one time base (report ns). With two or more ranks the
// default layout is "compare ranks" (each rank's streams only, in thin rows,
// 2-8 ranks on one screen) and counter groups start folded; ranks can be
// shown or hidden one by one. A bitmask counter (clock event reasons) is
// drawn as states: one band per reason seen. Each frame draws only what is
// visible: a lane with many events in view draws the pre-aggregated bins the
// C++ side wrote (tools/render/report_data.h), otherwise its exact events,
// merging neighbours narrower than a pixel. Hit testing and search work on
// the same typed arrays.
//
// Tiles by zoom level (decode.js): a busy lane has finer bin levels and its
// exact events in tiles, both decoded only when a view needs them; until
// they are, the lane draws the finest bins it has and redraws when they
// land. Search decodes every tile first.
//
// Input: mouse wheel zooms at the cursor (Shift+wheel pans), drag pans (and
// scrolls lanes), Shift+drag selects a range to zoom to, double-click zooms
// to an event, click on a group header folds it. Keys: W/S zoom, A/D or
// arrows pan, 0 shows everything, / searches.
//
// Test hooks: range() -> {start_ns, end_ns}; setRange(); search();
// laneBoxes() (lanes on screen, viewport px); setCompact();
// setProcessVisible(); setMetricsFolded(); compareRanks().

import { CAT, CAT_COLORS, CAT_NAMES, LEGEND, nameColor } from './colors.js';
import { loadLevel, loadTile } from './decode.js';
import { h } from './dom.js';
import {
  fmtBytes, fmtCount, fmtDuration, fmtOffset, fmtPercent, fmtUnitValue, niceStep,
} from './format.js';
import {
  clockReasons, FAMILIES, isShare, laneTitle, metricInfo, reasonSpans,
} from './metrics.js';

const ROW_H = 18;
const LANE_PAD = 3;
const COUNTER_H = 34;
const GROUP_H = 24;
const SUBGROUP_H = 21;
// "Compare ranks": one thin header per rank and only its streams, in rows
// as tall as fit the view, never thinner than COMPACT_ROW_H: 8 ranks of 4
// streams fit one 1080 px screen.
const COMPACT_ROW_H = 10;
const COMPACT_PAD = 1;
const COMPACT_GROUP_H = 18;
const FOLDED_BY_DEFAULT = new Set(['gpu_metrics', 'metrics']);
const AXIS_H = 26;
const LABEL_W = 236;
const OVERVIEW_H = 44;
const EXACT_LIMIT = 40000;  // visible events per lane drawn one by one; more -> bins
const MAX_TILES_IN_VIEW = 4;  // a tiled lane draws exact events from at most this many tiles
const MIN_SPAN_NS = 200;
const ANIMATION_MS = 220;

function upperBound(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] <= x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

function lowerBound(a, x) {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] < x) lo = mid + 1; else hi = mid;
  }
  return lo;
}

// The timeline process index of the rank the analyzer named the straggler
// (summary.ranks, tools/analyses/ranks.h), or -1.
export function stragglerProcess(report) {
  const ranks = report.summary && report.summary.ranks;
  if (!ranks || ranks.straggler == null) return -1;
  const row = ranks.rows[ranks.straggler];
  const gpu = row && (report.gpus || [])[row.gpu];
  return gpu && gpu.process >= 0 ? gpu.process : -1;
}

const FONT = '11px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const FONT_BOLD = '600 11.5px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';
const FONT_SMALL = '10px system-ui, -apple-system, "Segoe UI", Roboto, sans-serif';

export class Timeline {
  constructor(root, report, lanes) {
    this.report = report;
    this.tl = report.timeline;
    this.names = this.tl.names;
    this.shortNames = this.tl.short_names;
    this.lanes = lanes;
    this.groups = this.tl.groups;
    this.span = Math.max(1, report.span_ns);
    const pad = this.span * 0.01;
    this.home = [-pad, this.span + pad];
    this.view = this.home.slice();
    this.collapsed = new Set();
    this.hidden = new Set();  // processes (timeline process index) not shown
    // Processes with GPU streams: the ranks the compare view lines up.
    this.rankProcesses = [...new Set(this.lanes.filter((l) => l.kind === 'stream')
      .map((l) => this.groups[l.group].process))].sort((a, b) => a - b);
    this.multiRank = this.rankProcesses.length >= 2;
    this.compact = this.multiRank;
    // Several ranks: counters fold by default (a GPU's ~20 counter lanes
    // pushed the next rank's streams ~1,500 px down); one rank: all open.
    if (this.multiRank) {
      this.groups.forEach((g, gi) => { if (FOLDED_BY_DEFAULT.has(g.kind)) this.collapsed.add(gi); });
    }
    this.straggler = stragglerProcess(report);
    for (const lane of this.lanes) {
      if (lane.kind !== 'counter') continue;
      lane.title = laneTitle(lane);
      if (lane.unit === 'bitmask') lane.states = reasonSpans(lane.t, lane.v, this.span);
    }
    this.colorCache = new Array(this.names.length);
    this.searchState = null;
    this.highlights = [];
    this.hover = null;
    this.selected = null;
    this.drag = null;
    this.mouse = null;
    this.pending = 0;
    this.lastDrawMs = 0;
    this.encoding = this.tl.blob ? this.tl.blob.encoding : 'base64';
    this.loads = new Set();  // tile and level decodes in flight
    this.buildDom(root);
    this.layout();
    this.buildOverview();
    this.bind();
    this.resize();
  }

  // ------------------------------------------------------------ DOM --

  buildDom(root) {
    this.searchInput = h('input', {
      type: 'search', class: 'tl-search', placeholder: 'Search kernels, API calls, NVTX ranges…  ( / )',
      'aria-label': 'search event names', spellcheck: 'false',
    });
    this.searchInfo = h('span', { class: 'tl-search-info' });
    const button = (label, title, fn) => h('button', { class: 'tl-btn', title, type: 'button', onclick: fn }, label);
    this.toolbar = h('div', { class: 'tl-toolbar' },
      this.searchInput,
      button('◀', 'previous match (Shift+Enter)', () => this.nextMatch(-1)),
      button('▶', 'next match (Enter)', () => this.nextMatch(1)),
      this.searchInfo,
      h('span', { class: 'tl-spacer' }),
      button('−', 'zoom out (S)', () => this.zoomBy(1 / 0.6)),
      button('+', 'zoom in (W)', () => this.zoomBy(0.6)),
      button('Fit', 'show everything (0)', () => this.setRange(this.home[0], this.home[1])),
      this.rangeInfo = h('span', { class: 'tl-range' }));
    const legend = h('div', { class: 'tl-legend' },
      LEGEND.map(([cat, label]) => h('span', { class: 'tl-legend-item' },
        h('i', { style: { background: CAT_COLORS[cat] } }), label)),
      h('span', { class: 'tl-legend-item' }, h('i', { class: 'hatch' }), 'data lost'),
      h('span', { class: 'tl-help' },
        'wheel zoom · drag pan · Shift+drag select · W/S zoom · A/D pan · double-click zooms to an event'));
    this.rankBar = this.buildRankBar();
    this.overview = h('canvas', { class: 'tl-overview', 'aria-label': 'whole-run overview' });
    this.canvas = h('canvas', { class: 'tl-canvas', tabindex: '0', 'aria-label': 'timeline' });
    this.spacer = h('div', { class: 'tl-spacer-block' }, this.canvas);
    this.scroller = h('div', { class: 'tl-scroll' }, this.spacer);
    this.tooltip = h('div', { class: 'tl-tooltip', role: 'tooltip' });
    this.details = h('div', { class: 'tl-details' },
      h('span', { class: 'muted' }, 'Click an event to pin its details here.'));
    this.root = root;
    root.append(this.toolbar, this.rankBar, legend, this.overview, this.scroller, this.details, this.tooltip);
  }

  // Layout switch (compare ranks / all lanes), per-rank show/hide and
  // folding of every counter group at once.
  buildRankBar() {
    const bar = h('div', { class: 'tl-ranks' });
    const hasMetrics = this.groups.some((g) => g.kind === 'gpu_metrics' || g.kind === 'metrics');
    if (!this.multiRank && !hasMetrics) return bar;
    this.layoutButtons = {};
    if (this.multiRank) {
      const seg = h('span', { class: 'tl-seg', role: 'group', 'aria-label': 'layout' });
      for (const [key, label, title] of [
        ['compact', 'Compare ranks', "every rank's streams in thin rows on one screen"],
        ['full', 'All lanes', 'streams, sync waits, metrics and host threads of each rank']]) {
        const b = h('button', { type: 'button', class: 'tl-seg-btn', 'data-layout': key, title,
          onclick: () => this.setCompact(key === 'compact') }, label);
        this.layoutButtons[key] = b;
        seg.append(b);
      }
      bar.append(seg, h('span', { class: 'tl-ranks-label' }, 'ranks'));
      this.rankBoxes = new Map();
      for (const p of this.rankProcesses) {
        const proc = this.report.processes[p] || {};
        const box = h('input', { type: 'checkbox', checked: true, 'data-process': p,
          onchange: () => this.setProcessVisible(p, box.checked) });
        const name = proc.rank >= 0 ? `rank ${proc.rank}` : `pid ${proc.pid}`;
        this.rankBoxes.set(p, box);
        bar.append(h('label', { class: `tl-rank${p === this.straggler ? ' straggler' : ''}`,
          title: `${this.processLabel(p)}${p === this.straggler ? ' (the straggler)' : ''}` }, box, name));
      }
      bar.append(
        h('button', { type: 'button', class: 'tl-btn small tl-ranks-all', title: 'show every rank', onclick: () => this.showAllProcesses() }, 'all'));
    }
    if (hasMetrics) {
      this.metricsButton = h('button', { type: 'button', class: 'tl-btn small tl-metrics-btn',
        title: 'fold or unfold every metric group (GPU counters and host metrics)',
        onclick: () => this.setMetricsFolded(!this.metricsFolded()) });
      bar.append(h('span', { class: 'tl-spacer' }), this.metricsButton);
    }
    this.updateRankBar();
    return bar;
  }

  updateRankBar() {
    if (this.layoutButtons) {
      for (const [key, b] of Object.entries(this.layoutButtons)) {
        b.classList.toggle('on', (key === 'compact') === this.compact);
        b.setAttribute('aria-pressed', String((key === 'compact') === this.compact));
      }
    }
    if (this.rankBoxes) for (const [p, box] of this.rankBoxes) box.checked = !this.hidden.has(p);
    if (this.metricsButton) {
      this.metricsButton.textContent = this.metricsFolded() ? 'show metrics' : 'fold metrics';
      this.metricsButton.disabled = this.compact;
      this.metricsButton.title = this.compact ? 'metrics show in "All lanes"'
        : 'fold or unfold every metric group (GPU counters and host metrics)';
    }
  }

  metricGroups() {
    const out = [];
    this.groups.forEach((g, gi) => { if (g.kind === 'gpu_metrics' || g.kind === 'metrics') out.push(gi); });
    return out;
  }

  metricsFolded() {
    return this.metricGroups().every((gi) => this.collapsed.has(gi));
  }

  setMetricsFolded(folded) {
    for (const gi of this.metricGroups()) {
      if (folded) this.collapsed.add(gi); else this.collapsed.delete(gi);
    }
    this.relayout();
  }

  setCompact(compact) {
    this.compact = !!compact && this.multiRank;
    this.relayout();
  }

  setProcessVisible(p, visible) {
    if (visible) this.hidden.delete(p); else this.hidden.add(p);
    this.relayout();
  }

  showAllProcesses() {
    this.hidden.clear();
    this.relayout();
  }

  relayout() {
    this.layout();
    this.updateRankBar();
    this.resize();
  }

  // Lines up the ranks for a finding about them (a straggler): the compare
  // view, every rank shown (up to 8; beyond, at least the finding's own),
  // the ranges highlighted on all of them.
  compareRanks(ranges, focusIndex = -1, group = -1) {
    if (this.multiRank) {
      this.compact = true;
      if (this.rankProcesses.length <= 8) this.hidden.clear();
      if (group >= 0) this.hidden.delete(this.groups[group].process);
      this.relayout();
      this.scroller.scrollTop = 0;
    }
    this.showRanges(ranges, this.multiRank ? -1 : group, focusIndex);
  }

  // Test hook: the on-screen boxes (viewport px) of the lanes drawn now.
  laneBoxes() {
    const r = this.canvas.getBoundingClientRect();
    const top = r.top + AXIS_H - this.scroller.scrollTop;
    const viewTop = r.top + AXIS_H, viewBottom = r.top + this.viewH;
    return this.items.filter((it) => it.type === 'lane').map((it) => ({
      lane: it.lane.index, kind: it.lane.kind, process: it.process, label: it.label || it.lane.label,
      top: top + it.y, bottom: top + it.y + it.h, inView: top + it.y >= viewTop && top + it.y + it.h <= viewBottom,
    }));
  }

  // --------------------------------------------------------- layout --

  // Items top to bottom: group headers and lanes, with y offsets. Each
  // lane item carries its row height and padding (compact rows are thin).
  layout() {
    const items = [];
    let y = 0;
    const byGroup = this.lanesByGroup();
    // Compare view: rows as tall as fit the timeline's height (ROW_H for a
    // few ranks, down to COMPACT_ROW_H for many).
    let compactRowH = COMPACT_ROW_H;
    if (this.compact) {
      let headers = 0, rows = 0, lanes = 0;
      for (const p of this.rankProcesses) {
        if (this.hidden.has(p)) continue;
        headers++;
        for (const lane of this.lanes) {
          if (lane.kind === 'stream' && this.groups[lane.group].process === p) { rows += lane.rows; lanes++; }
        }
      }
      const avail = this.targetViewH() - AXIS_H - 8 - headers * COMPACT_GROUP_H - lanes * 2 * COMPACT_PAD;
      if (rows) compactRowH = Math.max(COMPACT_ROW_H, Math.min(ROW_H, Math.floor(avail / rows)));
    }
    const pushLane = (lane, process, compact, label) => {
      const rowH = compact ? compactRowH : ROW_H;
      const pad = compact ? COMPACT_PAD : LANE_PAD;
      const hh = lane.kind === 'counter' ? COUNTER_H : lane.rows * rowH + 2 * pad;
      items.push({ type: 'lane', lane, y, h: hh, process, rowH, pad, compact, label });
      y += hh;
    };
    this.groupY = new Map();
    this.groups.forEach((g, gi) => {
      if (g.parent !== -1 || this.hidden.has(g.process)) return;
      const compact = this.compact && this.rankProcesses.includes(g.process);
      this.groupY.set(gi, y);
      const hh = compact ? COMPACT_GROUP_H : GROUP_H;
      items.push({ type: 'group', level: 0, group: gi, y, h: hh, process: g.process, compact });
      y += hh;
      if (this.collapsed.has(gi)) return;
      const subs = [];
      this.groups.forEach((sub, si) => { if (sub.parent === gi) subs.push([sub, si]); });
      if (compact) {
        // Streams only, no subgroup headers; a process with several GPUs
        // says which GPU each stream is on.
        const gpus = subs.filter(([sub]) => sub.kind === 'gpu');
        for (const [sub, si] of gpus) {
          this.groupY.set(si, y);
          for (const lane of byGroup.get(si) || []) {
            if (lane.kind !== 'stream') continue;
            pushLane(lane, sub.process, true, gpus.length > 1 ? `GPU ${sub.device_id} · ${lane.label}` : lane.label);
          }
        }
        return;
      }
      for (const [sub, si] of subs) {
        this.groupY.set(si, y);
        items.push({ type: 'group', level: 1, group: si, y, h: SUBGROUP_H, process: sub.process });
        y += SUBGROUP_H;
        if (this.collapsed.has(si)) continue;
        for (const lane of byGroup.get(si) || []) pushLane(lane, sub.process, false);
      }
    });
    this.items = items;
    this.contentH = y + 8;
  }

  // Lanes per group; counters ordered by family (utilization, links,
  // clocks, power, ...) then name, as the GPU cards chart them.
  lanesByGroup() {
    if (this.byGroup) return this.byGroup;
    const byGroup = new Map();
    this.lanes.forEach((lane) => {
      if (!byGroup.has(lane.group)) byGroup.set(lane.group, []);
      byGroup.get(lane.group).push(lane);
    });
    const order = new Map([...FAMILIES.map(([f]) => f), 'reasons', 'other'].map((f, i) => [f, i]));
    const rank = (l) => order.get(metricInfo(l.metric, l.unit).family) ?? order.size;
    for (const list of byGroup.values()) {
      if (!list.every((l) => l.kind === 'counter')) continue;
      list.sort((a, b) => rank(a) - rank(b) || a.title.localeCompare(b.title));
    }
    this.byGroup = byGroup;
    return byGroup;
  }

  // The lanes' viewport height when the content is taller.
  targetViewH() {
    return Math.max(360, Math.round(window.innerHeight * 0.68));
  }

  resize() {
    const width = Math.max(480, this.scroller.clientWidth || this.root.clientWidth || 1000);
    const viewH = Math.min(this.contentH + AXIS_H, this.targetViewH());
    this.width = width;
    this.viewH = viewH;
    this.scroller.style.height = `${viewH}px`;
    this.spacer.style.height = `${this.contentH + AXIS_H}px`;
    const dpr = window.devicePixelRatio || 1;
    this.dpr = dpr;
    for (const [c, hh] of [[this.canvas, viewH], [this.overview, OVERVIEW_H]]) {
      c.width = Math.round(width * dpr);
      c.height = Math.round(hh * dpr);
      c.style.width = `${width}px`;
      c.style.height = `${hh}px`;
    }
    this.requestDraw();
  }

  // ------------------------------------------------------- view API --

  range() {
    return { start_ns: this.view[0], end_ns: this.view[1] };
  }

  clampRange(a, b) {
    let w = Math.max(MIN_SPAN_NS, b - a);
    const maxW = this.home[1] - this.home[0];
    if (w > maxW) w = maxW;
    let s = (a + b) / 2 - w / 2;
    if (s < this.home[0]) s = this.home[0];
    if (s + w > this.home[1]) s = this.home[1] - w;
    return [s, s + w];
  }

  setRange(a, b, animate = true) {
    const [s, e] = this.clampRange(a, b);
    if (!animate) {
      this.animation = null;
      this.view = [s, e];
      this.requestDraw();
      return;
    }
    this.animation = { from: this.view.slice(), to: [s, e], t0: performance.now() };
    this.requestDraw();
  }

  zoomBy(factor, centerNs) {
    const [a, b] = this.animation ? this.animation.to : this.view;
    const c = centerNs ?? (a + b) / 2;
    this.setRange(c - (c - a) * factor, c + (b - c) * factor, false);
  }

  panBy(fraction) {
    const [a, b] = this.view;
    const d = (b - a) * fraction;
    this.setRange(a + d, b + d, false);
  }

  // Shows `ranges` (report ns) as highlighted bands and moves the view to
  // cover them; scrolls `group` into sight.
  showRanges(ranges, group, focusIndex = -1) {
    this.highlights = ranges.map((r) => ({ start: r.start_ns, end: Math.max(r.end_ns, r.start_ns + 1), note: r.note }));
    const chosen = focusIndex >= 0 ? [this.highlights[focusIndex]] : this.highlights;
    if (chosen.length) {
      let a = Math.min(...chosen.map((r) => r.start));
      let b = Math.max(...chosen.map((r) => r.end));
      const w = Math.max(b - a, 1000);
      a -= w * 0.6;
      b += w * 0.6;
      this.setRange(a, b);
    }
    if (group != null && group >= 0) this.scrollToGroup(group);
    this.requestDraw();
  }

  scrollToGroup(group) {
    let g = group;
    while (g != null && g >= 0) {
      this.collapsed.delete(g);
      this.hidden.delete(this.groups[g].process);
      g = this.groups[g].parent;
    }
    this.relayout();
    // In the compare view a GPU's streams sit right under its rank's header.
    const top = this.groups[group].parent >= 0 && this.compact ? this.groups[group].parent : group;
    const y = this.groupY.get(top) ?? this.groupY.get(group);
    if (y != null) this.scroller.scrollTop = Math.max(0, y - 4);
  }

  // ----------------------------------------------------------- search --

  search(query) {
    const q = (query || '').trim().toLowerCase();
    if (!q) {
      this.searchState = null;
      this.searchInfo.textContent = '';
      this.requestDraw();
      return 0;
    }
    // Tiled lanes: every tile decoded first, then the search runs.
    const partial = this.lanes.filter((l) => l.tileState && l.tilesLeft > 0);
    if (partial.length) {
      for (const l of partial) this.requestTiles(l, 0, l.tileState.length - 1);
      this.searchInfo.textContent = 'decoding…';
      this.whenLoaded().then(() => {
        if ((this.searchInput.value || '').trim().toLowerCase() === q || !this.searchInput.value) this.search(query);
      });
      return 0;
    }
    const mask = new Uint8Array(this.names.length);
    let anyName = false;
    for (let i = 0; i < this.names.length; i++) {
      if (this.names[i].toLowerCase().includes(q)) {
        mask[i] = 1;
        anyName = true;
      }
    }
    const matches = new Map();
    let total = 0;
    if (anyName) {
      for (const lane of this.lanes) {
        if (lane.kind === 'counter') continue;
        const names = lane.name;
        let n = 0;
        for (let i = 0; i < names.length; i++) if (mask[names[i]]) n++;
        if (!n) continue;
        const starts = new Float64Array(n);
        const ends = new Float64Array(n);
        let j = 0;
        for (let i = 0; i < names.length; i++) {
          if (mask[names[i]]) {
            starts[j] = lane.start[i];
            ends[j++] = lane.start[i] + lane.dur[i];
          }
        }
        matches.set(lane.index, { starts, ends });
        total += n;
      }
    }
    this.searchState = { query: q, mask, matches, total };
    this.searchInfo.textContent = total ? `${fmtCount(total)} matches` : 'no match';
    this.searchInfo.classList.toggle('none', !total);
    this.requestDraw();
    return total;
  }

  nextMatch(direction) {
    const st = this.searchState;
    if (!st || !st.total) return;
    const center = (this.view[0] + this.view[1]) / 2;
    let best = null;
    for (const [laneIndex, m] of st.matches) {
      const i = lowerBound(m.starts, center + (direction > 0 ? 1 : 0));
      const j = direction > 0 ? i : i - 1;
      if (j < 0 || j >= m.starts.length) continue;
      const s = m.starts[j];
      if (!best || (direction > 0 ? s < best.s : s > best.s)) best = { s, e: m.ends[j], laneIndex };
    }
    if (!best) return;
    const w = this.view[1] - this.view[0];
    const dur = Math.max(best.e - best.s, 1);
    const width = Math.min(w, Math.max(dur * 12, 2000));
    const mid = best.s + dur / 2;
    this.setRange(mid - width / 2, mid + width / 2);
    const lane = this.lanes[best.laneIndex];
    this.scrollToGroup(lane.group);
  }

  // ------------------------------------------------------------ input --

  bind() {
    const c = this.canvas;
    window.addEventListener('resize', () => { this.layout(); this.resize(); });
    this.scroller.addEventListener('scroll', () => this.requestDraw());
    c.addEventListener('wheel', (e) => {
      e.preventDefault();
      const t = this.timeAt(this.localX(e));
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const d = e.shiftKey && !e.deltaX ? e.deltaY : e.deltaX;
        this.panBy(d / (this.width - LABEL_W));
      } else {
        const scale = e.deltaMode === 1 ? 30 : 1;
        this.zoomBy(Math.exp(e.deltaY * scale * 0.0016), t);
      }
    }, { passive: false });
    c.addEventListener('mousedown', (e) => {
      if (e.button !== 0) return;
      c.focus({ preventScroll: true });
      this.drag = {
        x: e.clientX, y: e.clientY, view: this.view.slice(), scroll: this.scroller.scrollTop,
        select: e.shiftKey, moved: false, localX: this.localX(e),
      };
      e.preventDefault();
    });
    window.addEventListener('mousemove', (e) => {
      if (this.drag) {
        const dx = e.clientX - this.drag.x, dy = e.clientY - this.drag.y;
        if (Math.abs(dx) + Math.abs(dy) > 3) this.drag.moved = true;
        if (this.drag.select) {
          this.drag.toX = this.localX(e);
          this.requestDraw();
        } else if (this.drag.moved) {
          const [a, b] = this.drag.view;
          const dt = -dx * (b - a) / (this.width - LABEL_W);
          this.setRange(a + dt, b + dt, false);
          this.scroller.scrollTop = this.drag.scroll - dy;
        }
        this.hideTooltip();
        return;
      }
      if (e.target === c) this.onHover(e);
    });
    window.addEventListener('mouseup', (e) => {
      const d = this.drag;
      this.drag = null;
      if (!d) return;
      if (d.select && d.toX != null && Math.abs(d.toX - d.localX) > 3) {
        const a = this.timeAt(Math.min(d.toX, d.localX));
        const b = this.timeAt(Math.max(d.toX, d.localX));
        this.setRange(a, b);
      } else if (!d.moved && e.target === c) {
        this.onClick(e);
      }
      this.requestDraw();
    });
    c.addEventListener('mouseleave', () => {
      this.mouse = null;
      this.hideTooltip();
      this.requestDraw();
    });
    c.addEventListener('dblclick', (e) => {
      const hit = this.hitTest(e);
      if (hit && hit.event != null) {
        const s = hit.lane.start[hit.event], d = Math.max(hit.lane.dur[hit.event], 100);
        this.setRange(s - d * 0.25, s + d * 1.25);
      }
    });
    document.addEventListener('keydown', (e) => this.onKey(e));
    this.searchInput.addEventListener('input', () => {
      clearTimeout(this.searchTimer);
      this.searchTimer = setTimeout(() => this.search(this.searchInput.value), 120);
    });
    this.searchInput.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') {
        clearTimeout(this.searchTimer);
        if (!this.searchState || this.searchState.query !== this.searchInput.value.trim().toLowerCase()) {
          this.search(this.searchInput.value);
        }
        this.nextMatch(e.shiftKey ? -1 : 1);
        e.preventDefault();
      } else if (e.key === 'Escape') {
        this.searchInput.value = '';
        this.search('');
        this.searchInput.blur();
      }
    });
    // Overview: click or drag moves the view there.
    const moveTo = (e) => {
      const r = this.overview.getBoundingClientRect();
      const x = e.clientX - r.left;
      const t = this.home[0] + (x - LABEL_W) / (this.width - LABEL_W) * (this.home[1] - this.home[0]);
      const w = this.view[1] - this.view[0];
      this.setRange(t - w / 2, t + w / 2, false);
    };
    this.overview.addEventListener('mousedown', (e) => {
      this.overviewDrag = true;
      moveTo(e);
      e.preventDefault();
    });
    window.addEventListener('mousemove', (e) => { if (this.overviewDrag) moveTo(e); });
    window.addEventListener('mouseup', () => { this.overviewDrag = false; });
  }

  onKey(e) {
    const tag = (e.target && e.target.tagName) || '';
    if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const r = this.root.getBoundingClientRect();
    if (r.bottom < 0 || r.top > window.innerHeight) return;  // timeline off screen
    const center = this.mouse ? this.timeAt(this.mouse.x) : undefined;
    switch (e.key) {
      case 'w': case 'W': case '+': case '=':
        this.zoomBy(0.8, center); break;
      case 's': case 'S': case '-': case '_':
        this.zoomBy(1.25, center); break;
      case 'a': case 'A': case 'ArrowLeft':
        this.panBy(-0.15); break;
      case 'd': case 'D': case 'ArrowRight':
        this.panBy(0.15); break;
      case '0': case 'Home':
        this.setRange(this.home[0], this.home[1]); break;
      case '/':
        this.searchInput.focus(); break;
      case 'Escape':
        this.selected = null; this.highlights = []; this.requestDraw(); break;
      default:
        return;
    }
    e.preventDefault();
  }

  localX(e) {
    return e.clientX - this.canvas.getBoundingClientRect().left;
  }

  timeAt(x) {
    const [a, b] = this.view;
    return a + (x - LABEL_W) * (b - a) / (this.width - LABEL_W);
  }

  itemAt(y) {
    const contentY = y - AXIS_H + this.scroller.scrollTop;
    if (y < AXIS_H) return null;
    let lo = 0, hi = this.items.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const it = this.items[mid];
      if (contentY < it.y) hi = mid - 1;
      else if (contentY >= it.y + it.h) lo = mid + 1;
      else return { item: it, dy: contentY - it.y };
    }
    return null;
  }

  // The event lane under the pointer and the time there, events or not.
  laneAt(e) {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    const found = this.itemAt(y);
    if (!found || found.item.type === 'group' || x < LABEL_W) return null;
    return { lane: found.item.lane, t: this.timeAt(x) };
  }

  hitTest(e) {
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left, y = e.clientY - r.top;
    const found = this.itemAt(y);
    if (!found) return null;
    const { item, dy } = found;
    if (item.type === 'group') return { group: item.group, x };
    if (x < LABEL_W) return { laneLabel: item.lane, x };
    const lane = item.lane;
    const t = this.timeAt(x);
    const k = (this.width - LABEL_W) / (this.view[1] - this.view[0]);
    if (lane.kind === 'counter') {
      const i = lowerBound(lane.t, t + 0.5 / k) - 1;
      return i >= 0 ? { lane, sample: i, x, t } : null;
    }
    const row = Math.max(0, Math.min(lane.rows - 1, Math.floor((dy - item.pad) / item.rowH)));
    if (this.useBins(lane)) {
      const bins = this.binLevel(lane);
      const b = Math.floor(t / bins.bin_ns);
      if (b < 0 || b >= bins.bin_count || !bins.count[b]) return null;
      return { lane, bin: b, bins, x, t };
    }
    const tol = 3 / k;
    const { start, dur } = lane;
    let best = -1, bestScore = Infinity;
    const i = lowerBound(start, t + tol) - 1;
    for (let j = i, steps = 0; j >= 0 && steps < 20000; j--, steps++) {
      const s = start[j];
      if (s < t - lane.max_dur_ns - tol) break;
      if (lane.row && lane.row[j] !== row) continue;
      const end = s + dur[j];
      if (t < s - tol || t > end + tol) continue;
      const dist = t >= s && t <= end ? 0 : Math.min(Math.abs(t - s), Math.abs(t - end));
      const score = dist * 1e15 + dur[j];
      if (score < bestScore) {
        bestScore = score;
        best = j;
      }
    }
    return best >= 0 ? { lane, event: best, x, t } : null;
  }

  onHover(e) {
    const r = this.canvas.getBoundingClientRect();
    this.mouse = { x: e.clientX - r.left, y: e.clientY - r.top };
    const hit = this.hitTest(e);
    this.hover = hit && (hit.event != null || hit.bin != null || hit.sample != null) ? hit : null;
    this.canvas.style.cursor = hit && hit.group != null ? 'pointer' : 'default';
    if (this.hover) this.showTooltip(this.hover, e.clientX, e.clientY);
    else if (hit && hit.laneLabel) this.showLaneTooltip(hit.laneLabel, e.clientX, e.clientY);
    else this.hideTooltip();
    this.requestDraw();
  }

  onClick(e) {
    const hit = this.hitTest(e);
    if (hit && hit.group != null) {
      if (this.collapsed.has(hit.group)) this.collapsed.delete(hit.group);
      else this.collapsed.add(hit.group);
      this.relayout();
      return;
    }
    this.selected = hit && hit.event != null ? hit : null;
    // Call stacks (stacks.js): of a clicked API call, or of an idle gap
    // clicked beside a stream's events.
    const stack = this.stackDetails ? this.stackDetails(this.selected, this.selected ? null : this.laneAt(e)) : null;
    this.details.replaceChildren(
      this.selected ? this.describe(this.selected, true)
        : stack ? '' : h('span', { class: 'muted' }, 'Click an event to pin its details here.'),
      stack || '');
    this.requestDraw();
  }

  // ---------------------------------------------------------- tooltip --

  processLabel(processIndex) {
    const p = this.report.processes[processIndex];
    if (!p) return '';
    return `${p.rank >= 0 ? `rank ${p.rank} · ` : ''}pid ${p.pid}${p.hostname ? ` on ${p.hostname}` : ''}`;
  }

  // Title and key/value rows for a hit.
  describe(hit, pinned = false) {
    const lane = hit.lane;
    const group = this.groups[lane.group];
    const rows = [];
    let title = '';
    let subtitle = '';
    if (hit.sample != null) {
      const v = lane.v[hit.sample];
      title = lane.title || lane.metric || lane.label;
      subtitle = `metric sample · ${lane.metric}`;
      if (lane.unit === 'bitmask' && /clock_event_reasons|throttle/.test(lane.metric)) {
        rows.push(['reasons', clockReasons(v)]);
      }
      rows.push(['value', fmtUnitValue(v, lane.unit)]);
      rows.push(['at', fmtOffset(lane.t[hit.sample], 1e3)]);
      rows.push(['range', `${fmtUnitValue(lane.min, lane.unit)} … ${fmtUnitValue(lane.max, lane.unit)}`]);
    } else if (hit.bin != null) {
      const bd = hit.bins || lane.binData;
      const b = hit.bin;
      title = `${fmtCount(bd.count[b])} events in ${fmtDuration(bd.bin_ns)}`;
      subtitle = 'zoomed out: aggregated bin (zoom in for single events)';
      rows.push(['busy', fmtPercent(bd.busy[b] / 255, 0)]);
      rows.push(['mostly', this.names[bd.top[b]] || '']);
      rows.push(['at', fmtOffset(b * bd.bin_ns, bd.bin_ns / 10)]);
    } else {
      const i = hit.event;
      const cat = lane.cat[i];
      const name = this.names[lane.name[i]] || '';
      const dur = lane.dur[i];
      title = name;
      subtitle = CAT_NAMES[cat] || '';
      rows.push(['start', fmtOffset(lane.start[i], 1e3)]);
      if (cat !== CAT.NVTX_MARK) rows.push(['duration', fmtDuration(dur)]);
      const aux = lane.aux ? lane.aux[i] : 0;
      if ((cat === CAT.KERNEL || cat === CAT.COMM) && aux > 0) {
        const c = this.tl.configs[aux - 1];
        if (c) {
          rows.push(['grid × block', `(${c[0]}, ${c[1]}, ${c[2]}) × (${c[3]}, ${c[4]}, ${c[5]})`]);
          rows.push(['registers / shared', `${c[6]} / thread · ${fmtBytes(c[7])}`]);
        }
      } else if (cat >= CAT.H2D && cat <= CAT.MEMSET) {
        rows.push(['bytes', fmtBytes(aux)]);
        if (dur > 0) rows.push(['throughput', `${(aux / dur).toFixed(2)} GB/s`]);
      } else if ((cat === CAT.API || cat === CAT.API_SYNC) && aux) {
        rows.push(['returned', `error ${aux}`]);
      }
    }
    rows.push(['lane', `${lane.title || lane.label}${group ? ` · ${group.kind === 'gpu' || group.kind === 'gpu_metrics' ? group.label : ''}` : ''}`.replace(/ · $/, '')]);
    rows.push(['process', this.processLabel(group ? group.process : 0)]);
    return h('div', { class: pinned ? 'desc pinned' : 'desc' },
      h('div', { class: 'desc-title' }, title),
      subtitle ? h('div', { class: 'desc-sub' }, subtitle) : null,
      h('table', null, rows.map(([k, v]) => h('tr', null, h('th', null, k), h('td', null, v)))));
  }

  showTooltip(hit, clientX, clientY) {
    this.tooltip.replaceChildren(this.describe(hit));
    this.placeTooltip(clientX, clientY);
  }

  showLaneTooltip(lane, clientX, clientY) {
    const rows = [['events', fmtCount(lane.count)]];
    if (lane.not_kept) rows.push(['not shown', `${fmtCount(lane.not_kept)} (over --max-events)`]);
    if (lane.rows > 1) rows.push(['rows', `${lane.rows} (nested or overlapping)`]);
    if (lane.kind === 'counter') rows.unshift(['metric', lane.label]);
    this.tooltip.replaceChildren(h('div', { class: 'desc' },
      h('div', { class: 'desc-title' }, lane.title || lane.label),
      h('table', null, rows.map(([k, v]) => h('tr', null, h('th', null, k), h('td', null, v))))));
    this.placeTooltip(clientX, clientY);
  }

  placeTooltip(clientX, clientY) {
    const tt = this.tooltip;
    tt.style.display = 'block';
    const w = tt.offsetWidth, hh = tt.offsetHeight;
    let x = clientX + 14, y = clientY + 14;
    if (x + w > window.innerWidth - 8) x = clientX - w - 14;
    if (y + hh > window.innerHeight - 8) y = clientY - hh - 14;
    tt.style.left = `${Math.max(4, x)}px`;
    tt.style.top = `${Math.max(4, y)}px`;
  }

  hideTooltip() {
    this.tooltip.style.display = 'none';
    if (this.hover) {
      this.hover = null;
      this.requestDraw();
    }
  }

  // ---------------------------------------------------------- drawing --

  requestDraw() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => {
      this.pending = 0;
      if (this.animation) {
        const { from, to, t0 } = this.animation;
        const f = Math.min(1, (performance.now() - t0) / ANIMATION_MS);
        const ease = 1 - Math.pow(1 - f, 3);
        // Interpolate centre linearly and width geometrically: zooms feel even.
        const w0 = from[1] - from[0], w1 = to[1] - to[0];
        const w = w0 * Math.pow(w1 / w0, ease);
        const c = (from[0] + from[1]) / 2 + ((to[0] + to[1]) / 2 - (from[0] + from[1]) / 2) * ease;
        this.view = [c - w / 2, c + w / 2];
        if (f >= 1) {
          this.view = to.slice();
          this.animation = null;
        } else {
          this.requestDraw();
        }
      }
      this.draw();
    });
  }

  colorOf(name, cat) {
    if (cat !== CAT.KERNEL && cat !== CAT.NVTX) return CAT_COLORS[cat] || '#888';
    let c = this.colorCache[name];
    if (!c) c = this.colorCache[name] = nameColor(this.names[name] || '', cat);
    return c;
  }

  // Whether a lane draws bins in the current view: too many events in it,
  // or (tiled lanes) the tiles it needs are still being decoded (asked for
  // here; the lane redraws when they land).
  useBins(lane) {
    if (!lane.binData && !lane.tileState) return false;
    const [v0, v1] = this.view;
    const i0 = lowerBound(lane.start, v0 - lane.max_dur_ns);
    const i1 = lowerBound(lane.start, v1);
    if (lane.binData && i1 - i0 > EXACT_LIMIT) return true;
    if (!lane.tileState) return false;
    const [t0, t1] = this.tileRange(lane, v0 - lane.max_dur_ns, v1);
    if (lane.binData && t1 - t0 + 1 > MAX_TILES_IN_VIEW) return true;
    if (this.tilesReady(lane, t0, t1)) return false;
    this.requestTiles(lane, t0, t1);
    return !!lane.binData;
  }

  // --------------------------------------------------- tiles and levels --

  // Tiles of a tiled lane that may hold events starting in [a, b].
  tileRange(lane, a, b) {
    const first = lane.tiles.first_ns;
    const t0 = Math.max(0, lowerBound(first, a) - 1);
    const t1 = Math.max(t0, upperBound(first, b) - 1);
    return [t0, Math.min(first.length - 1, t1)];
  }

  tilesReady(lane, t0, t1) {
    for (let t = t0; t <= t1; t++) if (lane.tileState[t] !== 2) return false;
    return true;
  }

  track(promise) {
    const p = promise.catch((e) => {
      console.error(e);
      if (window.__gpscope) window.__gpscope.errors.push(String(e && e.message || e));
    }).finally(() => {
      this.loads.delete(p);
      this.requestDraw();
    });
    this.loads.add(p);
  }

  requestTiles(lane, t0, t1) {
    for (let t = t0; t <= t1; t++) {
      if (lane.tileState[t]) continue;
      lane.tileState[t] = 1;
      this.track(loadTile(lane, t, this.encoding));
    }
  }

  // Resolves when no tile or level is being decoded.
  async whenLoaded() {
    while (this.loads.size) await Promise.all([...this.loads]);
  }

  // The bins a lane draws now: the finest level whose bins are at least a
  // pixel wide, once decoded (asked for here), else the finest decoded one
  // coarser than it.
  binLevel(lane) {
    const levels = lane.binLevels || [lane.binData];
    const k = (this.width - LABEL_W) / (this.view[1] - this.view[0]);
    let want = 0;
    for (let l = levels.length - 1; l > 0; l--) {
      if (lane.levels[l - 1].bin_ns * k >= 1) {
        want = l;
        break;
      }
    }
    if (want && !levels[want]) {
      lane.levelState = lane.levelState || new Uint8Array(levels.length);
      if (!lane.levelState[want]) {
        lane.levelState[want] = 1;
        this.track(loadLevel(lane, want, this.encoding));
      }
    }
    for (let l = want; l > 0; l--) if (levels[l]) return levels[l];
    return levels[0];
  }

  draw() {
    const t0 = performance.now();
    const ctx = this.canvas.getContext('2d');
    const W = this.width, H = this.viewH;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, W, H);
    const [v0, v1] = this.view;
    const plotW = W - LABEL_W;
    const k = plotW / (v1 - v0);
    const X = (t) => LABEL_W + (t - v0) * k;
    const scroll = this.scroller.scrollTop;
    const top = scroll, bottom = scroll + H - AXIS_H;

    // Grid lines.
    const step = niceStep((v1 - v0) / Math.max(2, plotW / 120));
    ctx.strokeStyle = '#eef0f3';
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = Math.round(X(t)) + 0.5;
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, H);
    }
    ctx.stroke();

    // Items.
    const first = this.firstItemAt(top);
    const processSpans = new Map();
    for (let n = first; n < this.items.length; n++) {
      const it = this.items[n];
      if (it.y > bottom) break;
      const y = AXIS_H + it.y - scroll;
      if (!processSpans.has(it.process)) processSpans.set(it.process, [y, y + it.h]);
      else processSpans.get(it.process)[1] = y + it.h;
      if (it.type === 'group') this.drawGroup(ctx, it, y, W);
      else this.drawLane(ctx, it, y, v0, v1, k, X, n);
    }

    // Lost intervals: hatched over the process's lanes.
    const hatch = this.hatchPattern(ctx);
    for (const [p, [y0, y1]] of processSpans) {
      const proc = this.report.processes[p];
      if (!proc || !proc.lost || !proc.lost.length) continue;
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, AXIS_H, plotW, H - AXIS_H);
      ctx.clip();
      ctx.fillStyle = hatch;
      for (const l of proc.lost) {
        const a = Math.max(LABEL_W, X(l.start_ns)), b = Math.min(W, X(l.end_ns));
        if (b > a) ctx.fillRect(a, y0, Math.max(b - a, 2), y1 - y0);
      }
      ctx.restore();
    }

    // Highlighted ranges (a finding's evidence).
    if (this.highlights.length) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, 0, plotW, H);
      ctx.clip();
      for (const r of this.highlights) {
        const a = X(r.start), b = Math.max(X(r.end), a + 2);
        if (b < LABEL_W || a > W) continue;
        ctx.fillStyle = 'rgba(255, 196, 0, 0.16)';
        ctx.fillRect(a, AXIS_H, b - a, H - AXIS_H);
        ctx.strokeStyle = 'rgba(214, 150, 0, 0.9)';
        ctx.lineWidth = 1;
        ctx.strokeRect(Math.round(a) + 0.5, AXIS_H + 0.5, Math.max(1, Math.round(b - a) - 1), H - AXIS_H - 1);
      }
      ctx.restore();
    }

    // Shift+drag selection.
    if (this.drag && this.drag.select && this.drag.toX != null) {
      const a = Math.max(LABEL_W, Math.min(this.drag.localX, this.drag.toX));
      const b = Math.max(this.drag.localX, this.drag.toX);
      ctx.fillStyle = 'rgba(46, 110, 214, 0.15)';
      ctx.fillRect(a, AXIS_H, b - a, H - AXIS_H);
      ctx.strokeStyle = 'rgba(46, 110, 214, 0.8)';
      ctx.strokeRect(a + 0.5, AXIS_H + 0.5, b - a - 1, H - AXIS_H - 1);
    }

    // Label column divider.
    ctx.fillStyle = '#d5d9df';
    ctx.fillRect(LABEL_W - 1, AXIS_H, 1, H - AXIS_H);

    // Axis on top.
    ctx.fillStyle = '#f7f8fa';
    ctx.fillRect(0, 0, W, AXIS_H);
    ctx.fillStyle = '#d5d9df';
    ctx.fillRect(0, AXIS_H - 1, W, 1);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    ctx.fillStyle = '#4a5361';
    for (let t = Math.ceil(v0 / step) * step; t <= v1; t += step) {
      const x = X(t);
      if (x < LABEL_W + 2) continue;
      ctx.fillRect(Math.round(x), AXIS_H - 6, 1, 5);
      ctx.fillText(fmtOffset(t, step), x + 3, AXIS_H / 2 - 1);
    }
    ctx.fillStyle = '#f7f8fa';
    ctx.fillRect(0, 0, LABEL_W, AXIS_H - 1);
    ctx.fillStyle = '#1d2430';
    ctx.font = FONT_BOLD;
    ctx.fillText(`${fmtDuration(v1 - v0)} shown`, 10, AXIS_H / 2 - 1);

    // Notes on the bands, in the axis strip (over the lanes they would
    // hide the rank rows the band compares), where they do not collide.
    if (this.highlights.length) {
      ctx.save();
      ctx.beginPath();
      ctx.rect(LABEL_W, 0, plotW, AXIS_H);
      ctx.clip();
      ctx.font = FONT;
      ctx.textBaseline = 'middle';
      let lastEnd = -Infinity;
      for (const r of this.highlights.slice().sort((p, q) => p.start - q.start)) {
        if (!r.note) continue;
        const a = Math.max(LABEL_W, X(r.start));
        if (a > W || X(r.end) < LABEL_W || a < lastEnd + 6) continue;
        const tw = ctx.measureText(r.note).width + 10;
        const x = Math.min(a, W - tw - 2);
        ctx.fillStyle = 'rgba(120, 80, 0, 0.95)';
        ctx.fillRect(x, 3, tw, AXIS_H - 7);
        ctx.fillStyle = '#fff';
        ctx.fillText(r.note, x + 5, AXIS_H / 2 - 1);
        lastEnd = x + tw;
      }
      ctx.restore();
    }

    // Cursor line.
    if (this.mouse && !this.drag && this.mouse.x > LABEL_W) {
      const x = Math.round(this.mouse.x) + 0.5;
      ctx.strokeStyle = 'rgba(29, 36, 48, 0.35)';
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(x, AXIS_H);
      ctx.lineTo(x, H);
      ctx.stroke();
      ctx.setLineDash([]);
      const label = fmtOffset(this.timeAt(this.mouse.x), step / 100);
      ctx.font = FONT;
      const tw = ctx.measureText(label).width + 10;
      const lx = Math.min(W - tw - 2, x + 2);
      ctx.fillStyle = '#1d2430';
      ctx.fillRect(lx, 3, tw, AXIS_H - 7);
      ctx.fillStyle = '#fff';
      ctx.fillText(label, lx + 5, AXIS_H / 2 - 1);
    }

    this.rangeInfo.textContent = `${fmtOffset(v0, (v1 - v0) / 100)} – ${fmtOffset(v1, (v1 - v0) / 100)}`;
    this.drawOverview();
    this.lastDrawMs = performance.now() - t0;
    this.frames = (this.frames || 0) + 1;
  }

  firstItemAt(y) {
    let lo = 0, hi = this.items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const it = this.items[mid];
      if (it.y + it.h <= y) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  hatchPattern(ctx) {
    if (this.hatch) return this.hatch;
    const c = document.createElement('canvas');
    c.width = c.height = 8;
    const g = c.getContext('2d');
    g.strokeStyle = 'rgba(200, 40, 40, 0.45)';
    g.lineWidth = 1.5;
    g.beginPath();
    g.moveTo(0, 8);
    g.lineTo(8, 0);
    g.stroke();
    this.hatch = ctx.createPattern(c, 'repeat');
    return this.hatch;
  }

  drawGroup(ctx, it, y, W) {
    const g = this.groups[it.group];
    const collapsed = this.collapsed.has(it.group);
    if (it.level === 0) {
      ctx.fillStyle = '#243042';
      ctx.fillRect(0, y, W, it.h);
      ctx.fillStyle = '#ffffff';
      ctx.font = FONT_BOLD;
    } else {
      ctx.fillStyle = '#eef1f5';
      ctx.fillRect(0, y, W, it.h);
      ctx.fillStyle = '#dde2e8';
      ctx.fillRect(0, y + it.h - 1, W, 1);
      ctx.fillStyle = '#243042';
      ctx.font = FONT_BOLD;
    }
    ctx.textBaseline = 'middle';
    const indent = it.level === 0 ? 8 : 20;
    const text = `${collapsed ? '▸' : '▾'}  ${g.label}`;
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, y, LABEL_W - 4, it.h);
    ctx.clip();
    ctx.fillText(text, indent, y + it.h / 2);
    ctx.restore();
    if (it.level === 0) {
      let x = LABEL_W + 10;
      ctx.font = FONT;
      if (g.process === this.straggler) {
        // The rank the analyzer named the straggler.
        const tag = 'straggler';
        const tw = ctx.measureText(tag).width + 12;
        ctx.fillStyle = '#d94a4a';
        ctx.fillRect(x, y + 3, tw, it.h - 6);
        ctx.fillStyle = '#ffffff';
        ctx.fillText(tag, x + 6, y + it.h / 2);
        x += tw + 10;
      }
      if (it.compact && !collapsed) {
        const gpu = this.groups.find((sub) => sub.parent === it.group && sub.kind === 'gpu');
        if (gpu) {
          ctx.fillStyle = '#c9d3e0';
          ctx.fillText(gpu.label, x, y + it.h / 2);
          x += ctx.measureText(gpu.label).width + 14;
        }
      }
      const p = this.report.processes[g.process];
      if (p && p.lost && p.lost.length) {
        ctx.fillStyle = '#ffb4b4';
        ctx.fillText(`${p.lost.length} interval${p.lost.length > 1 ? 's' : ''} without data`, x, y + it.h / 2);
      }
    } else if (collapsed) {
      // A folded group says what it holds.
      const n = this.lanes.reduce((a, l) => a + (l.group === it.group ? 1 : 0), 0);
      ctx.fillStyle = '#7b8594';
      ctx.font = FONT;
      ctx.fillText(`${n} lane${n === 1 ? '' : 's'} folded`, LABEL_W + 10, y + it.h / 2);
    }
  }

  drawLane(ctx, it, y, v0, v1, k, X, n) {
    const lane = it.lane;
    const W = this.width;
    if (n % 2 === 0) {
      ctx.fillStyle = '#fafbfc';
      ctx.fillRect(0, y, W, it.h);
    }
    ctx.fillStyle = '#eceef1';
    ctx.fillRect(0, y + it.h - 1, W, 1);
    // Label.
    ctx.save();
    ctx.beginPath();
    ctx.rect(0, y, LABEL_W - 6, it.h);
    ctx.clip();
    ctx.fillStyle = '#3a4350';
    ctx.font = it.compact && it.rowH < 14 ? FONT_SMALL : FONT;
    ctx.textBaseline = 'middle';
    const label = (lane.title || it.label || lane.label) + (lane.not_kept ? ' (partial)' : '');
    ctx.fillText(label, it.compact ? 22 : 32, y + Math.min(it.h / 2, it.rowH / 2 + it.pad));
    if (lane.kind === 'counter' && lane.count) {
      ctx.fillStyle = '#7b8594';
      ctx.fillText(this.counterNote(lane), 32, y + it.h - 9);
    }
    ctx.restore();

    ctx.save();
    ctx.beginPath();
    ctx.rect(LABEL_W, y, W - LABEL_W, it.h);
    ctx.clip();
    if (lane.states) this.drawStates(ctx, lane, y, it.h, X);
    else if (lane.kind === 'counter') this.drawCounter(ctx, lane, y, it.h, v0, v1, k, X);
    else if (this.useBins(lane)) this.drawBins(ctx, it, y, v0, v1, k, X);
    else this.drawExact(ctx, it, y, v0, v1, k, X);
    ctx.restore();
  }

  // The second line of a counter lane's label.
  counterNote(lane) {
    if (lane.states) {
      const seen = lane.states.map((s) => s.reason.name);
      return seen.length ? seen.join(', ') : `no limit in ${fmtCount(lane.count)} samples`;
    }
    return `max ${fmtUnitValue(lane.max, lane.unit)}`;
  }

  // A bitmask lane (nvml.clock_event_reasons) as states: one band per
  // reason seen, its spans in the reason's colour.
  drawStates(ctx, lane, y, hh, X) {
    const rows = lane.states;
    if (!rows.length) {
      ctx.fillStyle = '#e9edf2';
      ctx.fillRect(LABEL_W, y + hh / 2 - 1, this.width - LABEL_W, 2);
      return;
    }
    const top = y + 4, band = (hh - 7) / rows.length;
    rows.forEach(({ reason, spans }, i) => {
      ctx.fillStyle = reason.color;
      const y0 = top + i * band;
      for (const [a, b] of spans) {
        const x0 = Math.max(LABEL_W, X(a)), x1 = Math.min(this.width, X(b));
        if (x1 < LABEL_W || x0 > this.width) continue;
        ctx.fillRect(x0, y0, Math.max(1, x1 - x0), Math.max(2, band - 1));
      }
      if (band >= 11) {
        ctx.fillStyle = '#1d2430';
        ctx.font = FONT_SMALL;
        ctx.fillText(reason.name, LABEL_W + 4, y0 + band / 2);
      }
    });
  }

  // Events at least 2 px wide are boxes (with their names when they fit);
  // narrower ones add to a per-pixel occupancy drawn as a column whose height
  // is the share of that pixel's time covered, so a zoomed-out lane shows
  // how busy it was instead of a solid bar.
  drawExact(ctx, it, y, v0, v1, k, X) {
    const lane = it.lane;
    const rowH = it.rowH, pad = it.pad;
    const { start, dur, name, cat, row } = lane;
    const st = this.searchState;
    const mask = st ? st.mask : null;
    const xmin = LABEL_W, xmax = this.width;
    const plotW = Math.ceil(xmax - xmin) + 2;
    const rows = lane.rows;
    if (!this.occ || this.occ.length < plotW) {
      this.occ = new Float32Array(plotW);
      this.occPiece = new Float32Array(plotW);
      this.occCat = new Uint8Array(plotW);
      this.occMatch = new Uint8Array(plotW);
    }
    const occ = this.occ, occPiece = this.occPiece, occCat = this.occCat, occMatch = this.occMatch;
    const hv = this.hover && this.hover.lane === lane ? this.hover.event : -1;
    const sel = this.selected && this.selected.lane === lane ? this.selected.event : -1;
    const i0 = lowerBound(start, v0 - lane.max_dur_ns);
    const i1 = lowerBound(start, v1);
    for (let r = 0; r < rows; r++) {
      occ.fill(0);
      occPiece.fill(0);
      occMatch.fill(0);
      let used = false;
      const boxes = [];
      for (let i = i0; i < i1; i++) {
        if (row && row[i] !== r) continue;
        const s = start[i];
        const e = s + dur[i];
        if (e < v0) continue;
        const a = (s - v0) * k;
        const b = (e - v0) * k;
        if (b - a >= 2 || cat[i] === CAT.NVTX_MARK) {
          boxes.push(i);
          continue;
        }
        // Narrow: spread its length over the pixels it touches.
        const c = cat[i];
        const m = mask ? mask[name[i]] : 0;
        let p = Math.max(0, Math.floor(a));
        const last = Math.min(plotW - 1, Math.floor(b));
        if (p > last) continue;
        used = true;
        if (p === last) {
          const piece = Math.max(b - a, 0.02);
          occ[p] += piece;
          if (piece > occPiece[p]) { occPiece[p] = piece; occCat[p] = c; }
          if (m) occMatch[p] = 1;
        } else {
          for (; p <= last; p++) {
            const piece = Math.min(b, p + 1) - Math.max(a, p);
            occ[p] += piece;
            if (piece > occPiece[p]) { occPiece[p] = piece; occCat[p] = c; }
            if (m) occMatch[p] = 1;
          }
        }
      }
      const yy = y + pad + r * rowH;
      const full = rowH - (rowH < 14 ? 1 : 3);
      if (used) {
        for (let p = 0; p < plotW; p++) {
          const f = occ[p];
          if (!f) continue;
          const hh = Math.max(2, Math.min(1, f) * full);
          ctx.globalAlpha = mask && !occMatch[p] ? 0.16 : 1;
          ctx.fillStyle = CAT_COLORS[occCat[p]];
          ctx.fillRect(xmin + p, yy + 1 + full - hh, 1, hh);
          if (mask && occMatch[p]) {
            ctx.fillStyle = '#111';
            ctx.fillRect(xmin + p, yy + 1, 1, 3);
          }
        }
        ctx.globalAlpha = 1;
      }
      ctx.font = FONT;
      ctx.textBaseline = 'middle';
      for (const i of boxes) {
        const c = cat[i];
        let a = xmin + (start[i] - v0) * k;
        let b = xmin + (start[i] + dur[i] - v0) * k;
        if (a < xmin) a = xmin;
        if (b > xmax) b = xmax;
        const dim = mask && !mask[name[i]];
        ctx.globalAlpha = dim ? 0.16 : 1;
        ctx.fillStyle = this.colorOf(name[i], c);
        if (c === CAT.NVTX_MARK) {
          ctx.fillRect(a - 1, yy, 2, rowH - 2);
          continue;
        }
        ctx.fillRect(a, yy + 1, Math.max(1, b - a - (b - a > 4 ? 0.5 : 0)), full);
        ctx.globalAlpha = 1;
        if (mask && !dim) {
          ctx.strokeStyle = '#111';
          ctx.lineWidth = 1;
          ctx.strokeRect(a + 0.5, yy + 1.5, Math.max(1, b - a - 1), full - 1);
        }
        if (b - a > 34 && rowH >= 14) {
          const text = this.shortNames[name[i]] || this.names[name[i]] || '';
          const room = Math.floor((b - a - 8) / 6.1);
          if (room >= 3) {
            const shown = text.length > room ? `${text.slice(0, room - 1)}…` : text;
            ctx.fillStyle = dim ? 'rgba(255,255,255,0.5)' : (c === CAT.NVTX || c === CAT.OVERHEAD ? '#1d2430' : '#ffffff');
            ctx.fillText(shown, a + 4, yy + rowH / 2);
          }
        }
      }
      ctx.globalAlpha = 1;
    }
    // Hovered and selected events get an outline.
    for (const [j, color] of [[hv, '#1d2430'], [sel, '#e03a3a']]) {
      if (j < 0) continue;
      const a = Math.max(xmin, X(start[j]));
      const b = Math.max(a + 2, Math.min(xmax, X(start[j] + dur[j])));
      const yy = y + pad + (row ? row[j] : 0) * rowH;
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.strokeRect(a, yy + 1, b - a, rowH - (rowH < 14 ? 1 : 3));
    }
  }

  drawBins(ctx, it, y, v0, v1, k, X) {
    const lane = it.lane;
    const bd = this.binLevel(lane);
    const bn = bd.bin_ns;
    const m = bd.bin_count;
    const hh = lane.rows * it.rowH - (it.compact ? 0 : 2);
    const base = y + it.pad + hh;
    const b0 = Math.max(0, Math.floor(v0 / bn));
    const b1 = Math.min(m - 1, Math.floor(v1 / bn));
    const st = this.searchState;
    const w = Math.max(1, bn * k);
    for (let b = b0; b <= b1; b++) {
      if (!bd.count[b]) continue;
      const f = bd.busy[b] / 255;
      const x = X(b * bn);
      const bh = Math.max(2, f * hh);
      ctx.globalAlpha = st ? (st.mask[bd.top[b]] ? 0.7 : 0.15) : 1;
      ctx.fillStyle = this.colorOf(bd.top[b], bd.cat[b]);
      ctx.fillRect(x, base - bh, w + 0.6, bh);
    }
    ctx.globalAlpha = 1;
    // Search matches as ticks, one test per pixel.
    const match = st && st.matches.get(lane.index);
    if (match) {
      ctx.fillStyle = '#111';
      const xmin = LABEL_W, xmax = this.width;
      for (let x = xmin; x < xmax; x++) {
        const ta = v0 + (x - xmin) / k, tb = ta + 1 / k;
        const i = lowerBound(match.starts, ta);
        if (i < match.starts.length && match.starts[i] < tb) ctx.fillRect(x, y + it.pad, 1, 4);
      }
    }
    // Hovered bin.
    if (this.hover && this.hover.lane === lane && this.hover.bin != null && this.hover.bins === bd) {
      ctx.strokeStyle = '#1d2430';
      ctx.lineWidth = 1.5;
      ctx.strokeRect(X(this.hover.bin * bn), y + it.pad, w, hh);
    }
  }

  drawCounter(ctx, lane, y, hh, v0, v1, k, X) {
    const { t, v } = lane;
    const n = t.length;
    if (!n) return;
    const isBitmask = lane.unit === 'bitmask';
    // A share reads against 0-100% whatever it peaked at; CPU time in % of
    // a core may pass 100%.
    const share = isShare(lane.metric, lane.unit);
    let lo = lane.unit === 'percent' ? 0 : Math.min(0, lane.min);
    let hi = share ? 100 : lane.unit === 'percent' ? Math.max(100, lane.max) : lane.max;
    if (isBitmask) { lo = 0; hi = 1; }
    if (hi <= lo) hi = lo + 1;
    const top = y + 4, bottom = y + hh - 3;
    const Y = (val) => bottom - (Math.min(hi, Math.max(lo, val)) - lo) / (hi - lo) * (bottom - top);
    const value = (i) => (isBitmask ? ((v[i] & ~1) ? 1 : 0) : v[i]);
    const i0 = Math.max(0, lowerBound(t, v0) - 1);
    const i1 = Math.min(n, lowerBound(t, v1) + 1);
    const color = isBitmask ? '#d94a4a' : lane.metric.startsWith('host') ? '#8a6bbf' : '#2f8f83';
    ctx.beginPath();
    ctx.moveTo(Math.max(LABEL_W, X(t[i0])), bottom);
    let lastX = -1, minV = 0, maxV = 0, have = false;
    // Step line; many samples per pixel collapse to their min and max.
    for (let i = i0; i < i1; i++) {
      const x = Math.round(X(t[i]));
      const val = value(i);
      if (have && x === lastX) {
        if (val < minV) minV = val;
        if (val > maxV) maxV = val;
        continue;
      }
      if (have) {
        ctx.lineTo(lastX, Y(maxV));
        if (minV !== maxV) ctx.lineTo(lastX, Y(minV));
      }
      ctx.lineTo(x, have ? Y(minV) : Y(val));
      lastX = x;
      minV = maxV = val;
      have = true;
    }
    if (have) {
      ctx.lineTo(lastX, Y(maxV));
      const endX = Math.min(this.width, i1 < n ? X(t[i1 - 1]) : X(t[n - 1]));
      ctx.lineTo(Math.max(lastX, endX), Y(maxV));
      ctx.lineTo(Math.max(lastX, endX), bottom);
    }
    ctx.closePath();
    ctx.globalAlpha = 0.22;
    ctx.fillStyle = color;
    ctx.fill();
    ctx.globalAlpha = 1;
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.2;
    ctx.stroke();
    if (this.hover && this.hover.lane === lane && this.hover.sample != null) {
      const i = this.hover.sample;
      ctx.fillStyle = '#1d2430';
      ctx.beginPath();
      ctx.arc(X(t[i]), Y(value(i)), 3, 0, 2 * Math.PI);
      ctx.fill();
    }
  }

  // ---------------------------------------------------------- overview --

  // GPU busy share over the whole run, for the strip above the lanes.
  buildOverview() {
    const N = 1000;
    const busy = new Float64Array(N);
    const [h0, h1] = this.home;
    const bw = (h1 - h0) / N;
    let gpus = 0;
    const gpuGroups = new Set();
    for (const lane of this.lanes) {
      if (lane.kind !== 'stream') continue;
      gpuGroups.add(lane.group);
      if (lane.binData) {
        const bn = this.tl.bin_ns;
        for (let b = 0; b < this.tl.bin_count; b++) {
          if (!lane.binData.count[b]) continue;
          const ns = lane.binData.busy[b] / 255 * bn;
          const i = Math.floor((b * bn + bn / 2 - h0) / bw);
          if (i >= 0 && i < N) busy[i] += ns;
        }
      } else {
        for (let j = 0; j < lane.start.length; j++) {
          // Walk the bins by index: recomputing the bin from s could land on
          // the same bin again when s sits on a boundary (floating point),
          // and the loop never advanced (a multi-rank H200 trace hung the tab).
          let s = Math.max(lane.start[j], h0);
          const e = Math.min(lane.start[j] + lane.dur[j], h1);
          for (let i = Math.max(0, Math.floor((s - h0) / bw)); s < e && i < N; i++) {
            const end = Math.min(e, h0 + (i + 1) * bw);
            if (end > s) busy[i] += end - s;
            s = Math.max(s, end);
          }
        }
      }
    }
    gpus = Math.max(1, gpuGroups.size);
    for (let i = 0; i < N; i++) busy[i] = Math.min(1, busy[i] / (bw * gpus));
    this.overviewBusy = busy;
  }

  drawOverview() {
    const ctx = this.overview.getContext('2d');
    const W = this.width, H = OVERVIEW_H;
    ctx.setTransform(this.dpr, 0, 0, this.dpr, 0, 0);
    ctx.clearRect(0, 0, W, H);
    ctx.fillStyle = '#f7f8fa';
    ctx.fillRect(0, 0, W, H);
    ctx.fillStyle = '#4a5361';
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    ctx.fillText('GPU busy, whole run', 10, H / 2 - 6);
    ctx.fillStyle = '#8a94a3';
    ctx.fillText('click or drag to move', 10, H / 2 + 9);
    const plotW = W - LABEL_W;
    const busy = this.overviewBusy;
    const N = busy.length;
    ctx.fillStyle = '#4f7cba';
    for (let i = 0; i < N; i++) {
      if (!busy[i]) continue;
      const x = LABEL_W + i / N * plotW;
      const bh = Math.max(1, busy[i] * (H - 8));
      ctx.fillRect(x, H - 4 - bh, plotW / N + 0.5, bh);
    }
    const [h0, h1] = this.home;
    const X = (t) => LABEL_W + (t - h0) / (h1 - h0) * plotW;
    for (const r of this.highlights) {
      ctx.fillStyle = 'rgba(230, 160, 0, 0.9)';
      ctx.fillRect(X(r.start) - 1, 0, Math.max(2, X(r.end) - X(r.start)), 5);
    }
    const a = X(this.view[0]), b = X(this.view[1]);
    ctx.fillStyle = 'rgba(36, 48, 66, 0.10)';
    ctx.fillRect(LABEL_W, 0, Math.max(0, a - LABEL_W), H);
    ctx.fillRect(b, 0, Math.max(0, W - b), H);
    ctx.strokeStyle = '#243042';
    ctx.lineWidth = 1.5;
    ctx.strokeRect(Math.round(a) + 0.5, 1, Math.max(2, Math.round(b - a) - 1), H - 2);
    ctx.fillStyle = '#d5d9df';
    ctx.fillRect(0, H - 1, W, 1);
  }
}
