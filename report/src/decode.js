// decode.js: turns the report's timeline blob (tools/render/report_data.h:
// gzip + base64 of varint/byte/float64 columns) into typed arrays.

function base64ToBytes(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function gunzip(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

export async function decodeBlob(blob) {
  const raw = base64ToBytes(blob.data || '');
  const bytes = blob.encoding === 'gzip+base64' ? await gunzip(raw) : raw;
  if (bytes.length !== blob.bytes) {
    throw new Error(`timeline data is damaged: ${bytes.length} bytes, expected ${blob.bytes}`);
  }
  return bytes;
}

// `count` unsigned LEB128 varints from bytes[ref[0], ref[0] + ref[1]);
// with `delta`, each value adds to the previous one. Values stay exact up to
// 2^53 (no 32-bit shifts).
function varints(bytes, ref, count, delta, Out = Float64Array) {
  const out = new Out(count);
  let p = ref[0];
  const end = ref[0] + ref[1];
  let previous = 0;
  for (let i = 0; i < count && p < end; i++) {
    let b = bytes[p++];
    let v = b & 0x7f;
    if (b >= 0x80) {
      let mul = 128;
      do {
        b = bytes[p++];
        v += (b & 0x7f) * mul;
        mul *= 128;
      } while (b >= 0x80 && p < end);
    }
    if (delta) {
      previous += v;
      out[i] = previous;
    } else {
      out[i] = v;
    }
  }
  return out;
}

function byteColumn(bytes, ref) {
  return bytes.slice(ref[0], ref[0] + ref[1]);
}

function float64Column(bytes, ref, count) {
  const out = new Float64Array(count);
  const view = new DataView(bytes.buffer, bytes.byteOffset + ref[0], ref[1]);
  for (let i = 0; i < count; i++) out[i] = view.getFloat64(8 * i, true);
  return out;
}

// Lanes with typed-array columns:
//   events: start, dur (Float64Array ns), name (Uint32Array), cat, row (Uint8Array), aux
//   counters: t, v (Float64Array), min, max
//   bins: busy (Uint8Array), count, top (Uint32Array), cat (Uint8Array)
export async function decodeTimeline(timeline) {
  const bytes = await decodeBlob(timeline.blob);
  const lanes = timeline.lanes.map((lane, index) => {
    const out = { ...lane, index };
    const c = lane.cols;
    const n = lane.count;
    if (lane.kind === 'counter') {
      out.t = varints(bytes, c.t, n, true);
      out.v = float64Column(bytes, c.v, n);
      let min = Infinity, max = -Infinity;
      for (let i = 0; i < n; i++) {
        const v = out.v[i];
        if (v < min) min = v;
        if (v > max) max = v;
      }
      out.min = n ? min : 0;
      out.max = n ? max : 1;
      return out;
    }
    out.start = varints(bytes, c.start, n, true);
    out.dur = varints(bytes, c.dur, n, false);
    out.name = varints(bytes, c.name, n, false, Uint32Array);
    out.cat = byteColumn(bytes, c.cat);
    out.row = c.row ? byteColumn(bytes, c.row) : null;
    out.aux = c.aux ? varints(bytes, c.aux, n, false) : null;
    if (lane.bins) {
      const b = lane.bins;
      const m = timeline.bin_count;
      out.binData = {
        busy: byteColumn(bytes, b.busy),
        count: varints(bytes, b.count, m, false, Uint32Array),
        top: varints(bytes, b.top, m, false, Uint32Array),
        cat: byteColumn(bytes, b.cat),
      };
    }
    return out;
  });
  return lanes;
}
