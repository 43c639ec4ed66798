// The live serial console of a running kvm instance: a panel with the console's
// output (a <pre>) that sends the keys typed into it.  It talks to
// /2/instances/<name>/console/websocket (binary messages both ways); the RAPI
// daemon relays them to the instance's serial port through its primary node.
// Only users with write access are attached; others see the server's reason.
// The output is plain text: terminal escape sequences are dropped.

import { $, setText } from "./dom.js";

/** Most characters of output kept in the panel (older output is dropped). */
const MAX_CHARS = 200000;
/** Keys that are not characters, as a VT100 terminal sends them. */
const KEYS = {
  Enter: "\r", Backspace: "\x7f", Tab: "\t", Escape: "\x1b",
  ArrowUp: "\x1b[A", ArrowDown: "\x1b[B", ArrowRight: "\x1b[C", ArrowLeft: "\x1b[D",
  Home: "\x1b[H", End: "\x1b[F", Delete: "\x1b[3~", PageUp: "\x1b[5~", PageDown: "\x1b[6~",
};
// CSI and OSC sequences, and the other escape sequences (ESC, intermediate bytes, a
// final byte: "ESC c", "ESC ( B", ...)
// eslint-disable-next-line no-control-regex
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-~]/g;

// the end of a chunk that may be the start of one of those, cut by the transport
// eslint-disable-next-line no-control-regex
const PARTIAL = /\x1b(?:\[[0-?]*[ -/]*|\][^\x07\x1b]*\x1b?|[ -/]+)?$/;
/** Longest escape sequence held back for the next chunk (an OSC without its end
 * would otherwise hold all output back). */
const MAX_PARTIAL = 256;

let socket = null;
let current = null;
let text = "";
let partial = "";
const decoder = new TextDecoder();
const encoder = new TextEncoder();

export function consoleUrl(name, loc = window.location) {
  return (loc.protocol === "https:" ? "wss://" : "ws://") + loc.host
    + `/2/instances/${encodeURIComponent(name)}/console/websocket`;
}

/** Whether the dashboard offers a console for this instance (a running kvm one
 * with a serial console). */
export function hasSerialConsole(instance) {
  return Boolean(instance && instance.oper_state && instance.hvparams
    && instance.hvparams.serial_console);
}

/** Add output: escapes dropped, carriage returns ignored, backspaces applied. */
export function appendOutput(old, chunk) {
  let out = old;
  for (const ch of chunk.replace(ESCAPES, "")) {
    if (ch === "\r" || ch === "\x07") {
      continue;
    }
    if (ch === "\b") {
      out = out.slice(0, -1);
    } else {
      out += ch;
    }
  }
  return out.length > MAX_CHARS ? out.slice(out.length - MAX_CHARS) : out;
}

/** ``[ready, held]``: ``chunk`` (after what was held back before it) split before an
 * escape sequence it ends in that is not complete yet, which waits for the next
 * chunk (QEMU's serial port sends what it has: ``ESC`` and ``[6n`` may arrive
 * apart, and the rest would show as text). */
export function splitPartial(chunk) {
  const match = PARTIAL.exec(chunk);
  if (!match || match[0].length > MAX_PARTIAL) {
    return [chunk, ""];
  }
  return [chunk.slice(0, match.index), match[0]];
}

/** The bytes a key press sends, or null for keys that send nothing. */
export function keyBytes(event) {
  if (event.altKey || event.metaKey) {
    return null;
  }
  if (event.ctrlKey) {
    const key = event.key.length === 1 ? event.key.toUpperCase() : "";
    const code = key.charCodeAt(0);
    if (code >= 0x40 && code <= 0x5f) {   // Ctrl-@ .. Ctrl-_ (Ctrl-] is 0x1d)
      return new Uint8Array([code - 0x40]);
    }
    return null;
  }
  if (KEYS[event.key]) {
    return encoder.encode(KEYS[event.key]);
  }
  return event.key.length === 1 ? encoder.encode(event.key) : null;
}

function setState(state) {
  setText($("console-state"), state);
}

function show() {
  const out = $("console-output");
  const atEnd = out.scrollTop + out.clientHeight >= out.scrollHeight - 4;
  setText(out, text);
  if (atEnd) {
    out.scrollTop = out.scrollHeight;
  }
}

/** Open the console of instance ``name`` (closing any other). */
export function openConsole(name) {
  closeConsole();
  current = name;
  text = "";
  partial = "";
  $("console-section").hidden = false;
  setText($("console-instance"), name);
  show();
  setState("connecting…");
  const ws = new WebSocket(consoleUrl(name));
  ws.binaryType = "arraybuffer";
  socket = ws;
  ws.addEventListener("open", () => {
    if (socket === ws) {
      setState("connected (keys typed into the output go to the console)");
      $("console-output").focus();
    }
  });
  ws.addEventListener("message", (event) => {
    if (socket !== ws) {
      return;
    }
    const chunk = typeof event.data === "string" ? event.data
      : decoder.decode(new Uint8Array(event.data), { stream: true });
    const [ready, held] = splitPartial(partial + chunk);
    partial = held;
    text = appendOutput(text, ready);
    show();
  });
  ws.addEventListener("close", (event) => {
    if (socket !== ws) {
      return;
    }
    socket = null;
    const reason = event.reason || (event.code === 1006
      ? "connection failed (signed in with write access?)" : "closed");
    setState(`closed (${event.code}): ${reason}`);
  });
}

export function closeConsole() {
  if (socket) {
    const ws = socket;
    socket = null;
    ws.close(1000, "closed by the user");
    setState("closed");
  }
}

function send(bytes) {
  if (socket && socket.readyState === WebSocket.OPEN && bytes && bytes.length) {
    socket.send(bytes);
  }
}

/** Wire the panel up (once). */
export function startConsole() {
  const out = $("console-output");
  out.addEventListener("keydown", (event) => {
    const bytes = keyBytes(event);
    if (bytes) {
      event.preventDefault();
      send(bytes);
    }
  });
  out.addEventListener("paste", (event) => {
    event.preventDefault();
    send(encoder.encode(event.clipboardData.getData("text").replace(/\r?\n/g, "\r")));
  });
  $("console-close").addEventListener("click", () => {
    closeConsole();
    $("console-section").hidden = true;
    current = null;
  });
  $("console-reconnect").addEventListener("click", () => {
    if (current) {
      openConsole(current);
    }
  });
}
