// colors.js: event colours. Category numbers equal render::EventCategory in
// tools/render/report_timeline.h.

export const CAT = {
  KERNEL: 0, COMM: 1, H2D: 2, D2H: 3, D2D: 4, P2P: 5, COPY_OTHER: 6, MEMSET: 7,
  SYNC: 8, API: 9, API_SYNC: 10, NVTX: 11, NVTX_STEP: 12, NVTX_MARK: 13, OVERHEAD: 14,
};

export const CAT_NAMES = [
  'kernel', 'communication kernel', 'memcpy H2D', 'memcpy D2H', 'memcpy D2D', 'memcpy P2P',
  'memcpy', 'memset', 'sync wait', 'CUDA API call', 'synchronizing API call', 'NVTX range',
  'NVTX step', 'NVTX mark', 'profiler overhead',
];

// Colour of a category when events are merged or drawn as bins.
export const CAT_COLORS = [
  '#4f7cba', '#8e5cc4', '#2f9e5d', '#e08a2c', '#c7a028', '#b566c7', '#8a9a5b', '#8c969e',
  '#d94a4a', '#7b93b8', '#c0503f', '#7fa3cf', '#5b86c5', '#394454', '#b9bec4',
];

export const LEGEND = [
  [CAT.KERNEL, 'kernels'], [CAT.COMM, 'NCCL'], [CAT.H2D, 'H2D'], [CAT.D2H, 'D2H'],
  [CAT.D2D, 'D2D'], [CAT.MEMSET, 'memset'], [CAT.SYNC, 'sync wait'], [CAT.API, 'CUDA API'],
  [CAT.API_SYNC, 'sync call'], [CAT.NVTX_STEP, 'NVTX'],
];

function hash(s) {
  let x = 2166136261;
  for (let i = 0; i < s.length; i++) {
    x ^= s.charCodeAt(i);
    x = Math.imul(x, 16777619);
  }
  return x >>> 0;
}

// Kernels get cool hues (teal to violet) so copies (green/orange) and sync
// waits (red) stand out; NVTX ranges get soft blues.
export function nameColor(name, cat) {
  const x = hash(name);
  if (cat === CAT.KERNEL) {
    const hue = 185 + (x % 100);
    const sat = 42 + ((x >>> 8) % 24);
    const light = 46 + ((x >>> 16) % 16);
    return `hsl(${hue} ${sat}% ${light}%)`;
  }
  if (cat === CAT.NVTX) {
    const hue = 200 + (x % 40);
    return `hsl(${hue} 45% ${68 + ((x >>> 8) % 10)}%)`;
  }
  return CAT_COLORS[cat] || '#888';
}
