// The nodes and node groups tables, rebuilt from /2/nodes and /2/groups, and
// again when the instances are read: what reservations (forthcoming
// instances) hold on a node is shown in its memory and disk cells and as a flag.

import { $, el, placeholder } from "./dom.js";
import { formatMiB, reservedText, roleName, usage } from "./format.js";

let last = null;                  // [nodes, groups] of the last render
let reservations = new Map();     // node name -> {count, memory, disk}

function usageCell(total, free, held = 0) {
  const td = el("td", { cls: "usage" });
  const use = usage(total, free);
  if (!use) {
    td.append(el("span", { cls: "muted", text: "unknown" }));
    return td;
  }
  const meter = el("meter", {
    attrs: { min: 0, max: use.total, value: use.used, low: use.total * 0.7,
      high: use.total * 0.9, optimum: 0,
      "aria-label": `${Math.round(use.fraction * 100)} percent used` },
  });
  td.append(el("span", { cls: "usage-text", text: `${formatMiB(use.used)} / ${formatMiB(use.total)}` }),
    meter);
  if (held > 0) {
    td.append(el("span", { cls: "usage-reserved", text: `+${formatMiB(held)} reserved`,
      attrs: { title: "held by forthcoming instances (counted as used by the allocator)" } }));
  }
  return td;
}

function flagBadges(node) {
  const td = el("td", { cls: "flags" });
  const flags = [];
  const held = reservedText(reservations.get(node.name));
  if (held) {
    flags.push([held, "flag-reserved"]);
  }
  if (node.offline) {
    flags.push(["offline", "flag-offline"]);
  }
  if (node.drained) {
    flags.push(["drained", "flag-drained"]);
  }
  if (node.master_capable === false) {
    flags.push(["not master capable", "flag-info"]);
  }
  if (node.vm_capable === false) {
    flags.push(["not VM capable", "flag-info"]);
  }
  for (const [text, cls] of flags) {
    td.append(el("span", { cls: `flag ${cls}`, text }), " ");
  }
  if (!flags.length) {
    td.append(el("span", { cls: "muted", text: "—" }));
  }
  return td;
}

/** The reservations per node changed (after an instances read): show them. */
export function setReservations(byNode) {
  reservations = byNode instanceof Map ? byNode : new Map();
  if (last !== null) {
    renderNodes(...last);
  }
}

/** Fill the nodes and groups tables. */
export function renderNodes(nodes, groups) {
  last = [nodes, groups];
  const groupNames = new Map();
  for (const group of groups || []) {
    if (group && group.uuid) {
      groupNames.set(group.uuid, group.name);
    }
  }
  const body = $("nodes-body");
  const rows = [];
  const sorted = [...(nodes || [])].sort((a, b) => String(a.name).localeCompare(String(b.name)));
  for (const node of sorted) {
    const tr = el("tr", { cls: "node-row", attrs: { "data-node-name": node.name } });
    if (node.offline) {
      tr.classList.add("is-offline");
    }
    const name = el("th", { attrs: { scope: "row" }, cls: "node-name", text: node.name });
    const role = el("td", { cls: "node-role", text: roleName(node.role),
      attrs: { "data-role": node.role || "" } });
    const pip = el("td", { cls: "node-pip mono", text: node.pip || "—" });
    const groupUuid = node["group.uuid"];
    const group = el("td", { cls: "node-group",
      text: groupNames.get(groupUuid) || groupUuid || "—" });
    const cpus = el("td", { cls: "node-cpus num",
      text: typeof node.ctotal === "number" ? node.ctotal : "—" });
    const held = reservations.get(node.name);
    tr.append(name, role, pip, group, usageCell(node.mtotal, node.mfree, held?.memory),
      usageCell(node.dtotal, node.dfree, held?.disk), cpus, flagBadges(node));
    rows.push(tr);
  }
  if (!rows.length) {
    rows.push(placeholder(8, "No nodes."));
  }
  body.replaceChildren(...rows);

  const groupRows = [];
  for (const group of [...(groups || [])].sort((a, b) => String(a.name).localeCompare(String(b.name)))) {
    const tr = el("tr", { cls: "group-row", attrs: { "data-group-name": group.name } });
    tr.append(el("th", { attrs: { scope: "row" }, text: group.name }),
      el("td", { cls: "num", text: group.node_cnt ?? "?" }),
      el("td", { text: group.alloc_policy || "?" }));
    groupRows.push(tr);
  }
  if (!groupRows.length) {
    groupRows.push(placeholder(3, "No node groups."));
  }
  $("groups-body").replaceChildren(...groupRows);
}
