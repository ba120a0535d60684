// decode.js: turns the report's timeline blob (tools/render/report_data.h:
// gzip + base64 of varint/byte/float64 columns) into typed arrays.
//
// Tiles by zoom level: a lane with many events comes as tiles (runs of
// events by start, each packed on its own) and finer bin levels. At load
// only the blob is decoded (small lanes, every lane's whole-run bins); a
// tiled lane gets full-length columns whose start is, until its tile is
// decoded, the tile's first start (so binary searches over start stay
// valid) and loadTile() fills a tile in when a zoom needs it; loadLevel()
// decodes a finer bin level.

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

export async function decodeBlob(blob, encoding = blob.encoding) {
  const raw = base64ToBytes(blob.data || '');
  const bytes = encoding === 'gzip+base64' ? await gunzip(raw) : raw;
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

function varintsInto(out, at, bytes, ref, count, delta) {
  const col = varints(bytes, ref, count, delta, out.constructor);
  out.set(col, at);
}

function byteColumn(bytes, ref) {
  return bytes.slice(ref[0], ref[0] + ref[1]);
}

// A bin level's columns (`cols`: busy, count, top, cat refs) of m bins of
// binNs each: the whole-run bins and every finer level alike.
function binColumns(bytes, cols, m, binNs) {
  return {
    busy: byteColumn(bytes, cols.busy),
    count: varints(bytes, cols.count, m, false, Uint32Array),
    top: varints(bytes, cols.top, m, false, Uint32Array),
    cat: byteColumn(bytes, cols.cat),
    bin_ns: binNs,
    bin_count: m,
  };
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
    if (lane.tiles) {
      // Tiled: full-length columns, filled in tile by tile (loadTile).
      const T = lane.tiles.events;
      const first = lane.tiles.first_ns;
      out.start = new Float64Array(n);
      for (let t = 0; t < first.length; t++) out.start.fill(first[t], t * T, Math.min(n, (t + 1) * T));
      out.dur = new Float64Array(n);
      out.name = new Uint32Array(n);
      out.cat = new Uint8Array(n);
      out.row = lane.tiles.rows ? new Uint8Array(n) : null;
      out.aux = lane.tiles.aux ? new Float64Array(n) : null;
      out.tileState = new Uint8Array(first.length);  // 0 not decoded, 1 decoding, 2 decoded
      out.tilesLeft = first.length;
    } else {
      out.start = varints(bytes, c.start, n, true);
      out.dur = varints(bytes, c.dur, n, false);
      out.name = varints(bytes, c.name, n, false, Uint32Array);
      out.cat = byteColumn(bytes, c.cat);
      out.row = c.row ? byteColumn(bytes, c.row) : null;
      out.aux = c.aux ? varints(bytes, c.aux, n, false) : null;
    }
    if (lane.bins) {
      const b = lane.bins;
      const m = timeline.bin_count;
      out.binData = binColumns(bytes, b, m, timeline.bin_ns);
      // Finer levels, decoded by loadLevel(): binLevels[0] is binData.
      out.binLevels = [out.binData].concat((lane.levels || []).map(() => null));
    }
    return out;
  });
  return lanes;
}

// Decodes tile `t` of a tiled lane into its columns (once).
export async function loadTile(lane, t, encoding) {
  const part = lane.tiles.parts[t];
  const bytes = await decodeBlob(part, encoding);
  const T = lane.tiles.events;
  const at = t * T;
  const n = Math.min(lane.count - at, T);
  const c = part.cols;
  varintsInto(lane.dur, at, bytes, c.dur, n, false);
  if (c.gap) {
    // Zigzag gaps from the previous event's end (report_data.h).
    const gap = varints(bytes, c.gap, n, false);
    const start = lane.start, dur = lane.dur;
    let end = 0;
    for (let i = 0; i < n; i++) {
      const z = gap[i];
      const s = end + (z % 2 ? -(z + 1) / 2 : z / 2);
      start[at + i] = s;
      end = s + dur[at + i];
    }
  } else {
    varintsInto(lane.start, at, bytes, c.start, n, true);
  }
  varintsInto(lane.name, at, bytes, c.name, n, false);
  lane.cat.set(byteColumn(bytes, c.cat).subarray(0, n), at);
  if (lane.row && c.row) lane.row.set(byteColumn(bytes, c.row).subarray(0, n), at);
  if (lane.aux && c.aux) varintsInto(lane.aux, at, bytes, c.aux, n, false);
  part.data = null;  // decoded: the text is not needed again
  lane.tileState[t] = 2;
  lane.tilesLeft--;
}

// Decodes finer bin level `l` (>= 1) of a lane (once).
export async function loadLevel(lane, l, encoding) {
  const level = lane.levels[l - 1];
  const bytes = await decodeBlob(level, encoding);
  lane.binLevels[l] = binColumns(bytes, level.cols, level.bin_count, level.bin_ns);
  level.data = null;
}
