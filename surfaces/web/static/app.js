// The drsg dashboard: plain JS modules, no build step. Every value from the graph goes into the
// page as text (textContent, createTextNode, canvas fillText), never as markup.

import { el, text, short, count } from "./dom.js";
import { cypherBox } from "./cypher.js";
import { draw } from "./canvas.js";

const main = document.getElementById("main");
const status = document.getElementById("status");
const TOKEN = "drsg-token";
const PLANE = "drsg-plane";
let stop = [];  // what the current page must undo when another one opens (timers, feeds)

// --------------------------------------------------------------------------- helpers

function show(...nodes) { main.replaceChildren(...nodes); }
function say(text, kind = "") { status.className = kind; status.textContent = text || ""; }
function plane() { return sessionStorage.getItem(PLANE) || "startup"; }

function authHeaders() {
  const token = sessionStorage.getItem(TOKEN);
  return token ? { Authorization: "Bearer " + token } : {};
}

class RpcError extends Error {
  constructor(code, message, data) { super(message); this.code = code; this.data = data; }
}

// `reviver`: JSON.parse's, for an answer read with more care than numbers as JavaScript's
async function rpc(method, params = {}, reviver = undefined) {
  const response = await fetch("/rpc", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...authHeaders() },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = reviver ? JSON.parse(await response.text(), reviver) : await response.json();
  if (body.error) throw new RpcError(body.error.code, body.error.message, body.error.data);
  return body.result;
}

function guarded(fn) {
  return async (...args) => {
    say("");
    try { await fn(...args); } catch (err) {
      if (err.code === -32001) return login(err.message);
      say(err.message || String(err), "error");
    }
  };
}

function visible(props, hidden) {
  return Object.fromEntries(Object.entries(props || {}).filter(([k]) => hidden || !k.startsWith("_")));
}

// A value cell: a long value shows its start, with the whole of it on hover and one click away
function valueCell(value, limit) {
  const full = text(value);
  if (full.length <= limit) return el("td", {}, full);
  const shown = el("span", { title: full }, short(full, limit));
  const more = el("button", { class: "link", type: "button", onclick: () => { shown.textContent = full; more.remove(); } },
    `show all ${count(full.length, "character")}`);
  return el("td", {}, shown, " ", more);
}

// Properties as a key | value table (values as text), the same on every page
function propsTable(props, hidden = false, limit = 300) {
  const rows = Object.entries(visible(props, hidden)).map(([k, v]) => el("tr", {}, el("td", {}, k), valueCell(v, limit)));
  return el("table", { class: "kv" }, rows.length ? rows : el("tr", {}, el("td", { class: "none", colspan: 2 }, "(no properties)")));
}

function planePicker(onChange) {
  const select = el("select", { id: "plane", onchange: () => { sessionStorage.setItem(PLANE, select.value); onChange(); } });
  rpc("plane.list").then((planes) => {
    for (const p of planes) select.append(el("option", { value: p.name }, p.name));
    select.value = plane();
  }).catch(() => {});
  return el("label", {}, "Plane ", select);
}

// --------------------------------------------------------------------------- login

function login(message) {
  if (sessionStorage.getItem(TOKEN)) sessionStorage.removeItem(TOKEN);  // refused: never sent again
  document.getElementById("who").textContent = "not signed in";
  show(el("div", { class: "card" },
    el("h2", {}, "Sign in"),
    el("p", {}, message || "This server needs its token (the DRSG_TOKEN it was started with)."),
    el("div", { class: "row" },
      el("input", { id: "token", type: "password", placeholder: "token", autocomplete: "off" }),
      el("button", { id: "signin", onclick: () => {
        sessionStorage.setItem(TOKEN, document.getElementById("token").value.trim());
        route();
      } }, "Sign in"))));
}

// --------------------------------------------------------------------------- planes and stats

async function planesPage() {
  const stats = el("div", { id: "stats", class: "card" });
  const table = el("div", { id: "planes" });
  async function refresh() {
    const [s, planes] = await Promise.all([rpc("db.stats"), rpc("plane.list")]);
    stats.replaceChildren(el("strong", {}, `${count(s.planes, "plane")} · ${count(s.nodes, "node")} · ${count(s.edges, "edge")} · ` +
      `${count(s.indexes, "index", "indexes")} · commit ${s.commit_seq} · ${count(s.file_size, "byte")}`));
    table.replaceChildren(el("table", {},
      el("tr", {}, el("th", {}, "plane"), el("th", {}, "nodes"), el("th", {}, "edges"), el("th", {}, "")),
      planes.map((p) => el("tr", {},
        el("td", {}, p.name), el("td", {}, p.nodes), el("td", {}, p.edges),
        el("td", {}, el("button", { class: "quiet", onclick: () => { sessionStorage.setItem(PLANE, p.name); location.hash = "#explore"; } }, "explore"))))));
  }
  show(el("h2", {}, "Planes"), stats, table);
  await refresh();
  const timer = setInterval(guarded(refresh), 3000);
  stop.push(() => clearInterval(timer));
}

// --------------------------------------------------------------------------- explore with time travel

async function explorePage() {
  const ref = el("input", { id: "node", placeholder: "@key or id (empty: the best-connected nodes)", size: 34, value: sessionStorage.getItem("drsg-node") || "" });
  const slider = el("input", { id: "slider", type: "range", min: 0, max: 0, value: 0 });
  const at = el("span", { id: "at", class: "muted" });
  const canvas = el("canvas", { id: "graph", width: 860, height: 520 });
  const side = el("div", { id: "side" });
  const provenance = el("input", { id: "provenance", type: "checkbox", checked: sessionStorage.getItem("drsg-hidden") === "1" });
  const changes = el("div", { id: "changes", class: "card" });
  let shown = null;  // what the canvas holds: positions for clicks
  let seqs = [];  // the plane's commits, oldest first: the slider's stops
  let following = false;  // the canvas shows a Cypher read: the slider runs it again at its commit
  const pinned = () => (Number(slider.value) < seqs.length - 1 ? seqs[Number(slider.value)] : null);  // null: the head
  const cypher = cypherBox({ rpc, guarded, plane, pinned, drawn: drawCypher, written: async () => { await latest(); slider.value = slider.max; await render(); } });

  async function latest() {
    const found = [];
    let after = 0, head = 0;
    do {  // the plane's commits, a page of the log at a time
      const page = await rpc("plane.changes", { plane: plane(), after, limit: 10000 });
      for (const c of page.commits) found.push(c.seq);
      after = page.next; head = page.head;
    } while (after < head);
    seqs = found.length ? found : [head];
    slider.max = seqs.length - 1;
    cypher.repin();
    return slider.max;
  }

  async function render() {
    const want = ref.value.trim();
    sessionStorage.setItem("drsg-node", want);
    const stop = Number(slider.value);
    const seq = seqs[stop];
    const before = stop > 0 ? seqs[stop - 1] : 0;  // the plane's previous commit (none between touched it)
    at.textContent = `as of commit ${seq} (the plane's commit ${stop + 1} of ${seqs.length})`;
    cypher.repin();
    const step = await rpc("plane.diff", { plane: plane(), from: before, to: seq, lean: true, hidden: false });
    changes.replaceChildren(el("h3", {}, `What commit ${seq} changed in ${plane()}`), stepList(step));
    if (following && await cypher.again(step)) return;
    if (!want) return seeded(seq, step);
    const byKey = want.startsWith("@") || !/^\d+$/.test(want);
    const params = byKey ? { key: want.replace(/^@/, "") } : { id: Number(want) };
    const node = await rpc("node.get", { plane: plane(), ...params, as_of: seq, lean: true });
    if (!node) {
      shown = null;
      draw(canvas, null, [], [], step);
      side.replaceChildren(el("p", { id: "absent" }, `No node ${want} in plane ${plane()} as of commit ${seq}.`));
    } else {
      const around = await rpc("graph.expand", { plane: plane(), id: node.id, direction: "both", as_of: seq, lean: true, limit: 40 });
      shown = draw(canvas, node, around.nodes, around.edges, step);
      side.replaceChildren(
        el("h3", { id: "title" }, `#${node.id}` + (node.external_key ? ` @${node.external_key}` : "")),
        el("p", {}, "labels: " + node.labels.join(", ")),
        propsTable(node.properties, provenance.checked),
        el("p", { id: "around", class: "muted" }, `${count(around.nodes.length, "neighbour")} (click one on the canvas to move there)`));
    }
  }

  // No node named: upstream's Explore start, the plane's top nodes by degree as of this commit
  async function seeded(seq, step) {
    const seed = await rpc("graph.seed", { plane: plane(), order: "degree", limit: SEEDS, as_of: seq, lean: true });
    shown = seed.nodes.length ? draw(canvas, seed.nodes[0], seed.nodes.slice(1), seed.edges, step) : draw(canvas, null, [], [], step);
    const pick = (n) => () => { following = false; ref.value = n.external_key ? "@" + n.external_key : String(n.id); guarded(render)(); };
    side.replaceChildren(
      el("h3", { id: "title" }, seed.total > seed.nodes.length
        ? `The ${count(seed.nodes.length, "best-connected node")} of ${seed.total} as of commit ${seq}`
        : `${count(seed.nodes.length, "node")} by degree as of commit ${seq}`),
      seed.nodes.length
        ? el("ol", { id: "seeds" }, seed.nodes.map((n) => el("li", {},
          el("button", { class: "link", type: "button", "data-id": n.id, onclick: pick(n) }, nodeName(n)), ` · ${count(n.score, "edge")}`)))
        : el("p", { class: "muted" }, `Plane ${plane()} has no nodes as of commit ${seq}.`),
      el("p", { class: "muted" }, "Name a node (@key or an id), or pick one here or on the canvas."));
  }

  // A Cypher statement's subgraph on the canvas (a write that answered none leaves it as it is)
  function drawCypher(nodes, edges, write, step) {
    if (write && !nodes.length) return;
    following = !write;
    const some = nodes.slice(0, DRAWN);
    shown = draw(canvas, some[0] || null, some.slice(1), edges, step);
    side.replaceChildren(el("h3", { id: "title" }, "The Cypher statement's subgraph"),
      el("p", {}, `${count(nodes.length, "node")} and ${count(edges.length, "relationship")}` + (nodes.length > some.length ? `, the first ${some.length} drawn` : "")),
      el("p", { class: "muted" }, nodes.length ? "Click a node on the canvas to move there." : "Nothing matched."));
  }

  canvas.addEventListener("click", (event) => {
    if (!shown) return;
    const box = canvas.getBoundingClientRect();
    const x = event.clientX - box.left, y = event.clientY - box.top;  // draw() places in CSS pixels
    const hit = shown.find((p) => (p.x - x) ** 2 + (p.y - y) ** 2 < 22 ** 2);
    if (hit) { following = false; ref.value = hit.node.external_key ? "@" + hit.node.external_key : String(hit.node.id); guarded(render)(); }
  });
  slider.addEventListener("input", guarded(render));
  // a node named, picked or another plane: the canvas is Explore's again, at the head
  const fresh = guarded(async () => { following = false; await latest(); slider.value = slider.max; await render(); });
  provenance.addEventListener("change", () => { sessionStorage.setItem("drsg-hidden", provenance.checked ? "1" : "0"); guarded(render)(); });
  show(el("h2", {}, "Explore"),
    el("div", { class: "row" }, planePicker(fresh),
      el("label", { for: "node" }, "Node"), ref,
      el("button", { id: "go", onclick: fresh }, "Show")),
    el("div", { class: "timetravel" },
      el("div", { class: "row" }, el("label", { for: "slider" }, "Time travel"), at, el("label", {}, provenance, " show _ properties")),
      slider),
    cypher.card,
    el("div", { class: "cols" }, el("div", {}, canvas, changes), side),
    cypher.out);
  await latest();
  slider.value = slider.max;
  await render();
}

const SEEDS = 12;  // nodes on the first canvas: a legible skeleton, as upstream's Explore seeds it
const DRAWN = 60;  // a Cypher subgraph's nodes drawn at most: a ring stays legible

function nodeName(n) {
  const name = n.properties && typeof n.properties.name === "string" ? n.properties.name : null;
  return (n.external_key ? `@${n.external_key}` : `#${n.id}`) + (name && name !== n.external_key ? ` (${short(name, 40)})` : "");
}

function stepList(step) {
  if (!step) return el("p", { class: "muted" }, "The first commit.");
  const items = [];
  const name = (n) => `#${n.id}` + (n.external_key ? ` @${n.external_key}` : "");
  for (const n of step.nodes.created) items.push(el("li", { class: "created" }, "+ node " + name(n)));
  for (const n of step.nodes.deleted) items.push(el("li", { class: "deleted" }, "− node " + name(n)));
  for (const c of step.nodes.changed) items.push(el("li", { class: "changed" }, `~ node ${name(c.after)}: ${c.changed.join(", ") || "labels"}`));
  for (const e of step.edges.created) items.push(el("li", { class: "created" }, `+ edge #${e.src} -[${e.type}]-> #${e.dst}`));
  for (const e of step.edges.deleted) items.push(el("li", { class: "deleted" }, `− edge #${e.src} -[${e.type}]-> #${e.dst}`));
  for (const c of step.edges.changed) items.push(el("li", { class: "changed" }, `~ edge #${c.id}: ${c.changed.join(", ")}`));
  return items.length ? el("ul", { id: "step" }, items) : el("p", { class: "muted", id: "step" }, "Nothing in this plane.");
}

// --------------------------------------------------------------------------- live feed

async function feedPage() {
  const list = el("ul", { id: "feed", class: "feed" });
  const state = el("span", { id: "feed-state", class: "muted" }, "connecting…");
  const open = () => {
    for (const s of stop.splice(0)) s();
    list.replaceChildren();
    rpc("plane.history", { plane: plane() }).then((w) => {
      const token = sessionStorage.getItem(TOKEN);
      const query = new URLSearchParams({ from: String(Math.max(1, w.latest - 9)), resolved: "5" });
      if (token) query.set("token", token);
      const source = new EventSource(`/feed/${encodeURIComponent(plane())}?${query}`);
      source.addEventListener("open", () => { state.textContent = `following ${plane()} live`; });
      source.addEventListener("error", () => { state.textContent = "disconnected; retrying…"; });
      source.addEventListener("change", (event) => {
        const data = JSON.parse(event.data);
        const what = data.changes.map((c) => `${c.kind} ${c.op} #${c.id}` + (c.record && c.record.external_key ? ` @${c.record.external_key}` : ""));
        list.prepend(el("li", { "data-seq": data.seq },
          el("strong", {}, `seq ${data.seq}`), ` · ${new Date(data.ts).toISOString()} · `, short(what.join(", "), 300)));
      });
      stop.push(() => source.close());
    }).catch(guarded(async (err) => { throw err; }));
  };
  show(el("h2", {}, "Live feed"), el("div", { class: "row" }, planePicker(open), state), list);
  open();
}

// --------------------------------------------------------------------------- search and hybrid

async function searchPage() {
  const q = el("input", { id: "q", placeholder: "what to look for", size: 28 });
  const mode = el("select", { id: "mode" }, ["hybrid", "keyword", "vector"].map((m) => el("option", { value: m }, m)));
  // typed or picked: the choices come from the plane's schema (plane.catalog) and its indexes
  const label = el("input", { id: "label", list: "labels", placeholder: "any label", size: 14, autocomplete: "off" });
  const kw = el("input", { id: "kwprop", list: "kwprops", placeholder: "a keyword-indexed property", size: 22, autocomplete: "off" });
  const vec = el("input", { id: "vecprop", list: "vecprops", placeholder: "a vector-indexed property", size: 22, autocomplete: "off" });
  const lists = { labels: el("datalist", { id: "labels" }), keyword: el("datalist", { id: "kwprops" }), vector: el("datalist", { id: "vecprops" }) };
  const index = el("select", { id: "index" });
  const hops = el("input", { id: "hops", type: "number", min: 0, max: 3, value: 0, size: 3 });
  const out = el("div", { id: "results" });
  let schema = { labels: {} }, indexes = { keyword: [], vector: [] };

  // The property choices for the label typed (all labels when none): indexed ones first, then the rest
  function offerProperties() {
    const which = label.value.trim();
    for (const kind of ["keyword", "vector"]) {
      const indexed = indexes[kind].filter((i) => !which || i.label === which);
      const known = new Set(indexed.map((i) => i.property));
      const rest = Object.entries(schema.labels).filter(([name]) => !which || name === which)
        .flatMap(([, entry]) => Object.keys(entry.properties)).filter((name) => !known.has(name) && (known.add(name), true));
      lists[kind].replaceChildren(
        ...indexed.map((i) => el("option", { value: i.property }, `${kind} index on ${i.label}.${i.property}`)),
        ...rest.map((name) => el("option", { value: name }, `not indexed for ${kind} search`)));
    }
  }

  async function offer() {
    [schema, indexes] = await Promise.all([rpc("plane.catalog", { plane: plane() }), rpc("plane.indexes", { plane: plane() })]);
    lists.labels.replaceChildren(...Object.entries(schema.labels).map(([name, entry]) => el("option", { value: name }, count(entry.count, "node"))));
    const all = [...indexes.keyword.map((i) => ({ ...i, kind: "keyword" })), ...indexes.vector.map((i) => ({ ...i, kind: "vector" }))];
    index.replaceChildren(el("option", { value: "" }, all.length ? `choose one of ${count(all.length, "index", "indexes")}…` : "no index declared yet (drsg index keyword / ensure)"),
      ...all.map((i, n) => el("option", { value: String(n) }, `${i.label}.${i.property} (${i.kind})`)));
    index.onchange = () => {
      const i = all[Number(index.value)];
      if (!index.value || !i) return;
      label.value = i.label;
      (i.kind === "keyword" ? kw : vec).value = i.property;
      if (mode.value !== "hybrid") mode.value = i.kind;
      offerProperties();
    };
    offerProperties();
  }
  label.addEventListener("input", offerProperties);
  const field = (text, input) => el("span", { class: "field" }, el("label", { for: input.id }, text), input);
  const run = guarded(async () => {
    const base = { plane: plane(), label: label.value || undefined, k: 10, lean: true };
    let hits;
    if (mode.value === "hybrid") {
      const result = await rpc("plane.hybrid", { ...base, q: q.value, keyword_prop: kw.value || undefined,
        vector_prop: vec.value || undefined, graph_hops: Number(hops.value) || undefined });
      hits = result.results;
    } else {
      const property = mode.value === "keyword" ? kw.value : vec.value;
      hits = (await rpc("plane.search", { ...base, property, query: q.value, kind: mode.value })).map((h) => ({ ...(h.node || h), score: h.score }));
    }
    const channel = (h, c) => (h.channels && h.channels[c] !== null && h.channels[c] !== undefined ? Number(h.channels[c]).toFixed(4) : "—");
    out.replaceChildren(el("table", {},
      el("tr", {}, el("th", {}, "node"), el("th", {}, "score"), el("th", {}, "vector"), el("th", {}, "keyword"), el("th", {}, "graph"), el("th", {}, "properties")),
      hits.map((h) => el("tr", {},
        el("td", {}, `#${h.id}` + (h.external_key ? ` @${h.external_key}` : "")),
        el("td", {}, Number(h.score).toFixed(4)),
        el("td", {}, channel(h, "vector")), el("td", {}, channel(h, "keyword")), el("td", {}, channel(h, "graph")),
        el("td", { class: "props" }, propsTable(h.properties, false, 160))))));
  });
  show(el("h2", {}, "Search and hybrid"),
    el("div", { class: "row" }, planePicker(guarded(offer)), field("Index", index)),
    el("div", { class: "row fields" }, field("Mode", mode), field("Query", q), field("Label", label), field("Keyword property", kw),
      field("Vector property", vec), field("Graph hops", hops), el("button", { id: "run", onclick: run }, "Search")),
    lists.labels, lists.keyword, lists.vector,
    el("p", { class: "muted" }, "Hybrid: each hit's fused score with what each channel (vector, keyword, graph) gave it."),
    out);
  await offer();
}

// --------------------------------------------------------------------------- ask

async function askPage() {
  const question = el("textarea", { id: "question", placeholder: "Ask the plane a question in plain language" });
  const dry = el("input", { id: "dry", type: "checkbox" });
  const out = el("div", { id: "answer" });
  const run = guarded(async () => {
    say("asking…");
    const a = await rpc("plane.ask", { plane: plane(), question: question.value, dry_run: dry.checked });
    say("");
    out.replaceChildren(
      el("div", { class: "card" }, el("h3", {}, "Plans"), el("pre", { id: "plans" }, JSON.stringify(a.plans, null, 2))),
      el("div", { class: "card" }, el("h3", {}, `Results (${a.count})`),
        el("ul", {}, (a.results || []).map((n) => el("li", {}, `#${n.id}` + (n.external_key ? ` @${n.external_key}` : ""), propsTable(n.properties, false, 160))))),
      el("div", { class: "card" }, el("h3", {}, "Trace"), el("pre", { id: "trace" }, JSON.stringify(a.trace, null, 2))),
      el("p", { class: "muted" }, `${count(a.usage.calls, "model call")}, ${a.usage.prompt_tokens} + ${count(a.usage.completion_tokens, "token")}`));
  });
  show(el("h2", {}, "Ask"), el("div", { class: "row" }, planePicker(() => {})), question,
    el("div", { class: "row" }, el("label", {}, dry, " dry run (plans only)"), el("button", { id: "ask", onclick: run }, "Ask")), out);
}

// --------------------------------------------------------------------------- AIgest

// The chat presets a request may name: the server's one list, as its schema of digest.run gives it.
let presets = null;
async function chatPresets() {
  if (presets === null) {
    const method = (await rpc("rpc.discover")).methods.find((m) => m.name === "digest.run");
    const param = method ? method.params.find((p) => p.name === "chat") : null;
    presets = param && Array.isArray(param.schema.enum) ? param.schema.enum.map(String) : [];
  }
  return presets;
}

const DOCS = ".docx,.pptx,.xlsx,.xls,.odt,.ods,.odp,.rtf,.epub,.csv,.pdf,.md,.markdown,.txt,.html,.htm";

async function digestPage() {
  const file = el("input", { id: "file", type: "file", accept: DOCS });
  const paste = el("textarea", { id: "paste", placeholder: "…or paste text here" });
  const mode = el("select", { id: "dmode" }, ["coarse", "fine", "super"].map((m) => el("option", { value: m }, m)));
  mode.value = "fine";
  const warn = el("span", { id: "cost", class: "warn" });
  mode.addEventListener("change", () => {
    warn.textContent = mode.value === "super" ? "super runs extra clean-up passes: several times the model calls (and cost) of fine" : "";
  });
  const chat = el("select", { id: "chat" }, el("option", { value: "" }, "server's chat model"));
  chatPresets().then((names) => chat.append(...names.map((c) => el("option", { value: c }, c))), () => {});
  const noEmbed = el("input", { id: "noembed", type: "checkbox" });
  const preview = el("div", { id: "preview" });
  const url = el("input", { id: "url", placeholder: "https://… (the crawler follows links under [fetch]'s budgets)", size: 36 });
  const topic = el("input", { id: "topic", placeholder: "topic (optional)", size: 18 });
  const crawled = el("div", { id: "crawled" });
  let proposal = null;
  let crawl = null; // {root, pages, dropped} from POST /digest/fetch

  // POST /digest/fetch answers NDJSON: progress lines, then {pages, dropped} (or {error}).
  const fetchUrl = guarded(async () => {
    if (!url.value.trim()) throw new Error("type a URL first");
    say("fetching…");
    const response = await fetch("/digest/fetch", {
      method: "POST",
      headers: { "Content-Type": "application/json", ...authHeaders() },
      body: JSON.stringify({ url: url.value.trim(), topic: topic.value.trim() || undefined }),
    });
    if (response.status === 401) throw new RpcError(-32001, "sign in first");
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let pending = "", last = null;
    for (;;) {
      const { value, done } = await reader.read();
      pending += decoder.decode(value || new Uint8Array(), { stream: !done });
      const lines = pending.split("\n");
      pending = lines.pop();
      for (const line of lines.filter((l) => l.trim())) {
        const message = JSON.parse(line);
        if (message.progress) say(`fetched ${message.progress.done} of ${message.progress.total}: ${message.progress.url}`);
        else last = message;
      }
      if (done) break;
    }
    if (pending.trim()) last = JSON.parse(pending);
    if (!last || last.error) throw new Error(last ? text(last.error) : `the crawl answered HTTP ${response.status}`);
    crawl = { root: url.value.trim(), pages: last.pages, dropped: last.dropped };
    say("");
    crawled.replaceChildren(
      el("h3", {}, `Pages (${last.pages.filter((pg) => pg.kept).length} kept of ${last.pages.length} fetched)`),
      el("table", { id: "pages" }, el("tr", {}, el("th", {}, ""), el("th", {}, "score"), el("th", {}, "depth"), el("th", {}, "size"), el("th", {}, "title"), el("th", {}, "URL")),
        last.pages.map((pg, i) => el("tr", {},
          el("td", {}, el("input", { type: "checkbox", checked: pg.kept, "data-page": i, "aria-label": pg.url })),
          el("td", {}, pg.score.toFixed(3)), el("td", {}, String(pg.depth)), el("td", {}, String(pg.size)),
          el("td", {}, short(pg.title, 60)), el("td", {}, short(pg.url, 80))))),
      el("h3", {}, `Dropped (${last.dropped.length})`),
      el("ul", { id: "dropped" }, last.dropped.map((d) => el("li", {}, `${short(d.url, 80)} — ${d.reason}`))),
      el("p", { class: "muted" }, "Preview digests the ticked pages as one document."));
  });

  const propose = guarded(async () => {
    let text = paste.value, source = "pasted text";
    const ticked = crawl ? [...crawled.querySelectorAll("input[data-page]")].filter((c) => c.checked) : [];
    if (!file.files.length && ticked.length) {
      text = ticked.map((c) => crawl.pages[Number(c.dataset.page)].block).join("\n\n");
      source = crawl.root;
    }
    if (file.files.length) {
      const f = file.files[0];
      say(`converting ${f.name}…`);
      const response = await fetch(`/ui/convert?name=${encodeURIComponent(f.name)}`, { method: "POST", headers: authHeaders(), body: f });
      const body = await response.json();
      if (!response.ok) throw new RpcError(body.error ? body.error.code : response.status, body.error ? body.error.message : "upload refused");
      text = body.text; source = f.name;
    }
    if (!text.trim()) throw new Error("choose a file or paste some text first");
    say("asking the model for a preview…");
    proposal = await rpc("digest.run", { plane: plane(), text, source, mode: mode.value, chat: chat.value || undefined, no_embed: noEmbed.checked || undefined });
    say("");
    renderPreview();
  });

  function renderPreview() {
    const r = proposal.report || {};
    preview.replaceChildren(
      el("p", {}, `${count(proposal.nodes.length, "entity", "entities")} and ${count(proposal.edges.length, "relation")} proposed from ${proposal.source}` +
        (r.chat_requests !== undefined ? ` (${count(r.chat_requests, "model call")})` : "") + ". Nothing is written until you choose."),
      el("h3", {}, "Entities"),
      el("table", { id: "pnodes" }, el("tr", {}, el("th", {}, ""), el("th", {}, "key"), el("th", {}, "label"), el("th", {}, "properties")),
        proposal.nodes.map((n, i) => el("tr", {},
          el("td", {}, el("input", { type: "checkbox", checked: true, "data-node": i, "aria-label": n.key })),
          el("td", {}, n.key), el("td", {}, n.label), el("td", { class: "props" }, propsTable(n.properties, false, 160))))),
      el("h3", {}, "Relations"),
      el("table", { id: "pedges" }, el("tr", {}, el("th", {}, ""), el("th", {}, "from"), el("th", {}, "type"), el("th", {}, "to")),
        proposal.edges.map((e, i) => el("tr", {},
          el("td", {}, el("input", { type: "checkbox", checked: true, "data-edge": i, "data-src": e.src, "data-dst": e.dst, "aria-label": `${e.src} ${e.type} ${e.dst}` })),
          el("td", {}, e.src), el("td", {}, e.type), el("td", {}, e.dst)))),
      el("div", { class: "row" }, el("button", { id: "write", onclick: write }, "Write the chosen ones"),
        el("span", { class: "muted" }, "one commit, no further model call")));
  }

  const write = guarded(async () => {
    const nodes = [...preview.querySelectorAll("input[data-node]")].filter((c) => c.checked).map((c) => proposal.nodes[Number(c.dataset.node)]);
    const edges = [...preview.querySelectorAll("input[data-edge]")].filter((c) => c.checked).map((c) => proposal.edges[Number(c.dataset.edge)]);
    const written = await rpc("digest.write", { plane: plane(), nodes, edges, source: proposal.source, run: proposal.run, model: proposal.model });
    const stats = await rpc("db.stats");
    preview.prepend(el("p", { id: "written", class: "created" },
      `Wrote ${count(written.nodes_written, "entity", "entities")} (${written.nodes_updated} updated) and ${count(written.edges_written, "relation")} in commit ${stats.commit_seq}.`));
  });

  show(el("h2", {}, "AIgest"),
    el("div", { class: "card" },
      el("div", { class: "row" }, planePicker(() => {}), el("label", {}, "Document ", file)),
      paste,
      el("div", { class: "row" }, el("label", {}, "URL ", url), topic, el("button", { id: "fetch", onclick: fetchUrl }, "Fetch")),
      crawled,
      el("div", { class: "row" }, el("label", {}, "Mode ", mode), warn, el("label", {}, "Chat ", chat),
        el("label", {}, noEmbed, " no embeddings"), el("span", { class: "muted" }, "embeddings: the server's own embedder")),
      el("button", { id: "propose", onclick: propose }, "Preview")),
    preview);
}

// --------------------------------------------------------------------------- plugins

async function pluginsPage() {
  const plugins = await rpc("plugin.list");
  const list = Array.isArray(plugins) ? plugins : plugins.plugins || [];
  show(el("h2", {}, "Plugins"), list.length
    ? el("table", { id: "plugins" }, el("tr", {}, el("th", {}, "name"), el("th", {}, "version"), el("th", {}, "extensions"), el("th", {}, "sha256")),
      list.map((p) => el("tr", {}, el("td", {}, p.name), el("td", {}, p.version), el("td", {}, (p.extensions || []).map((e) => "." + e).join(" ")), el("td", {}, short(p.sha256, 20)))))
    : el("p", { id: "plugins" }, "No parser plugins installed (`drsg plugin install FILE`)."));
}

// --------------------------------------------------------------------------- catalog

async function catalogPage() {
  const connections = await rpc("catalog.list");
  const request = el("textarea", { id: "findreq", placeholder: '{"entity": "用户", "fields": ["密码"], "where": {"name": "张三"}}' });
  const which = el("select", { id: "conn" }, connections.map((c) => el("option", { value: c.name }, c.name)));
  const out = el("div", { id: "found" });
  const run = guarded(async () => {
    let asked;
    try { asked = JSON.parse(request.value); } catch { throw new Error("the request is not JSON: {\"entity\": …, \"fields\": […], \"where\": {…}}"); }
    const a = await rpc("catalog.find", { ...asked, connection: which.value });
    const head = a.status === "ok" ? `${a.table}: ${count(a.statements, "statement")}` : a.status;
    out.replaceChildren(el("h3", {}, head),
      a.sql ? el("pre", { id: "sql" }, a.sql) : "",
      a.columns ? el("table", { id: "rows" }, el("tr", {}, a.columns.map((c) => el("th", {}, c))),
        (a.rows || []).map((r) => el("tr", {}, r.map((v) => el("td", {}, text(v)))))) : "",
      a.candidates ? el("ul", { id: "candidates" }, a.candidates.map((c) => el("li", {}, short(c, 160)))) : "");
  });
  show(el("h2", {}, "Catalog connections"),
    connections.length
      ? el("table", { id: "connections" }, el("tr", {}, el("th", {}, "name"), el("th", {}, "engine"), el("th", {}, "DSN"), el("th", {}, "plane"), el("th", {}, "sensitive columns")),
        connections.map((c) => el("tr", {}, el("td", {}, c.name), el("td", {}, c.engine), el("td", {}, c.dsn), el("td", {}, c.plane), el("td", {}, c.sensitive_columns))))
      : el("p", { id: "connections" }, "No connections (`drsg catalog add NAME DSN`, then `drsg catalog index NAME`)."),
    connections.length ? el("div", { class: "card" }, el("h3", {}, "find"), el("div", { class: "row" }, el("label", {}, "Connection ", which)),
      request, el("button", { id: "find", onclick: run }, "Find"), out) : "");
}

// --------------------------------------------------------------------------- routing

const PAGES = { planes: planesPage, explore: explorePage, feed: feedPage, search: searchPage, ask: askPage, digest: digestPage, catalog: catalogPage, plugins: pluginsPage };

async function route() {
  for (const s of stop.splice(0)) s();
  const name = (location.hash || "#planes").slice(1);
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("on", a.getAttribute("href") === "#" + name);
  document.getElementById("who").textContent = sessionStorage.getItem(TOKEN) ? "signed in" : "";
  await guarded(PAGES[name] || planesPage)();
}

window.addEventListener("hashchange", route);
route();
