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

async function fetchJson(url, credentials) {
  try {
    return await fetch(url, {
      headers: { Accept: "application/json" },
      credentials,
      cache: "no-store",
    });
  } catch (err) {
    throw new HttpError(0, `ganeti-rapi cannot be reached (${err.message || err})`);
  }
}

export async function getJson(path) {
  // absolute on the origin: a relative URL would take over user:password@ from
  // the page's address, and fetch refuses URLs with credentials (the browser
  // sends the credentials it was given for the page by itself)
  const url = new URL(path, window.location.origin);
  let response = await fetchJson(url, credentialsMode);
  if (response.status === 401 && credentialsMode === "omit") {
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
  let body = null;
  try {
    body = await response.json();
  } catch (err) {
    body = null;
  }
  if (!response.ok) {
    const detail = body && typeof body === "object" && body.message ? body.message
      : response.statusText;
    throw new HttpError(response.status, `${path}: ${response.status} ${detail}`);
  }
  setMessage("auth", null);
  setMessage("network", null);
  return body;
}
