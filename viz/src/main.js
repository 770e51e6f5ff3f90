// Wires the page: loads graphs from /graph (or a local --dump-graph-json file), follows the SSE
// stream of a generation step by step, shows node details, and colours by compare results.
import { buildModel } from './model.js';
import { GraphView } from './view.js';
import { heat, legendHtml } from './colours.js';
import { RunStream } from './stream.js';
import { detailsHtml } from './details.js';

const $ = (id) => document.getElementById(id);
const state = {
  model: null,
  graphs: new Map(),  // n_tokens -> model
  selected: null,
  stepIndex: null,
  compare: null,      // {json, byStep: Map(step -> Map(id -> diff)), nTokens: Map(step -> n)}
};

const view = new GraphView($('cy'), (id) => selectNode(id));
const stream = new RunStream({ changed: onStream });

async function fetchJson(url, opts) {
  const r = await fetch(url, opts);
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(j.error || `${url}: HTTP ${r.status}`);
  return j;
}

function showModel(model, title) {
  state.model = model;
  view.setModel(model, model.nodes.length > 250);
  $('graph-title').textContent = title;
  $('node-count').textContent = model.nodes.length;
  $('layer-count').textContent = model.layers.length;
  if (state.selected !== null && state.selected >= model.nodes.length) state.selected = null;
  recolour();
  renderDetails();
}

async function loadGraph(nTokens) {
  if (!state.graphs.has(nTokens)) {
    state.graphs.set(nTokens, buildModel(await fetchJson(`/graph?n_tokens=${nTokens}`)));
  }
  const m = state.graphs.get(nTokens);
  if (state.model !== m) {
    const p = m.json.params;
    showModel(m, p ? `${p.gtype.toLowerCase()} graph, ${p.n_tokens} token${p.n_tokens > 1 ? 's' : ''}, uid ${m.json.uid}` : 'graph');
  }
  return m;
}

function currentStep() {
  return state.stepIndex === null ? null : stream.steps[state.stepIndex] || null;
}

function selectNode(id) {
  state.selected = id;
  view.select(id);
  renderDetails();
}

function compareDiff(id) {
  if (!state.compare) return null;
  const m = state.compare.byStep.get(Number($('cmp-step').value));
  return m ? m.get(id) || null : null;
}

function renderDetails() {
  if (state.selected === null || !state.model) {
    $('details').innerHTML = 'click a node (click a layer box to collapse or expand it)';
    return;
  }
  const st = currentStep();
  const sameGraph = st && state.model.nTokens === st.n_tokens;
  $('details').innerHTML = detailsHtml(state.model, state.selected, sameGraph ? st : null, compareDiff(state.selected));
}

function recolour() {
  if (!state.model) return;
  const mode = $('colour-mode').value;
  $('legend').innerHTML = legendHtml(mode, state.model);
  const st = currentStep();
  const stats = st && state.model.nTokens === st.n_tokens ? st.nodes : new Map();
  let fill = () => null;
  if (mode === 'time') {
    const max = Math.max(1e-9, ...[...stats.values()].map((s) => s.ms));
    // sqrt: one big matmul (the logits) would otherwise leave every other node white.
    fill = (id) => (stats.has(id) ? heat(Math.sqrt(stats.get(id).ms / max)) : null);
  } else if (mode === 'rms') {
    const lr = (s) => Math.log10(1 + (s.rms || 0));
    const max = Math.max(1e-9, ...[...stats.values()].map(lr));
    fill = (id) => (stats.has(id) ? heat(lr(stats.get(id)) / max) : null);
  } else if (mode === 'naninf') {
    fill = (id) => (stats.has(id) ? heat(stats.get(id).nan + stats.get(id).inf > 0 ? 1 : 0) : null);
  } else if (mode === 'compare') {
    const tol = state.compare ? state.compare.json.tol : 1e-4;
    fill = (id) => {
      const d = compareDiff(id);
      if (!d) return null;
      if (d.rel === null) return heat(1);
      if (d.rel === 0) return heat(0);
      return heat(Math.min(1, Math.max(0.05, 0.5 + (Math.log10(d.rel) - Math.log10(tol || 1e-30)) / 6)));
    };
  }
  view.recolour(mode, fill);
  const fd = state.compare && state.compare.json.first_diverging;
  view.markFirstDiverging(fd && fd.step === Number($('cmp-step').value) ? fd.id : null);
}

// ---- steps ----
function renderSteps() {
  const n = stream.steps.length;
  $('step-slider').max = Math.max(0, n - 1);
  const st = currentStep();
  if (!st) {
    $('step-label').textContent = n ? '' : 'no steps yet';
    $('stats-count').textContent = '';
    return;
  }
  $('step-slider').value = st.step;
  const reuse = st.reused ? '<span class="tag reused">graph reused</span>' : '<span class="tag rebuilt">graph rebuilt</span>';
  const tok = st.token ? ` → <b>${JSON.stringify(st.token.piece)}</b>` : '';
  $('step-label').innerHTML = `step ${st.step} of ${n}: <b>${st.graph}</b> graph, ${st.n_tokens} token(s) at position ${st.n_past}, uid ${st.uid} ${reuse}${tok}`;
  const expected = state.graphs.get(st.n_tokens);
  const exp = expected ? expected.executedIds.length : '?';
  $('stats-count').textContent = `statistics for ${st.nodes.size} / ${exp} executed nodes` +
    (st.ms !== undefined ? `, step took ${st.ms.toFixed(2)} ms` : '') +
    (stream.dropped ? ` (${stream.dropped} events dropped: slow connection)` : '');
  document.querySelectorAll('#output .tok').forEach((el) => el.classList.toggle('cur', Number(el.dataset.step) === st.step));
}

async function showStep(i) {
  if (i < 0 || i >= stream.steps.length) return;
  state.stepIndex = i;
  await loadGraph(stream.steps[i].n_tokens);
  renderSteps();
  recolour();
  renderDetails();
}

let pending = false;
function refreshSoon() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    renderSteps();
    recolour();
    renderDetails();
  });
}

function onStream(kind, d) {
  if (kind === 'start') {
    $('output').innerHTML = `<span class="prompt">${escapeHtml(d.prompt)}</span>`;
    $('gen-status').textContent = `running: ${d.n_prompt} prompt tokens, up to ${d.n_predict} new`;
    state.stepIndex = null;
  } else if (kind === 'step') {
    if ($('step-follow').checked || state.stepIndex === null) showStep(d.step);
    else renderSteps();
  } else if (kind === 'token') {
    const span = document.createElement('span');
    span.className = 'tok';
    span.dataset.step = d.step;
    span.textContent = d.text;
    span.title = `token ${d.id}, step ${d.step}`;
    span.onclick = () => { $('step-follow').checked = false; showStep(d.step); };
    $('output').appendChild(span);
  } else if (kind === 'done') {
    $('gen-status').textContent = `done (${d.reason}): ${d.n_generated} tokens in ${d.n_steps} steps`;
    $('run').disabled = false;
  } else if (kind === 'error') {
    $('gen-status').innerHTML = `<span class="missing">error: ${escapeHtml(d.message)}</span>`;
    $('run').disabled = false;
  } else if (kind === 'hello') {
    $('run').disabled = stream.running;
  }
  refreshSoon();
}

function escapeHtml(s) {
  return String(s).replace(/[&<>]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;' }[c]));
}

// ---- controls ----
$('load-graph').onclick = async () => {
  const nt = $('graph-kind').value === 'decode' ? 1 : Math.max(2, Number($('graph-ntokens').value) || 2);
  try { await loadGraph(nt); } catch (e) { $('graph-title').textContent = e.message; }
};
$('graph-file').onchange = async (ev) => {
  const f = ev.target.files[0];
  if (!f) return;
  try {
    showModel(buildModel(JSON.parse(await f.text())), `file ${f.name}`);
  } catch (e) {
    $('graph-title').textContent = `${f.name}: ${e.message}`;
  }
};
$('expand-all').onclick = () => view.setAllCollapsed(false);
$('collapse-all').onclick = () => view.setAllCollapsed(true);
$('colour-mode').onchange = recolour;
$('step-slider').oninput = (e) => { $('step-follow').checked = false; showStep(Number(e.target.value)); };
$('step-prev').onclick = () => { $('step-follow').checked = false; showStep((state.stepIndex ?? 1) - 1); };
$('step-next').onclick = () => { $('step-follow').checked = false; showStep((state.stepIndex ?? -1) + 1); };
$('run').onclick = async () => {
  $('run').disabled = true;
  try {
    const body = { prompt: $('prompt').value, n_predict: Number($('n-predict').value), temp: Number($('temp').value) };
    await fetchJson('/generate', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  } catch (e) {
    $('gen-status').innerHTML = `<span class="missing">${escapeHtml(e.message)}</span>`;
    $('run').disabled = false;
  }
};
$('cmp-run').onclick = async () => {
  const q = new URLSearchParams({ a: $('cmp-a').value, b: $('cmp-b').value, tol: $('cmp-tol').value });
  try {
    const j = await fetchJson(`/compare?${q}`);
    const byStep = new Map();
    const nTokens = new Map();
    for (const d of j.nodes) {
      if (!byStep.has(d.step)) byStep.set(d.step, new Map());
      byStep.get(d.step).set(d.id, d);
      if (d.op === 'Embedding' && d.shape) nTokens.set(d.step, d.shape[1]);
    }
    state.compare = { json: j, byStep, nTokens };
    const fd = j.first_diverging;
    if (fd) $('cmp-step').value = fd.step;
    const step = Number($('cmp-step').value);
    if (nTokens.has(step)) await loadGraph(nTokens.get(step));
    $('colour-mode').value = 'compare';
    $('cmp-result').innerHTML = (fd
      ? `<span class="missing">first diverging node: step ${fd.step}, #${fd.id} ${escapeHtml(fd.name)}</span>`
      : `no node differs by more than ${j.tol}`) +
      `<br>${j.nodes.length} node outputs compared` +
      (j.only_in_a.length + j.only_in_b.length ? `, ${j.only_in_a.length} only in A, ${j.only_in_b.length} only in B` : '');
    if (fd) selectNode(fd.id);
    recolour();
  } catch (e) {
    $('cmp-result').innerHTML = `<span class="missing">${escapeHtml(e.message)}</span>`;
  }
};
$('cmp-step').onchange = async () => {
  const s = Number($('cmp-step').value);
  if (state.compare && state.compare.nTokens.has(s)) await loadGraph(state.compare.nTokens.get(s));
  recolour();
  renderDetails();
};

// For tests and the console: the page state.
window.viz = { state, view, stream, loadGraph, showStep, selectNode };

(async () => {
  try {
    const s = await fetchJson('/status');
    $('model-info').textContent = `${s.model} · ${s.arch} · ${s.n_layer} layers · n_ctx ${s.n_ctx}`;
    $('n-predict').max = s.max_predict;
    await loadGraph(1);
  } catch (e) {
    $('model-info').textContent = `server not reachable: ${e.message}`;
  }
  stream.connect();
})();
