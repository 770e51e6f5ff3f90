// Drawing the graph with cytoscape + dagre: layers as compound boxes that collapse into one
// node each, nodes filled by op (or by a per-step statistic) and outlined by backend.
import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';
import { backendColour, heat, opColour } from './colours.js';

cytoscape.use(dagre);

const STYLE = [
  { selector: 'node', style: {
      shape: 'round-rectangle', 'background-color': 'data(fill)', 'border-color': 'data(stroke)',
      'border-width': 2, label: 'data(label)', 'text-wrap': 'wrap', 'text-valign': 'center',
      'font-size': 9, 'font-family': 'monospace', width: 'label', height: 'label', padding: 6 } },
  { selector: 'node.input', style: { shape: 'ellipse', 'border-style': 'double', 'border-width': 5 } },
  { selector: 'node.output', style: { shape: 'octagon', 'border-style': 'double', 'border-width': 5 } },
  { selector: 'node.fused', style: { 'border-style': 'dashed', 'border-width': 3 } },
  { selector: 'node.orphan', style: { opacity: 0.4, 'border-style': 'dotted' } },
  { selector: 'node.view', style: { 'background-opacity': 0.5 } },
  { selector: 'node.layer', style: {
      'background-color': '#eceff1', 'background-opacity': 0.5, 'border-color': '#90a4ae',
      'border-width': 1, label: 'data(label)', 'text-valign': 'top', 'text-halign': 'center',
      'font-size': 11, 'font-weight': 'bold', padding: 10 } },
  { selector: 'node.collapsed', style: {
      'background-color': '#cfd8dc', 'border-color': '#546e7a', 'border-width': 2, shape: 'round-rectangle',
      'font-size': 11 } },
  { selector: 'node.first-diverging', style: { 'border-color': '#d50000', 'border-width': 6 } },
  { selector: 'node:selected', style: { 'overlay-color': '#1565c0', 'overlay-opacity': 0.25 } },
  { selector: 'edge', style: {
      width: 1.2, 'line-color': '#90a4ae', 'target-arrow-color': '#90a4ae',
      'target-arrow-shape': 'triangle', 'curve-style': 'bezier', 'arrow-scale': 0.7 } },
];

export class GraphView {
  constructor(container, onSelect) {
    this.cy = cytoscape({ container, style: STYLE, wheelSensitivity: 0.3, minZoom: 0.05, maxZoom: 4 });
    this.model = null;
    this.collapsed = new Set();
    this.onSelect = onSelect;
    this.cy.on('tap', 'node', (ev) => {
      const d = ev.target.data();
      if (d.kind === 'layer' || d.kind === 'collapsed') {
        this.toggleLayer(d.layer);
      } else {
        this.onSelect(d.nid);
      }
    });
  }

  setModel(model, collapseAll) {
    this.model = model;
    this.collapsed = new Set(collapseAll ? model.layers : []);
    this.render();
  }

  toggleLayer(l) {
    if (this.collapsed.has(l)) this.collapsed.delete(l);
    else this.collapsed.add(l);
    this.render();
  }

  setAllCollapsed(on) {
    if (!this.model) return;
    this.collapsed = new Set(on ? this.model.layers : []);
    this.render();
  }

  render() {
    const m = this.model;
    const els = [];
    const vid = (id) => {
      const l = m.info[id].layer;
      return l !== null && this.collapsed.has(l) ? `L${l}` : `n${id}`;
    };
    for (const l of m.layers) {
      const count = m.info.filter((x) => x.layer === l).length;
      if (this.collapsed.has(l)) {
        els.push({ data: { id: `L${l}`, kind: 'collapsed', layer: l, label: `layer ${l}\n(${count} nodes)`,
                           fill: '#cfd8dc', stroke: '#546e7a' }, classes: 'collapsed' });
      } else {
        els.push({ data: { id: `G${l}`, kind: 'layer', layer: l, label: `layer ${l}` }, classes: 'layer' });
      }
    }
    for (const x of m.info) {
      const n = x.node;
      if (x.layer !== null && this.collapsed.has(x.layer)) continue;
      const shape = n.shape.filter((d, i) => i < 2 || d !== 1).join('×');
      els.push({
        data: { id: `n${n.id}`, nid: n.id, kind: 'node', parent: x.layer !== null ? `G${x.layer}` : undefined,
                label: `${n.name}\n${n.op} [${shape}]`, fill: opColour(n.op), stroke: backendColour(n.backend) },
        classes: x.role.join(' '),
      });
    }
    const seen = new Set();
    for (const n of m.nodes) {
      for (const s of n.src) {
        const a = vid(s), b = vid(n.id);
        if (a === b) continue;
        const key = `${a}>${b}`;
        if (seen.has(key)) continue;
        seen.add(key);
        els.push({ data: { id: `e${key}`, source: a, target: b } });
      }
    }
    this.cy.elements().remove();
    this.cy.add(els);
    this.cy.layout({ name: 'dagre', rankDir: 'TB', nodeSep: 12, rankSep: 22, edgeSep: 6, animate: false }).run();
    this.cy.fit(undefined, 20);
  }

  // fillFor(id) -> colour or null (null keeps the op colour).
  recolour(mode, fillFor) {
    if (!this.model) return;
    this.cy.batch(() => {
      this.cy.nodes('[kind = "node"]').forEach((el) => {
        const n = this.model.nodes[el.data('nid')];
        let fill = opColour(n.op);
        if (mode === 'backend') fill = backendColour(n.backend);
        else if (mode !== 'op') fill = fillFor(n.id) ?? '#ffffff';
        el.data('fill', fill);
      });
    });
  }

  markFirstDiverging(id) {
    this.cy.nodes().removeClass('first-diverging');
    if (id !== null && id !== undefined) this.cy.$id(`n${id}`).addClass('first-diverging');
  }

  select(id) {
    this.cy.nodes().unselect();
    const el = this.cy.$id(`n${id}`);
    if (el.nonempty()) el.select();
  }

  // Nodes drawn as themselves (not layer boxes): the graph's node count when all are expanded.
  drawnNodeCount() {
    return this.cy.nodes('[kind = "node"]').length;
  }
}

export { heat };
