// The dashboard's model of the job list: what GET /2/jobs?bulk=1 said, kept
// current by the feed's job and archive events.  No DOM access here.
//
// Snapshots and the feed race: a snapshot requested while events arrive may
// be older or newer than those events.  A feed event always carries the whole
// state of its job and events come in serial order, so for a job the feed has
// spoken about since the snapshot was requested the feed wins; the snapshot
// only fills in (or removes) the jobs the feed has been silent about.  The
// state then never goes backwards and converges on the server's.
//
// Why a job waits (wait_reason: a filter rule, a rate limit, a dependency) is
// in every feed event.  GET /2/jobs?bulk=1 does not carry it (the RAPI keeps
// Ganeti's fields): the page reads it with GET /2/query/job?fields=id,wait_reason
// (our job query field, answered when named) and puts it into the snapshot's rows
// (withWaitReasons).  A snapshot row without it keeps the reason the feed gave,
// unless the job's status changed meanwhile: then the reason is dropped, as
// nothing vouches for it any more.

const JOB_FIELDS = ["status", "summary", "opstatus", "received_ts", "start_ts", "end_ts",
  "priority"];

export const FINAL_STATUSES = new Set(["success", "error", "canceled"]);

/** A wait reason as the page keeps it: text, or null when the job does not wait. */
export function reasonOf(value) {
  return typeof value === "string" && value !== "" ? value : null;
}

/** The reason to show for a job: null for a finished job or one that does not wait. */
export function shownReason(job) {
  return job && !FINAL_STATUSES.has(job.status) ? reasonOf(job.wait_reason) : null;
}

/**
 * The rows of a GET /2/jobs?bulk=1 answer with the wait_reason of each job that
 * a GET /2/query/job?fields=id,wait_reason answer gives (rows it does not name,
 * or all of them if it is missing or malformed, stay without one).
 */
export function withWaitReasons(list, answer) {
  const reasons = new Map();
  for (const row of (answer && Array.isArray(answer.data)) ? answer.data : []) {
    if (Array.isArray(row) && row.length === 2 && Array.isArray(row[0])
        && Array.isArray(row[1]) && row[0][0] === 0 && row[1][0] === 0) {
      reasons.set(String(row[0][1]), row[1][1]);
    }
  }
  return (list || []).map((row) => (row && row.id !== undefined && row.id !== null
    && reasons.has(String(row.id)) ? { ...row, wait_reason: reasons.get(String(row.id)) }
    : row));
}

function applyReason(job, value, statusBefore) {
  if (value !== undefined) {
    job.wait_reason = reasonOf(value);
  } else if (job.status !== statusBefore || FINAL_STATUSES.has(job.status)) {
    job.wait_reason = null;
  }
}

function logKey(entry) {
  return Array.isArray(entry) ? Number(entry[0]) : NaN;
}

export class JobStore {
  constructor() {
    /** @type {Map<string, object>} job id (as a string) -> job */
    this.jobs = new Map();
    /** Highest feed serial applied; null before the first subscription. */
    this.lastSerial = null;
    this._snapshot = 0;       // generation of the newest snapshot request
    this._touched = new Set(); // ids the feed spoke about since that request
  }

  _job(id) {
    const key = String(id);
    let job = this.jobs.get(key);
    if (!job) {
      job = { id: key, status: null, summary: [], opstatus: [], received_ts: null,
        start_ts: null, end_ts: null, priority: null, wait_reason: null, log: new Map() };
      this.jobs.set(key, job);
    }
    return job;
  }

  /** Jobs, newest first. */
  sorted() {
    return [...this.jobs.values()].sort((a, b) => Number(b.id) - Number(a.id));
  }

  /** Start a snapshot request; pass the token to applySnapshot with its answer. */
  beginSnapshot() {
    this._snapshot += 1;
    this._touched = new Set();
    return this._snapshot;
  }

  /**
   * Merge a GET /2/jobs?bulk=1 answer.  Returns null if a newer snapshot was
   * requested meanwhile (this one is then ignored), else {added: [ids]}.
   */
  applySnapshot(token, list) {
    if (token !== this._snapshot) {
      return null;
    }
    const seen = new Set();
    const added = [];
    for (const row of list || []) {
      if (!row || row.id === undefined || row.id === null) {
        continue;
      }
      const key = String(row.id);
      seen.add(key);
      if (this._touched.has(key)) {
        continue;
      }
      if (!this.jobs.has(key)) {
        added.push(key);
      }
      const job = this._job(key);
      const before = job.status;
      for (const field of JOB_FIELDS) {
        if (row[field] !== undefined) {
          job[field] = row[field];
        }
      }
      applyReason(job, row.wait_reason, before);
    }
    for (const key of [...this.jobs.keys()]) {
      if (!seen.has(key) && !this._touched.has(key)) {
        this.jobs.delete(key); // archived while we were not listening
      }
    }
    return { added };
  }

  /** Whether a feed message with this serial was applied already. */
  isOld(serial) {
    return typeof serial === "number" && this.lastSerial !== null && serial <= this.lastSerial;
  }

  _advance(serial) {
    if (typeof serial === "number" && (this.lastSerial === null || serial > this.lastSerial)) {
      this.lastSerial = serial;
    }
  }

  /**
   * Apply a feed "job" event; returns {id, isNew, reasonChanged} (null if a
   * replayed duplicate).  reasonChanged: the reason shown for the job changed.
   */
  applyJobEvent(msg) {
    if (this.isOld(msg.serial)) {
      return null;
    }
    this._advance(msg.serial);
    const key = String(msg.id);
    const isNew = !this.jobs.has(key);
    const job = this._job(key);
    this._touched.add(key);
    const before = job.status;
    const shownBefore = shownReason(job);
    for (const field of JOB_FIELDS) {
      if (msg[field] !== undefined) {
        job[field] = msg[field];
      }
    }
    applyReason(job, msg.wait_reason, before);
    this.addLog(key, msg.log || []);
    return { id: key, isNew, reasonChanged: shownReason(job) !== shownBefore };
  }

  /** Apply a feed "archive" event; returns the id removed (null if a duplicate). */
  applyArchiveEvent(msg) {
    if (this.isOld(msg.serial)) {
      return null;
    }
    this._advance(msg.serial);
    const key = String(msg.id);
    this._touched.add(key);
    this.jobs.delete(key);
    return key;
  }

  /** Note a serial that carries no job change (subscribed, resync). */
  setSerial(serial) {
    if (typeof serial === "number") {
      this.lastSerial = serial;
    }
  }

  /** Add log entries [serial, ts, type, message] to a job, dropping duplicates. */
  addLog(id, entries) {
    const job = this.jobs.get(String(id));
    if (!job) {
      return 0;
    }
    let added = 0;
    for (const entry of entries) {
      const serial = logKey(entry);
      if (Number.isNaN(serial) || job.log.has(serial)) {
        continue;
      }
      job.log.set(serial, entry);
      added += 1;
    }
    return added;
  }

  /** Add the log of GET /2/jobs/<id> (oplog: one list of entries per opcode). */
  addOplog(id, oplog) {
    let added = 0;
    for (const entries of oplog || []) {
      added += this.addLog(id, entries || []);
    }
    return added;
  }

  /** A job's log entries in serial order. */
  logOf(id) {
    const job = this.jobs.get(String(id));
    if (!job) {
      return [];
    }
    return [...job.log.values()].sort((a, b) => logKey(a) - logKey(b));
  }
}
