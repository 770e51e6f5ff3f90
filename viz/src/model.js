// The graph JSON (`minfer run --dump-graph-json`, GET /graph; format in viz/README.md) turned
// into what the page draws: per node its layer, role (input/output/fused/orphan/view) and the
// weights its meta names.

const FUSED_OPS = new Set(['SwiGLU', 'FusedQKV', 'QkvBiasRopeStore', 'FusedFFN', 'FusedQkvNorm']);
// Ops that act without a buffer of their own: the KV store writes the persistent regions,
// the KV load is a view of them. Anything else without a buffer is a fusion orphan.
const BUFFERLESS_OK = new Set(['KvStore', 'KvLoad']);

// "blk.7.attn_q.weight" or "attn_norm.7" -> 7; null for nodes outside the layers.
function explicitLayer(node) {
  const m = /(?:^|[._])blk\.(\d+)\./.exec(node.name) || /\.(\d+)$/.exec(node.name);
  if (m) return Number(m[1]);
  const w = /(?:^|\s)\w+=blk\.(\d+)\./.exec(node.meta || '');
  return w ? Number(w[1]) : null;
}

// "weight=blk.0.attn_q.weight bias=- type=Q4_0 128->256" -> [{role, name, type}]
export function parseWeights(meta) {
  const out = [];
  if (!meta) return out;
  const kv = {};
  for (const part of meta.split(/\s+/)) {
    const i = part.indexOf('=');
    if (i > 0) kv[part.slice(0, i)] = part.slice(i + 1);
  }
  const roles = ['weight', 'bias', 'wq', 'wk', 'wv', 'bq', 'bk', 'bv', 'q_norm', 'k_norm', 'gate', 'up',
                 'freq_factors'];
  for (const r of roles) {
    const name = kv[r];
    if (!name || name === '-' || !/\.(weight|bias)$|^rope_freqs/.test(name)) continue;
    let type = null;
    if (r === 'weight' && kv.type) type = kv.type;
    else if (kv['t' + r.slice(1)] && r.startsWith('w')) type = kv['t' + r.slice(1)];
    else if (kv[r + '_type']) type = kv[r + '_type'];
    out.push({ role: r, name, type });
  }
  return out;
}

export function buildModel(json) {
  if (!json || !Array.isArray(json.nodes)) throw new Error('not a minfer graph JSON (no "nodes" array)');
  const nodes = json.nodes;
  nodes.forEach((n, i) => {
    if (n.id !== i) throw new Error(`node ${i} has id ${n.id}: ids must equal positions`);
  });
  const inputs = new Set(json.inputs || []);
  const outputs = new Set(json.outputs || []);
  const consumers = nodes.map(() => []);
  for (const n of nodes) for (const s of n.src) consumers[s].push(n.id);

  // Layer of each node: from its name or weights; a node without one (the fused "swiglu")
  // belongs to a layer when all its sources and some consumer are in that layer.
  const layer = nodes.map(explicitLayer);
  for (let pass = 0; pass < 3; ++pass) {
    for (const n of nodes) {
      if (layer[n.id] !== null || inputs.has(n.id) || n.src.length === 0) continue;
      const ls = new Set(n.src.map((s) => layer[s]));
      if (ls.size !== 1) continue;
      const l = [...ls][0];
      if (l !== null && consumers[n.id].some((c) => layer[c] === l)) layer[n.id] = l;
    }
  }

  const info = nodes.map((n) => {
    const role = [];
    if (inputs.has(n.id)) role.push('input');
    if (outputs.has(n.id)) role.push('output');
    if (FUSED_OPS.has(n.op)) role.push('fused');
    const orphan = n.buffer === null && !BUFFERLESS_OK.has(n.op) && !inputs.has(n.id);
    if (orphan) role.push('orphan');
    if (n.op === 'KvLoad') role.push('view');
    return { node: n, layer: layer[n.id], role, orphan, weights: parseWeights(n.meta),
             // What the executor runs (and so what the stream reports): not the inputs, not
             // the KV views, not the orphans.
             executed: !inputs.has(n.id) && n.op !== 'KvLoad' && !orphan };
  });
  const layers = [...new Set(layer.filter((l) => l !== null))].sort((a, b) => a - b);
  return { json, nodes, info, layers, consumers, inputs, outputs,
           gtype: json.params ? json.params.gtype : null,
           nTokens: json.params ? json.params.n_tokens : null,
           executedIds: info.filter((x) => x.executed).map((x) => x.node.id) };
}
