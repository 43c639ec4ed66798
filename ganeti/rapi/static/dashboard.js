// The ganeti-rapi dashboard: the cluster, its nodes and groups from RAPI v2,
// and the job list kept live by the WebSocket feed.  Every piece of data goes
// into the page through textContent or attributes, never as markup.
// A job that waits (a filter rule, a rate limit, a dependency) says why under
// its summary; the job filter rules are listed from /2/filters?bulk=1; the
// instances (instances.js) are read again whenever a job touching them moves on.

import { getJson, HttpError } from "./api.js";
import { $, el, placeholder, setAttr, setMessage, setText } from "./dom.js";
import { FeedClient, feedUrl } from "./feed.js";
import { renderFilters, renderFiltersUnavailable } from "./filters.js";
import { longTime, messageText, shortTime, shortenUuids, tsToDate, waitKind } from "./format.js";
import {
  instancesJobChanged, instancesResync, loadInstances, reservationsByNode,
  scheduleInstancesReload, startInstances,
} from "./instances.js";
import { FINAL_STATUSES, JobStore, shownReason, withWaitReasons } from "./jobstate.js";
import { renderNodes, setReservations } from "./nodes.js";

const NODES_REFRESH_MS = 10000;
/** Instances change without jobs too (one that crashed): read them this often. */
const INSTANCES_REFRESH_MS = 30000;
const MAX_JOB_ROWS = 200;
const JOB_COLUMNS = 7;

/** Show why a request failed (under the message key of its part of the page). */
function reportRequest(key, err) {
  if (err instanceof HttpError && (err.status === 401 || err.status === 403)) {
    return; // the auth message says it all
  }
  // one message for an unreachable daemon, however many requests failed
  setMessage(err instanceof HttpError && err.status === 0 ? "network" : key,
    err && err.message ? err.message : String(err));
  if (err instanceof HttpError && [502, 503, 504].includes(err.status)) {
    setUpstream(false);
  }
}

// --- header -------------------------------------------------------------------

const FEED_WORDS = {
  connecting: "connecting…",
  subscribing: "subscribing…",
  live: "live",
  reconnecting: "reconnecting",
  unsupported: "not available in this browser",
};

function setFeedState(state, detail) {
  const node = $("feed-state");
  setAttr(node, "data-state", state);
  let words = FEED_WORDS[state] || state;
  if (state === "reconnecting" && detail) {
    words = `disconnected, retrying in ${detail} s`;
  }
  setText(node, words);
}

function setUpstream(connected) {
  const node = $("upstream-state");
  setAttr(node, "data-state", connected ? "connected" : "disconnected");
  setText(node, connected ? "connected" : "not reachable");
}

async function loadCluster() {
  try {
    const info = await getJson("/2/info");
    setText($("cluster-name"), info.name || "(unnamed)");
    setText($("cluster-master"), info.master || "?");
    setText($("cluster-version"), info.software_version || "?");
    setText($("cluster-hypervisors"), (info.enabled_hypervisors || []).join(", ") || "none");
    document.title = `${info.name || "Cluster"} — Ganeti dashboard`;
    setMessage("cluster", null);
    setUpstream(true);
  } catch (err) {
    reportRequest("cluster", err);
  }
}

// --- nodes and groups ---------------------------------------------------------

let nodesLoading = false;

async function loadNodes() {
  if (nodesLoading) {
    return;
  }
  nodesLoading = true;
  const button = $("refresh-nodes");
  button.disabled = true;
  try {
    const [nodes, groups] = await Promise.all([getJson("/2/nodes?bulk=1"),
      getJson("/2/groups?bulk=1")]);
    renderNodes(nodes, groups);
    const now = new Date();
    const stamp = $("nodes-updated");
    stamp.setAttribute("datetime", now.toISOString());
    setText(stamp, shortTime(now));
    setMessage("nodes", null);
    setUpstream(true);
  } catch (err) {
    reportRequest("nodes", err);
  } finally {
    nodesLoading = false;
    button.disabled = false;
  }
}

// --- job filter rules ---------------------------------------------------------

// Rules change without a job, so no feed event says so: they are read with the
// nodes, on their "Refresh" button, and whenever the reason a job waits
// changes (a rule that holds or releases jobs was added, changed or removed,
// or a job moved on).  One request at a time; one asked for meanwhile runs
// once the current one is done.
let filtersLoading = false;
let filtersAgain = false;

async function loadFilters() {
  if (filtersLoading) {
    filtersAgain = true;
    return;
  }
  filtersLoading = true;
  const button = $("refresh-filters");
  button.disabled = true;
  try {
    do {
      filtersAgain = false;
      try {
        renderFilters(await getJson("/2/filters?bulk=1"));
        setMessage("filters", null);
      } catch (err) {
        if (err instanceof HttpError && err.status === 404) {
          renderFiltersUnavailable(); // a daemon without /2/filters
        } else {
          reportRequest("filters", err);
        }
      }
    } while (filtersAgain);
  } finally {
    filtersLoading = false;
    button.disabled = false;
  }
}

// --- jobs ---------------------------------------------------------------------

const store = new JobStore();
const expanded = new Set();       // ids whose log is shown
const rowsById = new Map();       // id -> the row's elements (createJobRow)
let renderQueued = false;

function timeCell(ts) {
  const td = el("td", { cls: "time" });
  fillTime(td, ts);
  return td;
}

function fillTime(td, ts) {
  const date = tsToDate(ts);
  const key = date ? String(date.getTime()) : "";
  if (td.dataset.value === key) {
    return;
  }
  td.dataset.value = key;
  if (!date) {
    td.replaceChildren(el("span", { cls: "muted", text: "—" }));
    return;
  }
  td.replaceChildren(el("time", { text: shortTime(date),
    attrs: { datetime: date.toISOString(), title: longTime(date) } }));
}

function summaryText(job) {
  const summary = Array.isArray(job.summary) ? job.summary : [];
  return summary.length ? summary.join(", ") : "—";
}

function createJobRow(job) {
  const id = job.id;
  const row = el("tr", { cls: "job-row", attrs: { "data-job-id": id, id: `job-${id}` } });
  const idCell = el("th", { cls: "job-id num", text: id, attrs: { scope: "row" } });
  const summaryCell = el("td", { cls: "job-summary-cell" });
  const summary = el("span", { cls: "job-summary mono" });
  // why the job waits: visible text with uuids shortened, the full text as title
  const reason = el("div", { cls: "job-wait" });
  reason.hidden = true;
  summaryCell.append(summary, reason);
  const statusCell = el("td");
  const badge = el("span", { cls: "job-status badge" });
  statusCell.append(badge);
  const received = timeCell(null);
  received.classList.add("job-received");
  const started = timeCell(null);
  started.classList.add("job-started");
  const ended = timeCell(null);
  ended.classList.add("job-ended");
  const toggleCell = el("td");
  const toggle = el("button", { cls: "log-toggle", text: "Show",
    attrs: { type: "button", "aria-expanded": "false", "aria-controls": `job-log-${id}`,
      "aria-label": `Show the log of job ${id}` } });
  toggleCell.append(toggle);
  row.append(idCell, summaryCell, statusCell, received, started, ended, toggleCell);
  const entry = { row, summary, reason, badge, received, started, ended, toggle, logRow: null,
    list: null, empty: null };
  rowsById.set(id, entry);
  return entry;
}

function updateJobRow(entry, job) {
  setText(entry.summary, summaryText(job));
  const status = job.status || "unknown";
  setAttr(entry.badge, "data-status", status);
  setText(entry.badge, status);
  const ops = Array.isArray(job.opstatus) ? job.opstatus : [];
  setAttr(entry.badge, "title", ops.length ? `opcodes: ${ops.join(", ")}` : status);
  setAttr(entry.row, "data-status", status);
  fillReason(entry.reason, shownReason(job));
  fillTime(entry.received, job.received_ts);
  fillTime(entry.started, job.start_ts);
  fillTime(entry.ended, job.end_ts);
  const open = expanded.has(job.id);
  setAttr(entry.toggle, "aria-expanded", open ? "true" : "false");
  setText(entry.toggle, open ? "Hide" : "Show");
  setAttr(entry.toggle, "aria-label", `${open ? "Hide" : "Show"} the log of job ${job.id}`);
  if (open) {
    updateLogRow(entry, job);
  } else if (entry.logRow) {
    entry.logRow.remove();
    entry.logRow = null;
    entry.list = null;
    entry.empty = null;
  }
}

function fillReason(node, reason) {
  if (reason === null) {
    if (!node.hidden) {
      node.hidden = true;
      setText(node, "");
      node.removeAttribute("title");
      node.removeAttribute("data-kind");
    }
    return;
  }
  node.hidden = false;
  setText(node, shortenUuids(reason));
  setAttr(node, "title", reason);
  setAttr(node, "data-kind", waitKind(reason));
}

function updateLogRow(entry, job) {
  if (!entry.logRow) {
    const logRow = el("tr", { cls: "job-log-row",
      attrs: { id: `job-log-${job.id}`, "data-log-for": job.id } });
    const td = el("td", { attrs: { colspan: JOB_COLUMNS } });
    const list = el("ol", { cls: "job-log", attrs: { "aria-label": `Log of job ${job.id}` } });
    const empty = el("p", { cls: "log-empty muted", text: "No log messages yet." });
    td.append(list, empty);
    logRow.append(td);
    entry.logRow = logRow;
    entry.list = list;
    entry.empty = empty;
  }
  const entries = store.logOf(job.id);
  const shown = new Map([...entry.list.children].map((li) => [li.dataset.serial, li]));
  let before = null;
  // entries are sorted; insert the new ones in place (they are nearly always last)
  for (let i = entries.length - 1; i >= 0; i -= 1) {
    const [serial, ts, type, message] = entries[i];
    const key = String(serial);
    if (shown.has(key)) {
      before = shown.get(key);
      continue;
    }
    const li = el("li", { attrs: { "data-serial": key } });
    const date = tsToDate(ts);
    if (date) {
      li.append(el("time", { cls: "log-time", text: shortTime(date),
        attrs: { datetime: date.toISOString(), title: longTime(date) } }), " ");
    }
    if (type && type !== "message") {
      li.append(el("span", { cls: "log-type", text: type }), " ");
    }
    li.append(el("span", { cls: "log-message", text: messageText(message) }));
    entry.list.insertBefore(li, before);
    before = li;
  }
  entry.empty.hidden = entries.length > 0;
  if (entries.length === 0 && FINAL_STATUSES.has(job.status)) {
    setText(entry.empty, "This job logged no messages.");
  }
}

function scheduleRender() {
  if (!renderQueued) {
    renderQueued = true;
    // one render per batch of feed messages (a microtask runs after the batch)
    Promise.resolve().then(renderJobs);
  }
}

function renderJobs() {
  renderQueued = false;
  const body = $("jobs-body");
  const jobs = store.sorted();
  const visible = jobs.slice(0, MAX_JOB_ROWS);
  const keep = new Set(visible.map((job) => job.id));
  for (const [id, entry] of rowsById) {
    if (!keep.has(id)) {
      entry.row.remove();
      if (entry.logRow) {
        entry.logRow.remove();
      }
      rowsById.delete(id);
    }
  }
  for (const node of [...body.querySelectorAll("tr.placeholder")]) {
    node.remove();
  }
  // walk the wanted order, moving rows only where they are out of place
  let cursor = body.firstElementChild;
  for (const job of visible) {
    const entry = rowsById.get(job.id) || createJobRow(job);
    updateJobRow(entry, job);
    for (const node of entry.logRow ? [entry.row, entry.logRow] : [entry.row]) {
      if (cursor === node) {
        cursor = cursor.nextElementSibling;
      } else {
        body.insertBefore(node, cursor);
      }
    }
  }
  if (!visible.length) {
    body.replaceChildren(placeholder(JOB_COLUMNS, "No jobs."));
  }
  const count = $("jobs-count");
  setText(count, jobs.length > visible.length
    ? `${jobs.length} jobs, the newest ${visible.length} shown`
    : `${jobs.length} job${jobs.length === 1 ? "" : "s"}`);
}

let jobsReady = false;

async function loadJobs() {
  const token = store.beginSnapshot();
  try {
    // Ganeti's job list, plus our wait reasons (a query field Ganeti does not have;
    // RAPI's queries need a user: an anonymous reader gets them from the feed only)
    const [list, reasons] = await Promise.all([
      getJson("/2/jobs?bulk=1"),
      getJson("/2/query/job?fields=id,wait_reason", { optional: true }).catch(() => null)]);
    const result = store.applySnapshot(token, withWaitReasons(list, reasons));
    if (result) {
      jobsReady = true;
      setMessage("jobs", null);
      scheduleRender();
      instancesResync(); // jobs of instance actions may have ended unseen
      for (const id of expanded) {
        loadLog(id);
      }
    }
  } catch (err) {
    reportRequest("jobs", err);
  }
}

async function loadLog(id) {
  try {
    const job = await getJson(`/2/jobs/${encodeURIComponent(id)}`);
    setMessage(`log-${id}`, null);
    if (store.addOplog(id, job.oplog)) {
      scheduleRender();
    }
  } catch (err) {
    if (!(err instanceof HttpError && err.status === 404)) {
      reportRequest(`log-${id}`, err);
    }
  }
}

function toggleJob(id) {
  if (expanded.has(id)) {
    expanded.delete(id);
  } else {
    expanded.add(id);
    loadLog(id);
  }
  scheduleRender();
}

// --- the feed -----------------------------------------------------------------

let requestedSince = null;
let feedLive = false;

function onFeedMessages(list) {
  let changed = false;
  let reasonsChanged = false;
  for (const msg of list) {
    if (!msg || typeof msg !== "object") {
      continue;
    }
    switch (msg.type) {
      case "subscribed": {
        // a gap: events we missed (too old for the feed to replay), or a feed
        // whose serials restarted below ours
        const gap = requestedSince === null || !jobsReady
          || (typeof msg.oldest === "number" && requestedSince + 1 < msg.oldest)
          || (typeof msg.serial === "number" && msg.serial < requestedSince);
        if (store.lastSerial === null || gap) {
          store.setSerial(msg.serial);
        }
        setMessage("feed", null);
        if (gap) {
          loadJobs();
        }
        break;
      }
      case "job": {
        const result = store.applyJobEvent(msg);
        if (result) {
          changed = true;
          instancesJobChanged(msg);
          if (result.isNew && $("auto-expand").checked) {
            expanded.add(result.id);
          }
          reasonsChanged = reasonsChanged || result.reasonChanged;
        }
        break;
      }
      case "archive":
        if (store.applyArchiveEvent(msg)) {
          changed = true;
        }
        break;
      case "resync":
        store.setSerial(msg.serial);
        loadJobs();
        reasonsChanged = true; // events were missed: the rules may have changed too
        break;
      case "upstream":
        setUpstream(Boolean(msg.connected));
        if (msg.connected) {
          loadCluster();
          scheduleInstancesReload();
        }
        break;
      case "error":
        setMessage("feed", `Feed: ${msg.message || "error"}`);
        break;
      default:
        break; // unknown message types are for newer dashboards
    }
  }
  if (changed) {
    scheduleRender();
  }
  if (reasonsChanged) {
    loadFilters();
  }
}

// --- start --------------------------------------------------------------------

function start() {
  $("refresh-nodes").addEventListener("click", () => {
    loadCluster();
    loadNodes();
  });
  $("refresh-filters").addEventListener("click", loadFilters);
  // (an instances read does not mark the master daemon connected: that state is the
  // feed relay's, and a job submitted before the relay is back would miss its log)
  startInstances({
    report: reportRequest,
    jobStatus: (id) => store.jobs.get(String(id))?.status ?? null,
    loaded: () => setReservations(reservationsByNode()),
  });
  $("jobs-body").addEventListener("click", (event) => {
    const row = event.target.closest("tr.job-row");
    if (!row || event.target.closest("a")) {
      return;
    }
    toggleJob(row.dataset.jobId);
  });
  loadCluster();
  loadNodes();
  loadFilters();
  loadJobs();
  setInterval(() => {
    loadNodes();
    loadFilters();
    if (!feedLive) {
      loadJobs(); // without the feed, the job list is polled
      loadInstances();
    }
  }, NODES_REFRESH_MS);
  setInterval(loadInstances, INSTANCES_REFRESH_MS);
  const feed = new FeedClient(feedUrl(), {
    since: () => store.lastSerial,
    onSubscribe: (since) => { requestedSince = since; },
    onMessages: onFeedMessages,
    onState: (state, detail) => {
      feedLive = state === "live";
      setFeedState(state, detail);
    },
  });
  feed.start();
}

start();
