// Colour scales of the page: categorical for ops and backends, sequential for numbers.
const OP_COLOURS = {
  Input: '#c8e6c9', Embedding: '#a5d6a7', RmsNorm: '#fff59d', QkNorm: '#fff176',
  MatMul: '#90caf9', RoPE: '#ce93d8', KvStore: '#ffab91', KvLoad: '#ffccbc', Attn: '#f48fb1',
  Add: '#e0e0e0', Mul: '#d7ccc8', Silu: '#b2dfdb', SwiGLU: '#80cbc4', GetRows: '#c5e1a5',
  FusedQKV: '#ffb74d', QkvBiasRopeStore: '#ffa726', FusedFFN: '#4db6ac', FusedQkvNorm: '#ff9800',
};
const BACKEND_COLOURS = ['#1e88e5', '#43a047', '#fb8c00', '#8e24aa', '#e53935', '#00897b'];

export function opColour(op) {
  return OP_COLOURS[op] || '#eeeeee';
}

const backendIndex = new Map();
export function backendColour(name) {
  if (name === null || name === undefined) return '#9e9e9e';
  if (!backendIndex.has(name)) backendIndex.set(name, backendIndex.size);
  return BACKEND_COLOURS[backendIndex.get(name) % BACKEND_COLOURS.length];
}

// t in [0, 1] -> white .. yellow .. red
export function heat(t) {
  if (!(t >= 0)) return '#ffffff';
  t = Math.min(1, t);
  const r = 255, g = Math.round(255 - 200 * t), b = Math.round(255 * Math.max(0, 1 - 2 * t));
  return `rgb(${r},${g},${b})`;
}

export function legendHtml(mode, model) {
  const sw = (c, label) => `<div><span class="sw" style="background:${c}"></span>${label}</div>`;
  if (mode === 'op') {
    const ops = [...new Set(model.nodes.map((n) => n.op))];
    return ops.map((o) => sw(opColour(o), o)).join('') +
      '<div style="margin-top:4px">border: backend · dashed: fused · faded: orphan · double: input/output</div>';
  }
  if (mode === 'backend') {
    const bs = [...new Set(model.nodes.map((n) => n.backend))];
    return bs.map((b) => sw(backendColour(b), b ?? 'unassigned')).join('');
  }
  if (mode === 'compare') {
    return sw(heat(0), 'identical') + sw(heat(0.5), 'rel diff ~ tol') + sw(heat(1), 'diverged') +
      '<div>thick red border: first diverging node</div>';
  }
  const what = { time: 'node time / max in step', rms: 'output RMS (log) / max', naninf: 'has NaN or Inf' }[mode];
  return sw(heat(0), 'low / none') + sw(heat(1), 'high') + `<div>${what}</div>`;
}
