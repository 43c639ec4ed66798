// Small DOM helpers of the dashboard.  Text goes in through textContent and
// attributes only, never as markup.

export const $ = (id) => document.getElementById(id);

/** An element with optional class, text and attributes. */
export function el(tag, { cls, text, attrs } = {}) {
  const node = document.createElement(tag);
  if (cls) {
    node.className = cls;
  }
  if (text !== undefined && text !== null) {
    node.textContent = String(text);
  }
  for (const [name, value] of Object.entries(attrs || {})) {
    node.setAttribute(name, String(value));
  }
  return node;
}

export function setText(node, text) {
  const value = text === undefined || text === null ? "" : String(text);
  if (node.textContent !== value) {
    node.textContent = value;
  }
}

export function setAttr(node, name, value) {
  const text = String(value);
  if (node.getAttribute(name) !== text) {
    node.setAttribute(name, text);
  }
}

const messages = new Map();

/** Show (or with text null, clear) the message of one source. */
export function setMessage(key, text, level = "error") {
  const box = $("messages");
  let node = messages.get(key);
  if (text === null) {
    if (node) {
      node.remove();
      messages.delete(key);
    }
    return;
  }
  if (!node) {
    node = el("p", { attrs: { "data-key": key } });
    messages.set(key, node);
    box.append(node);
  }
  node.className = `message message-${level}`;
  setText(node, text);
}

/** A table row with one cell spanning the columns, saying the text. */
export function placeholder(columns, text) {
  const tr = el("tr", { cls: "placeholder" });
  tr.append(el("td", { text, attrs: { colspan: columns } }));
  return tr;
}
