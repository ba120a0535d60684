// tests/report/make_trace.mjs: writes small synthetic gpscope traces for the
// report's browser tests, with its own protobuf wire encoder and zstd frames
// of raw (stored) blocks, so the tests need neither a GPU nor a C++ helper.
// A third independent writer of the format (after inject/'s encoder and
// tests/testing/trace_builder): the analyzer reading these files is itself a
// check of proto/gpscope/trace.proto and proto/framing.h.
//
//   node tests/report/make_trace.mjs xss   OUT.gpscope   # hostile strings everywhere
//   node tests/report/make_trace.mjs ranks OUT.gpscope [N] # N (2) ranks on N hosts, skewed
//                                                        # CUPTI clocks, metrics, a lost
//                                                        # interval; N > 2: 4 streams each
//   node tests/report/make_trace.mjs empty OUT.gpscope   # a process that traced nothing
import { writeFileSync } from 'node:fs';

// ------------------------------------------------------------ wire format --

class Pb {
  constructor() { this.bytes = []; }
  varint(v) {
    let x = BigInt.asUintN(64, BigInt(v));
    while (x >= 0x80n) {
      this.bytes.push(Number((x & 0x7fn) | 0x80n));
      x >>= 7n;
    }
    this.bytes.push(Number(x));
    return this;
  }
  tag(field, wire) { return this.varint((field << 3) | wire); }
  uint(field, v) { if (BigInt(v) !== 0n) this.tag(field, 0).varint(v); return this; }
  int(field, v) { if (BigInt(v) !== 0n) this.tag(field, 0).varint(BigInt.asUintN(64, BigInt(v))); return this; }
  bool(field, v) { if (v) this.tag(field, 0).varint(1); return this; }
  fixed64(field, v) {
    this.tag(field, 1);
    let x = BigInt.asUintN(64, BigInt(v));
    for (let i = 0; i < 8; i++) { this.bytes.push(Number(x & 0xffn)); x >>= 8n; }
    return this;
  }
  bytesField(field, arr) { this.tag(field, 2).varint(arr.length); for (const b of arr) this.bytes.push(b); return this; }
  string(field, s) { if (s) this.bytesField(field, [...new TextEncoder().encode(s)]); return this; }
  msg(field, pb) { return this.bytesField(field, pb.bytes); }
  packed(field, values, zigzag = false) {
    if (!values.length) return this;
    const inner = new Pb();
    for (const v of values) {
      const b = BigInt(v);
      inner.varint(zigzag ? BigInt.asUintN(64, (b << 1n) ^ (b < 0n ? -1n : 0n)) : b);
    }
    return this.msg(field, inner);
  }
  packedDouble(field, values) {
    if (!values.length) return this;
    const buf = Buffer.alloc(8 * values.length);
    values.forEach((v, i) => buf.writeDoubleLE(v, 8 * i));
    return this.bytesField(field, [...buf]);
  }
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let b = 0; b < 256; b++) {
    let c = b;
    for (let i = 0; i < 8; i++) c = (c >>> 1) ^ ((c & 1) ? 0x82f63b78 : 0);
    t[b] = c >>> 0;
  }
  return t;
})();
function crc32c(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = (c >>> 8) ^ CRC_TABLE[(c ^ b) & 0xff];
  return (c ^ 0xffffffff) >>> 0;
}

// A zstd frame of raw blocks: single segment, 4-byte content size.
function zstdStored(raw) {
  const out = [0x28, 0xb5, 0x2f, 0xfd, 0xa0];
  const size = Buffer.alloc(4);
  size.writeUInt32LE(raw.length);
  out.push(...size);
  const MAX = 128 * 1024;
  let off = 0;
  do {
    const n = Math.min(MAX, raw.length - off);
    const last = off + n >= raw.length ? 1 : 0;
    const header = last | (0 << 1) | (n << 3);
    out.push(header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff);
    for (let i = 0; i < n; i++) out.push(raw[off + i]);
    off += n;
  } while (off < raw.length);
  return out;
}

function frame(chunk) {
  const raw = chunk.bytes;
  const payload = zstdStored(raw);
  const header = Buffer.alloc(16);
  header.writeUInt32LE(0x46535047, 0);
  header.writeUInt32LE(payload.length, 4);
  header.writeUInt32LE(raw.length, 8);
  header.writeUInt32LE(crc32c([...header.subarray(4, 12), ...payload]), 12);
  return [...header, ...payload];
}

// ---------------------------------------------------------------- trace --

class Process {
  constructor(trace, uid, pid) {
    Object.assign(this, { trace, uid, pid, seq: 0, strings: new Map(), ev: {} });
    this.base = null;
    this.extra = [];
  }
  chunk(bodyField, body) {
    const c = new Pb().fixed64(1, this.uid).uint(2, this.pid).uint(3, this.seq++).msg(bodyField, body);
    this.trace.frames.push(...frame(c));
  }
  header({ hostname, cmdline, rank = -1, worldSize = 0, job = '', devices, clock }) {
    const h = new Pb().uint(1, 1).string(2, '0.1.0').string(3, hostname).uint(4, this.pid);
    for (const a of cmdline) h.string(6, a);
    h.string(7, '/usr/bin/python3').uint(8, clock.realtime);
    h.msg(9, new Pb().string(1, job).int(2, rank).int(3, rank).int(4, worldSize).int(5, rank >= 0 ? 0 : -1).string(6, job ? 'env' : ''));
    for (const d of devices) {
      h.msg(12, new Pb().uint(1, d.id).string(2, d.name).string(3, d.uuid).uint(5, 9).uint(6, 0).uint(7, 132)
        .uint(8, 150109880320n).uint(10, 1980000));
    }
    h.msg(13, new Pb().uint(1, clock.cupti).uint(2, clock.realtime).uint(3, 1000));
    h.uint(14, 13000).uint(15, 130001).string(16, '580.95.05');
    this.chunk(4, h);
  }
  intern(s) {
    if (!s) return 0;
    if (!this.strings.has(s)) {
      this.strings.set(s, this.strings.size + 1);
      this.newStrings = this.newStrings || [];
      this.newStrings.push([this.strings.size, s]);
    }
    return this.strings.get(s);
  }
  add(kind, e) { (this.ev[kind] = this.ev[kind] || []).push(e); }
  flush() {
    const b = new Pb();
    const all = Object.values(this.ev).flat();
    const base = all.length ? all.reduce((m, e) => (e.start < m ? e.start : m), all[0].start) : 0n;
    b.fixed64(1, base);
    for (const [id, s] of this.newStrings || []) b.msg(2, new Pb().uint(1, id).string(2, s));
    this.newStrings = [];
    for (const x of this.extra) x(b);
    this.extra = [];
    const deltas = (list, key = 'start') => {
      let prev = base;
      return list.map((e) => { const d = e[key] - prev; prev = e[key]; return d; });
    };
    const corr = (list) => { let prev = 0n; return list.map((e) => { const c = BigInt(e.corr || 0); const d = c - prev; prev = c; return d; }); };
    const col = (list, k, dflt = 0) => list.map((e) => e[k] ?? dflt);
    const k = this.ev.kernel || [];
    if (k.length) {
      b.msg(6, new Pb().packed(1, deltas(k), true).packed(2, col(k, 'dur')).packed(3, col(k, 'name'))
        .packed(4, col(k, 'config')).packed(5, col(k, 'device')).packed(6, col(k, 'context', 1))
        .packed(7, col(k, 'stream', 7)).packed(8, corr(k), true).packed(9, col(k, 'graph')).packed(10, col(k, 'node')));
    }
    const m = this.ev.memcpy || [];
    if (m.length) {
      b.msg(7, new Pb().packed(1, deltas(m), true).packed(2, col(m, 'dur')).packed(3, col(m, 'bytes'))
        .packed(4, col(m, 'kind')).packed(5, col(m, 'src')).packed(6, col(m, 'dst')).packed(7, col(m, 'device'))
        .packed(8, col(m, 'context', 1)).packed(9, col(m, 'stream', 7)).packed(10, corr(m), true)
        .packed(11, col(m, 'flags')).packed(12, col(m, 'graph')).packed(13, col(m, 'device')));
    }
    const y = this.ev.sync || [];
    if (y.length) {
      b.msg(9, new Pb().packed(1, deltas(y), true).packed(2, col(y, 'dur')).packed(3, col(y, 'kind', 3))
        .packed(4, col(y, 'context', 1)).packed(5, col(y, 'stream', 7)).packed(6, col(y, 'event', 0xffffffff))
        .packed(7, corr(y), true).packed(8, col(y, 'tid')));
    }
    const a = this.ev.api || [];
    if (a.length) {
      b.msg(10, new Pb().packed(1, deltas(a), true).packed(2, col(a, 'dur')).packed(3, col(a, 'domain', 1))
        .packed(4, col(a, 'cbid', 211)).packed(5, col(a, 'tid')).packed(6, corr(a), true)
        .packed(7, col(a, 'ret')).packed(8, col(a, 'name')));
    }
    const r = this.ev.nvtx || [];
    if (r.length) {
      b.msg(11, new Pb().packed(1, deltas(r), true).packed(2, col(r, 'dur')).packed(3, col(r, 'name'))
        .packed(4, col(r, 'domain')).packed(5, col(r, 'tid')).packed(6, col(r, 'depth')));
    }
    const s = this.ev.metric || [];
    if (s.length) {
      b.msg(14, new Pb().packed(1, deltas(s), true).packed(2, col(s, 'id')).packedDouble(3, col(s, 'value')));
    }
    this.ev = {};
    this.chunk(5, b);
  }
  end(endNs, clock) {
    this.chunk(6, new Pb().uint(1, endNs).uint(2, 1).uint(4, this.seq + 1)
      .msg(7, new Pb().uint(1, clock.cupti).uint(2, clock.realtime).uint(3, 2000)));
  }
}

class Trace {
  constructor() { this.frames = []; this.processes = []; }
  process(uid, pid) { const p = new Process(this, uid, pid); this.processes.push(p); return p; }
  bytes() {
    const head = Buffer.alloc(16);
    head.write('GPSCOPE\n', 0, 'latin1');
    head.writeUInt32LE(1, 8);
    head.writeUInt32LE(0, 12);
    return Buffer.concat([head, Buffer.from(this.frames)]);
  }
}

const MS = 1000000n;
const US = 1000n;
const REALTIME0 = 1764400000000000000n;

// A little training loop: per step an H2D copy, kernels with launch calls,
// a D2H copy and a stream sync, an NVTX step range; `gap` host time between steps.
// With `streams` > 1 the kernels take turns on that many streams.
function trainingLoop(p, { cupti0, steps, kernelNames, gapNs, tid, metrics = [], streams = 1 }) {
  let t = cupti0;
  let corr = 1;
  const launch = p.intern('cudaLaunchKernel_v7000');
  const sync = p.intern('cudaStreamSynchronize_v3020');
  const names = kernelNames.map((n) => p.intern(n));
  const step = [];
  for (let i = 0; i < steps; i++) step.push(p.intern(`step ${i}`));
  p.extra.push((b) => {
    b.msg(3, new Pb().uint(1, 1).uint(2, 264).uint(3, 1).uint(4, 1).uint(5, 256).uint(6, 1).uint(7, 1).uint(8, 64).uint(9, 2048));
    b.msg(5, new Pb().uint(1, 1).uint(2, 0).uint(3, 7));
  });
  for (let s = 0; s < steps; s++) {
    const s0 = t;
    p.add('memcpy', { start: t, dur: 300n * US, bytes: 64n << 20n, kind: 1, src: 1, dst: 3, flags: 1, corr: corr++ });
    t += 320n * US;
    let cpu = t - 200n * US;
    names.forEach((name, i) => {
      p.add('api', { start: cpu, dur: 6n * US, tid, name: launch, corr });
      cpu += 8n * US;
      const dur = BigInt(40 + 60 * i) * US;
      p.add('kernel', { start: t, dur, name, config: 1, corr: corr++, stream: [7, 13, 14, 17][i % Math.min(4, streams)] });
      t += dur + 3n * US;
    });
    p.add('memcpy', { start: t, dur: 12n * US, bytes: 4n, kind: 2, src: 3, dst: 1, flags: 0, corr: corr++ });
    p.add('api', { start: cpu, dur: t + 20n * US - cpu, tid, name: sync, cbid: 131, corr: corr++ });
    p.add('sync', { start: cpu, dur: t + 18n * US - cpu, tid });
    t += 20n * US;
    p.add('nvtx', { start: s0, dur: t - s0, name: step[s], tid });
    t += gapNs;
  }
  for (const m of metrics) {
    let i = 0;
    for (let x = cupti0; x < t; x += 5n * MS) m(x, i++);
  }
  return t;
}

function xss(out) {
  const trace = new Trace();
  const p = trace.process(0x1234n, 4242);
  const evil = '</script><img src=x onerror=alert(1)>';
  const clock = { cupti: 5n * 1000000000n, realtime: REALTIME0 };
  p.header({
    hostname: '<b>host</b>&amp;"\'', cmdline: ['python3', 'train.py', '--tag', '</script><script>alert(2)</script>', '\u2028x\u2029'],
    job: '<i onmouseover=alert(5)>job</i>', devices: [{ id: 0, name: '<svg onload=alert(6)>', uuid: 'GPU-1' }], clock,
  });
  const name = p.intern(evil);
  const nvtx = p.intern('<img src=x onerror=alert(3)>');
  const desc = 1;
  p.extra.push((b) => {
    b.msg(15, new Pb().uint(1, desc).string(2, '<svg onload=alert(4)>').string(3, 'percent').uint(4, 1).uint(5, 0));
    b.msg(17, new Pb().uint(1, clock.cupti + 30n * MS).uint(2, clock.cupti + 32n * MS).uint(3, 4).string(4, '<b>disk</b>'));
    b.msg(19, new Pb().string(1, 'gpm').bool(2, false).string(3, '<img src=x onerror=alert(7)>'));
    b.msg(16, new Pb().uint(1, 4).uint(2, 3).uint(3, clock.cupti).uint(4, clock.cupti + MS).string(5, '<b>x</b>'));
  });
  let t = clock.cupti + MS;
  for (let i = 0; i < 200; i++) {
    p.add('kernel', { start: t, dur: 150n * US, name, config: 0, corr: i + 1 });
    p.add('nvtx', { start: t, dur: 140n * US, name: nvtx, tid: 4242 });
    p.add('metric', { start: t, id: desc, value: 42.5 });
    t += 200n * US + (i % 50 === 49 ? 8n * MS : 0n);
  }
  p.flush();
  p.end(t, { cupti: t, realtime: REALTIME0 + (t - clock.cupti) });
  writeFileSync(out, trace.bytes());
}

// `n` ranks (default 2, one stream each); more ranks use four streams each.
function ranks(out, n = 2) {
  const trace = new Trace();
  for (let r = 0; r < n; r++) {
    const p = trace.process(0xabc0n + BigInt(r), 3000 + r);
    // Each host's CUPTI clock has its own origin; ClockSnapshots map both to
    // the same wall clock, so rank 1's work lines up with rank 0's.
    const cupti0 = BigInt(r === 0 ? 2 : 9) * 1000000000n;
    const clock = { cupti: cupti0, realtime: REALTIME0 };
    p.header({
      hostname: `node${r}`, cmdline: ['torchrun', '--nproc-per-node=1', 'train.py'], rank: r, worldSize: n, job: 'job-77',
      devices: [{ id: 0, name: 'NVIDIA H200', uuid: `GPU-${r}` }], clock,
    });
    const ids = { sm: 1, dram: 2, clock: 3, power: 4, temp: 5, reasons: 6, cpu: 7, pcpu: 8 };
    p.extra.push((b) => {
      const d = (id, name, unit, scope) => b.msg(15, new Pb().uint(1, id).string(2, name).string(3, unit).uint(4, scope).uint(5, 0).uint(6, scope === 2 ? 3000 + r : 0));
      d(ids.sm, 'gpm.sm_util', 'percent', 1);
      d(ids.dram, 'gpm.dram_bw_util', 'percent', 1);
      d(ids.clock, 'nvml.sm_clock_mhz', 'MHz', 1);
      d(ids.power, 'nvml.power_w', 'W', 1);
      d(ids.temp, 'nvml.temperature_c', 'C', 1);
      d(ids.reasons, 'nvml.clock_event_reasons', 'bitmask', 1);
      d(ids.cpu, 'host.cpu_util_pct', 'percent', 3);
      d(ids.pcpu, 'host.process_cpu_user_pct', 'percent', 2);
      if (r === 1) b.msg(17, new Pb().uint(1, cupti0 + 120n * MS).uint(2, cupti0 + 150n * MS).uint(3, 1).string(4, 'another profiler'));
    });
    const end = trainingLoop(p, {
      cupti0: cupti0 + 10n * MS, steps: 40, tid: 3000 + r, gapNs: BigInt(4 + 3 * (r % 2)) * MS, streams: n > 2 ? 4 : 1,
      kernelNames: ['_Z10gemm_tilePfS_S_', '_Z7softmaxPf', 'ncclDevKernel_AllReduce_Sum_f32_RING_LL', '_Z6adam_stepPfS_'],
      metrics: [
        (x, k) => p.add('metric', { start: x, id: ids.sm, value: 35 + 25 * Math.sin(k / 5) }),
        (x, k) => p.add('metric', { start: x, id: ids.dram, value: 20 + 10 * Math.cos(k / 7) }),
        (x, k) => p.add('metric', { start: x, id: ids.clock, value: 1980 - (k % 20 > 15 ? 300 : 0) }),
        (x, k) => p.add('metric', { start: x, id: ids.power, value: 420 + 180 * Math.abs(Math.sin(k / 9)) }),
        (x, k) => p.add('metric', { start: x, id: ids.temp, value: 52 + (k % 30) / 3 }),
        (x, k) => p.add('metric', { start: x, id: ids.reasons, value: k % 20 > 15 ? 0x4 : 0x1 }),
        (x, k) => p.add('metric', { start: x, id: ids.cpu, value: 60 + 30 * Math.sin(k / 4) }),
        (x, k) => p.add('metric', { start: x, id: ids.pcpu, value: 95 + 3 * Math.sin(k / 3) }),
      ],
    });
    p.flush();
    p.end(end, { cupti: end, realtime: REALTIME0 + (end - cupti0) });
  }
  writeFileSync(out, trace.bytes());
}

// A process that traced nothing: header and end only.
function empty(out) {
  const trace = new Trace();
  const p = trace.process(0x77n, 77);
  const clock = { cupti: 1000000000n, realtime: REALTIME0 };
  p.header({ hostname: 'idle-host', cmdline: ['true'], devices: [], clock });
  p.end(clock.cupti, clock);
  writeFileSync(out, trace.bytes());
}

const [kind, out, count] = process.argv.slice(2);
if (kind === 'xss') xss(out);
else if (kind === 'empty') empty(out);
else if (kind === 'ranks') ranks(out, count ? Number(count) : 2);
else {
  console.error('usage: make_trace.mjs xss|ranks|empty OUT.gpscope [RANKS]');
  process.exit(2);
}
