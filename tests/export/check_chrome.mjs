// check_chrome.mjs BINARY TRACE...: what timeline readers need from the
// Chrome trace-event export, checked on the parsed JSON of each trace:
//  - per (pid, tid), "X" slices nest or follow each other (chrome://tracing,
//    speedscope and Perfetto's importer draw one stack per thread; a
//    partial overlap breaks it), compared in integer ns;
//  - every flow id has one "s" and one "f", each at the start of an "X"
//    slice on its own (pid, tid) (where the viewer binds it);
//  - every `sf` names a stackFrames node, and every node's parent exists;
//  - one name per kernel: no slice name carries the correlation id.
// speedscope's npm package ships only its browser bundle (no importer to
// call from node), so this checks what its importer relies on instead.
import { execFileSync } from "node:child_process";

const [bin, ...traces] = process.argv.slice(2);
let failures = 0;
const fail = (msg) => {
  failures++;
  if (failures <= 20) console.log("FAIL: " + msg);
};
const ns = (us) => Math.round(us * 1000);

for (const trace of traces) {
  const doc = JSON.parse(
    execFileSync(bin, ["export", trace], { maxBuffer: 1 << 30, stdio: ["ignore", "pipe", "ignore"] }));
  const ev = doc.traceEvents;
  const lanes = new Map();
  const starts = new Set();
  for (const e of ev) {
    if (e.ph !== "X") continue;
    const key = e.pid + "/" + e.tid;
    if (!lanes.has(key)) lanes.set(key, []);
    lanes.get(key).push([ns(e.ts), ns(e.ts) + ns(e.dur), e.name]);
    starts.add(key + "@" + ns(e.ts));
    if (e.cat === "kernel" && /\b\d{3,}\b/.test(String(e.args.correlation)) &&
        e.name.includes(String(e.args.correlation))) {
      fail(`${trace}: kernel name carries its correlation id: ${e.name}`);
    }
  }
  let slices = 0;
  for (const [key, list] of lanes) {
    list.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
    const open = [];
    for (const [s, e, name] of list) {
      slices++;
      while (open.length && open[open.length - 1][1] <= s) open.pop();
      if (open.length && e > open[open.length - 1][1]) {
        const top = open[open.length - 1];
        fail(`${trace}: ${key}: "${name}" [${s}, ${e}] overlaps "${top[2]}" [${top[0]}, ${top[1]}]`);
      }
      open.push([s, e, name]);
    }
  }
  const flows = new Map();
  for (const e of ev) {
    if (e.ph !== "s" && e.ph !== "f") continue;
    if (!flows.has(e.id)) flows.set(e.id, { s: 0, f: 0 });
    flows.get(e.id)[e.ph]++;
    if (!starts.has(e.pid + "/" + e.tid + "@" + ns(e.ts))) {
      fail(`${trace}: flow ${e.id} ${e.ph} at ${e.ts} on ${e.pid}/${e.tid}: no slice starts there`);
    }
    if (e.ph === "f" && e.bp !== "e") fail(`${trace}: flow ${e.id}: "f" without "bp":"e"`);
  }
  for (const [id, n] of flows) {
    if (n.s !== 1 || n.f !== 1) fail(`${trace}: flow ${id}: ${n.s} starts, ${n.f} ends`);
  }
  const frames = doc.stackFrames || {};
  let withStack = 0;
  for (const e of ev) {
    if (e.sf === undefined) continue;
    withStack++;
    if (!(e.sf in frames)) fail(`${trace}: sf ${e.sf} is not in stackFrames`);
  }
  for (const [id, f] of Object.entries(frames)) {
    if (f.parent !== undefined && !(f.parent in frames)) fail(`${trace}: frame ${id}: parent ${f.parent} missing`);
  }
  console.log(`${trace}: ${slices} slices on ${lanes.size} (pid, tid), ${flows.size} flows, ` +
              `${withStack} with stacks of ${Object.keys(frames).length} frames`);
}
process.exit(failures ? 1 : 0);
