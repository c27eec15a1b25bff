// The Explore view's Cypher box: a statement and its $params run by plane.cypher, the rows as a
// table of text, the subgraph handed to the page's canvas. Pinned by the time-travel slider: a
// statement runs AS OF the slider's commit unless it names its own. Values go in as text only.

import { el, short, count } from "./dom.js";

const SHOWN = 500;  // rows put in the table: the rest are counted, not drawn
const CELL = 300;  // characters of a cell shown; the whole value on hover

// The statement with its comments blanked and its strings' insides masked, each character kept
// where it was: what is left is the statement's own syntax, so an "AS OF" inside a string or a
// comment is never taken for the clause (strings and quoted names read as openCypher reads them).
export function code(statement) {
  let out = "", i = 0;
  while (i < statement.length) {
    const c = statement[i], two = statement.slice(i, i + 2);
    if (two === "//" || two === "/*") {
      const close = two === "//" ? statement.indexOf("\n", i) : statement.indexOf("*/", i + 2);
      const end = close < 0 ? statement.length : two === "//" ? close : close + 2;
      out += statement.slice(i, end).replace(/[^\n]/g, " ");
      i = end;
    } else if (c === '"' || c === "'" || c === "`") {
      let j = i + 1;
      while (j < statement.length && statement[j] !== c) j += statement[j] === "\\" && c !== "`" ? 2 : 1;
      j = Math.min(j + 1, statement.length);
      out += c + "_".repeat(Math.max(j - i - 2, 0)) + (j - i > 1 ? statement[j - 1] : "");
      i = j;
    } else { out += c; i += 1; }
  }
  return out;
}

// AS OF is written last: a seq, an RFC 3339 time, TIME and milliseconds, or a parameter of one
const AS_OF = /\bAS\s+OF\s+((?:TIME\s+)?(?:\d+|"_*"|'_*'|\$(?:\w+|`_*`)))\s*;?\s*$/i;

// The statement's own AS OF (what follows the keywords, as typed), or null
export function ownAsOf(statement) {
  const found = AS_OF.exec(code(statement));
  if (!found) return null;
  const start = found.index + found[0].indexOf(found[1]);
  return statement.slice(start, start + found[1].length);
}

// What to send when the slider is at commit `seq` (null: at the head). A statement naming its own
// AS OF wins; another gets ` AS OF seq` on a line of its own (after a trailing comment, before a
// trailing semicolon). `own` and `pinned` say which commit it runs at.
export function pin(statement, seq) {
  const own = ownAsOf(statement);
  if (own !== null || seq === null || seq === undefined) return { statement, own, pinned: null };
  let body = statement;
  const last = code(statement).trimEnd();
  if (last.endsWith(";")) body = statement.slice(0, last.length - 1) + statement.slice(last.length);
  return { statement: `${body.trimEnd()}\nAS OF ${seq}`, own: null, pinned: seq };
}

// --------------------------------------------------------------------------- a cell's text

// A number as the server wrote it where JavaScript would print it otherwise: a float with no
// fraction (1.0 is not the integer 1 in Cypher), an integer past 2^53, an exponent's form
class Exact { constructor(source) { this.source = source; } }
export function exact(key, value, context) {
  return typeof value === "number" && context && typeof context.source === "string" && String(value) !== context.source
    ? new Exact(context.source) : value;
}

const NODE = "id,labels,properties", REL = "dst,id,properties,src,type", PATH = "edges,nodes";
function shape(value) { return Object.keys(value).sort().join(","); }

// A short summary of the visible properties: {name: "Ada", born: 1815, …}
function summary(props, room = 3) {
  const shown = Object.entries(props || {}).filter(([k]) => !k.startsWith("_"));
  if (!shown.length) return "";
  const parts = shown.slice(0, room).map(([k, v]) => `${k}: ${short(cellText(v, false), 40)}`);
  return ` {${parts.join(", ")}${shown.length > room ? ", …" : ""}}`;
}

function nodeText(n, props = true) {
  return `(#${n.id}${n.labels.map((l) => ":" + l).join("")})` + (props ? summary(n.properties) : "");
}
function relText(r, props = true) { return `[#${r.id}:${r.type}]` + (props ? summary(r.properties) : ""); }

function pathText(p) {
  let out = p.nodes.length ? nodeText(p.nodes[0], false) : "";
  p.edges.forEach((r, i) => {
    const from = p.nodes[i];
    const forward = !from || from.id === r.src;
    out += (forward ? "-" : "<-") + relText(r, false) + (forward ? "->" : "-") + (p.nodes[i + 1] ? nodeText(p.nodes[i + 1], false) : "()");
  });
  return out;
}

// One value of a row as text: a node `(#id:Label {…})`, a relationship `[#id:TYPE {…}]`, a path of
// both, a string as itself, anything else (lists and maps too) as JSON text.
export function cellText(value, top = true) {
  if (value === null || value === undefined) return "null";
  if (value instanceof Exact) return value.source;
  if (typeof value === "string") return top ? value : JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map((v) => cellText(v, false)).join(", ") + "]";
  if (typeof value === "object") {
    const kind = shape(value);
    if (kind === NODE && Array.isArray(value.labels)) return nodeText(value);
    if (kind === REL && typeof value.type === "string") return relText(value);
    if (kind === PATH && Array.isArray(value.nodes) && Array.isArray(value.edges)) return pathText(value);
    return "{" + Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${cellText(v, false)}`).join(", ") + "}";
  }
  return JSON.stringify(value);
}

function cell(value) {
  const full = cellText(value);
  return full.length > CELL ? el("td", { title: full }, short(full, CELL)) : el("td", {}, full);
}

// --------------------------------------------------------------------------- a write's counts

const CHANGES = [
  ["nodes_created", "node", "created"], ["nodes_deleted", "node", "deleted"],
  ["edges_created", "relationship", "created"], ["edges_deleted", "relationship", "deleted"],
  ["labels_added", "label", "added"], ["labels_removed", "label", "removed"],
  ["props_set", "property", "set", "properties"], ["props_removed", "property", "removed", "properties"],
];

export function changed(answer) {
  const said = CHANGES.filter(([field]) => answer[field]).map(([field, one, what, many]) => `${count(answer[field], one, many)} ${what}`);
  return said.length ? said.join(", ") : "nothing changed";
}

// --------------------------------------------------------------------------- the box

// The box for a page that has a plane, a slider and a canvas: `pinned()` the slider's commit (null
// at the head), `drawn(nodes, edges, write, step)` puts a subgraph on the canvas, `written()` follows
// a write (the slider's new head). `guarded` runs a handler the way every page does (sign-in, errors).
export function cypherBox({ rpc, guarded, plane, pinned, drawn, written }) {
  const query = el("textarea", { id: "cypher", class: "code", spellcheck: "false",
    placeholder: "MATCH (p:Person)-[r]->(q) RETURN p, type(r), q LIMIT 25" });
  const params = el("input", { id: "cypher-params", class: "code", size: 36, autocomplete: "off", spellcheck: "false",
    placeholder: '{"name": "Ada Lovelace"} (optional)' });
  const where = el("span", { id: "cypher-pin", class: "muted" });
  const note = el("div", { id: "cypher-note" });  // an error, under the statement it is about
  const out = el("div", { id: "cypher-out" });  // the answer, under the canvas
  const failed = (message) => { out.replaceChildren(); note.replaceChildren(el("pre", { id: "cypher-error", class: "error caret" }, message)); };

  let last = null;  // the last read that ran: the slider runs it again at its commit
  let turn = 0;  // a dragged slider sends many: only the newest read's answer is shown

  // Run a statement pinned by the slider; false when it failed (the error is shown)
  async function send(text, given, step = null) {
    const ran = pin(text, pinned());
    const mine = ++turn;
    note.replaceChildren(el("p", { class: "muted" }, "running…"));
    let answer;
    try {
      answer = await rpc("plane.cypher", { plane: plane(), query: ran.statement, params: given, lean: true }, exact);
      if (mine !== turn && !answer.write) return true;  // overtaken: a newer answer is on its way
    } catch (err) {
      if (err.code === -32001) throw err;  // not signed in: the page's own handling
      if (mine !== turn) return true;
      // a syntax error's line with its caret comes as the error's `excerpt`, under the one-line message
      const excerpt = err.data && typeof err.data.excerpt === "string" ? "\n" + err.data.excerpt : "";
      failed((err.message || String(err)) + excerpt);
      return false;
    }
    last = answer.write ? null : { text, given };
    if (answer.write) await written();
    note.replaceChildren();
    out.replaceChildren(...answered(answer, ran));
    drawn(answer.nodes || [], answer.edges || [], Boolean(answer.write), step);
    return true;
  }

  const run = guarded(async () => {
    let given;
    if (params.value.trim()) {
      try { given = JSON.parse(params.value); } catch (err) {
        return failed(`The params are not JSON (${err.message}): give an object such as {"name": "Ada Lovelace"}.`);
      }
      if (!given || typeof given !== "object" || Array.isArray(given)) return failed('The params must be a JSON object such as {"name": "Ada Lovelace"}.');
    }
    if (!query.value.trim()) return failed("Type a statement first, such as MATCH (n) RETURN n LIMIT 10.");
    await send(query.value, given);
  });

  query.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); run(); }
  });
  const repin = () => {
    const seq = pinned();
    where.textContent = seq === null ? "runs at the head" : `pinned by the slider: runs AS OF ${seq} (unless the statement says its own AS OF)`;
  };
  repin();
  const card = el("div", { class: "card", id: "cypher-box" },
    el("h3", {}, el("label", { for: "cypher" }, "Cypher")), query,
    el("div", { class: "row" }, el("label", { for: "cypher-params" }, "Params"), params,
      el("button", { id: "cypher-run", type: "button", onclick: run }, "Run"),
      el("span", { class: "muted" }, "Ctrl+Enter runs"), where),
    note);
  // the last read again, at the slider's commit now (`step`: what that commit changed, highlighted)
  const again = async (step) => last !== null && send(last.text, last.given, step);
  return { card, out, repin, again };
}

function answered(answer, ran) {
  const at = ran.own !== null ? `as of ${/^\d+$/.test(ran.own) ? "commit " : ""}${ran.own} (the statement's own AS OF)`
    : ran.pinned !== null ? `as of commit ${ran.pinned} (the slider)` : "at the head";
  const drawn = (answer.nodes || []).length;
  const head = el("p", { id: "cypher-ran" }, (answer.write ? `A write at the head: ${count(answer.count, "row")} returned` : `${count(answer.count, "row")} read ${at}`) +
    (drawn ? ` · ${count(drawn, "node")} and ${count((answer.edges || []).length, "relationship")} on the canvas` : ""));
  const parts = [head];
  if (answer.write) parts.push(el("p", { id: "cypher-counts", class: "created" }, changed(answer)));
  const columns = answer.columns || [];
  if (columns.length) {
    const rows = answer.rows.slice(0, SHOWN);
    parts.push(el("table", { id: "cypher-rows" },
      el("tr", {}, columns.map((c) => el("th", {}, c))),
      rows.map((row) => el("tr", {}, row.map(cell)))));
    if (answer.rows.length > rows.length) parts.push(el("p", { class: "muted" }, `The first ${rows.length} of ${count(answer.rows.length, "row")} shown.`));
  }
  return parts;
}
