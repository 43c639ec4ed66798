// Formatting helpers of the dashboard: pure functions, no DOM access.

const ROLES = {
  M: "master",
  C: "master candidate",
  R: "regular",
  D: "drained",
  O: "offline",
};

/** The role letter of /2/nodes ("M", "C", ...) in words. */
export function roleName(letter) {
  return ROLES[letter] || (letter ? String(letter) : "unknown");
}

/** A Ganeti timestamp [seconds, microseconds] as a Date, or null. */
export function tsToDate(ts) {
  if (!Array.isArray(ts) || ts.length < 1 || typeof ts[0] !== "number") {
    return null;
  }
  const usec = typeof ts[1] === "number" ? ts[1] : 0;
  return new Date(ts[0] * 1000 + Math.floor(usec / 1000));
}

function pad(n, width = 2) {
  return String(n).padStart(width, "0");
}

/** "HH:MM:SS" for today, "YYYY-MM-DD HH:MM:SS" otherwise (local time). */
export function shortTime(date, now = new Date()) {
  const time = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  if (date.toDateString() === now.toDateString()) {
    return time;
  }
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${time}`;
}

/** Full local date and time with milliseconds, for tooltips. */
export function longTime(date) {
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} `
    + `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.`
    + `${pad(date.getMilliseconds(), 3)}`;
}

/** A size in MiB as a short human string ("512 MiB", "1.5 GiB"). */
export function formatMiB(mib) {
  if (typeof mib !== "number" || !Number.isFinite(mib)) {
    return "?";
  }
  const units = ["MiB", "GiB", "TiB", "PiB"];
  let value = mib;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  return `${value.toFixed(digits)} ${units[unit]}`;
}

/** Used and total of a resource from total and free (both may be null). */
export function usage(total, free) {
  if (typeof total !== "number" || typeof free !== "number" || total <= 0) {
    return null;
  }
  const used = Math.max(0, total - free);
  return { used, total, fraction: Math.min(1, used / total) };
}

/** A log message as text: strings as they are, anything else as JSON. */
export function messageText(message) {
  if (typeof message === "string") {
    return message;
  }
  try {
    return JSON.stringify(message);
  } catch (err) {
    return String(message);
  }
}

/** Job ids compare as numbers (newest = highest first). */
export function compareJobIdsDesc(a, b) {
  return Number(b) - Number(a);
}

const UUID_RE = /\b([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;

/** A uuid as its first eight digits and an ellipsis ("1a2b3c4d…"). */
export function shortUuid(uuid) {
  const text = String(uuid ?? "");
  return /^[0-9a-f]{8}-/i.test(text) ? `${text.slice(0, 8)}…` : text;
}

/** Text with every uuid in it shortened (the full text goes in a title). */
export function shortenUuids(text) {
  return String(text ?? "").replace(UUID_RE, "$1…");
}

/**
 * The kind of a job's wait reason (masterd's wording, see the job field
 * wait_reason): "paused" (a PAUSE filter rule), "rate-limited" (a RATE_LIMIT
 * rule or a rate-limit:n:label bucket), "dependency" (another job), or "other".
 */
export function waitKind(reason) {
  const text = String(reason ?? "");
  if (text.startsWith("paused")) {
    return "paused";
  }
  if (text.startsWith("rate-limited")) {
    return "rate-limited";
  }
  if (text.startsWith("waiting for job")) {
    return "dependency";
  }
  return "other";
}

/** A filter rule's action ("PAUSE", ["RATE_LIMIT", 2]) as text ("RATE_LIMIT 2"). */
export function actionText(action) {
  return Array.isArray(action) ? action.map(String).join(" ") : String(action ?? "?");
}

/** The reasons of a reason trail ([source, reason, timestamp] entries) that say something. */
export function trailReasons(trail) {
  return (Array.isArray(trail) ? trail : [])
    .filter((entry) => Array.isArray(entry) && typeof entry[1] === "string" && entry[1])
    .map((entry) => entry[1]);
}

// --- instances ------------------------------------------------------------------

/**
 * The kind of an instance status word (Ganeti's: running, ADMIN_down,
 * ADMIN_offline, USER_down, ERROR_up, ERROR_down, ERROR_wrongnode,
 * ERROR_nodedown, ERROR_nodeoffline): "running", "down" (stopped by an
 * administrator), "offline", "user-down" (stopped from inside), "error"
 * (not as the configuration says, or its node cannot tell), or "unknown";
 * "reserved" for a forthcoming instance (Ganeti shows one as ADMIN_down).
 */
export function instanceStatusKind(status, forthcoming = false) {
  if (forthcoming === true) {
    return "reserved";
  }
  const text = String(status ?? "");
  if (text === "running") {
    return "running";
  }
  if (text === "ADMIN_down") {
    return "down";
  }
  if (text === "ADMIN_offline") {
    return "offline";
  }
  if (text === "USER_down") {
    return "user-down";
  }
  if (text.startsWith("ERROR_")) {
    return "error";
  }
  return "unknown";
}

/**
 * An instance's memory as text: the configured maximum (beparams.maxmem),
 * and what it uses while it runs (oper_ram): "512 MiB", "512 MiB (using 256 MiB)".
 */
export function instanceMemoryText(instance) {
  const be = instance && typeof instance.beparams === "object" && instance.beparams
    ? instance.beparams : {};
  const configured = typeof be.maxmem === "number" ? be.maxmem : instance?.["be/maxmem"];
  const used = instance ? instance.oper_ram : null;
  const base = typeof configured === "number" ? formatMiB(configured) : "?";
  if (instance && instance.oper_state === true && typeof used === "number") {
    return `${base} (using ${formatMiB(used)})`;
  }
  return base;
}

/**
 * An instance's disks as text: "diskless", "1 disk: 1.0 GiB (plain)",
 * "2 disks: 512 MiB, 1.0 GiB (file)".
 */
export function instanceDisksText(sizes, template) {
  const list = Array.isArray(sizes) ? sizes : [];
  const kind = template ? String(template) : "?";
  if (!list.length) {
    return kind === "diskless" ? "diskless" : `no disks (${kind})`;
  }
  const shown = list.map((size) => formatMiB(size)).join(", ");
  return `${list.length} disk${list.length === 1 ? "" : "s"}: ${shown} (${kind})`;
}

/** An instance's NIC addresses as text ("—" when none has one). */
export function instanceIpsText(ips) {
  const list = (Array.isArray(ips) ? ips : []).filter((ip) => typeof ip === "string" && ip);
  return list.length ? list.join(", ") : "—";
}

/**
 * The names of the forthcoming instances (reservations) in an answer of
 * GET /2/query/instance?fields=name,forthcoming ({fields, data}, each value
 * [status, value]); an empty set for anything else (a daemon without the field).
 */
export function forthcomingNames(answer) {
  const names = new Set();
  const fields = Array.isArray(answer?.fields) ? answer.fields.map((f) => f?.name) : [];
  const nameAt = fields.indexOf("name");
  const flagAt = fields.indexOf("forthcoming");
  if (nameAt < 0 || flagAt < 0 || !Array.isArray(answer.data)) {
    return names;
  }
  for (const row of answer.data) {
    const name = Array.isArray(row) && Array.isArray(row[nameAt]) ? row[nameAt][1] : null;
    const flag = Array.isArray(row) && Array.isArray(row[flagAt]) ? row[flagAt][1] : null;
    if (typeof name === "string" && flag === true) {
      names.add(name);
    }
  }
  return names;
}

/**
 * What the reservations hold on each node, from the instances of
 * GET /2/instances?bulk=1 and the set of reserved names: a Map from node
 * name to {count, memory, disk} (MiB): a reservation's memory
 * (beparams.maxmem) counts on its primary node, its disks on its primary and
 * secondary nodes (drbd's are mirrored), as the allocator counts them.
 */
export function reservedByNode(instances, reserved) {
  const result = new Map();
  const names = reserved instanceof Set ? reserved : new Set();
  const add = (node, memory, disk) => {
    if (typeof node !== "string" || !node) {
      return;
    }
    const entry = result.get(node) || { count: 0, memory: 0, disk: 0 };
    entry.count += 1;
    entry.memory += memory;
    entry.disk += disk;
    result.set(node, entry);
  };
  for (const instance of Array.isArray(instances) ? instances : []) {
    if (!instance || !names.has(instance.name)) {
      continue;
    }
    const be = instance.beparams && typeof instance.beparams === "object"
      ? instance.beparams : {};
    const memory = typeof be.maxmem === "number" ? be.maxmem : 0;
    const sizes = Array.isArray(instance["disk.sizes"]) ? instance["disk.sizes"] : [];
    const disk = sizes.reduce((sum, size) => sum + (typeof size === "number" ? size : 0), 0);
    add(instance.pnode, memory, disk);
    for (const node of Array.isArray(instance.snodes) ? instance.snodes : []) {
      add(node, 0, disk);
    }
  }
  return result;
}

/** A node's reservations as text: "2 reserved: 256 MiB memory, 1.0 GiB disk". */
export function reservedText(entry) {
  if (!entry || !entry.count) {
    return "";
  }
  const parts = [];
  if (entry.memory) {
    parts.push(`${formatMiB(entry.memory)} memory`);
  }
  if (entry.disk) {
    parts.push(`${formatMiB(entry.disk)} disk`);
  }
  return `${entry.count} reserved${parts.length ? `: ${parts.join(", ")}` : ""}`;
}

// opcodes of other kinds after which instances may look different
const INSTANCE_MOVERS = new Set(["OP_NODE_EVACUATE", "OP_NODE_MIGRATE", "OP_GROUP_EVACUATE",
  "OP_TAGS_SET", "OP_TAGS_DEL"]);

/**
 * Whether a job may change what the instances table shows: one of its opcodes
 * (ops: OP_IDs) is an OP_INSTANCE_*, moves instances, sets or removes tags, or
 * queries instances (summary "QUERY(instance)").
 */
export function touchesInstances(ops, summary) {
  const ids = Array.isArray(ops) ? ops : [];
  if (ids.some((op) => typeof op === "string"
      && (op.startsWith("OP_INSTANCE_") || INSTANCE_MOVERS.has(op)))) {
    return true;
  }
  const texts = Array.isArray(summary) ? summary : [];
  return texts.some((text) => typeof text === "string"
    && (text.startsWith("INSTANCE_") || /^QUERY(_FIELDS)?\(instance\)$/.test(text)));
}

/**
 * The error of a failed job as text, from GET /2/jobs/<id> (opstatus and
 * opresult; a failed opcode's result is Ganeti's encoded error
 * [class, [message, code]]): "OpPrereqError: Instance 'x' is not running (wrong_input)".
 */
export function jobErrorText(opstatus, opresult) {
  const statuses = Array.isArray(opstatus) ? opstatus : [];
  const results = Array.isArray(opresult) ? opresult : [];
  const index = statuses.indexOf("error");
  const result = index >= 0 ? results[index] : results.find((r) => Array.isArray(r));
  if (Array.isArray(result) && typeof result[0] === "string") {
    const args = Array.isArray(result[1]) ? result[1] : [result[1]];
    const message = args.length ? messageText(args[0]) : "";
    const code = args.length > 1 && typeof args[1] === "string" ? ` (${args[1]})` : "";
    return `${result[0]}: ${message}${code}`;
  }
  if (typeof result === "string" && result) {
    return result;
  }
  return "the job failed (no error text)";
}
