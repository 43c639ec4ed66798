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
