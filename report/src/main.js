// main.js: the report page. Reads the JSON data the C++ side put into
// <script id="gpscope-data"> (schema gpscope.report/1, see
// tools/render/report_data.h), decodes the timeline and builds the sections:
// header, findings, ranks (jobs of several ranks), timeline, per-GPU numbers,
// trends and metric charts, distributions, top kernels, steps, correlations,
// processes and data completeness.
//
// Every trace string is inserted as text (dom.js), never as markup.
// window.__gpscope exposes the state for the browser tests.

import {
  chartInstances, downsample, histogramChart, stateChart, stepsChart, timeChart,
} from './charts.js';
import { decodeTimeline } from './decode.js';
import { append, clear, h, section } from './dom.js';
import {
  fmtBytes, fmtCount, fmtDuration, fmtEvidence, fmtOffset, fmtPercent, fmtUnitValue, fmtWallClock, sig,
} from './format.js';
import {
  axisScale, FAMILIES, legendLabel, metricInfo, reasonSpans, reasonsOf,
} from './metrics.js';
import { hasStacks, renderSourceLines, showSite, timelineStackDetails } from './stacks.js';
import { stragglerProcess, Timeline } from './timeline.js';

const app = () => document.getElementById('app');
const state = { ready: false, errors: [], timings: {}, uplots: () => chartInstances().map((c) => c.u) };
window.__gpscope = state;

function cudaVersion(v) {
  if (!v) return '';
  return `${Math.floor(v / 1000)}.${Math.floor((v % 1000) / 10)}`;
}

function severityClass(s) {
  return s === 'critical' ? 'sev-critical' : s === 'warning' ? 'sev-warning' : 'sev-info';
}

function unique(values) {
  return [...new Set(values.filter((v) => v !== '' && v != null))];
}

function rankList(ranks) {
  const r = [...new Set(ranks.filter((x) => x >= 0))].sort((a, b) => a - b);
  if (!r.length) return '';
  const parts = [];
  for (let i = 0; i < r.length; i++) {
    let j = i;
    while (j + 1 < r.length && r[j + 1] === r[j] + 1) j++;
    parts.push(i === j ? `${r[i]}` : `${r[i]}–${r[j]}`);
    i = j;
  }
  return parts.join(', ');
}

// ------------------------------------------------------------ header --

function completeness(data) {
  const s = data.summary || {};
  const issues = [];
  for (const p of s.processes || []) {
    const c = p.completeness || {};
    const who = `pid ${p.pid}${p.hostname ? ` on ${p.hostname}` : ''}`;
    if (c.dropped_total) {
      const reasons = Object.entries(c.dropped || {}).map(([k, v]) => `${k} ${fmtCount(v)}`).join(', ');
      issues.push(`${who}: ${fmtCount(c.dropped_total)} records dropped (${reasons})`);
    }
    if (c.lost_intervals && c.lost_intervals.count) {
      issues.push(`${who}: ${c.lost_intervals.count} interval(s) without data, ${fmtDuration(c.lost_intervals.total_ns)} in all`);
    }
    if (c.lost_frames) issues.push(`${who}: ${fmtCount(c.lost_frames)} chunks lost`);
    if (c.undecodable_batches) issues.push(`${who}: ${fmtCount(c.undecodable_batches)} batches could not be decoded`);
    if (c.clean_exit === false) issues.push(`${who}: no clean end (killed or crashed: the tail may be missing)`);
    for (const u of c.unavailable || []) issues.push(`${who}: not collected: ${u}`);
  }
  for (const f of s.files || []) {
    if (f.error) issues.push(`${f.path}: ${f.error}`);
    if (f.damaged_regions) issues.push(`${f.path}: ${f.damaged_regions} damaged region(s) skipped (${fmtBytes(f.skipped_bytes)})`);
    if (f.truncated) issues.push(`${f.path}: ends inside a frame (truncated)`);
  }
  const c = data.completeness || {};
  if (c.events_not_kept) issues.push(`timeline: ${fmtCount(c.events_not_kept)} events not drawn (over --max-events); the numbers still include them`);
  const metrics = data.timeline.lanes.filter((l) => l.kind === 'counter').length;
  if (!metrics) issues.push('no metric samples (GPU counters, clocks, power, host CPU): SM and memory-bandwidth utilization are estimates or unavailable');
  const severe = issues.some((i) => !i.startsWith('no metric samples') && !i.includes('not collected'));
  return { issues, severe };
}

function renderHeader(data) {
  const procs = data.processes;
  const s = data.summary || {};
  const jobs = unique(procs.map((p) => p.job));
  const hosts = unique(procs.map((p) => p.hostname));
  const ranks = rankList(procs.map((p) => p.rank));
  const gpus = (s.gpus || []).map((g) => g.device ? g.device.name : `GPU ${g.device_id}`);
  const gpuKinds = unique(gpus).map((n) => `${gpus.filter((x) => x === n).length} × ${n}`).join(', ');
  const drivers = unique(procs.map((p) => p.driver_version)).join(', ');
  const cudas = unique(procs.map((p) => cudaVersion(p.cuda_driver_version))).join(', ');
  const cmd = procs.length ? procs[0].cmdline.join(' ') : '';
  const title = jobs.length ? `job ${jobs.join(', ')}` : (cmd || 'gpscope report');
  document.title = `gpscope report — ${title}`.slice(0, 160);
  const { issues, severe } = completeness(data);
  const facts = [
    ['hosts', hosts.length ? `${hosts.length}: ${hosts.slice(0, 6).join(', ')}${hosts.length > 6 ? ', …' : ''}` : 'unknown'],
    ['processes', `${procs.length}${ranks ? ` (ranks ${ranks})` : ''}`],
    ['GPUs', gpuKinds || 'none'],
    ['driver / CUDA', `${drivers || 'n/a'} / ${cudas || 'n/a'}`],
    ['time span', `${fmtWallClock(data.t0_realtime_ns)} · ${fmtDuration(data.span_ns)}`],
    ['events', fmtCount(s.events)],
  ];
  const badge = issues.length === 0 ? h('span', { class: 'badge ok' }, 'data complete')
    : severe ? h('span', { class: 'badge bad' }, 'data incomplete') : h('span', { class: 'badge warn' }, 'partial metrics');
  const header = h('header', { class: 'report-header' },
    h('div', { class: 'brand' }, h('span', { class: 'logo' }, 'gpscope'), h('span', { class: 'brand-sub' }, 'GPU profile report')),
    h('h1', { class: 'job-title', title: cmd }, title),
    jobs.length && cmd ? h('div', { class: 'cmdline' }, cmd) : null,
    h('dl', { class: 'facts' }, facts.map(([k, v]) => h('div', null, h('dt', null, k), h('dd', null, v)))),
    glance(s),
    h('div', { class: 'completeness' }, badge,
      issues.length ? h('details', { class: 'issues' },
        h('summary', null, `${issues.length} note${issues.length > 1 ? 's' : ''} on completeness`),
        h('ul', null, issues.map((i) => h('li', null, i)))) : h('span', { class: 'muted' }, 'no drops, no lost intervals, every process ended cleanly')),
  );
  return header;
}

// The four numbers of every GPU in one line each, for the header.
function glance(s) {
  const gpus = s.gpus || [];
  if (!gpus.length) return null;
  const rows = gpus.slice(0, 16).map((g) => {
    const fn = g.four_numbers || {};
    const k = fn.kernel_duration_ns || {};
    const util = (u) => (u && u.percent != null ? `${u.percent.toFixed(1)}%${u.source === 'estimated' ? ' (est.)' : ''}` : 'n/a');
    const idle = fn.idle_gap_share;
    return h('div', { class: 'glance-row' },
      h('span', { class: 'glance-gpu' }, gpuTitle(g)),
      h('span', null, h('em', null, 'SM '), util(fn.sm_util)),
      h('span', null, h('em', null, 'mem BW '), util(fn.dram_bw_util)),
      h('span', null, h('em', null, 'kernel P50/P95 '), `${fmtDuration(k.p50)} / ${fmtDuration(k.p95)}`),
      h('span', { class: idle > 0.3 ? 'glance-bad' : null }, h('em', null, 'idle-gap share '), fmtPercent(idle)));
  });
  if (gpus.length > 16) rows.push(h('div', { class: 'glance-row muted' }, `… and ${gpus.length - 16} more GPUs below`));
  return h('div', { class: 'glance' }, rows);
}

function renderNav(hasSteps, hasRanks, hasLines) {
  const links = [['findings', 'Findings'], hasLines ? ['source-lines', 'Source lines'] : null,
    hasRanks ? ['ranks', 'Ranks'] : null, ['timeline', 'Timeline'], ['gpus', 'GPUs'], ['distributions', 'Distributions'],
    ['kernels', 'Top kernels'], hasSteps ? ['steps', 'Steps'] : null, ['correlation', 'Correlations'], ['details', 'Processes & data']].filter(Boolean);
  return h('nav', { class: 'report-nav' }, links.map(([id, label]) => h('a', { href: `#${id}` }, label)));
}

// A card saying there is nothing to show, when `body` stayed empty.
function orEmpty(body, text) {
  if (!body.childElementCount) body.append(h('div', { class: 'card empty muted' }, text));
  return body;
}

// ---------------------------------------------------------- findings --

function gotoTimeline(ranges, group, index = -1) {
  const t = state.timeline;
  if (!t) return;
  document.getElementById('timeline').scrollIntoView({ behavior: 'auto', block: 'start' });
  t.showRanges(ranges, group, index);
}

// Findings about how ranks compare (tools/analyses/rules.cc): their links
// line the ranks up in the compare view instead of scrolling to one GPU.
const RANK_RULES = new Set(['straggler-rank']);

function gotoRanks(ranges, group, index = -1) {
  const t = state.timeline;
  if (!t) return;
  document.getElementById('timeline').scrollIntoView({ behavior: 'auto', block: 'start' });
  t.compareRanks(ranges, index, group);
}

function renderFindings(data) {
  const s = data.summary || {};
  const findings = s.findings || [];
  const body = h('div', { class: 'findings' });
  const more = h('div');
  if (!findings.length && !(data.gpus || []).length) {
    // A node monitor file (GPU metric samples only): nothing for the rules.
    body.append(h('div', { class: 'card empty' },
      h('strong', null, 'No GPU work traced.'),
      ' These files hold no CUDA activity, so no rule can judge it. For a node monitor file, run ',
      h('code', null, 'gpscope-analyze metrics FILE'),
      ': idle GPUs, shared GPUs and trends, window by window.'));
  } else if (!findings.length) {
    body.append(h('div', { class: 'card empty' },
      h('strong', null, 'No findings.'),
      ' No rule fired: the GPUs were kept busy, or the trace is too short to judge. The numbers below still describe the run.'));
  }
  findings.forEach((f, i) => {
    const extra = (data.findings || [])[i] || { ranges: [], group: -1 };
    const ranges = extra.ranges || [];
    const go = RANK_RULES.has(f.rule) ? gotoRanks : gotoTimeline;
    const scope = f.scope ? h('span', { class: 'scope' }, f.scope) : null;
    const card = h('article', { class: `card finding ${severityClass(f.severity)}`, 'data-rule': f.rule },
      h('div', { class: 'finding-head' },
        h('span', { class: 'rank' }, `${i + 1}`),
        h('span', { class: `sev ${severityClass(f.severity)}` }, f.severity),
        h('h3', null, f.title),
        h('span', { class: 'cost', title: 'estimated GPU time this costs (ranking key)' },
          f.cost_ns ? `≈ ${fmtDuration(f.cost_ns)}` : '')),
      h('div', { class: 'finding-meta' }, h('code', null, f.rule), scope),
      h('p', { class: 'finding-summary' }, f.summary),
      (f.evidence || []).length ? h('div', { class: 'evidence' },
        f.evidence.map((e) => h('span', { class: 'chip' },
          h('span', { class: 'chip-k' }, e.key.replace(/_ns$|_gb_per_s$/, '').replace(/_/g, ' ')),
          h('span', { class: 'chip-v' }, fmtEvidence(e.value, e.unit))))) : null,
      ranges.length ? h('div', { class: 'where' },
        h('span', { class: 'where-label' }, 'where'),
        ranges.map((r, j) => h('button', {
          class: 'range-link', type: 'button', 'data-finding': i, 'data-range': j,
          title: 'show on the timeline',
          onclick: () => go(ranges, extra.group, j),
        }, `${fmtOffset(r.start_ns, 1e5)} · ${fmtDuration(r.end_ns - r.start_ns)}`, r.note ? h('span', { class: 'note' }, ` ${r.note}`) : null)),
        ranges.length > 1 ? h('button', { class: 'range-link all', type: 'button', onclick: () => go(ranges, extra.group) }, 'all on timeline') : null)
        : null,
      (f.sites || []).length && hasStacks(data) ? h('div', { class: 'where sites' },
        h('span', { class: 'where-label' }, 'at'),
        f.sites.map((s) => h('button', {
          class: 'range-link site-link', type: 'button', 'data-site': s.site,
          title: 'show its stack (source lines)', onclick: () => showSite(state, s.site),
        }, s.label, h('span', { class: 'note' }, ` ${fmtDuration(s.value_ns)}`)))) : null,
      (f.fixes || []).length ? h('div', { class: 'fixes' }, h('div', { class: 'fixes-label' }, 'what to do'),
        h('ul', null, f.fixes.map((x) => h('li', null, x)))) : null);
    if (i < 8) body.append(card);
    else more.append(card);
  });
  if (more.childElementCount) {
    body.append(h('details', { class: 'more-findings' },
      h('summary', null, `${more.childElementCount} more finding${more.childElementCount > 1 ? 's' : ''}`), more));
  }
  return section('findings', 'Findings', findings.length
    ? 'Ranked by the GPU time each likely costs. Links move the timeline to where a finding holds.'
    : null, body);
}

// ------------------------------------------------------------- ranks --

function signedDuration(ns) {
  if (ns == null || !isFinite(ns)) return 'n/a';
  return `${ns > 0 ? '+' : ns < 0 ? '−' : ''}${fmtDuration(Math.abs(ns))}`;
}

// The analyzer's per-rank comparison (summary.ranks, tools/analyses/ranks.h)
// as a table: one row per GPU, the straggler marked. Every number is the
// summary's; a row click shows that rank on the timeline.
function renderRanks(data) {
  const s = data.summary || {};
  const ranks = s.ranks;
  if (!ranks || !ranks.rows || ranks.rows.length < 2) return null;
  const gpus = s.gpus || [];
  const rows = ranks.rows.map((r, i) => ({ ...r, index: i, straggler: i === ranks.straggler, info: gpus[r.gpu] || {} }));
  const matched = ranks.matched_collectives > 0;
  const share = (a, b) => (b > 0 ? a / b : null);
  const cols = [
    { id: 'rank', label: 'rank', key: (r) => (r.rank >= 0 ? r.rank : 1e9 + r.index), value: (r) => r.rank,
      show: (r) => [r.rank >= 0 ? `${r.rank}` : '—', r.straggler ? h('span', { class: 'badge bad straggler-badge', title: 'the straggler: starts the matched collectives last' }, 'straggler') : null] },
    { id: 'host', label: 'host', key: (r) => r.hostname || '', value: (r) => r.hostname, show: (r) => r.hostname || '—' },
    { id: 'gpu', label: 'GPU', key: (r) => r.device_id, value: (r) => r.device_id,
      show: (r) => `GPU ${r.device_id}${r.info.device && r.info.device.name ? ` · ${r.info.device.name}` : ''}` },
    { id: 'pid', label: 'pid', num: true, key: (r) => r.pid, value: (r) => r.pid, show: (r) => `${r.pid}` },
    { id: 'steps', label: 'steps', num: true, key: (r) => (r.info.steps ? r.info.steps.count : null),
      value: (r) => (r.info.steps ? r.info.steps.count : null), show: (r) => (r.info.steps ? fmtCount(r.info.steps.count) : '—'),
      title: 'steps the analyzer found (NVTX, else repeating patterns)' },
    { id: 'step_p50_ns', label: 'step P50', num: true, key: (r) => r.step_p50_ns, value: (r) => r.step_p50_ns,
      show: (r) => (r.step_p50_ns > 0 ? fmtDuration(r.step_p50_ns) : '—'), title: 'step time, start to next start' },
    { id: 'step_p95_ns', label: 'step P95', num: true, key: (r) => r.step_p95_ns, value: (r) => r.step_p95_ns,
      show: (r) => (r.step_p95_ns > 0 ? fmtDuration(r.step_p95_ns) : '—') },
    { id: 'compute_busy_ns', label: 'compute', num: true, key: (r) => r.compute_busy_ns, value: (r) => r.compute_busy_ns,
      show: (r) => fmtDuration(r.compute_busy_ns), title: 'non-communication kernels, steady window' },
    { id: 'comm_share', label: 'comm', num: true, key: (r) => share(r.comm_busy_ns, r.window_ns), value: (r) => r.comm_busy_ns,
      show: (r) => `${fmtDuration(r.comm_busy_ns)} · ${fmtPercent(share(r.comm_busy_ns, r.window_ns))}`,
      title: 'communication (NCCL) kernels, steady window: time · share of the window' },
    { id: 'wait_ns', label: 'wait', num: true, key: (r) => (r.collectives ? r.wait_ns : null), value: (r) => (r.collectives ? r.wait_ns : null),
      show: (r) => (r.collectives ? fmtDuration(r.wait_ns) : '—'), title: "time in collectives beyond the fastest rank's (TB's synchronizing time), whole run" },
    { id: 'idle_share', label: 'idle', num: true, key: (r) => share(r.idle_ns, r.window_ns), value: (r) => share(r.idle_ns, r.window_ns),
      show: (r) => fmtPercent(share(r.idle_ns, r.window_ns)), title: 'GPU idle share of the steady window' },
    { id: 'mean_late_ns', label: 'late', num: true, key: (r) => (r.collectives ? r.mean_late_ns : null), value: (r) => (r.collectives ? r.mean_late_ns : null),
      show: (r) => (r.collectives ? signedDuration(r.mean_late_ns) : '—'), title: "mean start of a collective after the other ranks' median start" },
    { id: 'last_share', label: 'last', num: true, key: (r) => (r.collectives ? r.last_share : null), value: (r) => (r.collectives ? r.last_share : null),
      show: (r) => (r.collectives ? fmtPercent(r.last_share) : '—'), title: 'share of the matched collectives it started last' },
    { id: 'comm_overlap', label: 'overlap', num: true, key: (r) => r.comm_overlap, value: (r) => r.comm_overlap,
      show: (r) => (r.comm_overlap == null ? '—' : fmtPercent(r.comm_overlap)), title: 'share of communication time overlapped by compute (HTA)' },
  ];
  const straggler = ranks.straggler != null ? rows[ranks.straggler] : null;
  const head = matched
    ? `${fmtCount(ranks.matched_collectives)} collectives matched across the ranks${ranks.stride > 1 ? ` (every ${ranks.stride}th kept)` : ''}; their ends agree to ${fmtDuration(ranks.end_spread_ns)} (P95 ${fmtDuration(ranks.end_spread_p95_ns)}), so lateness below ${fmtDuration(2 * ranks.end_spread_ns)} is within the clocks' agreement.`
    : 'No collectives were matched across the ranks (fewer than two GPUs communicate).';
  const verdict = straggler
    ? h('p', { class: 'ranks-verdict' }, h('strong', null, straggler.label), ` is the straggler: it starts ${fmtPercent(straggler.last_share)} of the collectives last, ${fmtDuration(straggler.mean_late_ns)} after the others on average.`)
    : matched ? h('p', { class: 'ranks-verdict muted' }, 'No straggler: no rank starts the collectives late often enough, by enough.') : null;
  const table = sortableTable(cols, rows, {
    initial: 0, desc: false, rowClass: (r) => (r.straggler ? 'straggler' : ''),
    rowTitle: 'show this rank on the timeline',
    onRow: (r) => {
      const gd = data.gpus[r.gpu] || {};
      if (gd.group >= 0) gotoTimeline([], gd.group);
    },
  });
  table.querySelector('table').classList.add('ranks-table');
  const buttons = h('div', { class: 'ranks-actions' },
    h('button', { class: 'range-link', type: 'button', onclick: () => gotoRanks([], -1) }, 'compare the ranks on the timeline'));
  return section('ranks', 'Ranks', 'One row per GPU; compute, comm and idle over each GPU’s steady window. Click a row to show that rank on the timeline.',
    h('div', { class: 'card' }, h('p', { class: 'muted ranks-head' }, head), verdict, table, buttons));
}

// ---------------------------------------------------------- timeline --

function renderTimelineSection() {
  const holder = h('div', { class: 'timeline-holder card' });
  return [section('timeline', 'Timeline',
    'Every process on one time base (CUPTI clocks mapped to wall-clock time). Zoomed out, busy lanes show aggregated bins; zoom in for single events.',
    holder), holder];
}

// -------------------------------------------------------------- GPUs --

function tile(label, value, sub, cls = '') {
  return h('div', { class: `tile ${cls}` },
    h('div', { class: 'tile-label' }, label),
    h('div', { class: 'tile-value' }, value),
    sub ? h('div', { class: 'tile-sub' }, sub) : null);
}

function utilValue(u) {
  if (!u || u.percent == null) return 'n/a';
  return `${u.percent.toFixed(1)}%`;
}

function gpuTitle(g) {
  return g.label || `GPU ${g.device_id}`;
}

function renderFourNumbers(g, threshold) {
  const fn = g.four_numbers || {};
  const k = fn.kernel_duration_ns || {};
  const idle = fn.idle_gap_share;
  const idleCls = idle > 0.3 ? 'bad' : idle > 0.1 ? 'warn' : 'good';
  const smCls = fn.sm_util && fn.sm_util.percent != null ? (fn.sm_util.percent < 30 ? 'bad' : fn.sm_util.percent < 60 ? 'warn' : 'good') : '';
  return h('div', { class: 'tiles' },
    tile('SM utilization', utilValue(fn.sm_util), fn.sm_util ? `${fn.sm_util.source}${fn.sm_util.basis ? ` · ${fn.sm_util.basis}` : ''}` : '', smCls),
    tile('memory bandwidth', utilValue(fn.dram_bw_util), fn.dram_bw_util ? `${fn.dram_bw_util.source}${fn.dram_bw_util.basis ? ` · ${fn.dram_bw_util.basis}` : ''}` : ''),
    tile('kernel P50 / P95', `${fmtDuration(k.p50)} / ${fmtDuration(k.p95)}`, `${fmtCount((g.kernels || {}).count)} kernels, whole run`),
    tile('idle-gap share', fmtPercent(idle), `idle in gaps ≥ ${fmtDuration(threshold)} of the steady window; ${fmtPercent(fn.idle_gap_share_span)} over the whole span`, idleCls));
}

const SERIES_COLORS = {
  busy_share: '#8c969e', kernel_busy_share: '#4f7cba', idle_gap_share: '#d94a4a', host_wait_share: '#e08a2c',
  sync_wait_share: '#b566c7', sm_util: '#2e6fd6', dram_util: '#2f8f83', copy_share: '#2f9e5d',
  launches_per_s: '#5d6b7e', sync_blocked_share: '#c0503f', host_cpu: '#8a6bbf',
};

function seriesOf(gd, key) {
  const s = gd.trend && gd.trend.series ? gd.trend.series[key] : null;
  if (!s) return null;
  const keyInfo = gd.trend_keys.find((k) => k.key === key) || { label: key, unit: '' };
  const values = keyInfo.unit === 'ratio' ? s.map((v) => (v == null ? null : 100 * v)) : s;
  return { key, label: keyInfo.label, unit: keyInfo.unit === 'ratio' ? 'percent' : keyInfo.unit, values, color: SERIES_COLORS[key] };
}

function chartBox(title, note) {
  const el = h('div', { class: 'chart' });
  return [h('div', { class: 'chart-box' }, h('div', { class: 'chart-title' }, title), note ? h('div', { class: 'chart-note' }, note) : null, el), el];
}

function renderGpus(data, deferred) {
  const s = data.summary || {};
  const threshold = (s.options || {}).idle_gap_threshold_ns;
  const body = h('div', { class: 'gpus' });
  (s.gpus || []).forEach((g, gi) => {
    const gd = data.gpus[gi] || {};
    const win = g.window || {};
    const busy = g.busy || {};
    const card = h('div', { class: 'card gpu' },
      h('div', { class: 'gpu-head' },
        h('h3', null, gpuTitle(g)),
        g.device ? h('span', { class: 'muted' }, `${g.device.sm_count} SMs · cc ${g.device.compute_capability} · ${fmtBytes(g.device.global_memory_bytes)}`) : null,
        gd.group >= 0 ? h('button', { class: 'range-link', type: 'button', onclick: () => gotoTimeline([], gd.group) }, 'show lanes') : null),
      renderFourNumbers(g, threshold),
      h('p', { class: 'gpu-window' },
        `Steady window ${fmtDuration(win.length_ns)} (${win.basis || 'whole span'}); GPU busy ${fmtPercent(busy.busy_share)} of it — kernels ${fmtDuration(busy.kernel_ns)}, copies ${fmtDuration(busy.copy_ns)}, memsets ${fmtDuration(busy.memset_ns)}.`));
    const charts = h('div', { class: 'chart-grid' });
    card.append(charts);
    body.append(card);
    if (!gd.trend || !gd.trend.width_ns) return;
    const w = gd.trend.width_ns;
    const n = (gd.trend.series.busy_share || []).length;
    const x = Array.from({ length: n }, (_, i) => (gd.trend.start_ns + (i + 0.5) * w) / 1e9);
    const pick = (t) => state.timeline && (gotoTimeline([], gd.group), state.timeline.setRange(t * 1e9 - w, t * 1e9 + w));
    const make = (title, note, keys, opts = {}) => {
      const series = keys.map((k) => seriesOf(gd, k)).filter(Boolean)
        .map((sr) => ({ ...sr, scale: sr.unit === 'per_s' || opts.y2 ? 'y2' : 'pct', fill: opts.y2 }));
      if (!series.length) return;
      const [box, el] = chartBox(title, note);
      charts.append(box);
      deferred.push(() => timeChart(el, { x, series, onPick: pick, y2Label: opts.y2Label, yLabel: opts.yLabel, xRange: state.xRange }));
    };
    make('Utilization over time', `windows of ${fmtDuration(w)} (the same for every GPU); click to show on the timeline`,
      ['sm_util', 'dram_util', 'busy_share', 'kernel_busy_share']);
    make('Idle and waiting', 'share of each window', ['idle_gap_share', 'host_wait_share', 'sync_wait_share', 'sync_blocked_share']);
    make('Feeding the GPU', 'copies (share of each window) and kernel launch rate', ['copy_share', 'launches_per_s'], { y2Label: 'launches/s' });
    // CPU time is % of one core (four busy threads read 400%): not a share,
    // so it gets an axis of its own.
    make('Host CPU', "this process's CPU time in % of one core (the whole host's share when the process was not sampled)",
      ['host_cpu'], { y2Label: '% of one core', y2: true });
    // The GPU's metric samples, one chart per family (one unit, one axis),
    // and its clock limits as states.
    const lanes = (gd.counters || []).map((i) => state.lanes[i]).filter((l) => l && l.count);
    const pickAt = (t) => { gotoTimeline([], gd.group); state.timeline.setRange(t * 1e9 - 2e8, t * 1e9 + 2e8); };
    const notes = {
      util: 'sampled, % of peak', link: 'bytes per second, sampled', clock: 'sampled', power: 'sampled',
      temperature: 'sampled', memory: 'sampled',
    };
    for (const [family, title] of FAMILIES) {
      const first = lanes.find((l) => l.unit !== 'bitmask' && metricInfo(l.metric, l.unit).family === family);
      if (!first) continue;
      // One unit per chart: a lane of the family in another unit waits for
      // a catalogue entry (metrics.js) rather than sharing a wrong axis.
      const chosen = lanes.filter((l) => l.unit === first.unit && metricInfo(l.metric, l.unit).family === family);
      const scale = first.unit === 'percent' ? { div: 1, label: '%' } : axisScale(first.unit, Math.max(...chosen.map((l) => l.max)));
      const [box, el] = chartBox(first.unit === 'percent' ? `${title}, %` : `${title}, ${scale.label}`, notes[family]);
      box.dataset.family = family;
      charts.append(box);
      deferred.push(() => {
        const palette = ['#2e6fd6', '#d94a4a', '#2f9e5d', '#e08a2c', '#8a6bbf', '#2f8f83', '#c7a028', '#5d6b7e', '#b566c7'];
        const base = chosen[0];
        const [xs] = downsample(base.t, base.v);
        const series = chosen.map((l, i) => {
          let values;
          if (l === base) values = downsample(l.t, l.v)[1];
          else values = xs.map((tt) => { // align on the first lane's times
            let lo = 0, hi = l.t.length - 1;
            while (lo < hi) { const mid = (lo + hi + 1) >> 1; if (l.t[mid] / 1e9 <= tt) lo = mid; else hi = mid - 1; }
            return l.v[lo];
          });
          return {
            label: legendLabel(metricInfo(l.metric, l.unit).title, scale, gd.device_id), values, color: palette[i % palette.length],
            unit: l.unit, scale: l.unit === 'percent' ? 'pct' : 'y2', fill: chosen.length === 1,
          };
        });
        timeChart(el, { x: xs, series, xRange: state.xRange, y2Scale: scale, onPick: pickAt });
      });
    }
    for (const l of lanes.filter((x) => x.unit === 'bitmask')) {
      const spans = reasonSpans(l.t, l.v, data.span_ns);
      const [box, el] = chartBox(`${metricInfo(l.metric, l.unit).title} (GPU ${gd.device_id})`,
        `why the clocks were held down (NVML clock event reasons), ${fmtCount(l.count)} samples`);
      box.dataset.family = 'reasons';
      const count = (reason) => {
        let n = 0;
        for (let i = 0; i < l.v.length; i++) if (reasonsOf(l.v[i]).includes(reason)) n++;
        return n;
      };
      el.before(h('div', { class: 'state-legend' }, spans.length
        ? spans.map(({ reason }) => h('span', { class: 'state-item' }, h('i', { style: { background: reason.color } }),
          `${reason.name} `, h('span', { class: 'muted' }, `${fmtPercent(count(reason) / l.count)} of samples`)))
        : h('span', { class: 'muted' }, `no clock-limiting reason in ${fmtCount(l.count)} samples`)));
      charts.append(box);
      deferred.push(() => stateChart(el, {
        rows: spans.map(({ reason, spans: sp }) => ({ name: reason.name, color: reason.color, spans: sp.map(([a, b]) => [a / 1e9, b / 1e9]) })),
        xRange: state.xRange, onPick: pickAt, empty: 'no clock limit',
      }));
    }
  });
  return section('gpus', 'GPUs', 'Per GPU: the four numbers, then how they moved over the run.',
    orEmpty(body, 'No GPU activity was traced.'));
}

// ----------------------------------------------------- distributions --

function renderDistributions(data, deferred) {
  const s = data.summary || {};
  const threshold = (s.options || {}).idle_gap_threshold_ns;
  const body = h('div', { class: 'gpus' });
  (s.gpus || []).forEach((g, gi) => {
    const gd = data.gpus[gi] || {};
    const hist = gd.histograms;
    if (!hist) return;
    const grid = h('div', { class: 'chart-grid two' });
    body.append(h('div', { class: 'card' }, h('h3', null, gpuTitle(g)), grid));
    if (hist.kernel_duration.counts.length) {
      const [box, el] = chartBox('Kernel durations', 'bars: kernels per duration bucket; line: share of kernel time');
      grid.append(box);
      deferred.push(() => histogramChart(el, { edges: hist.kernel_duration.edges_ns, counts: hist.kernel_duration.counts, totals: hist.kernel_duration.total_ns, countLabel: 'kernels', timeLabel: 'share of kernel time' }));
    }
    if (hist.idle_gap.counts.length) {
      const [box, el] = chartBox('Idle-gap lengths', `device idle between GPU ops; dashed: the ${fmtDuration(threshold)} threshold`);
      grid.append(box);
      deferred.push(() => histogramChart(el, { edges: hist.idle_gap.edges_ns, counts: hist.idle_gap.counts, totals: hist.idle_gap.total_ns, color: '#d94a4a', marker: threshold, markerLabel: `${fmtDuration(threshold)}`, countLabel: 'gaps', timeLabel: 'share of idle time' }));
    }
  });
  return section('distributions', 'Distributions', 'Log-spaced buckets, exact events of the whole run.',
    orEmpty(body, 'No GPU activity was traced.'));
}

// ------------------------------------------------------- top kernels --

function sortableTable(columns, rows, { initial = 0, desc = true, onRow, rowClass, rowTitle } = {}) {
  let sortCol = initial, sortDesc = desc;
  const tbody = h('tbody');
  const heads = columns.map((c, i) => h('th', {
    class: c.num ? 'num sortable' : 'sortable', title: c.title || 'sort',
    onclick: () => {
      if (sortCol === i) sortDesc = !sortDesc; else { sortCol = i; sortDesc = !!c.num; }
      draw();
    },
  }, c.label));
  function draw() {
    const c = columns[sortCol];
    const sorted = rows.slice().sort((a, b) => {
      const x = c.key(a), y = c.key(b);
      const r = typeof x === 'string' ? x.localeCompare(y) : (x ?? -Infinity) - (y ?? -Infinity);
      return sortDesc ? -r : r;
    });
    heads.forEach((th, i) => th.setAttribute('aria-sort', i === sortCol ? (sortDesc ? 'descending' : 'ascending') : 'none'));
    clear(tbody);
    sorted.forEach((row, i) => tbody.append(h('tr', {
      class: [onRow ? 'clickable' : '', rowClass ? rowClass(row) : ''].filter(Boolean).join(' ') || null,
      onclick: onRow ? () => onRow(row) : null,
      title: onRow ? (rowTitle || 'find on the timeline') : null,
    }, columns.map((col) => {
      // data-value: the number shown, as the analyzer wrote it (tests read it).
      const v = col.value ? col.value(row) : null;
      return h('td', {
        class: col.num ? 'num' : col.cls || null, title: col.tip ? col.tip(row) : null,
        'data-col': col.id || null, 'data-value': v == null ? null : String(v),
      }, col.show ? col.show(row, i) : col.key(row));
    }))));
  }
  draw();
  return h('div', { class: 'table-wrap' }, h('table', { class: 'data sortable-table' }, h('thead', null, h('tr', null, heads)), tbody));
}

// The compact form the C++ side computed for a demangled name, if any.
function shortName(full) {
  if (!state.nameIndex) {
    state.nameIndex = new Map();
    state.data.timeline.names.forEach((n, i) => state.nameIndex.set(n, i));
  }
  const i = state.nameIndex.get(full);
  return (i != null && state.data.timeline.short_names[i]) || full;
}

function searchKernel(name) {
  const t = state.timeline;
  if (!t) return;
  document.getElementById('timeline').scrollIntoView({ block: 'start' });
  t.searchInput.value = name;
  t.search(name);
  t.nextMatch(1);
}

function renderKernels(data) {
  const s = data.summary || {};
  const body = h('div', { class: 'gpus' });
  (s.gpus || []).forEach((g) => {
    const k = g.kernels || {};
    const top = k.top || [];
    const cols = [
      { label: 'kernel', key: (r) => shortName(r.demangled || r.name), cls: 'kname', show: (r) => shortName(r.demangled || r.name), tip: (r) => r.demangled || r.name },
      { label: 'count', num: true, key: (r) => r.count, show: (r) => fmtCount(r.count) },
      { label: 'total', num: true, key: (r) => r.total_ns, show: (r) => fmtDuration(r.total_ns) },
      { label: 'share', num: true, key: (r) => r.share, show: (r) => fmtPercent(r.share) },
      { label: 'mean', num: true, key: (r) => r.mean_ns, show: (r) => fmtDuration(r.mean_ns) },
      { label: 'P50', num: true, key: (r) => r.median_ns, show: (r) => fmtDuration(r.median_ns) },
      { label: 'P95', num: true, key: (r) => r.p95_ns, show: (r) => fmtDuration(r.p95_ns) },
      { label: 'P99', num: true, key: (r) => r.p99_ns, show: (r) => fmtDuration(r.p99_ns) },
      { label: 'max', num: true, key: (r) => r.max_ns, show: (r) => fmtDuration(r.max_ns) },
      { label: 'est. SM eff.', num: true, key: (r) => r.est_sm_efficiency, show: (r) => (r.est_sm_efficiency == null ? 'n/a' : fmtPercent(r.est_sm_efficiency, 0)), title: 'min(blocks / SMs, 1), weighted by time' },
    ];
    body.append(h('div', { class: 'card' },
      h('div', { class: 'gpu-head' }, h('h3', null, gpuTitle(g)),
        h('span', { class: 'muted' }, `${fmtCount(k.count)} kernels, ${fmtCount(k.names)} names, ${fmtCount(k.tiny_count)} shorter than 10 µs. Click a column to sort, a row to find it on the timeline.`)),
      top.length ? sortableTable(cols, top, { initial: 2, onRow: (r) => searchKernel(r.demangled || r.name) })
        : h('p', { class: 'muted' }, 'No kernels.')));
  });
  return section('kernels', 'Top kernels', 'By total GPU time, whole run.', orEmpty(body, 'No kernels were traced.'));
}

// ------------------------------------------------------------- steps --

function renderSteps(data, deferred) {
  const s = data.summary || {};
  const body = h('div', { class: 'gpus' });
  let any = false;
  (s.gpus || []).forEach((g, gi) => {
    const gd = data.gpus[gi] || {};
    const st = gd.steps;
    const ss = g.steps;
    if (!st || !st.start_ns.length) return;
    any = true;
    const [box, el] = chartBox('Per-step time', `period from one step's start to the next; click a bar to show the step on the timeline${st.not_shown ? ` (${fmtCount(st.not_shown)} more steps not shown)` : ''}`);
    const stats = ss ? h('div', { class: 'tiles small' },
      tile('steps', fmtCount(ss.count), `e.g. “${ss.example_name}”`),
      tile('period P50 / P95', `${fmtDuration(ss.period_ns.p50)} / ${fmtDuration(ss.period_ns.p95)}`, 'steps after the first'),
      tile('per step: kernels', fmtDuration(ss.per_step.compute_ns), 'mean'),
      tile('per step: copies only', fmtDuration(ss.per_step.copy_ns), 'mean'),
      tile('per step: idle', fmtDuration(ss.per_step.idle_ns), 'mean', ss.per_step.idle_ns > ss.per_step.compute_ns ? 'bad' : '')) : null;
    const slow = ss && ss.slowest && ss.slowest.length ? sortableTable([
      { label: 'step', num: true, key: (r) => r.index, show: (r) => `#${r.index}` },
      { label: 'start', num: true, key: (r) => r.start_ns, show: (r) => fmtOffset(stepReport(gd, r), 1e6) },
      { label: 'period', num: true, key: (r) => r.period_ns, show: (r) => fmtDuration(r.period_ns) },
      { label: 'kernels', num: true, key: (r) => r.compute_ns, show: (r) => fmtDuration(r.compute_ns) },
      { label: 'copies only', num: true, key: (r) => r.copy_ns, show: (r) => fmtDuration(r.copy_ns) },
      { label: 'idle', num: true, key: (r) => r.idle_ns, show: (r) => fmtDuration(r.idle_ns) },
    ], ss.slowest, { initial: 2, onRow: (r) => { const a = stepReport(gd, r); gotoTimeline([{ start_ns: a, end_ns: a + r.period_ns, note: `step ${r.index}` }], gd.group); } }) : null;
    body.append(h('div', { class: 'card' }, h('h3', null, gpuTitle(g)), stats, box,
      slow ? h('div', { class: 'chart-title' }, 'Slowest steps') : null, slow));
    deferred.push(() => stepsChart(el, {
      compute: st.compute_ns, copy: st.copy_ns, idle: st.idle_ns,
      onPick: (i) => gotoTimeline([{ start_ns: st.start_ns[i], end_ns: st.start_ns[i] + st.period_ns[i], note: `step ${i}` }], gd.group),
    }));
  });
  if (!any) return null;
  return section('steps', 'Steps', 'From NVTX ranges named like training steps; each instant counted once: kernels, else copies, else idle.', body);
}

// Report ns of an analyzer step record: the step with the same index.
function stepReport(gd, r) {
  const st = gd.steps;
  if (st && r.index < st.start_ns.length) return st.start_ns[r.index];
  return 0;
}

// ------------------------------------------------------- correlation --

function corrColor(r) {
  if (r == null) return '#f4f5f7';
  const a = Math.min(1, Math.abs(r));
  return r >= 0 ? `rgba(46, 111, 214, ${0.08 + 0.62 * a})` : `rgba(217, 74, 74, ${0.08 + 0.62 * a})`;
}

function renderCorrelation(data) {
  const s = data.summary || {};
  const body = h('div', { class: 'gpus' });
  (s.gpus || []).forEach((g, gi) => {
    const c = (data.gpus[gi] || {}).correlation;
    if (!c || !c.keys.length) return;
    const table = h('table', { class: 'corr' },
      h('thead', null, h('tr', null, h('th', null, ''), c.labels.map((l) => h('th', { class: 'rot' }, h('span', null, l))))),
      h('tbody', null, c.labels.map((l, i) => h('tr', null, h('th', null, l),
        c.r[i].map((r, j) => h('td', { class: 'num', style: { background: corrColor(i === j ? null : r), color: r != null && Math.abs(r) > 0.6 && i !== j ? '#fff' : '' }, title: `${l} vs ${c.labels[j]}` },
          i === j ? '—' : r == null ? 'n/a' : r.toFixed(2)))))));
    // The strongest relations, in words.
    const pairs = [];
    for (let i = 0; i < c.keys.length; i++) for (let j = i + 1; j < c.keys.length; j++) if (c.r[i][j] != null) pairs.push([Math.abs(c.r[i][j]), i, j]);
    pairs.sort((a, b) => b[0] - a[0]);
    const idleIdx = c.keys.indexOf('idle_gap_share');
    const about = idleIdx >= 0 ? pairs.filter(([, i, j]) => i === idleIdx || j === idleIdx).slice(0, 3) : [];
    body.append(h('div', { class: 'card' }, h('h3', null, gpuTitle(g)),
      h('p', { class: 'muted' }, `Pearson r over ${c.windows} windows of ${fmtDuration(c.width_ns)} in the steady window. Blue: rise together; red: one rises as the other falls.`),
      about.length ? h('ul', { class: 'corr-notes' }, about.map(([, i, j]) => {
        const other = i === idleIdx ? j : i;
        const r = c.r[i][j];
        return h('li', null, `idle in long gaps ${r >= 0 ? 'rises' : 'falls'} with ${c.labels[other]} (r = ${r.toFixed(2)})`);
      })) : null,
      h('div', { class: 'table-wrap' }, table)));
  });
  return section('correlation', 'Correlations', 'How window metrics move together, e.g. idle share against host CPU, copies and SM utilization.',
    orEmpty(body, 'Too few windows with activity to correlate.'));
}

// ----------------------------------------------------------- details --

function renderDetails(data) {
  const s = data.summary || {};
  const procRows = data.processes.map((p) => {
    const sp = (s.processes || [])[p.summary_index] || {};
    const c = sp.completeness || {};
    return h('tr', null,
      h('td', null, p.rank >= 0 ? `${p.rank}` : '—'),
      h('td', null, `${p.pid}`),
      h('td', null, p.hostname),
      h('td', { class: 'cmd', title: p.cmdline.join(' ') }, p.cmdline.join(' ')),
      h('td', { class: 'num' }, fmtCount(sp.events)),
      h('td', { class: 'num' }, sp.launch_call_ns ? fmtDuration(sp.launch_call_ns.p50) : 'n/a'),
      h('td', null, c.complete === false ? h('span', { class: 'badge bad' }, 'incomplete') : h('span', { class: 'badge ok' }, 'complete')));
  });
  const copies = [];
  (s.gpus || []).forEach((g) => {
    for (const r of [...((g.copies || {}).rows || []), ...((g.copies || {}).memsets || [])]) copies.push({ gpu: gpuTitle(g), ...r });
  });
  const copyTable = copies.length ? sortableTable([
    { label: 'GPU', key: (r) => r.gpu },
    { label: 'kind', key: (r) => `${r.direction} ${r.memory}`.trim() },
    { label: 'count', num: true, key: (r) => r.count, show: (r) => fmtCount(r.count) },
    { label: 'bytes', num: true, key: (r) => r.bytes, show: (r) => fmtBytes(r.bytes) },
    { label: 'GPU time', num: true, key: (r) => r.duration_ns, show: (r) => fmtDuration(r.duration_ns) },
    { label: 'GB/s', num: true, key: (r) => r.gb_per_s, show: (r) => (r.gb_per_s ? sig(r.gb_per_s) : 'n/a') },
    { label: 'share of GPU time', num: true, key: (r) => r.share_of_gpu_time, show: (r) => fmtPercent(r.share_of_gpu_time) },
    { label: 'synchronous', num: true, key: (r) => (r.sync || {}).count, show: (r) => fmtCount((r.sync || {}).count) },
  ], copies, { initial: 4 }) : h('p', { class: 'muted' }, 'No copies or memsets.');
  const warnings = s.warnings || [];
  return section('details', 'Processes & data', null,
    h('div', { class: 'card' }, h('h3', null, 'Processes'),
      h('div', { class: 'table-wrap' }, h('table', { class: 'data' },
        h('thead', null, h('tr', null, ['rank', 'pid', 'host', 'command', 'events', 'launch call P50', 'data'].map((x) => h('th', null, x)))),
        h('tbody', null, procRows)))),
    h('div', { class: 'card' }, h('h3', null, 'Copies and memsets'), copyTable),
    h('div', { class: 'card' }, h('h3', null, 'Files'),
      h('ul', { class: 'plain' }, data.files.map((f) => h('li', null, `${f.path} · ${fmtBytes(f.bytes)}${f.error ? ` · ${f.error}` : ''}`))),
      warnings.length ? h('details', null, h('summary', null, `${warnings.length} reader warning(s)${s.warnings_omitted ? ` (+${s.warnings_omitted} more)` : ''}`),
        h('ul', { class: 'plain mono' }, warnings.map((w) => h('li', null, w)))) : null,
      h('p', { class: 'muted' }, `Generated by ${data.generator}. Timeline data ${fmtBytes(data.timeline.blob.bytes)} (${data.timeline.blob.encoding}).`)));
}

// -------------------------------------------------------------- main --

function fail(message) {
  state.errors.push(message);
  const root = app();
  root.append(h('div', { class: 'card error' }, h('strong', null, 'This report could not be shown: '), message));
}

async function main() {
  const t0 = performance.now();
  const tag = document.getElementById('gpscope-data');
  let data;
  try {
    data = JSON.parse(tag.textContent);
  } catch (e) {
    fail(`its data does not parse (${e.message}).`);
    return;
  }
  if (!data || typeof data !== 'object' || data.schema !== 'gpscope.report/1') {
    fail('it holds no report data. Write one with: gpscope-analyze report FILE... -o report.html');
    return;
  }
  state.data = data;
  // One time axis for every chart of the page: the whole report, in s.
  state.xRange = [0, Math.max(1, data.span_ns) / 1e9];
  state.timings.parse_ms = performance.now() - t0;
  const lanes = await decodeTimeline(data.timeline);
  state.lanes = lanes;
  state.timings.decode_ms = performance.now() - t0;

  const root = clear(app());
  const deferred = [];
  const stepsSection = renderSteps(data, deferred);
  const [timelineSection, holder] = renderTimelineSection();
  const ranksSection = renderRanks(data);
  const linesSection = renderSourceLines(data, state);
  root.append(renderHeader(data), renderNav(!!stepsSection, !!ranksSection, !!linesSection));
  const main = h('main', { class: 'report-main' });
  root.append(main);
  main.append(renderFindings(data));
  if (linesSection) main.append(linesSection);
  if (ranksSection) main.append(ranksSection);
  main.append(timelineSection);
  state.timeline = new Timeline(holder, data, lanes);
  if (linesSection) state.timeline.stackDetails = (selected, where) => timelineStackDetails(state, lanes, selected, where);
  main.append(renderGpus(data, deferred), renderDistributions(data, deferred), renderKernels(data));
  if (stepsSection) main.append(stepsSection);
  main.append(renderCorrelation(data), renderDetails(data));
  state.timeline.resize();
  state.timings.timeline_ms = performance.now() - t0;
  for (const f of deferred) {
    try {
      f();
    } catch (e) {
      state.errors.push(String(e && e.stack || e));
      console.error(e);
    }
  }
  state.charts = deferred.length;
  await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  state.timings.ready_ms = performance.now() - t0;
  state.ready = true;
  document.documentElement.dataset.ready = 'true';
}

main().catch((e) => {
  console.error(e);
  fail(String(e && e.message || e));
});
