// tests/report/run.mjs: browser tests of `gpscope-analyze report` in headless
// Chromium (Debian's /usr/bin/chromium, driven by playwright-core; no browser
// is ever downloaded). Run by scripts/test_report.sh:
//
//   node tests/report/run.mjs --analyze build/tools/gpscope-analyze \
//        [--gen-trace build/bench/gen_trace] [--out /tmp/dir] [--docs docs]
//
// Each test prints "ok" or "FAIL" with details; the last line is
// "N passed, N failed" and the exit status is 1 when any failed.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inflateSync } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const require = createRequire(join(repo, 'report/package.json'));
const { chromium } = require('playwright-core');

const args = Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
  if (a.startsWith('--')) acc.push([a.slice(2), all[i + 1] && !all[i + 1].startsWith('--') ? all[i + 1] : '1']);
  return acc;
}, []));
const ANALYZE = args.analyze;
const GEN_TRACE = args['gen-trace'];
// The large report's event count (gen_trace --events); 1M in CI. By hand:
// --big-events 10000000 (bench/report_tti.mjs measures it alone, repeated).
const BIG_EVENTS = Number(args['big-events'] || 1000000);
const BIG_LABEL = BIG_EVENTS % 1000000 === 0 ? `${BIG_EVENTS / 1000000}M` : `${BIG_EVENTS}`;
const OUT = args.out || mkdtempSync(join(tmpdir(), 'gpscope-report-'));
const DOCS = args.docs;
const CHROMIUM = args.chromium || '/usr/bin/chromium';
const REAL_TRACE = join(repo, 'tests/data/torch_train_starved.gpscope');
const SIZE_LIMIT = 5 * 1024 * 1024;
const INTERACTIVE_LIMIT_MS = 5000;
mkdirSync(OUT, { recursive: true });

// ------------------------------------------------------------- harness --

const results = [];
async function test(name, fn) {
  const t0 = Date.now();
  try {
    const note = await fn();
    results.push([true, name]);
    console.log(`ok    ${name}${note ? ` — ${note}` : ''} (${Date.now() - t0} ms)`);
  } catch (e) {
    results.push([false, name]);
    console.log(`FAIL  ${name}: ${e && e.stack ? e.stack.split('\n').slice(0, 3).join(' | ') : e}`);
  }
}
function expect(cond, message) {
  if (!cond) throw new Error(message);
}

// ----------------------------------------------------------------- PNG --

// Decodes an 8-bit, non-interlaced RGB/RGBA PNG (what Chromium writes).
function decodePng(buf) {
  let p = 8;
  let width = 0, height = 0, channels = 0;
  const idat = [];
  while (p < buf.length) {
    const len = buf.readUInt32BE(p);
    const type = buf.toString('latin1', p + 4, p + 8);
    const data = buf.subarray(p + 8, p + 8 + len);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      if (data[8] !== 8 || data[12] !== 0) throw new Error('unsupported PNG');
      channels = { 2: 3, 6: 4 }[data[9]];
      if (!channels) throw new Error(`unsupported PNG colour type ${data[9]}`);
    } else if (type === 'IDAT') {
      idat.push(data);
    }
    p += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = Buffer.alloc(height * stride);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      let v = line[x];
      if (f === 1) v += a;
      else if (f === 2) v += b;
      else if (f === 3) v += (a + b) >> 1;
      else if (f === 4) {
        const pa = Math.abs(b - c), pb = Math.abs(a - c), pc = Math.abs(a + b - 2 * c);
        v += pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + x] = v & 0xff;
    }
  }
  return { width, height, channels, pixels: out };
}

// Luminance spread and the share of pixels that differ from the most
// common colour: a drawn chart has both, a blank region has neither.
function pixelStats(png) {
  const { pixels, channels } = decodePng(png);
  const n = pixels.length / channels;
  let sum = 0, sum2 = 0;
  const counts = new Map();
  for (let i = 0; i < n; i++) {
    const r = pixels[i * channels], g = pixels[i * channels + 1], b = pixels[i * channels + 2];
    const l = 0.299 * r + 0.587 * g + 0.114 * b;
    sum += l;
    sum2 += l * l;
    const key = (r << 16) | (g << 8) | b;
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  const mean = sum / n;
  const std = Math.sqrt(Math.max(0, sum2 / n - mean * mean));
  const top = Math.max(...counts.values());
  return { std, inked: 1 - top / n, colors: counts.size };
}

// --------------------------------------------------------------- pages --

let browser;
async function open(file, { viewport = { width: 1440, height: 1000 } } = {}) {
  const page = await browser.newPage({ viewport });
  const problems = [];
  const dialogs = [];
  const requests = [];
  page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(`console.${m.type()}: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('dialog', async (d) => { dialogs.push(`${d.type()}: ${d.message()}`); await d.dismiss(); });
  page.on('request', (r) => { if (!/^(file|data|blob):/.test(r.url())) requests.push(r.url()); });
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()}`));
  const t0 = Date.now();
  await page.goto(`file://${file}`, { waitUntil: 'load' });
  await page.waitForFunction(() => window.__gpscope && (window.__gpscope.ready || window.__gpscope.errors.length), null, { timeout: 60000 });
  const loadMs = Date.now() - t0;
  const state = await page.evaluate(() => ({ errors: window.__gpscope.errors, timings: window.__gpscope.timings }));
  problems.push(...state.errors);
  return { page, problems, dialogs, requests, loadMs, timings: state.timings };
}

function report(traces, name, extra = []) {
  const out = join(OUT, name);
  execFileSync(ANALYZE, ['report', ...traces, '-o', out, ...extra], { stdio: ['ignore', 'pipe', 'inherit'] });
  return out;
}

async function range(page) {
  return page.evaluate(() => window.__gpscope.timeline.range());
}

async function settle(page) {
  await page.waitForFunction(() => !window.__gpscope.timeline.animation, null, { timeout: 5000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

// A number as the page shows it ("10.8 ms", "1.71 s", "−3.53 ms", "79.7%",
// "1,234"): ns for durations, a ratio for percentages.
// Returns {value, step}: step is what the last digit shown is worth.
function parseShown(text) {
  const m = /^\s*([+−-]?)([\d,]+)(?:\.(\d+))?\s*(ns|µs|ms|s|%)?/.exec(text);
  if (!m) return { value: NaN, step: 0 };
  const sign = m[1] === '−' || m[1] === '-' ? -1 : 1;
  const mul = { ns: 1, 'µs': 1e3, ms: 1e6, s: 1e9, '%': 0.01 }[m[4]] ?? 1;
  const decimals = m[3] ? m[3].length : 0;
  const v = sign * Number(`${m[2].replace(/,/g, '')}${m[3] ? `.${m[3]}` : ''}`);
  return { value: v * mul, step: mul * 10 ** -decimals };
}

// Whether a shown number is `value` rounded to the digits it shows.
function close(shown, value) {
  return Math.abs(shown.value - value) <= 0.5 * shown.step * (1 + 1e-9) + 1e-12;
}

function summaryJson(trace) {
  return JSON.parse(execFileSync(ANALYZE, ['summary', '--format', 'json', trace], { maxBuffer: 64 << 20 }).toString());
}

// The ranks table against `gpscope-analyze summary --format json` of the
// same trace: the straggler row marked, every cell the summary's number.
async function checkRanksTable(page, summary) {
  const ranks = summary.ranks;
  const rows = await page.evaluate(() => [...document.querySelectorAll('#ranks table.ranks-table tbody tr')].map((tr) => ({
    straggler: tr.classList.contains('straggler'),
    badge: !!tr.querySelector('.straggler-badge'),
    cells: Object.fromEntries([...tr.children].map((td) => [td.dataset.col, { value: td.dataset.value, text: td.textContent }])),
  })));
  expect(rows.length === ranks.rows.length, `${rows.length} table rows, the summary has ${ranks.rows.length}`);
  const checks = [
    ['step_p50_ns', (r) => r.step_p50_ns], ['step_p95_ns', (r) => r.step_p95_ns], ['compute_busy_ns', (r) => r.compute_busy_ns],
    ['comm_share', (r) => r.comm_busy_ns], ['wait_ns', (r) => r.wait_ns], ['idle_share', (r) => r.idle_ns / r.window_ns],
    ['mean_late_ns', (r) => r.mean_late_ns], ['last_share', (r) => r.last_share], ['comm_overlap', (r) => r.comm_overlap],
  ];
  let compared = 0;
  ranks.rows.forEach((want, i) => {
    const got = rows[i];
    expect(Number(got.cells.rank.value) === want.rank, `row ${i}: rank ${got.cells.rank.value}, summary ${want.rank}`);
    expect(got.cells.host.value === want.hostname && Number(got.cells.pid.value) === want.pid, `row ${i}: host/pid`);
    expect(Number(got.cells.gpu.value) === want.device_id, `row ${i}: GPU ${got.cells.gpu.value}`);
    expect(Number(got.cells.steps.value) === summary.gpus[want.gpu].steps.count, `row ${i}: steps`);
    const isStraggler = i === ranks.straggler;
    expect(got.straggler === isStraggler && got.badge === isStraggler, `row ${i}: straggler mark ${got.straggler}/${got.badge}, summary says ${isStraggler}`);
    for (const [col, f] of checks) {
      const value = f(want);
      const cell = got.cells[col];
      expect(cell, `row ${i}: no ${col} column`);
      // The cell carries the summary's number exactly, and shows it rounded.
      expect(Number(cell.value) === value, `row ${i} ${col}: data ${cell.value}, summary ${value}`);
      const shown = col === 'comm_share' ? parseShown(cell.text.split('·')[0]) : parseShown(cell.text);
      expect(close(shown, value), `row ${i} ${col}: shows "${cell.text}" for ${value}`);
      compared++;
    }
    const commShare = parseShown(got.cells.comm_share.text.split('·')[1]);
    expect(close(commShare, want.comm_busy_ns / want.window_ns), `row ${i}: comm share "${got.cells.comm_share.text}"`);
  });
  return compared;
}

async function multiRankTests() {
  const stragglerTrace = join(repo, 'tests/data/h200x2_ddp_straggler.gpscope');
  const balancedTrace = join(repo, 'tests/data/h200x2_ddp_balanced.gpscope');
  const stragglerSummary = summaryJson(stragglerTrace);
  const balancedSummary = summaryJson(balancedTrace);
  const screen = { width: 1440, height: 1080 };
  const st = await open(join(OUT, 'ddp_straggler.html'), { viewport: screen });
  const p = st.page;

  await test('DDP straggler: the ranks table marks the straggler and shows the summary JSON\'s numbers', async () => {
    expect(st.problems.length === 0, st.problems.join('; '));
    expect(stragglerSummary.ranks.straggler === 1, `the summary names straggler ${stragglerSummary.ranks.straggler}`);
    const n = await checkRanksTable(p, stragglerSummary);
    const verdict = await p.locator('#ranks .ranks-verdict').textContent();
    expect(/rank 1 .* is the straggler/.test(verdict), `verdict "${verdict}"`);
    const nav = await p.locator('.report-nav a[href="#ranks"]').count();
    expect(nav === 1, 'no Ranks link in the navigation');
    return `${n} cells match; ${verdict.slice(0, 60)}…`;
  });

  // The lanes of the first stream of each rank, in viewport px.
  const firstStreams = async () => p.evaluate(() => {
    const boxes = window.__gpscope.timeline.laneBoxes().filter((b) => b.kind === 'stream');
    const first = new Map();
    for (const b of boxes) if (!first.has(b.process)) first.set(b.process, b);
    return { boxes, first: [...first.values()] };
  });

  let oldDistance = 0;
  await test('DDP straggler: the compact rank lanes put both ranks\' streams on one 1080 px screen', async () => {
    const t = 'window.__gpscope.timeline';
    // The layout as it was (every lane, metrics unfolded): rank 1's streams
    // sat ~1,485 px below rank 0's.
    await p.evaluate(`${t}.setCompact(false); ${t}.setMetricsFolded(false)`);
    let lanes = await firstStreams();
    oldDistance = lanes.first[1].top - lanes.first[0].top;
    expect(oldDistance > 1400, `all lanes, metrics open: rank 1's streams ${oldDistance} px below rank 0's`);
    // All lanes with metrics folded (the multi-rank default for that layout).
    await p.evaluate(`${t}.setMetricsFolded(true)`);
    lanes = await firstStreams();
    const foldedDistance = lanes.first[1].top - lanes.first[0].top;
    // The compare view (the default of a multi-rank report).
    await p.evaluate(`${t}.setCompact(true)`);
    await p.locator('#timeline').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    lanes = await firstStreams();
    const distance = lanes.first[1].top - lanes.first[0].top;
    const streams = lanes.boxes;
    expect(streams.length === 8, `${streams.length} stream lanes (2 ranks x 4 streams)`);
    expect(new Set(streams.map((b) => b.process)).size === 2, 'not both ranks');
    const top = Math.min(...streams.map((b) => b.top)), bottom = Math.max(...streams.map((b) => b.bottom));
    expect(streams.every((b) => b.inView), `lanes outside the timeline's view: ${JSON.stringify(streams.filter((b) => !b.inView))}`);
    expect(top >= 0 && bottom <= screen.height, `streams span ${top}-${bottom} px of a ${screen.height} px screen`);
    expect(distance < 300, `rank 1's streams ${distance} px below rank 0's`);
    const metricsLanes = (await p.evaluate(() => window.__gpscope.timeline.laneBoxes())).filter((b) => b.kind !== 'stream').length;
    expect(metricsLanes === 0, `${metricsLanes} non-stream lanes in the compare view`);
    return `rank 1's streams ${distance} px below rank 0's (all lanes: ${oldDistance} px; all lanes, metrics folded: ${foldedDistance} px); all 8 streams within ${Math.round(top)}-${Math.round(bottom)} px`;
  });

  await test("DDP straggler: the straggler finding's WHERE link shows rank 0 in its all-reduce while rank 1's GPU is idle", async () => {
    await p.evaluate(() => { const t = window.__gpscope.timeline; t.setCompact(false); t.setRange(-1e18, 1e18, false); });
    const links = p.locator('.finding[data-rule="straggler-rank"] .where .range-link:not(.all)');
    const n = await links.count();
    expect(n === 5, `${n} WHERE links on the straggler finding`);
    const info = await p.evaluate(() => {
      const d = window.__gpscope.data;
      const i = d.summary.findings.findIndex((f) => f.rule === 'straggler-rank');
      return { ranges: d.findings[i].ranges, notes: d.summary.findings[i].ranges.map((r) => r.note) };
    });
    expect(info.notes.every((x) => /^all_reduce #\d+ starts .* late$|^broadcast #\d+ starts .* late$/.test(x)), `notes ${info.notes}`);
    const j = info.notes.findIndex((x) => x.startsWith('all_reduce') && / 30\.\d ms late/.test(x));
    expect(j >= 0, `no steady-state all-reduce among ${info.notes}`);
    await links.nth(j).click();
    await settle(p);
    const view = await p.evaluate(() => ({ compact: window.__gpscope.timeline.compact, range: window.__gpscope.timeline.range(), highlights: window.__gpscope.timeline.highlights.length }));
    const r = info.ranges[j];
    expect(view.compact, 'the link did not switch to the compare view');
    expect(view.range.start_ns <= r.start_ns && view.range.end_ns >= r.end_ns, `view ${JSON.stringify(view.range)} misses ${JSON.stringify(r)}`);
    expect(view.highlights === 5, `${view.highlights} highlighted ranges`);
    // On screen: rank 0's NCCL stream is inked across the band, rank 1's
    // streams are empty from the band's start to its all-reduce.
    const geo = await p.evaluate((range) => {
      const t = window.__gpscope.timeline;
      const boxes = t.laneBoxes().filter((b) => b.kind === 'stream');
      const c = t.canvas.getBoundingClientRect();
      const X = (ns) => c.left + 236 + (ns - t.view[0]) * (t.width - 236) / (t.view[1] - t.view[0]);
      // Rank 1's all-reduce that ends the range: its start ends the idle part.
      let late = null;
      for (const b of boxes.filter((x) => x.process === 1)) {
        const lane = t.lanes[b.lane];
        for (let i = 0; i < lane.start.length; i++) {
          if (lane.cat[i] === 1 && Math.abs(lane.start[i] + lane.dur[i] - range.end_ns) < 1000) late = lane.start[i];
        }
      }
      // Rank 0's lane with the most NCCL time in the range.
      let comm = null, most = -1;
      for (const b of boxes.filter((x) => x.process === 0)) {
        const lane = t.lanes[b.lane];
        let ns = 0;
        for (let i = 0; i < lane.start.length; i++) {
          if (lane.cat[i] !== 1) continue;
          const a = Math.max(lane.start[i], range.start_ns), e = Math.min(lane.start[i] + lane.dur[i], range.end_ns);
          if (e > a) ns += e - a;
        }
        if (ns > most) { most = ns; comm = b; }
      }
      return { x0: X(range.start_ns), x1: X(range.end_ns), xLate: late == null ? null : X(late), comm, rank1: boxes.filter((b) => b.process === 1) };
    }, r);
    expect(geo.xLate != null && geo.comm, `layout ${JSON.stringify(geo).slice(0, 200)}`);
    const shot = await p.screenshot();
    const png = decodePng(shot);
    // Share of the pixel columns in [x0, x1) in which any of `lanes` is
    // drawn (a column counts when a third of its pixels in a lane are ink).
    const busyColumns = (x0, x1, lanes) => {
      let busy = 0, all = 0;
      for (let x = Math.ceil(x0) + 1; x < Math.floor(x1) - 1; x++) {
        all++;
        const hit = lanes.some((b) => {
          let ink = 0, n = 0;
          for (let y = Math.ceil(b.top) + 1; y < Math.floor(b.bottom) - 1; y++, n++) {
            const o = (y * png.width + x) * png.channels;
            if (0.299 * png.pixels[o] + 0.587 * png.pixels[o + 1] + 0.114 * png.pixels[o + 2] < 200) ink++;
          }
          return n && ink / n > 0.33;
        });
        if (hit) busy++;
      }
      return all ? busy / all : NaN;
    };
    const busy0 = busyColumns(geo.x0, geo.xLate, [geo.comm]);
    const busy1 = busyColumns(geo.x0, geo.xLate, geo.rank1);
    expect(busy0 > 0.9, `rank 0's NCCL lane is drawn in ${(100 * busy0).toFixed(0)}% of the band`);
    expect(busy1 < 0.5, `rank 1's streams are drawn in ${(100 * busy1).toFixed(0)}% of the band before its all-reduce`);
    expect(geo.comm.bottom <= screen.height && Math.max(...geo.rank1.map((b) => b.bottom)) <= screen.height, 'not on one screen');
    return `${info.notes[j]}: over the ${Math.round(geo.xLate - geo.x0)} px before rank 1's all-reduce, rank 0's NCCL stream is drawn in ${(100 * busy0).toFixed(0)}% of the columns, rank 1's streams in ${(100 * busy1).toFixed(0)}%`;
  });

  await test('DDP straggler: per-rank show/hide, and metrics fold apart from their GPU\'s streams', async () => {
    const t = 'window.__gpscope.timeline';
    await p.evaluate(`${t}.setCompact(true); ${t}.showAllProcesses()`);
    await p.locator('.tl-rank input[data-process="0"]').uncheck();
    let boxes = await p.evaluate(() => window.__gpscope.timeline.laneBoxes());
    expect(boxes.length > 0 && boxes.every((b) => b.process === 1), `rank 0 still shown: ${JSON.stringify(boxes.map((b) => b.process))}`);
    await p.locator('.tl-rank input[data-process="0"]').check();
    boxes = await p.evaluate(() => window.__gpscope.timeline.laneBoxes());
    expect(new Set(boxes.map((b) => b.process)).size === 2, 'rank 0 did not come back');
    // All lanes: counters are folded by default; unfolding one GPU's
    // metrics group shows its counters, folding it keeps its streams.
    await p.locator('.tl-seg-btn[data-layout="full"]').click();
    const count = async () => p.evaluate(() => {
      const b = window.__gpscope.timeline.laneBoxes();
      return { counter: b.filter((x) => x.kind === 'counter').length, stream: b.filter((x) => x.kind === 'stream').length };
    });
    const folded = await count();
    expect(folded.counter === 0 && folded.stream === 8, `all lanes, default: ${JSON.stringify(folded)}`);
    const g = await p.evaluate(() => window.__gpscope.data.gpus[0].metrics_group);
    await p.evaluate((gi) => { const t = window.__gpscope.timeline; t.collapsed.delete(gi); t.relayout(); }, g);
    const open1 = await count();
    expect(open1.counter === 20 && open1.stream === 8, `rank 0's metrics open: ${JSON.stringify(open1)}`);
    // The toolbar button folds every metric group, then opens them all.
    const button = p.locator('.tl-metrics-btn');
    expect(await button.textContent() === 'fold metrics', `button reads ${await button.textContent()}`);
    await button.click();
    const again = await count();
    expect(again.counter === 0 && again.stream === 8, `metrics folded again: ${JSON.stringify(again)}`);
    expect(await button.textContent() === 'show metrics', `button reads ${await button.textContent()}`);
    await button.click();
    const allOpen = await count();
    expect(allOpen.counter > 40 && allOpen.stream === 8, `all metrics open: ${JSON.stringify(allOpen)}`);
    await p.evaluate(`${t}.setMetricsFolded(true); ${t}.setCompact(true)`);
    return `rank 0 hidden and shown; counters ${folded.counter} -> ${open1.counter} (one GPU's) -> ${again.counter} -> ${allOpen.counter} (all), streams stay 8`;
  });

  if (DOCS) {
    await test('screenshot of the multi-rank report saved to docs/report-ranks.png', async () => {
      const shot = await browser.newPage({ viewport: { width: 1440, height: 1080 }, deviceScaleFactor: 1 });
      await shot.goto(`file://${join(OUT, 'ddp_straggler.html')}`);
      await shot.waitForFunction(() => window.__gpscope && window.__gpscope.ready);
      const i = await shot.evaluate(() => window.__gpscope.data.summary.findings.findIndex((f) => f.rule === 'straggler-rank'));
      const notes = await shot.evaluate((k) => window.__gpscope.data.summary.findings[k].ranges.map((r) => r.note), i);
      const j = Math.max(0, notes.findIndex((x) => x.startsWith('all_reduce') && / 30\.\d ms late/.test(x)));
      await shot.locator('.finding[data-rule="straggler-rank"] .where .range-link').nth(j).click();
      await shot.waitForFunction(() => !window.__gpscope.timeline.animation);
      await shot.locator('#ranks').evaluate((e) => e.scrollIntoView({ block: 'start' }));
      await shot.waitForTimeout(200);
      const a = await shot.locator('#ranks').boundingBox();
      const b = await shot.locator('#timeline').boundingBox();
      await shot.screenshot({ path: join(DOCS, 'report-ranks.png'), clip: { x: 0, y: a.y - 8, width: 1440, height: Math.min(1080 - a.y + 8, b.y + b.height - a.y + 16) } });
      await shot.close();
      return `${DOCS}/report-ranks.png`;
    });
  }
  await p.close();

  const bal = await open(report([balancedTrace], 'ddp_balanced.html'), { viewport: screen });
  await test('DDP balanced: the ranks table names no straggler and matches the summary JSON', async () => {
    expect(bal.problems.length === 0, bal.problems.join('; '));
    expect(balancedSummary.ranks.straggler == null, 'the summary names a straggler');
    const n = await checkRanksTable(bal.page, balancedSummary);
    const verdict = await bal.page.locator('#ranks .ranks-verdict').textContent();
    expect(/No straggler/.test(verdict), `verdict "${verdict}"`);
    const tags = await bal.page.evaluate(() => window.__gpscope.timeline.straggler);
    expect(tags === -1, 'the timeline marks a straggler');
    await bal.page.locator('#timeline').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    const boxes = await bal.page.evaluate(() => window.__gpscope.timeline.laneBoxes());
    expect(boxes.length === 8 && boxes.every((b) => b.inView && b.bottom <= 1080), `compare view: ${boxes.length} lanes`);
    return `${n} cells match; ${verdict}`;
  });
  await bal.page.close();
}

// Metric lanes and charts: human names with units, bounded share axes,
// one time axis, bitmasks as states.
async function metricTests() {
  const st = await open(join(OUT, 'ddp_straggler.html'), { viewport: { width: 1440, height: 1080 } });
  const p = st.page;
  const raw = /gpm\.|nvml\.|host\.|gpscope\.|GPU-[0-9a-f]{8}/;
  await test('DDP metrics: lanes and legends read human names with units, one line per legend entry', async () => {
    const lanes = await p.evaluate(() => window.__gpscope.lanes.filter((l) => l.kind === 'counter').map((l) => ({ metric: l.metric, title: l.title, group: l.group })));
    expect(lanes.length >= 40, `${lanes.length} counter lanes`);
    const rawTitles = lanes.filter((l) => raw.test(l.title));
    expect(!rawTitles.length, `raw lane names: ${rawTitles.map((l) => l.title).slice(0, 5)}`);
    const nv = lanes.find((l) => l.metric === 'gpm.nvlink_rx_bytes_per_s');
    expect(nv && nv.title === 'NVLink RX', `NVLink lane titled ${nv && nv.title}`);
    const legends = await p.evaluate(() => [...document.querySelectorAll('#gpus .u-legend tr.u-series')].map((tr) => ({
      text: tr.querySelector('th').textContent, h: tr.getBoundingClientRect().height,
      line: parseFloat(getComputedStyle(tr).lineHeight) || 18,
    })));
    expect(legends.length > 30, `${legends.length} legend entries`);
    const bad = legends.filter((l) => raw.test(l.text));
    expect(!bad.length, `raw legend names: ${bad.map((l) => l.text).slice(0, 4)}`);
    const multi = legends.filter((l) => l.h > 1.5 * l.line);
    expect(!multi.length, `legend entries on more than one line: ${multi.map((l) => `${l.text} (${l.h} px)`).slice(0, 4)}`);
    for (const want of ['NVLink RX, GB/s (GPU 0)', 'NVLink TX, GB/s (GPU 1)', 'SM clock, MHz (GPU 0)', 'Power, W (GPU 1)', 'Temperature, °C (GPU 0)', 'SM util, % (GPU 1)']) {
      expect(legends.some((l) => l.text === want), `no legend "${want}"`);
    }
    return `${lanes.length} lanes, ${legends.length} legend entries, e.g. "NVLink RX, GB/s (GPU 0)"`;
  });

  await test('DDP metrics: axes carry units and human scaling, shares stay within 0-100%, one time axis for every chart', async () => {
    const info = await p.evaluate(() => {
      const span = window.__gpscope.data.span_ns / 1e9;
      return window.__gpscope.uplots().map((u) => {
        const box = u.root.closest('.chart-box');
        return {
          title: box ? box.querySelector('.chart-title').textContent : '',
          family: box ? box.dataset.family || '' : '',
          x: [u.scales.x.min, u.scales.x.max],
          span,
          pct: u.scales.pct ? [u.scales.pct.min, u.scales.pct.max] : null,
          ticks: u.axes.slice(1).map((a) => (a._values || []).map(String)),
        };
      });
    });
    const timeCharts = info.filter((c) => !/^(Kernel durations|Idle-gap lengths|Per-step time)$/.test(c.title));
    expect(timeCharts.length >= 20, `${timeCharts.length} time charts`);
    const off = timeCharts.filter((c) => !c.x || Math.abs(c.x[0]) > 1e-9 || Math.abs(c.x[1] - c.span) > 1e-6);
    expect(!off.length, `charts on another time axis: ${off.map((c) => `${c.title} ${c.x}`).slice(0, 4)}`);
    const pct = info.filter((c) => c.pct);
    expect(pct.length >= 8 && pct.every((c) => c.pct[0] === 0 && c.pct[1] === 100), `share axes ${JSON.stringify(pct.map((c) => c.pct))}`);
    const pctTicks = info.map((c) => c.ticks.flat().filter((x) => x.endsWith('%'))).filter((t) => t.length);
    expect(pctTicks.length >= 8 && pctTicks.every((t) => t.every((x) => Number(x.replace('%', '')) <= 100)),
      `share ticks ${JSON.stringify(pctTicks.filter((t) => t.some((x) => Number(x.replace('%', '')) > 100)))}`);
    const link = info.filter((c) => c.family === 'link');
    expect(link.length === 2, `${link.length} interconnect charts`);
    for (const c of link) {
      const ticks = c.ticks.flat();
      expect(ticks.length >= 3 && ticks.every((x) => /^[\d.,]+ GB\/s$/.test(x)), `${c.title}: ticks ${ticks}`);
      expect(c.title === 'Interconnect, GB/s', `title ${c.title}`);
    }
    const clocks = info.find((c) => c.family === 'clock');
    expect(clocks.ticks.flat().every((x) => /^[\d,]+ MHz$/.test(x)), `clock ticks ${clocks.ticks}`);
    // The trend series behind the share charts are shares.
    const over = await p.evaluate(() => window.__gpscope.data.gpus.flatMap((g) => g.trend_keys.filter((k) => k.unit === 'ratio')
      .flatMap((k) => g.trend.series[k.key].filter((v) => v != null && v > 1.0001).map((v) => `${k.key} ${v}`))));
    expect(!over.length, `shares above 100%: ${over.slice(0, 4)}`);
    return `${timeCharts.length} time charts on 0-${info[0].span.toFixed(2)} s, ${pct.length} share axes 0-100%, link ticks e.g. ${link[0].ticks.flat().slice(-1)}`;
  });

  await test('DDP metrics: nvml.clock_event_reasons is a state lane (no reason set in this run), not a line', async () => {
    await p.evaluate(() => { const t = window.__gpscope.timeline; t.setCompact(false); t.setMetricsFolded(false); });
    const lanes = await p.evaluate(() => window.__gpscope.timeline.laneBoxes().filter((b) => b.kind === 'counter')
      .map((b) => { const l = window.__gpscope.lanes[b.lane]; return { metric: l.metric, states: l.states ? l.states.length : null, title: l.title, note: window.__gpscope.timeline.counterNote(l) }; }));
    const reasons = lanes.filter((l) => l.metric === 'nvml.clock_event_reasons');
    expect(reasons.length === 2, `${reasons.length} clock-reason lanes`);
    expect(reasons.every((l) => l.states === 0 && l.title === 'Clock limits' && /^no limit in \d+ samples$/.test(l.note)), JSON.stringify(reasons));
    const chart = await p.evaluate(() => [...document.querySelectorAll('#gpus .chart-box[data-family="reasons"] .state-legend')].map((e) => e.textContent));
    expect(chart.length === 2 && chart.every((x) => /no clock-limiting reason in \d+ samples/.test(x)), `state charts: ${chart}`);
    return reasons.map((l) => l.note).join('; ');
  });
  await p.close();

  // A real H200 run whose clocks were capped by power in two phases.
  const phasesHtml = report([join(repo, 'tests/data/h200_metrics_phases.gpscope')], 'h200_metrics_phases.html');
  const ph = await open(phasesHtml, { viewport: { width: 1440, height: 1080 } });
  await test('power-capped H200 trace: clock limits are named, coloured spans on the timeline and in the GPU card', async () => {
    expect(ph.problems.length === 0, ph.problems.join('; '));
    const q = ph.page;
    const lane = await q.evaluate(() => {
      const t = window.__gpscope.timeline;
      const b = t.laneBoxes().find((x) => window.__gpscope.lanes[x.lane].metric === 'nvml.clock_event_reasons');
      const l = window.__gpscope.lanes[b.lane];
      const cover = l.states.map((s) => ({ name: s.reason.name, color: s.reason.color, spans: s.spans.length, ns: s.spans.reduce((a, [x, y]) => a + y - x, 0) }));
      return { box: b, cover, note: t.counterNote(l) };
    });
    expect(lane.cover.length === 1 && lane.cover[0].name === 'SW power cap', `states ${JSON.stringify(lane.cover)}`);
    expect(lane.cover[0].spans >= 2 && lane.cover[0].ns > 5e9, `power-cap spans ${JSON.stringify(lane.cover)}`);
    expect(lane.note === 'SW power cap', `lane note ${lane.note}`);
    // The lane is drawn in the reason's colour (orange), not as a line.
    await q.locator('#timeline').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await q.evaluate(() => {
      const t = window.__gpscope.timeline;
      const it = t.items.find((x) => x.type === 'lane' && x.lane.metric === 'nvml.clock_event_reasons');
      t.scroller.scrollTop = Math.max(0, it.y - 60);
    });
    await q.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const box = await q.evaluate(() => {
      const t = window.__gpscope.timeline;
      return t.laneBoxes().find((x) => window.__gpscope.lanes[x.lane].metric === 'nvml.clock_event_reasons');
    });
    expect(box.inView && box.bottom <= 1080, `state lane not on screen: ${JSON.stringify(box)}`);
    const png = decodePng(await q.screenshot({ clip: { x: 240, y: box.top + 3, width: 1100, height: box.bottom - box.top - 6 } }));
    let orange = 0;
    for (let i = 0; i < png.pixels.length; i += png.channels) {
      const [r, g, b] = [png.pixels[i], png.pixels[i + 1], png.pixels[i + 2]];
      if (Math.abs(r - 0xe0) < 24 && Math.abs(g - 0x8a) < 24 && Math.abs(b - 0x2c) < 30) orange++;
    }
    const share = orange / (png.pixels.length / png.channels);
    expect(share > 0.2, `the state lane is ${(100 * share).toFixed(1)}% orange`);
    const legend = await q.locator('#gpus .chart-box[data-family="reasons"] .state-legend').textContent();
    expect(/SW power cap\s*[\d.]+% of samples/.test(legend), `legend "${legend}"`);
    const chart = await q.locator('#gpus .chart-box[data-family="reasons"] canvas').first();
    await chart.scrollIntoViewIfNeeded();
    const cp = decodePng(await chart.screenshot());
    let o2 = 0;
    for (let i = 0; i < cp.pixels.length; i += cp.channels) {
      if (Math.abs(cp.pixels[i] - 0xe0) < 24 && Math.abs(cp.pixels[i + 1] - 0x8a) < 24 && Math.abs(cp.pixels[i + 2] - 0x2c) < 30) o2++;
    }
    expect(o2 > 500, `the state chart has ${o2} orange pixels`);
    return `${lane.cover[0].spans} SW power cap spans, ${(lane.cover[0].ns / 1e9).toFixed(1)} s; lane ${(100 * share).toFixed(0)}% orange; "${legend.trim()}"`;
  });
  if (DOCS) {
    await test('screenshot of the metric charts saved to docs/report-metrics.png', async () => {
      const shot = await browser.newPage({ viewport: { width: 1440, height: 1080 }, deviceScaleFactor: 1 });
      await shot.goto(`file://${phasesHtml}`);
      await shot.waitForFunction(() => window.__gpscope && window.__gpscope.ready);
      const first = shot.locator('#gpus .chart-box[data-family="util"]').first();
      // Below the sticky navigation bar.
      await first.evaluate((e) => { e.scrollIntoView({ block: 'start' }); window.scrollBy(0, -56); });
      await shot.waitForTimeout(200);
      const a = await first.boundingBox();
      const last = await shot.locator('#gpus .chart-box[data-family="reasons"]').first().boundingBox();
      await shot.screenshot({ path: join(DOCS, 'report-metrics.png'), clip: { x: 0, y: Math.max(0, a.y - 10), width: 1440, height: Math.min(1080, last.y + last.height - a.y + 20) } });
      await shot.close();
      return `${DOCS}/report-metrics.png`;
    });
  }
  await ph.page.close();
}

// --------------------------------------------------------------- tests --

async function main() {
  expect(ANALYZE && existsSync(ANALYZE), `--analyze: no gpscope-analyze binary at ${ANALYZE}`);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });

  await test('source never builds markup from strings (no innerHTML & co. in report/src)', () => {
    const files = execFileSync('ls', [join(repo, 'report/src')]).toString().trim().split('\n');
    for (const f of files) {
      const text = readFileSync(join(repo, 'report/src', f), 'utf8').replace(/^\s*\/\/.*$/gm, '');
      for (const bad of ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'document.write', 'eval(', 'new Function']) {
        expect(!text.includes(bad), `${f} uses ${bad}`);
      }
    }
    return `${files.length} files`;
  });

  if (args['check-dist']) {
    await test('report/dist/report_template.html matches a fresh build of report/src', () => {
      const fresh = join(OUT, 'report_template.fresh.html');
      execFileSync('node', [join(repo, 'report/build.mjs'), '--out', fresh], { stdio: 'ignore' });
      const a = readFileSync(fresh);
      const b = readFileSync(join(repo, 'report/dist/report_template.html'));
      expect(a.equals(b), 'the committed template is stale: run scripts/build_report_ui.sh and commit report/dist/');
      return `${(b.length / 1024).toFixed(1)} KiB`;
    });
  }

  // The bundled real trace.
  const realHtml = report([REAL_TRACE], 'torch_train_starved.html');
  const realSize = statSync(realHtml).size;
  await test('report of the bundled trace is under 5 MB', () => {
    expect(realSize < SIZE_LIMIT, `${realSize} bytes`);
    return `${(realSize / 1024).toFixed(1)} KiB`;
  });

  const real = await open(realHtml);
  const { page } = real;
  await test('real trace: loads with zero console errors and no network requests', () => {
    expect(real.problems.length === 0, real.problems.join('; '));
    expect(real.requests.length === 0, `requests: ${real.requests.join(', ')}`);
    return `ready in ${real.loadMs} ms`;
  });

  await test('real trace: header, findings and tables are filled in', async () => {
    const info = await page.evaluate(() => ({
      title: document.querySelector('.job-title')?.textContent,
      findings: document.querySelectorAll('.finding').length,
      kernels: document.querySelectorAll('#kernels tbody tr').length,
      tiles: document.querySelectorAll('#gpus .tile').length,
      facts: document.querySelector('.facts')?.textContent,
    }));
    expect(info.title && info.title.includes('torch_train.py'), `title ${info.title}`);
    expect(info.findings >= 1, 'no finding card');
    expect(info.kernels >= 10, `${info.kernels} kernel rows`);
    expect(info.tiles >= 4, 'four-number tiles missing');
    expect(/NVIDIA H200/.test(info.facts), 'GPU name missing from the header');
    return `${info.findings} findings, ${info.kernels} kernel rows`;
  });

  await test('real trace: the timeline is drawn (non-blank canvas)', async () => {
    await page.locator('#timeline').scrollIntoViewIfNeeded();
    const s = pixelStats(await page.locator('.tl-canvas').screenshot());
    expect(s.std > 10 && s.inked > 0.05 && s.colors > 20, JSON.stringify(s));
    const o = pixelStats(await page.locator('.tl-overview').screenshot());
    expect(o.std > 5 && o.inked > 0.02, `overview ${JSON.stringify(o)}`);
    return `luminance sd ${s.std.toFixed(1)}, ${(100 * s.inked).toFixed(0)}% inked, ${s.colors} colours`;
  });

  await test('real trace: every chart is drawn (non-blank)', async () => {
    const charts = page.locator('.uplot');
    const n = await charts.count();
    expect(n >= 5, `${n} charts`);
    const blank = [];
    for (let i = 0; i < n; i++) {
      const c = charts.nth(i);
      await c.scrollIntoViewIfNeeded();
      const s = pixelStats(await c.locator('canvas').screenshot());
      if (!(s.std > 5 && s.inked > 0.01)) blank.push(`${i}: ${JSON.stringify(s)}`);
    }
    expect(!blank.length, `blank charts: ${blank.join('; ')}`);
    return `${n} charts`;
  });

  await test('real trace: wheel, W/S and A/D change the visible range', async () => {
    await page.locator('#timeline').scrollIntoViewIfNeeded();
    await page.evaluate(() => window.__gpscope.timeline.setRange(-1e18, 1e18, false));
    await settle(page);
    const r0 = await range(page);
    const box = await page.locator('.tl-canvas').boundingBox();
    await page.mouse.move(box.x + box.width * 0.8, box.y + 60);
    await page.mouse.wheel(0, -600);
    await settle(page);
    const r1 = await range(page);
    expect(r1.end_ns - r1.start_ns < 0.7 * (r0.end_ns - r0.start_ns), `wheel: ${JSON.stringify([r0, r1])}`);
    await page.keyboard.press('w');
    await page.keyboard.press('w');
    await settle(page);
    const r2 = await range(page);
    expect(r2.end_ns - r2.start_ns < r1.end_ns - r1.start_ns, 'W did not zoom in');
    await page.keyboard.press('a');
    await settle(page);
    const r3 = await range(page);
    expect(r3.start_ns < r2.start_ns, 'A did not pan left');
    await page.keyboard.press('s');
    await settle(page);
    const r4 = await range(page);
    expect(r4.end_ns - r4.start_ns > r3.end_ns - r3.start_ns, 'S did not zoom out');
    // Drag pans.
    await page.mouse.move(box.x + 700, box.y + 80);
    await page.mouse.down();
    await page.mouse.move(box.x + 900, box.y + 80, { steps: 5 });
    await page.mouse.up();
    await settle(page);
    const r5 = await range(page);
    expect(r5.start_ns < r4.start_ns, 'drag did not pan');
    return `${(r0.end_ns - r0.start_ns) / 1e6 | 0} ms -> ${(r4.end_ns - r4.start_ns) / 1e6 | 0} ms`;
  });

  await test("real trace: a finding's link moves the timeline to its range", async () => {
    await page.evaluate(() => window.__gpscope.timeline.setRange(-1e18, 1e18, false));
    await page.locator('#findings').scrollIntoViewIfNeeded();
    const before = await range(page);
    const link = page.locator('.finding .range-link').first();
    const target = await page.evaluate(() => {
      const f = window.__gpscope.data.findings[0];
      return f.ranges[0];
    });
    await link.click();
    await settle(page);
    const after = await range(page);
    expect(after.start_ns <= target.start_ns && after.end_ns >= target.end_ns, `range ${JSON.stringify(after)} misses ${JSON.stringify(target)}`);
    expect(after.end_ns - after.start_ns < 0.1 * (before.end_ns - before.start_ns), 'did not zoom in on the range');
    const inView = await page.evaluate(() => {
      const r = document.querySelector('.tl-canvas').getBoundingClientRect();
      return r.top < window.innerHeight && r.bottom > 0;
    });
    expect(inView, 'timeline not scrolled into view');
    return `${(target.start_ns / 1e9).toFixed(3)} s, view ${((after.end_ns - after.start_ns) / 1e6).toFixed(1)} ms`;
  });

  await test('real trace: hovering an event shows its details as text', async () => {
    // Find a kernel in view and hover it.
    const pos = await page.evaluate(() => {
      const t = window.__gpscope.timeline;
      const lane = t.lanes.find((l) => l.kind === 'stream');
      const it = t.items.find((x) => x.lane === lane);
      const v = t.range();
      let best = -1;
      for (let i = 0; i < lane.start.length; i++) {
        if (lane.start[i] >= v.start_ns && lane.start[i] + lane.dur[i] <= v.end_ns && lane.cat[i] === 0 &&
            (best < 0 || lane.dur[i] > lane.dur[best])) best = i;
      }
      const k = (t.width - 236) / (v.end_ns - v.start_ns);
      const x = 236 + (lane.start[best] + lane.dur[best] / 2 - v.start_ns) * k;
      const y = 26 + it.y - t.scroller.scrollTop + 12;
      const r = t.canvas.getBoundingClientRect();
      return { x: r.left + x, y: r.top + y, name: t.names[lane.name[best]] };
    });
    await page.mouse.move(pos.x, pos.y);
    await page.waitForTimeout(100);
    const text = await page.locator('.tl-tooltip').textContent();
    expect(text.includes(pos.name.slice(0, 30)), `tooltip "${text.slice(0, 80)}" lacks ${pos.name.slice(0, 30)}`);
    return pos.name.slice(0, 50);
  });

  await test('real trace: search highlights matching kernels', async () => {
    await page.fill('.tl-search', 'multi_tensor_apply');
    await page.keyboard.press('Enter');
    await settle(page);
    const info = await page.evaluate(() => ({ total: window.__gpscope.timeline.searchState?.total, text: document.querySelector('.tl-search-info').textContent }));
    expect(info.total > 100, `matches ${info.total}`);
    await page.fill('.tl-search', 'no-such-kernel-name');
    await page.waitForTimeout(300);
    const none = await page.evaluate(() => window.__gpscope.timeline.searchState?.total);
    expect(none === 0, `bogus search matched ${none}`);
    await page.fill('.tl-search', '');
    await page.waitForTimeout(300);
    return info.text;
  });

  await test('real trace: top-kernels table sorts by a clicked column', async () => {
    const col = page.locator('#kernels th', { hasText: 'count' }).first();
    await col.click();
    const counts = await page.evaluate(() => [...document.querySelectorAll('#kernels tbody tr')].map((tr) => Number(tr.children[1].textContent.replace(/,/g, ''))));
    expect(counts.every((c, i) => i === 0 || counts[i - 1] >= c), `not sorted: ${counts.slice(0, 5)}`);
    await col.click();
    const asc = await page.evaluate(() => [...document.querySelectorAll('#kernels tbody tr')].map((tr) => Number(tr.children[1].textContent.replace(/,/g, ''))));
    expect(asc.every((c, i) => i === 0 || asc[i - 1] <= c), 'not sorted ascending');
  });

  // A real two-GPU DDP job (H200 x2, torchrun + NCCL, rank 1 a planted
  // straggler; bench/RESULTS.md session 4). Its overview once hung the tab:
  // a kernel starting on a bin boundary never advanced the binning loop.
  const ddpHtml = report([join(repo, 'tests/data/h200x2_ddp_straggler.gpscope')], 'ddp_straggler.html');
  const ddp = await open(ddpHtml);
  await test('two-GPU DDP trace: loads, ranks stacked in order on one timeline, straggler first', async () => {
    expect(ddp.problems.length === 0, ddp.problems.join('; '));
    const info = await ddp.page.evaluate(() => ({
      groups: window.__gpscope.data.timeline.groups.filter((g) => g.kind === 'process').map((g) => g.label),
      firstRule: window.__gpscope.data.findings.length ? window.__gpscope.data.summary.findings[0].rule : '',
      cards: document.querySelectorAll('.finding').length,
    }));
    expect(info.groups.length === 2 && info.groups[0].startsWith('rank 0 ') && info.groups[1].startsWith('rank 1 '),
      `process lanes ${JSON.stringify(info.groups)}`);
    expect(info.firstRule === 'straggler-rank', `first finding ${info.firstRule}`);
    await ddp.page.locator('#timeline').scrollIntoViewIfNeeded();
    const o = pixelStats(await ddp.page.locator('.tl-overview').screenshot());
    expect(o.std > 5 && o.inked > 0.02, `overview ${JSON.stringify(o)}`);
    return `${info.groups.join(' | ')}; ${info.cards} finding cards; ready in ${ddp.loadMs} ms`;
  });
  await ddp.page.close();

  await multiRankTests();
  await metricTests();

  if (DOCS) {
    await test('screenshots of the real-trace report saved to docs/', async () => {
      mkdirSync(DOCS, { recursive: true });
      const shot = await browser.newPage({ viewport: { width: 1440, height: 1100 }, deviceScaleFactor: 1 });
      await shot.goto(`file://${realHtml}`);
      await shot.waitForFunction(() => window.__gpscope && window.__gpscope.ready);
      await shot.screenshot({ path: join(DOCS, 'report-overview.png') });
      await shot.evaluate(() => {
        const t = window.__gpscope.timeline;
        const f = window.__gpscope.data.findings[0];
        document.getElementById('timeline').scrollIntoView();
        if (f && f.ranges.length) t.showRanges(f.ranges, f.group, 0);
      });
      await shot.waitForFunction(() => !window.__gpscope.timeline.animation);
      await shot.evaluate(() => {
        const t = window.__gpscope.timeline;
        const r = t.range();
        const w = r.end_ns - r.start_ns;
        t.setRange(r.start_ns - 2.5 * w, r.end_ns + 2.5 * w, false);
      });
      await shot.waitForTimeout(200);
      // Hover the longest sync wait in view, so the picture shows a tooltip.
      const pos = await shot.evaluate(() => {
        const t = window.__gpscope.timeline;
        const v = t.range();
        const item = t.items.find((x) => x.type === 'lane' && x.lane.kind === 'sync') || t.items.find((x) => x.type === 'lane');
        const lane = item.lane;
        let best = -1;
        for (let i = 0; i < lane.start.length; i++) {
          if (lane.start[i] >= v.start_ns && lane.start[i] + lane.dur[i] <= v.end_ns && (best < 0 || lane.dur[i] > lane.dur[best])) best = i;
        }
        if (best < 0) return null;
        const k = (t.width - 236) / (v.end_ns - v.start_ns);
        const r = t.canvas.getBoundingClientRect();
        return { x: r.left + 236 + (lane.start[best] + lane.dur[best] / 2 - v.start_ns) * k, y: r.top + 26 + item.y - t.scroller.scrollTop + 12 };
      });
      if (pos) await shot.mouse.move(pos.x, pos.y);
      await shot.waitForTimeout(150);
      const holder = shot.locator('#timeline');
      await holder.screenshot({ path: join(DOCS, 'report-timeline.png') });
      await shot.close();
      return `${DOCS}/report-overview.png, ${DOCS}/report-timeline.png`;
    });
  }
  await page.close();

  // Hostile strings.
  const xssTrace = join(OUT, 'xss.gpscope');
  execFileSync('node', [join(here, 'make_trace.mjs'), 'xss', xssTrace]);
  const xss = await open(report([xssTrace], 'xss.html'));
  await test('XSS trace: names render as text, no dialog, no injected element', async () => {
    const p = xss.page;
    const evil = '</script><img src=x onerror=alert(1)>';
    await p.waitForTimeout(300);
    const dom = await p.evaluate((evilName) => ({
      imgs: document.querySelectorAll('img').length,
      svgs: document.querySelectorAll('body svg').length,
      scripts: document.querySelectorAll('script').length,
      italics: document.querySelectorAll('i[onmouseover]').length,
      textHasName: document.body.textContent.includes(evilName),
      host: document.querySelector('.facts')?.textContent || '',
      timelineHasName: window.__gpscope.data.timeline.names.includes(evilName),
    }), evil);
    // Hover the evil kernel: the tooltip must show the markup as text.
    await p.locator('#timeline').scrollIntoViewIfNeeded();
    await p.fill('.tl-search', 'onerror=alert(1)');
    await p.keyboard.press('Enter');
    await p.waitForTimeout(400);
    const matches = await p.evaluate(() => window.__gpscope.timeline.searchState?.total || 0);
    expect(xss.dialogs.length === 0, `dialogs: ${xss.dialogs.join('; ')}`);
    expect(dom.imgs === 0 && dom.svgs === 0 && dom.italics === 0, `injected elements: ${JSON.stringify(dom)}`);
    expect(dom.scripts === 2, `${dom.scripts} script elements (expected the data tag and the app)`);
    expect(dom.textHasName, 'the kernel name is not shown as text');
    expect(dom.host.includes('<b>host</b>'), `host name not shown literally: ${dom.host}`);
    expect(matches === 200, `search found ${matches} of 200 hostile kernels`);
    expect(xss.problems.length === 0, xss.problems.join('; '));
    return 'rendered literally';
  });
  await test('XSS trace: the data tag holds no raw <, > or & (escaped as \\u003c etc.)', () => {
    const html = readFileSync(join(OUT, 'xss.html'), 'utf8');
    const m = html.match(/<script type="application\/json" id="gpscope-data">([\s\S]*?)<\/script>/);
    expect(m, 'data tag not found');
    expect(!/[<>&\u2028\u2029]/.test(m[1]), 'raw <, >, & or U+2028/9 inside the data tag');
    expect(m[1].includes('\\u003c/script\\u003e\\u003cimg'), 'escaped kernel name not found');
    return `${(m[1].length / 1024).toFixed(1)} KiB of data`;
  });
  await xss.page.close();

  // Several ranks on one time base, with metrics and a lost interval.
  const ranksTrace = join(OUT, 'ranks.gpscope');
  execFileSync('node', [join(here, 'make_trace.mjs'), 'ranks', ranksTrace]);
  const ranks = await open(report([ranksTrace], 'ranks.html'));
  await test('two ranks: stacked, time-aligned across skewed CUPTI clocks, metrics charted', async () => {
    const p = ranks.page;
    const info = await p.evaluate(() => {
      const s = window.__gpscope;
      const groups = s.data.timeline.groups.filter((g) => g.kind === 'process').map((g) => g.label);
      const firstCopy = s.lanes.filter((l) => l.kind === 'stream').map((l) => l.start[0]);
      const counters = s.lanes.filter((l) => l.kind === 'counter').length;
      const charts = document.querySelectorAll('#gpus .uplot').length;
      const lost = s.data.processes.map((x) => x.lost.length);
      return { groups, firstCopy, counters, charts, lost };
    });
    expect(info.groups.length === 2 && /^rank 0/.test(info.groups[0]) && /^rank 1/.test(info.groups[1]), `groups ${info.groups}`);
    expect(Math.abs(info.firstCopy[0] - info.firstCopy[1]) < 1000, `ranks not aligned: ${info.firstCopy}`);
    expect(info.counters >= 14, `${info.counters} counter lanes`);
    expect(info.charts >= 8, `${info.charts} GPU charts`);
    expect(info.lost[1] === 1, `lost intervals ${info.lost}`);
    const s = pixelStats(await p.locator('.tl-canvas').screenshot());
    expect(s.std > 10, 'timeline blank');
    expect(ranks.problems.length === 0, ranks.problems.join('; '));
    return `${info.counters} counter lanes, ${info.charts} GPU charts`;
  });
  await ranks.page.close();

  // Eight ranks of four streams each: the compare view still fits one screen.
  const r8Trace = join(OUT, 'ranks8.gpscope');
  execFileSync('node', [join(here, 'make_trace.mjs'), 'ranks', r8Trace, '8']);
  const r8 = await open(report([r8Trace], 'ranks8.html'), { viewport: { width: 1440, height: 1080 } });
  await test('eight ranks: the compare view shows all 32 streams on one 1080 px screen; hiding ranks frees their rows', async () => {
    const p = r8.page;
    expect(r8.problems.length === 0, r8.problems.join('; '));
    await p.locator('#timeline').evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    const boxes = await p.evaluate(() => window.__gpscope.timeline.laneBoxes());
    expect(boxes.length === 32 && new Set(boxes.map((b) => b.process)).size === 8, `${boxes.length} lanes`);
    const bottom = Math.max(...boxes.map((b) => b.bottom)), top = Math.min(...boxes.map((b) => b.top));
    expect(boxes.every((b) => b.inView) && top >= 0 && bottom <= 1080, `lanes span ${top}-${bottom} px`);
    const rows = await p.locator('#ranks table.ranks-table tbody tr').count();
    expect(rows === 8, `${rows} rows in the ranks table`);
    const rowH = await p.evaluate(() => window.__gpscope.timeline.items.find((i) => i.type === 'lane').rowH);
    for (const q of [1, 2, 3, 4, 5, 6]) await p.locator(`.tl-rank input[data-process="${q}"]`).uncheck();
    const two = await p.evaluate(() => ({
      boxes: window.__gpscope.timeline.laneBoxes(), rowH: window.__gpscope.timeline.items.find((i) => i.type === 'lane').rowH,
    }));
    expect(two.boxes.length === 8 && two.boxes.every((b) => b.process === 0 || b.process === 7), `after hiding 6 ranks: ${two.boxes.length} lanes`);
    expect(two.rowH > rowH, `rows stay ${two.rowH} px with two ranks shown (${rowH} px with eight)`);
    await p.locator('.tl-ranks-all').click();
    const again = await p.evaluate(() => window.__gpscope.timeline.laneBoxes().length);
    expect(again === 32, `${again} lanes after "all"`);
    return `32 streams within ${Math.round(top)}-${Math.round(bottom)} px in rows of ${rowH} px (${two.rowH} px with two ranks shown)`;
  });
  await r8.page.close();

  // Call stacks (issue 20): the source-lines table, the flame view, a
  // finding's site link, and the stack of a sync and of a gap clicked on the
  // timeline, on the synthetic .item() loop of tests/data/stacks.
  const stacksTrace = join(repo, 'tests/data/stacks/item_then_host.gpscope');
  const stacksSummary = summaryJson(stacksTrace);
  const st = await open(report([stacksTrace], 'stacks.html'));
  await test('call stacks: source-lines table and flame view match the summary', async () => {
    const p = st.page;
    const info = await p.evaluate(() => ({
      nav: [...document.querySelectorAll('.report-nav a')].map((a) => a.getAttribute('href')),
      rows: [...document.querySelectorAll('table.source-lines tbody tr')].map((tr) => ({
        label: tr.children[1].firstChild.textContent,
        lost: Number(tr.querySelector('td[data-col="gpu_lost_ns"]').dataset.value),
      })),
      boxes: document.querySelectorAll('.flame-box').length,
      roots: [...document.querySelectorAll('.flame-row:first-child .flame-box')].map((b) => b.textContent),
    }));
    const sites = stacksSummary.source_lines.sites;
    expect(info.nav.includes('#source-lines'), `nav: ${info.nav}`);
    expect(info.rows.length === sites.length, `${info.rows.length} rows, ${sites.length} sites`);
    sites.forEach((s, i) => expect(info.rows[i].label === s.label && info.rows[i].lost === s.gpu_lost_ns,
      `row ${i}: ${JSON.stringify(info.rows[i])} vs ${s.label} ${s.gpu_lost_ns}`));
    expect(info.rows[0].label === 'train.py:42 (train_step)', info.rows[0].label);
    expect(info.boxes >= 6, `${info.boxes} flame boxes`);
    expect(info.roots[0] === '/home/user/proj/train.py:74 <module>', `roots: ${info.roots}`);
    // Kernel time: the flame view re-weighs by the estimate.
    await p.click('.flame-measure[data-measure="kernel_ns"]');
    const kernelRoots = await p.evaluate(() => [...document.querySelectorAll('.flame-row:first-child .flame-box')].map((b) => b.style.width));
    expect(kernelRoots.length === 1 && Math.abs(parseFloat(kernelRoots[0]) - 100) < 1e-6, `kernel roots ${kernelRoots}`);
    expect(st.problems.length === 0, st.problems.join('; '));
    return `${info.rows.length} sites, ${info.boxes} boxes`;
  });
  await test('call stacks: a finding links its site to the stack', async () => {
    const p = st.page;
    const top = stacksSummary.findings[0];
    expect(top.sites && top.sites[0].label === 'train.py:42 (train_step)', JSON.stringify(top.sites));
    await p.click('.finding .site-link');
    const sel = await p.evaluate(() => ({
      frames: [...document.querySelectorAll('.flame-info .stack-list li')].map((li) => li.textContent),
      row: document.querySelector('table.source-lines tr.selected')?.dataset.site,
      box: document.querySelector('.flame-box.selected')?.textContent,
    }));
    expect(sel.row === '0', `selected row ${sel.row}`);
    expect(sel.frames[0] === 'cudaStreamSynchronize (libcudart.so.12+0x4f2a0)', `frames ${sel.frames}`);
    expect(sel.frames.includes('/home/user/proj/train.py:42 train_step'), `frames ${sel.frames}`);
    expect(sel.box === 'cudaStreamSynchronize (libcudart.so.12+0x4f2a0)', `box ${sel.box}`);
    return `${sel.frames.length} frames`;
  });
  await test('call stacks: clicking a sync and a gap on the timeline shows their stacks', async () => {
    const p = st.page;
    await p.locator('#timeline').scrollIntoViewIfNeeded();
    // The 10th cudaStreamSynchronize of the main thread, and the gap after it.
    const target = await p.evaluate(() => {
      const s = window.__gpscope;
      const api = s.lanes.find((l) => l.kind === 'api' && l.label.includes('31337'));
      const names = s.data.timeline.names;
      const syncs = [];
      for (let i = 0; i < api.count; i++) if (names[api.name[i]] === 'cudaStreamSynchronize') syncs.push(i);
      const i = syncs[10];
      const start = api.start[i], end = start + api.dur[i];
      s.timeline.setRange(start - 2e6, end + 30e6, false);
      return { api: api.index, start, end };
    });
    await settle(p);
    const click = async (laneIndex, t) => {
      const box = (await p.evaluate(() => window.__gpscope.timeline.laneBoxes())).find((b) => b.lane === laneIndex);
      const c = await p.locator('.tl-canvas').boundingBox();
      const x = await p.evaluate((tt) => {
        const tl = window.__gpscope.timeline;
        const [a, b] = tl.view;
        return 236 + (tt - a) / (b - a) * (tl.width - 236);
      }, t);
      await p.mouse.click(c.x + x, (box.top + box.bottom) / 2);
      await p.waitForTimeout(100);
      return p.evaluate(() => document.querySelector('.tl-details').textContent);
    };
    const syncText = await click(target.api, (target.start + target.end) / 2);
    expect(syncText.includes('call stack (innermost first)'), `sync details: ${syncText.slice(0, 300)}`);
    expect(syncText.includes('/opt/venv/lib/python3.12/site-packages/torch/_tensor.py:1012 item'), syncText.slice(0, 400));
    const stream = await p.evaluate(() => window.__gpscope.lanes.find((l) => l.kind === 'stream').index);
    const gapText = await click(stream, target.end + 12e6);
    expect(gapText.includes('the host was in this call when the GPU ran dry'), `gap details: ${gapText.slice(0, 300)}`);
    expect(gapText.includes('the call that ended the gap') && gapText.includes('/home/user/proj/train.py:37 train_step'),
      gapText.slice(0, 600));
    await p.click('.tl-details .stack-show');
    const sel = await p.evaluate(() => document.querySelector('.flame-box.selected')?.textContent);
    expect(sel, 'show in the flame view selected nothing');
    expect(st.problems.length === 0, st.problems.join('; '));
    return 'sync and gap stacks shown';
  });
  await st.page.close();
  const plain = await open(report([join(repo, 'tests/data/torch_train.gpscope')], 'no_stacks.html'));
  await test('call stacks: a trace without stacks has no source-lines section', async () => {
    const info = await plain.page.evaluate(() => ({
      section: !!document.getElementById('source-lines'), data: 'stacks' in window.__gpscope.data,
      links: document.querySelectorAll('.site-link').length,
    }));
    expect(!info.section && !info.data && info.links === 0, JSON.stringify(info));
    expect(plain.problems.length === 0, plain.problems.join('; '));
  });
  await plain.page.close();

  // Nothing traced: the page still opens and says so.
  const emptyTrace = join(OUT, 'empty.gpscope');
  execFileSync('node', [join(here, 'make_trace.mjs'), 'empty', emptyTrace]);
  const empty = await open(report([emptyTrace], 'empty.html'));
  await test('a trace without events: the page opens without errors', async () => {
    const info = await empty.page.evaluate(() => ({
      ready: window.__gpscope.ready, lanes: window.__gpscope.lanes.length,
      title: document.querySelector('.job-title')?.textContent,
    }));
    expect(info.ready && info.lanes === 0, JSON.stringify(info));
    expect(empty.problems.length === 0, empty.problems.join('; '));
    return `title "${info.title}"`;
  });
  await empty.page.close();

  // A large trace (a million events in CI).
  if (GEN_TRACE && existsSync(GEN_TRACE)) {
    const bigTrace = join(OUT, `events_${BIG_LABEL}.gpscope`);
    execFileSync(GEN_TRACE, ['--events', String(BIG_EVENTS), '--out', bigTrace], { stdio: 'ignore' });
    const t0 = Date.now();
    const bigHtml = report([bigTrace], `events_${BIG_LABEL}.html`);
    const buildMs = Date.now() - t0;
    const bigSize = statSync(bigHtml).size;
    await test(`${BIG_LABEL} events: opens and becomes interactive within ${INTERACTIVE_LIMIT_MS / 1000} s`, async () => {
      const big = await open(bigHtml);
      const p = big.page;
      // Interactive: a zoom lands and a frame is drawn.
      const t1 = Date.now();
      await p.locator('#timeline').scrollIntoViewIfNeeded();
      const box = await p.locator('.tl-canvas').boundingBox();
      await p.mouse.move(box.x + box.width / 2, box.y + 80);
      const r0 = await range(p);
      // Nothing of a tiled lane is decoded at load (tiles by zoom level).
      const tilesAtLoad = await p.evaluate(() => window.__gpscope.lanes
        .filter((l) => l.tileState).reduce((a, l) => a + l.tileState.filter((s) => s).length, 0));
      await p.keyboard.press('w');
      await settle(p);
      const r1 = await range(p);
      const firstInteraction = Date.now() - t1;
      const total = big.loadMs + firstInteraction;
      expect(r1.end_ns - r1.start_ns < r0.end_ns - r0.start_ns, 'zoom did not change the range');
      // Frame times: zoomed out (bins), and zoomed in (exact events).
      const frames = await p.evaluate(async () => {
        const t = window.__gpscope.timeline;
        const out = {};
        const measure = async (label, a, b) => {
          t.setRange(a, b, false);
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          const times = [];
          for (let i = 0; i < 5; i++) {
            t.panBy(0.01);
            await new Promise((r) => requestAnimationFrame(r));
            times.push(t.lastDrawMs);
          }
          out[label] = Math.max(...times);
        };
        const span = window.__gpscope.data.span_ns;
        await measure('all', 0, span);
        await measure('1/10', span * 0.4, span * 0.5);
        await measure('1/100', span * 0.4, span * 0.41);
        await measure('1/10000', span * 0.4, span * 0.4001);
        return out;
      });
      // Tiles by zoom level (issue 24): the busy lanes come as tiles, decoded
      // only when a zoom needs them. Zoomed in near the end, every tiled lane
      // draws its exact events once its tiles land; after a search every tile
      // is decoded (every kept event reachable, in order); a finer bin
      // level's counts equal the exact events'.
      const tiles = await p.evaluate(async () => {
        const t = window.__gpscope.timeline;
        const tiled = window.__gpscope.lanes.filter((l) => l.tileState);
        const span = window.__gpscope.data.span_ns;
        const out = { tiled: tiled.length, tiles: tiled.reduce((a, l) => a + l.tileState.length, 0) };
        const decoded = () => tiled.reduce((a, l) => a + l.tileState.filter((s) => s === 2).length, 0);
        await t.whenLoaded();
        const before = decoded();
        t.setRange(span * 0.97, span * 0.9702, false);
        t.draw();
        await t.whenLoaded();
        t.draw();
        out.decodedAtZoom = decoded() - before;
        out.exactAtZoom = tiled.filter((l) => !t.useBins(l)).length;
        // The finer levels: zoomed so that level 1's bins are a pixel or more.
        out.levelBins = 0;
        out.levelMismatch = 0;
        for (const l of tiled) {
          if (!l.levels || !l.levels.length) continue;
          const bn = l.levels[0].bin_ns;
          const plotW = t.width - 236;  // LABEL_W
          t.setRange(span * 0.5, span * 0.5 + bn * plotW * 0.9, false);
          t.binLevel(l);
          await t.whenLoaded();
          const lv = t.binLevel(l);
          if (lv.bin_ns !== bn) { out.levelMismatch++; continue; }
          l.levelChecked = lv;
        }
        t.search('no-such-kernel-name');
        await t.whenLoaded();
        t.search('');
        out.decodedAfterSearch = decoded();
        out.reachable = 0;
        out.unsorted = 0;
        for (const l of tiled) {
          if (l.tilesLeft === 0) out.reachable += l.count;
          for (let i = 1; i < l.count; i++) if (l.start[i] < l.start[i - 1]) { out.unsorted++; break; }
          const lv = l.levelChecked;
          if (!lv) continue;
          const exact = new Uint32Array(lv.bin_count);
          for (let i = 0; i < l.count; i++) {
            const s = l.start[i], e = s + l.dur[i];
            const first = Math.min(lv.bin_count - 1, Math.floor(s / lv.bin_ns));
            const last = Math.min(lv.bin_count - 1, e > s ? Math.floor((e - 1) / lv.bin_ns) : first);
            for (let b = first; b <= last; b++) exact[b]++;
          }
          for (let b = 0; b < lv.bin_count; b++) {
            out.levelBins++;
            if (exact[b] !== lv.count[b]) out.levelMismatch++;
          }
        }
        out.tiledEvents = tiled.reduce((a, l) => a + l.count, 0);
        return out;
      });
      expect(tiles.tiled > 0 && tilesAtLoad === 0, `tiles decoded at load: ${tilesAtLoad}; ${JSON.stringify(tiles)}`);
      expect(tiles.decodedAtZoom > 0 && tiles.decodedAtZoom <= 4 * tiles.tiled, `tiles decoded at a deep zoom: ${JSON.stringify(tiles)}`);
      expect(tiles.exactAtZoom === tiles.tiled, `tiled lanes drawing exact events at a deep zoom: ${JSON.stringify(tiles)}`);
      expect(tiles.decodedAfterSearch === tiles.tiles && tiles.reachable === tiles.tiledEvents && !tiles.unsorted,
        `every tile decoded after a search: ${JSON.stringify(tiles)}`);
      expect(tiles.levelBins > 0 && tiles.levelMismatch === 0, `finer level counts vs exact events: ${JSON.stringify(tiles)}`);
      const events = await p.evaluate(() => window.__gpscope.lanes.reduce((a, l) => a + (l.count || 0), 0));
      // Every kept event is decoded; past --max-events (or the memory budget)
      // the page must say how many it does not show.
      const shown = await p.evaluate(() => {
        const c = window.__gpscope.data.completeness;
        return { kept: c.events_kept, not_kept: c.events_not_kept, text: document.body.textContent };
      });
      expect(events === shown.kept, `${events} events decoded, ${shown.kept} kept`);
      expect(events + shown.not_kept >= BIG_EVENTS * 0.99, `${events} + ${shown.not_kept} not kept of ${BIG_EVENTS}`);
      expect(!shown.not_kept || shown.text.includes('events not drawn'), `${shown.not_kept} events not kept, and the page does not say so`);
      expect(big.problems.length === 0, big.problems.join('; '));
      expect(total < INTERACTIVE_LIMIT_MS, `interactive after ${total} ms`);
      const slowest = Math.max(...Object.values(frames));
      expect(slowest < 100, `a frame took ${slowest.toFixed(1)} ms: ${JSON.stringify(frames)}`);
      await p.close();
      const f = Object.entries(frames).map(([k, v]) => `${k} ${v.toFixed(1)} ms`).join(', ');
      console.log(`      ${BIG_LABEL} events (${events} shown, ${shown.not_kept} not kept): report written in ${buildMs} ms, ${(bigSize / 1048576).toFixed(2)} MiB; page ready in ${big.loadMs} ms ` +
        `(parse+decode ${big.timings.decode_ms.toFixed(0)} ms, ready ${big.timings.ready_ms.toFixed(0)} ms in page), first zoom drawn after ${firstInteraction} ms; ` +
        `time to interactive ${total} ms; frame draw (worst of 5): ${f}`);
      return `time to interactive ${total} ms (limit ${INTERACTIVE_LIMIT_MS} ms); ${tiles.tiles} tiles in ${tiles.tiled} lanes, ${tiles.decodedAtZoom} decoded at a deep zoom; ${tiles.levelBins} finer-level bins match the exact events`;
    });
  } else {
    console.log(`skip  ${BIG_LABEL} events: no gen_trace binary (--gen-trace)`);
  }

  await browser.close();
  console.log(`report sizes: torch_train_starved ${(realSize / 1024).toFixed(1)} KiB`);
  const passed = results.filter((r) => r[0]).length;
  const failed = results.length - passed;
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch(async (e) => {
  console.log(`FAIL  harness: ${e && e.stack || e}`);
  const passed = results.filter((r) => r[0]).length;
  console.log(`${passed} passed, ${results.length - passed + 1} failed`);
  if (browser) await browser.close().catch(() => {});
  process.exit(1);
});
