// bench/report_tti.mjs: how long `gpscope-analyze report` takes to write a
// report of a trace, how big it is, and how long headless Chromium takes until
// the page is interactive (loaded, decoded, ready, then a zoom (key W) drawn),
// the same measure as the browser test's large-report case
// (tests/report/run.mjs), then how long a deep zoom takes to draw exact
// events (its tiles decoded). Rounds alternate the analyzers given.
//
//   node bench/report_tti.mjs --trace FILE --analyze BIN[,BIN2] [--rounds 3] [--out DIR]
//
// Needs report/node_modules (npm ci in report/) for playwright-core and
// Debian's /usr/bin/chromium.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(join(repo, 'report/package.json'));
const { chromium } = require('playwright-core');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const analyzers = (args.analyze || '').split(',').filter(Boolean);
const rounds = Number(args.rounds || 3);
const out = args.out || mkdtempSync(join(tmpdir(), 'gpscope-tti-'));
mkdirSync(out, { recursive: true });
if (!args.trace || !analyzers.length) {
  console.error('usage: node bench/report_tti.mjs --trace FILE --analyze BIN[,BIN2] [--rounds N] [--out DIR]');
  process.exit(2);
}

const browser = await chromium.launch({
  executablePath: args.chromium || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});

async function measure(html) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  const problems = [];
  page.on('pageerror', (e) => problems.push(e.message));
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  const t0 = Date.now();
  await page.goto(`file://${html}`, { waitUntil: 'load', timeout: 120000 });
  await page.waitForFunction(() => window.__gpscope && (window.__gpscope.ready || window.__gpscope.errors.length),
    null, { timeout: 120000, polling: 20 });
  const loadMs = Date.now() - t0;
  const timings = await page.evaluate(() => window.__gpscope.timings);
  const t1 = Date.now();
  await page.locator('#timeline').scrollIntoViewIfNeeded();
  const box = await page.locator('.tl-canvas').boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 80);
  await page.keyboard.press('w');
  await page.waitForFunction(() => !window.__gpscope.timeline.animation, null, { timeout: 60000 });
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const zoomMs = Date.now() - t1;
  // Then a deep zoom (1/5000 of the run, at 70%): how long until its tiles
  // are decoded and exact events drawn (tiles by zoom level, issue 24).
  const deep = await page.evaluate(async () => {
    const t = window.__gpscope.timeline;
    const span = window.__gpscope.data.span_ns;
    const t0 = performance.now();
    t.setRange(span * 0.7, span * 0.7002, false);
    t.draw();
    if (t.whenLoaded) await t.whenLoaded();
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const tiled = window.__gpscope.lanes.filter((l) => l.tileState);
    return {
      ms: performance.now() - t0,
      exact: tiled.filter((l) => !t.useBins(l)).length,
      tiled: tiled.length,
      tiles: tiled.reduce((a, l) => a + l.tileState.length, 0),
      decoded: tiled.reduce((a, l) => a + l.tileState.filter((x) => x === 2).length, 0),
    };
  });
  const info = await page.evaluate(() => ({
    errors: window.__gpscope.errors,
    lanes: window.__gpscope.lanes.length,
    kept: window.__gpscope.data.completeness.events_kept,
    not_kept: window.__gpscope.data.completeness.events_not_kept,
    heap_mib: performance.memory ? performance.memory.usedJSHeapSize / 1048576 : null,
  }));
  await page.close();
  return { loadMs, zoomMs, tti: loadMs + zoomMs, timings, problems: problems.concat(info.errors), heap: info.heap_mib,
    kept: info.kept, notKept: info.not_kept, deep };
}

for (let r = 0; r < rounds; r++) {
  for (const [i, bin] of analyzers.entries()) {
    const html = join(out, `report_${i}.html`);
    const t0 = process.hrtime.bigint();
    execFileSync('/usr/bin/time', ['-f', '%e %U %M', '-o', join(out, 'time.txt'), bin, 'report', args.trace, '-o', html],
      { stdio: ['ignore', 'ignore', 'inherit'] });
    const writeMs = Number(process.hrtime.bigint() - t0) / 1e6;
    const [wall, user, rssKb] = execFileSync('cat', [join(out, 'time.txt')]).toString().trim().split(/\s+/).map(Number);
    const size = statSync(html).size;
    const m = await measure(html);
    console.log(`round ${r + 1} ${bin}: written ${writeMs.toFixed(0)} ms (user ${user} s, peak RSS ${(rssKb / 1024).toFixed(0)} MiB), ` +
      `${(size / 1048576).toFixed(2)} MiB; ready ${m.loadMs} ms (decode ${m.timings?.decode_ms?.toFixed(0)} ms, ` +
      `ready ${m.timings?.ready_ms?.toFixed(0)} ms in page), zoom drawn ${m.zoomMs} ms later: ` +
      `time to interactive ${m.tti} ms; events kept ${m.kept}, not kept ${m.notKept}; ` +
      `deep zoom (1/5000) exact in ${m.deep.exact}/${m.deep.tiled} tiled lanes after ${m.deep.ms.toFixed(0)} ms ` +
      `(${m.deep.decoded} of ${m.deep.tiles} tiles decoded); JS heap ${m.heap ? m.heap.toFixed(0) : '?'} MiB` +
      `${m.problems.length ? `; problems: ${m.problems.join(' | ')}` : ''}`);
  }
}
await browser.close();
// Our own scratch directory (no --out) holds only the reports written above.
if (!args.out) rmSync(out, { recursive: true, force: true });
