// build.mjs: builds dist/report_template.html, the one file the C++ side
// embeds (report/embed_template.cmake). esbuild bundles src/main.js with
// uPlot into one minified script; the CSS (ours and uPlot's) is inlined; the
// result has no external reference, so a report opens offline.
//
//   npm ci && npm run build        (or scripts/build_report_ui.sh)
//   node build.mjs --out FILE      (elsewhere: the tests compare it with dist/)
//
// The data placeholder must survive exactly once, and the inlined script may
// not contain "</script" (it would end the element early): both are checked.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const PLACEHOLDER = '"__GPSCOPE_REPORT_DATA__"';
const outArg = process.argv.indexOf('--out');
const outPath = outArg > 0 ? process.argv[outArg + 1] : join(here, 'dist/report_template.html');

const result = await build({
  entryPoints: [join(here, 'src/main.js')],
  bundle: true,
  minify: true,
  format: 'iife',
  target: ['chrome100', 'firefox100', 'safari16'],
  legalComments: 'eof',
  charset: 'utf8',
  write: false,
  logLevel: 'warning',
});
let script = result.outputFiles[0].text;
if (/<\/script/i.test(script)) script = script.replace(/<\/script/gi, '<\\/script');
if (/<!--/.test(script)) script = script.replace(/<!--/g, '<\\!--');
if (/<\/script|<!--/i.test(script)) throw new Error('the bundle still contains </script or <!--');

const css = [
  readFileSync(join(here, 'node_modules/uplot/dist/uPlot.min.css'), 'utf8'),
  readFileSync(join(here, 'src/styles.css'), 'utf8'),
].join('\n');
if (/<\/style/i.test(css)) throw new Error('the CSS contains </style');

let html = readFileSync(join(here, 'src/template.html'), 'utf8');
const splice = (text, marker, value) => {
  const at = text.indexOf(marker);
  if (at < 0 || text.indexOf(marker, at + 1) >= 0) throw new Error(`template must hold ${marker} once`);
  return text.slice(0, at) + value + text.slice(at + marker.length);
};
html = splice(html, '/*GPSCOPE_STYLES*/', css);
html = splice(html, '/*GPSCOPE_SCRIPT*/', script);
const count = html.split(PLACEHOLDER).length - 1;
if (count !== 1) throw new Error(`dist must hold the data placeholder once, found ${count}`);
if (/\b(src|href)\s*=\s*["']?(https?:)?\/\//i.test(html)) throw new Error('the page references the network');

mkdirSync(dirname(outPath), { recursive: true });
writeFileSync(outPath, html);
console.log(`${outPath}: ${(html.length / 1024).toFixed(1)} KiB (script ${(script.length / 1024).toFixed(1)} KiB, css ${(css.length / 1024).toFixed(1)} KiB)`);
