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

  // A million events.
  if (GEN_TRACE && existsSync(GEN_TRACE)) {
    const bigTrace = join(OUT, 'events_1m.gpscope');
    execFileSync(GEN_TRACE, ['--events', '1000000', '--out', bigTrace], { stdio: 'ignore' });
    const t0 = Date.now();
    const bigHtml = report([bigTrace], 'events_1m.html');
    const buildMs = Date.now() - t0;
    const bigSize = statSync(bigHtml).size;
    await test('1M events: opens and becomes interactive within 5 s', async () => {
      const big = await open(bigHtml);
      const p = big.page;
      // Interactive: a zoom lands and a frame is drawn.
      const t1 = Date.now();
      await p.locator('#timeline').scrollIntoViewIfNeeded();
      const box = await p.locator('.tl-canvas').boundingBox();
      await p.mouse.move(box.x + box.width / 2, box.y + 80);
      const r0 = await range(p);
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
      const events = await p.evaluate(() => window.__gpscope.lanes.reduce((a, l) => a + (l.count || 0), 0));
      expect(events >= 990000, `${events} events decoded`);
      expect(big.problems.length === 0, big.problems.join('; '));
      expect(total < INTERACTIVE_LIMIT_MS, `interactive after ${total} ms`);
      const slowest = Math.max(...Object.values(frames));
      expect(slowest < 100, `a frame took ${slowest.toFixed(1)} ms: ${JSON.stringify(frames)}`);
      await p.close();
      const f = Object.entries(frames).map(([k, v]) => `${k} ${v.toFixed(1)} ms`).join(', ');
      console.log(`      1M events: report written in ${buildMs} ms, ${(bigSize / 1048576).toFixed(2)} MiB; page ready in ${big.loadMs} ms ` +
        `(parse+decode ${big.timings.decode_ms.toFixed(0)} ms, ready ${big.timings.ready_ms.toFixed(0)} ms in page), first zoom drawn after ${firstInteraction} ms; ` +
        `time to interactive ${total} ms; frame draw (worst of 5): ${f}`);
      return `time to interactive ${total} ms (limit ${INTERACTIVE_LIMIT_MS} ms)`;
    });
  } else {
    console.log('skip  1M events: no gen_trace binary (--gen-trace)');
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
