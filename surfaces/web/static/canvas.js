// The graph canvas: a centre node and a ring around it, edges with their types, what a commit
// created or changed in colour. Names are drawn with fillText and said in the canvas's aria-label:
// text, never markup.

import { count, short } from "./dom.js";

function canvasName(n) {
  return n.properties && typeof n.properties.name === "string" ? n.properties.name : (n.external_key || "#" + n.id);
}

// Drawn in CSS pixels on a backing store the size of the canvas's box: labels stay 12 px
export function draw(canvas, center, nodes, edges, step) {
  const g = canvas.getContext("2d");
  const scale = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 860, height = canvas.clientHeight || 520;
  canvas.width = Math.round(width * scale);
  canvas.height = Math.round(height * scale);
  g.setTransform(scale, 0, 0, scale, 0, 0);
  g.clearRect(0, 0, width, height);
  canvas.setAttribute("role", "img");
  canvas.setAttribute("aria-label", "no nodes");
  if (!center) return [];
  const created = new Set(step ? step.nodes.created.map((n) => n.id) : []);
  const changed = new Set(step ? step.nodes.changed.map((c) => c.id) : []);
  const newEdges = new Set(step ? step.edges.created.map((e) => e.id) : []);
  const cx = width / 2, cy = height / 2, r = Math.min(cx, cy) - 70;
  const placed = [{ node: center, x: cx, y: cy }];
  nodes.forEach((n, i) => {
    const a = (2 * Math.PI * i) / Math.max(nodes.length, 1) - Math.PI / 2;
    placed.push({ node: n, x: cx + r * Math.cos(a), y: cy + r * Math.sin(a) });
  });
  const where = new Map(placed.map((p) => [p.node.id, p]));
  g.font = "12px system-ui, sans-serif";
  g.textAlign = "center";
  for (const e of edges) {
    const a = where.get(e.src), b = where.get(e.dst);
    if (!a || !b) continue;
    g.strokeStyle = newEdges.has(e.id) ? "#16803c" : "#9aa3b2";
    g.lineWidth = newEdges.has(e.id) ? 3 : 1.5;
    g.beginPath(); g.moveTo(a.x, a.y); g.lineTo(b.x, b.y); g.stroke();
    g.fillStyle = "#4b5466";
    g.fillText(e.type, (a.x + b.x) / 2, (a.y + b.y) / 2 - 4);
  }
  for (const p of placed) {
    const id = p.node.id;
    g.fillStyle = created.has(id) ? "#b7ebc6" : changed.has(id) ? "#ffd59e" : p === placed[0] ? "#cfe0ff" : "#eef1f5";
    g.strokeStyle = created.has(id) ? "#16803c" : changed.has(id) ? "#b06000" : "#2f6fde";
    g.lineWidth = created.has(id) || changed.has(id) ? 3 : 1.5;
    g.beginPath(); g.arc(p.x, p.y, 20, 0, 2 * Math.PI); g.fill(); g.stroke();
    g.fillStyle = "#1d2330";
    g.fillText(short(canvasName(p.node), 28), p.x, p.y + 34);
  }
  // what is drawn, said as text too: read by a screen reader (and by the tests)
  canvas.setAttribute("aria-label", `${count(placed.length, "node")}: ${placed.map((p) => short(canvasName(p.node), 28)).join(", ")}`);
  return placed;
}
