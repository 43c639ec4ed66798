// The instances table, read from GET /2/instances?bulk=1 and read again
// whenever a job that touches instances changes status (the feed says so), at
// most one request at a time.  Users with write access (GET /dashboard/access)
// get Start, Stop and Reboot buttons per instance: each submits Ganeti's RAPI
// call, shows the job it made (a link to its row in the jobs table) and keeps
// the instance's buttons disabled until that job has finished, and a Console
// button per running kvm instance with a serial console (console.js).
// Reservations (forthcoming instances, which Ganeti's bulk list shows as
// ADMIN_down) are told apart by the query field "forthcoming"
// (GET /2/query/instance): a "reserved" badge and no actions.

import { getJson, HttpError, sendJson, useCredentials } from "./api.js";
import { $, el, placeholder, setMessage, setText } from "./dom.js";
import {
  forthcomingNames, instanceDisksText, instanceIpsText, instanceMemoryText, instanceStatusKind,
  jobErrorText, reservedByNode, shortTime, touchesInstances,
} from "./format.js";
import { FINAL_STATUSES } from "./jobstate.js";
import { hasSerialConsole, openConsole, startConsole } from "./console.js";

const COLUMNS = 8;
/** Milliseconds between a job's event and the reload it causes (events come in bursts). */
const RELOAD_DELAY_MS = 250;
/** Reloads that jobs cause start at least this far apart (a big cluster's list is long). */
const RELOAD_GAP_MS = 1000;

/** The actions, as Ganeti's RAPI has them. */
const ACTIONS = [
  { key: "startup", label: "Start", method: "PUT", verb: "Start" },
  { key: "shutdown", label: "Stop", method: "PUT", verb: "Stop" },
  { key: "reboot", label: "Reboot", method: "POST", verb: "Reboot" },
];

let hooks = { report: () => {}, jobStatus: () => null, loaded: () => {} };
let access = { user: null, write: false, known: false };
let instances = null;             // the last answer, or null before the first
let reserved = new Set();         // the names of the forthcoming instances in it
const pending = new Map();        // instance name -> {id, action}: its action's job runs
const jobActions = new Map();     // job id -> {name, verb}: the action that made it
const seenStatus = new Map();     // job id -> the last status seen of a job touching instances
let loading = false;
let again = false;
let timer = null;
let lastStart = -Infinity;        // when the last read started (performance.now())

// --- reading ----------------------------------------------------------------------

/** Read the instances now (a request already running is followed by one more). */
export async function loadInstances() {
  if (loading) {
    again = true;
    return;
  }
  loading = true;
  const button = $("refresh-instances");
  button.disabled = true;
  try {
    do {
      again = false;
      lastStart = performance.now();
      try {
        const [list, flags] = await Promise.all([getJson("/2/instances?bulk=1"),
          getJson("/2/query/instance?fields=name,forthcoming", { optional: true })
            .catch(() => null)]);
        instances = list;
        reserved = forthcomingNames(flags);
        render();
        const now = new Date();
        const stamp = $("instances-updated");
        stamp.setAttribute("datetime", now.toISOString());
        setText(stamp, shortTime(now));
        setMessage("instances", null);
        hooks.loaded();
      } catch (err) {
        hooks.report("instances", err);
      }
    } while (again);
  } finally {
    loading = false;
    button.disabled = false;
  }
}

/** What the reservations of the last read hold per node (see format.js reservedByNode). */
export function reservationsByNode() {
  return reservedByNode(instances, reserved);
}

/** Reload soon: several triggers in a burst cost one request. */
export function scheduleInstancesReload() {
  if (timer === null) {
    const wait = Math.max(RELOAD_DELAY_MS, lastStart + RELOAD_GAP_MS - performance.now());
    timer = setTimeout(() => {
      timer = null;
      loadInstances();
    }, wait);
  }
}

/** What the user may do, from /dashboard/access (with the browser's credentials). */
export async function loadAccess(login = false) {
  try {
    const answer = await getJson(`/dashboard/access${login ? "?login=1" : ""}`,
      { credentials: "same-origin" });
    access = { user: typeof answer?.user === "string" ? answer.user : null,
      write: answer?.write === true, known: true };
    if (access.user !== null) {
      useCredentials(); // the page's reads go as this user too
    }
    setMessage("access", null);
  } catch (err) {
    access = { user: null, write: false, known: !(err instanceof HttpError && err.status === 404) };
    if (!(err instanceof HttpError && [401, 404].includes(err.status))) {
      hooks.report("access", err);
    }
  }
  showAccess();
  render();
}

function showAccess() {
  const who = $("user-name");
  setText(who, !access.known ? "—" : access.user === null ? "anonymous" : access.user);
  const what = $("user-access");
  setText(what, !access.known ? "" : access.write ? "(may start and stop instances)"
    : "(read only)");
  $("sign-in").hidden = access.user !== null || !access.known;
}

// --- the feed -----------------------------------------------------------------------

/**
 * A job changed (a feed job event, or a row of the job list): reload when it
 * touches instances and its status moved on, and free an instance whose
 * action's job has finished.  job: {id, status, ops?, summary?}.
 */
export function instancesJobChanged(job) {
  if (!job || job.id === undefined || job.id === null) {
    return;
  }
  const id = String(job.id);
  const action = jobActions.get(id);
  if (action || touchesInstances(job.ops, job.summary)) {
    if (seenStatus.get(id) !== job.status) {
      seenStatus.set(id, job.status);
      scheduleInstancesReload();
    }
    if (FINAL_STATUSES.has(job.status)) {
      seenStatus.delete(id); // it changes no more (the job list drops replays)
    }
  }
  if (action && FINAL_STATUSES.has(job.status)) {
    finishAction(id, job.status);
  }
}

/** The feed missed events: read everything again, and ask about running actions. */
export function instancesResync() {
  scheduleInstancesReload();
  for (const id of jobActions.keys()) {
    const status = hooks.jobStatus(id);
    if (FINAL_STATUSES.has(status)) {
      finishAction(id, status);
    }
  }
}

async function finishAction(id, status) {
  const action = jobActions.get(id);
  if (!action) {
    return;
  }
  jobActions.delete(id);
  seenStatus.delete(id);
  if (pending.get(action.name)?.id === id) {
    pending.delete(action.name);
  }
  render();
  if (status === "success") {
    return;
  }
  let detail = status === "canceled" ? "the job was canceled" : "the job failed";
  if (status === "error") {
    try {
      const job = await getJson(`/2/jobs/${encodeURIComponent(id)}`);
      detail = jobErrorText(job.opstatus, job.opresult);
    } catch (err) {
      detail = `the job failed (its error cannot be read: ${err.message || err})`;
    }
  }
  setMessage(`instance-${action.name}`, `${action.verb} ${action.name} (job ${id}): ${detail}`);
}

// --- actions ------------------------------------------------------------------------

async function act(name, spec) {
  if (pending.has(name)) {
    return;
  }
  pending.set(name, { id: null, action: spec.key });
  setMessage(`instance-${name}`, null);
  render();
  try {
    const answer = await sendJson(spec.method,
      `/2/instances/${encodeURIComponent(name)}/${spec.key}`);
    if (!["number", "string"].includes(typeof answer) || !/^\d+$/.test(String(answer))) {
      throw new Error(`unexpected answer ${JSON.stringify(answer)} instead of a job id`);
    }
    const id = String(answer);
    pending.set(name, { id, action: spec.key });
    jobActions.set(id, { name, verb: spec.verb });
    render();
    const status = hooks.jobStatus(id); // the feed may have been faster than the answer
    if (FINAL_STATUSES.has(status)) {
      finishAction(id, status);
    }
  } catch (err) {
    pending.delete(name);
    render();
    setMessage(`instance-${name}`, `${spec.verb} ${name}: ${err.message || err}`);
  }
}

// --- rendering ----------------------------------------------------------------------

function statusCell(instance) {
  const td = el("td");
  const status = instance.status || "unknown";
  if (reserved.has(instance.name)) {
    td.append(el("span", { cls: "instance-status badge", text: "reserved",
      attrs: { "data-kind": "reserved", "data-status": status,
        title: `Forthcoming instance: its resources are reserved, it is not created yet `
          + `(Ganeti's status: ${status})` } }));
    return td;
  }
  td.append(el("span", { cls: "instance-status badge", text: status,
    attrs: { "data-kind": instanceStatusKind(status), "data-status": status } }));
  return td;
}

function actionsCell(instance) {
  const td = el("td", { cls: "instance-actions" });
  const name = instance.name;
  if (reserved.has(name)) {  // Ganeti refuses every action on a reservation
    td.append(el("span", { cls: "instance-reserved muted",
      text: "reservation (commit it to create it)" }));
    return td;
  }
  const job = pending.get(name);
  for (const spec of ACTIONS) {
    td.append(el("button", { cls: `instance-action action-${spec.key}`, text: spec.label,
      attrs: { type: "button", "data-action": spec.key, "data-instance": name,
        "aria-label": `${spec.label} instance ${name}` } }), " ");
  }
  for (const button of td.querySelectorAll("button")) {
    button.disabled = Boolean(job);
  }
  if (hasSerialConsole(instance)) {  // not disabled by a running job: it only attaches
    td.append(el("button", { cls: "instance-console", text: "Console",
      attrs: { type: "button", "data-instance": name,
        "aria-label": `Serial console of instance ${name}` } }), " ");
  }
  if (job) {
    const note = el("span", { cls: "instance-job muted", attrs: { role: "status" } });
    if (job.id === null) {
      note.append("submitting…");
    } else {
      note.append("job ", el("a", { text: job.id,
        attrs: { href: `#job-${job.id}`, "data-job-id": job.id } }),
      ` ${hooks.jobStatus(job.id) || "submitted"}`);
    }
    td.append(note);
  }
  return td;
}

function render() {
  if (instances === null) {
    return;
  }
  const writer = access.write;
  $("instances-actions-heading").hidden = !writer;
  const rows = [];
  const sorted = (Array.isArray(instances) ? instances : [])
    .filter((instance) => instance && typeof instance.name === "string")
    .sort((a, b) => a.name.localeCompare(b.name));
  for (const instance of sorted) {
    const kind = instanceStatusKind(instance.status, reserved.has(instance.name));
    const tr = el("tr", { cls: "instance-row",
      attrs: { "data-instance-name": instance.name, "data-kind": kind } });
    const snodes = Array.isArray(instance.snodes) ? instance.snodes : [];
    tr.append(
      el("th", { cls: "instance-name", text: instance.name, attrs: { scope: "row" } }),
      statusCell(instance),
      el("td", { cls: "instance-pnode", text: instance.pnode || "—",
        attrs: snodes.length ? { title: `secondary: ${snodes.join(", ")}` } : {} }),
      el("td", { cls: "instance-os", text: instance.os || "—" }),
      el("td", { cls: "instance-memory", text: instanceMemoryText(instance) }),
      el("td", { cls: "instance-disks", text: instanceDisksText(instance["disk.sizes"],
        instance.disk_template) }),
      el("td", { cls: "instance-ips mono", text: instanceIpsText(instance["nic.ips"]) }));
    if (writer) {
      tr.append(actionsCell(instance));
    }
    rows.push(tr);
  }
  const count = rows.length;
  const held = sorted.filter((instance) => reserved.has(instance.name)).length;
  setText($("instances-count"), (count ? `${count} instance${count === 1 ? "" : "s"}` : "")
    + (held ? ` (${held} reserved)` : ""));
  if (!count) {
    rows.push(placeholder(writer ? COLUMNS : COLUMNS - 1, "No instances."));
  }
  const body = $("instances-body");
  const focused = body.contains(document.activeElement) ? document.activeElement : null;
  body.replaceChildren(...rows);
  if (focused) {
    refocus(body, focused);
  }
}

/** Keyboard users keep their place: the same button of the new row, or its job link. */
function refocus(body, old) {
  const name = old.dataset.instance || old.closest("tr")?.dataset.instanceName;
  const row = [...body.querySelectorAll("tr.instance-row")]
    .find((tr) => tr.dataset.instanceName === name);
  if (!row) {
    return;
  }
  const same = [...row.querySelectorAll("button.instance-action")]
    .find((b) => b.dataset.action === old.dataset.action && !b.disabled);
  const target = same || row.querySelector(".instance-job a")
    || row.querySelector("button.instance-action:not(:disabled)");
  if (target) {
    target.focus();
  }
}

// --- start --------------------------------------------------------------------------

/**
 * Wire the section up.  report(key, err): show a failed request;
 * jobStatus(id): the status the page knows of a job (or null);
 * loaded(): called after each successful read.
 */
export function startInstances(options) {
  hooks = { ...hooks, ...options };
  $("refresh-instances").addEventListener("click", loadInstances);
  $("sign-in").addEventListener("click", () => loadAccess(true));
  startConsole();
  $("instances-body").addEventListener("click", (event) => {
    const consoleButton = event.target.closest("button.instance-console");
    if (consoleButton) {
      openConsole(consoleButton.dataset.instance);
      return;
    }
    const button = event.target.closest("button.instance-action");
    if (!button || button.disabled) {
      return;
    }
    const spec = ACTIONS.find((a) => a.key === button.dataset.action);
    if (spec) {
      act(button.dataset.instance, spec);
    }
  });
  loadAccess();
  loadInstances();
}
