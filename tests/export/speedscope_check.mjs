// tests/export/speedscope_check.mjs: a real consumer of `export`'s Chrome
// JSON. speedscope's own web app (the npm package pinned in
// report/package.json, dist/release) loads each exported file in headless
// Chromium (Debian's, through playwright-core, as the report's tests do),
// from a local HTTP server through its #profileURL= hash. A file passes
// when speedscope imports it as a profile (the page title becomes the
// file's name and speedscope names no import error) with no page error and
// no console warning or error (its importer warns about what it repairs,
// such as slices of one thread that overlap without nesting). Run by scripts/test_report.sh after `npm ci` in report/.
//
//   node tests/export/speedscope_check.mjs --analyze BIN [--chromium PATH] TRACE...
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, statSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { basename, dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const repo = resolve(here, '../..');
const require = createRequire(join(repo, 'report/package.json'));
const { chromium } = require('playwright-core');

const argv = process.argv.slice(2);
let analyze = null;
let chromiumPath = '/usr/bin/chromium';
const traces = [];
for (let i = 0; i < argv.length; ++i) {
  if (argv[i] === '--analyze') analyze = argv[++i];
  else if (argv[i] === '--chromium') chromiumPath = argv[++i];
  else traces.push(argv[i]);
}
if (!analyze || traces.length === 0) {
  console.error('usage: speedscope_check.mjs --analyze BIN [--chromium PATH] TRACE...');
  process.exit(2);
}
const release = join(dirname(require.resolve('speedscope/package.json')), 'dist/release');
const out = mkdtempSync(join(tmpdir(), 'gpscope-speedscope-'));
const names = traces.map((t) => {
  const name = `${basename(t, extname(t))}.json`;
  writeFileSync(join(out, name), execFileSync(analyze, ['export', t], { maxBuffer: 1 << 30 }));
  return name;
});

const types = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.wasm': 'application/wasm', '.png': 'image/png', '.woff2': 'font/woff2', '.ico': 'image/x-icon' };
const server = createServer((req, res) => {
  const path = decodeURIComponent(new URL(req.url, 'http://x').pathname);
  const file = path.startsWith('/profiles/') ? join(out, basename(path)) : join(release, basename(path) || 'index.html');
  if (!existsSync(file) || !statSync(file).isFile()) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { 'content-type': types[extname(file)] || 'application/octet-stream' });
  res.end(readFileSync(file));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: chromiumPath,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
let failed = 0;
for (const name of names) {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // speedscope's importer reports what it had to repair (e.g. slices on one
  // thread that overlap without nesting) as console warnings or errors.
  page.on('console', (m) => {
    if (m.text().startsWith('[.WebGL-')) return;  // Chromium's software GL, not speedscope
    if (m.type() === 'warning' || m.type() === 'error') errors.push(`console ${m.type()}: ${m.text().slice(0, 300)}`);
  });
  await page.goto(`${base}/index.html#profileURL=${encodeURIComponent(`${base}/profiles/${name}`)}`);
  let ok = false;
  try {
    await page.waitForFunction((n) => document.title.includes(n), name, { timeout: 30000 });
    ok = true;
  } catch (e) {
    errors.push(`title stayed '${await page.title()}'`);
  }
  const body = await page.evaluate(() => document.body.innerText);
  for (const bad of ['Something went wrong', 'Unrecognized format', 'Failed to']) {
    if (body.includes(bad)) {
      ok = false;
      errors.push(`speedscope says: ${body.slice(body.indexOf(bad), body.indexOf(bad) + 200)}`);
    }
  }
  if (errors.length > 0) ok = false;
  console.log(`${ok ? 'ok  ' : 'FAIL'} speedscope loads ${name} (${await page.title()})${ok ? '' : `: ${errors.join('; ')}`}`);
  failed += ok ? 0 : 1;
  await page.close();
}
await browser.close();
server.close();
console.log(`speedscope: ${names.length - failed} of ${names.length} exports loaded`);
if (failed === 0) rmSync(out, { recursive: true, force: true });
else console.log(`exports kept in ${out}`);
process.exit(failed > 0 ? 1 : 0);
