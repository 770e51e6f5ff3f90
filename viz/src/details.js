// The node panel: what the graph says about a node, and what the selected step measured.
const esc = (s) => String(s ?? '').replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
const fmt = (x) => (typeof x === 'number' ? (Math.abs(x) >= 1e4 || (x !== 0 && Math.abs(x) < 1e-3) ? x.toExponential(3) : +x.toFixed(5)) : esc(x));

function histSvg(hist, min, max) {
  const w = 250, h = 44, n = hist.length, top = Math.max(...hist, 1);
  const bars = hist.map((c, i) => {
    const bh = Math.round((c / top) * (h - 12));
    return `<rect x="${(i * w) / n + 1}" y="${h - 12 - bh}" width="${w / n - 2}" height="${bh}" fill="#5c6bc0"><title>${c}</title></rect>`;
  }).join('');
  return `<svg class="hist" width="${w}" height="${h}">${bars}` +
    `<text x="0" y="${h - 1}" font-size="9">${fmt(min)}</text>` +
    `<text x="${w - 2}" y="${h - 1}" font-size="9" text-anchor="end">${fmt(max)}</text></svg>`;
}

export function detailsHtml(model, id, step, diff) {
  const x = model.info[id];
  const n = x.node;
  const rows = [];
  const row = (k, v) => rows.push(`<tr><td>${k}</td><td data-field="${k}">${v}</td></tr>`);
  row('id', n.id);
  row('name', esc(n.name));
  row('op', esc(n.op));
  row('payload', esc(n.payload || '-'));
  row('shape', `[${n.shape.join(', ')}]`);
  row('dtype', esc(n.dtype));
  row('backend', esc(n.backend ?? 'unassigned'));
  row('layer', x.layer ?? '-');
  row('role', x.role.map((r) => `<span class="tag ${r}">${r}</span>`).join('') || '-');
  row('sources', n.src.map((s) => `${s} ${esc(model.nodes[s].name)}`).join('<br>') || '-');
  const weights = model.json.weights || {};
  row('weights', x.weights.map((w) => {
    const info = weights[w.name];
    const type = info ? info.type : w.type;
    const shape = info ? ` [${info.shape.join(', ')}]` : '';
    return `${esc(w.role)}: ${esc(w.name)}${type ? ' ' + esc(type) : ''}${shape}`;
  }).join('<br>') || '-');
  row('meta', esc(n.meta || '-'));
  row('buffer', n.buffer ? `arena ${n.buffer.arena}, offset ${n.buffer.offset}, ${n.buffer.size} bytes`
                         : (x.orphan ? 'none (fusion orphan: not executed)' : 'none'));
  if (step) {
    const s = step.nodes.get(id);
    if (!s) {
      row('step ' + step.step, x.executed ? 'no statistics (yet)' : 'not executed');
    } else {
      row('time', `${fmt(s.ms)} ms (step ${step.step})`);
      if (s.n > 0) {
        row('values', s.n);
        if (s.hist) {
          row('min / max', `${fmt(s.min)} / ${fmt(s.max)}`);
          row('mean / rms', `${fmt(s.mean)} / ${fmt(s.rms)}`);
        }
        row('nan / inf', (s.nan || s.inf) ? `<span class="tag bad">${s.nan} / ${s.inf}</span>` : '0 / 0');
        if (s.hist) row('histogram', histSvg(s.hist, s.min, s.max));
      } else {
        row('values', 'no f32 output (KV write or integer)');
      }
    }
  }
  if (diff) {
    row('compare', `max |a-b| ${fmt(diff.max_abs)}, rel ${fmt(diff.rel)}${diff.diverged ? ' <span class="tag bad">diverged</span>' : ''}`);
  }
  return `<table>${rows.join('')}</table>`;
}
