// The page's building blocks, shared by every module of the dashboard: elements made with their
// children as text (never markup), and values and counts as text.

export function el(tag, props = {}, ...kids) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (k === "value") node.value = v;
    else if (k === "checked") node.checked = true;
    else node.setAttribute(k, String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return node;
}

export function text(value) { return typeof value === "string" ? value : JSON.stringify(value); }
export function short(value, n = 120) { const t = text(value); return t.length > n ? t.slice(0, n - 1) + "…" : t; }
// "1 neighbour", "2 neighbours": every count the page shows goes through here
export function count(n, one, many = one + "s") { return `${n} ${Number(n) === 1 ? one : many}`; }
