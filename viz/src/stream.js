// The SSE stream of GET /events, folded into per-step records the page can step through:
// steps[i] = {step, graph, n_tokens, n_past, uid, reused, nodes: Map(id -> stats), n_nodes, token}.
export class RunStream {
  constructor(handlers) {
    this.h = handlers;
    this.steps = [];
    this.tokens = [];
    this.dropped = 0;
    this.running = false;
    this.done = null;
    this.es = null;
  }

  connect() {
    this.es = new EventSource('/events');
    const on = (name, fn) => this.es.addEventListener(name, (e) => fn(JSON.parse(e.data)));
    on('hello', (d) => { this.running = d.generating; this.h.changed('hello'); });
    on('start', (d) => {
      this.steps = [];
      this.tokens = [];
      this.dropped = 0;
      this.done = null;
      this.running = true;
      this.start = d;
      this.h.changed('start', d);
    });
    on('step', (d) => {
      this.steps[d.step] = { ...d, nodes: new Map(), n_nodes: null, token: null };
      this.h.changed('step', d);
    });
    on('node', (d) => {
      const s = this.steps[d.step];
      if (s) s.nodes.set(d.id, d);
      this.h.changed('node', d);
    });
    on('step_end', (d) => {
      const s = this.steps[d.step];
      if (s) { s.n_nodes = d.n_nodes; s.ms = d.ms; }
      this.h.changed('step_end', d);
    });
    on('token', (d) => {
      this.tokens.push(d);
      const s = this.steps[d.step];
      if (s) s.token = d;
      this.h.changed('token', d);
    });
    on('done', (d) => { this.running = false; this.done = d; this.h.changed('done', d); });
    on('error', (d) => { this.running = false; this.h.changed('error', d); });
    on('dropped', (d) => { this.dropped += d.count; this.h.changed('dropped', d); });
  }
}
