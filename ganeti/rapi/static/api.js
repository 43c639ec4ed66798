// Reading RAPI v2 resources as JSON, with the messages the page shows when
// that fails for lack of credentials.

import { setMessage } from "./dom.js";

export class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

const AUTH_MESSAGE = "ganeti-rapi requires authentication: give a user name and password "
  + "from its RAPI users file when the browser asks for them (or open this page as "
  + "https://USER@HOST:PORT/dashboard/).";
/** Milliseconds a request with credentials may wait (the browser may be asking the
 * user for them) before the page says why. */
const AUTH_HINT_DELAY_MS = 1000;

// Requests go without credentials as long as the daemon answers anonymous reads:
// a 401 to a request *with* credentials makes the browser ask the user for them.
// After the first 401, requests carry the credentials the browser has.
let credentialsMode = "omit";

async function fetchJson(url, credentials, method = "GET") {
  try {
    return await fetch(url, {
      method,
      headers: { Accept: "application/json" },
      credentials,
      cache: "no-store",
    });
  } catch (err) {
    throw new HttpError(0, `ganeti-rapi cannot be reached (${err.message || err})`);
  }
}

/** A response's JSON body (null if none) and the message of an error body (or null). */
async function readAnswer(response) {
  let body = null;
  try {
    body = await response.json();
  } catch (err) {
    body = null;
  }
  const message = body && typeof body === "object" && typeof body.message === "string"
    && body.message ? body.message : null;
  return { body, message };
}

/** From now on, reads carry the credentials the browser has (after a sign-in). */
export function useCredentials() {
  credentialsMode = "same-origin";
}

/**
 * GET path as JSON.  options.credentials ("same-origin") sends the browser's
 * credentials with this request whatever the page does for its other reads.
 * options.optional: a read the page can do without (our extensions): a 401 or
 * 403 fails it quietly, without asking the browser for credentials or changing
 * how the page's other reads are made.
 */
export async function getJson(path, options = {}) {
  // absolute on the origin: a relative URL would take over user:password@ from
  // the page's address, and fetch refuses URLs with credentials (the browser
  // sends the credentials it was given for the page by itself)
  const url = new URL(path, window.location.origin);
  const mode = options.credentials || credentialsMode;
  let response = await fetchJson(url, mode);
  if (options.optional && (response.status === 401 || response.status === 403)) {
    throw new HttpError(response.status, `${path}: ${response.status}`);
  }
  if (response.status === 401 && mode === "omit") {
    credentialsMode = "same-origin";
    const hint = setTimeout(() => setMessage("auth", AUTH_MESSAGE), AUTH_HINT_DELAY_MS);
    try {
      response = await fetchJson(url, credentialsMode);
    } finally {
      clearTimeout(hint);
    }
  }
  if (response.status === 401) {
    setMessage("auth", AUTH_MESSAGE);
    throw new HttpError(401, "authentication required");
  }
  if (response.status === 403) {
    setMessage("auth", "The RAPI user this browser authenticated as may not read the "
      + "cluster (403 Forbidden).");
    throw new HttpError(403, "forbidden");
  }
  const { body, message } = await readAnswer(response);
  if (!response.ok) {
    throw new HttpError(response.status,
      `${path}: ${response.status} ${message || response.statusText}`);
  }
  setMessage("auth", null);
  setMessage("network", null);
  return body;
}

/**
 * A write (PUT, POST, DELETE without a body) with the browser's credentials;
 * its JSON answer (a job id for Ganeti's write resources).  Failures are an
 * HttpError carrying the daemon's message (Ganeti's error text).
 */
export async function sendJson(method, path) {
  const response = await fetchJson(new URL(path, window.location.origin), "same-origin",
    method);
  const { body, message } = await readAnswer(response);
  if (!response.ok) {
    throw new HttpError(response.status, message || `${response.status} ${response.statusText}`);
  }
  return body;
}
