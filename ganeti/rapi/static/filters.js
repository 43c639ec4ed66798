// The job filter rules table, rebuilt from GET /2/filters?bulk=1. The API lists
// rules by uuid (as Ganeti's); the table shows them in evaluation order:
// priority, then watermark, then uuid.

import { $, el, placeholder } from "./dom.js";
import { actionText, shortUuid, trailReasons } from "./format.js";

const COLUMNS = 6;

function actionKind(action) {
  const name = Array.isArray(action) ? action[0] : action;
  return typeof name === "string" ? name.toLowerCase().replace(/_/g, "-") : "unknown";
}

function predicatesCell(predicates) {
  const td = el("td", { cls: "filter-predicates mono" });
  const list = Array.isArray(predicates) ? predicates : [];
  if (!list.length) {
    td.append(el("span", { cls: "muted", text: "every job" }));
    return td;
  }
  for (const predicate of list) {
    td.append(el("div", { text: JSON.stringify(predicate) }));
  }
  return td;
}

function reasonCell(trail) {
  const reasons = trailReasons(trail);
  const td = el("td", { cls: "filter-reason" });
  if (!reasons.length) {
    td.append(el("span", { cls: "muted", text: "—" }));
    return td;
  }
  td.textContent = reasons.join("; ");
  td.title = (Array.isArray(trail) ? trail : []).map((e) => JSON.stringify(e)).join("\n");
  return td;
}

/** Fill the filter rules table. */
function evaluationOrder(a, b) {
  const num = (v) => (typeof v === "number" ? v : Number.MAX_SAFE_INTEGER);
  return num(a.priority) - num(b.priority) || num(a.watermark) - num(b.watermark)
    || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0);
}

export function renderFilters(rules) {
  const rows = [];
  const valid = (Array.isArray(rules) ? rules : []).filter(
    (rule) => rule && typeof rule.uuid === "string");
  for (const rule of valid.sort(evaluationOrder)) {
    if (!rule || typeof rule.uuid !== "string") {
      continue;
    }
    const tr = el("tr", { cls: "filter-row", attrs: { "data-filter-uuid": rule.uuid } });
    tr.append(
      el("th", { cls: "filter-uuid mono", text: shortUuid(rule.uuid),
        attrs: { scope: "row", title: rule.uuid } }),
      el("td", { cls: "filter-priority num", text: rule.priority ?? "?" }),
      el("td", { cls: "filter-action" }),
      predicatesCell(rule.predicates),
      reasonCell(rule.reason_trail),
      el("td", { cls: "filter-watermark num", text: rule.watermark ?? "?" }));
    tr.querySelector(".filter-action").append(el("span", { cls: "action",
      text: actionText(rule.action), attrs: { "data-action": actionKind(rule.action) } }));
    rows.push(tr);
  }
  const count = rows.length;
  $("filters-count").textContent = count ? `${count} rule${count === 1 ? "" : "s"}` : "";
  if (!count) {
    rows.push(placeholder(COLUMNS, "No filter rules: every job is accepted and runs in turn."));
  }
  $("filters-body").replaceChildren(...rows);
}

/** The daemon has no /2/filters. */
export function renderFiltersUnavailable() {
  $("filters-body").replaceChildren(placeholder(COLUMNS,
    "This ganeti-rapi does not serve /2/filters."));
  $("filters-count").textContent = "";
}
