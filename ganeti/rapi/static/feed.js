// The WebSocket job feed of ganeti-rapi (/2/feed): connects, subscribes to
// every job from the last serial seen, and reconnects with backoff whenever
// the socket closes, so that no event is missed across a reconnection.

const FIRST_DELAY_MS = 500;
const MAX_DELAY_MS = 15000;

/** The feed's URL on the same host and port as the page. */
export function feedUrl(loc = window.location) {
  return (loc.protocol === "https:" ? "wss://" : "ws://") + loc.host + "/2/feed";
}

export class FeedClient {
  /**
   * @param {string} url
   * @param {object} handlers
   *   since(): the serial to resume after (null: from now);
   *   onMessages(list): every message of one frame, in serial order;
   *   onState(state, detail): "connecting", "subscribing", "live",
   *     "reconnecting" (detail: seconds until the next try) or "unsupported";
   *   onSubscribe(since): called with the serial asked for, on each (re)subscription.
   */
  constructor(url, handlers) {
    this.url = url;
    this.handlers = handlers;
    this.socket = null;
    this.delay = FIRST_DELAY_MS;
    this.timer = null;
    this.stopped = false;
    this.attempt = 0;
  }

  start() {
    if (typeof WebSocket === "undefined") {
      this.handlers.onState("unsupported");
      return;
    }
    window.addEventListener("online", () => this.reconnectNow());
    this.connect();
  }

  /** Skip the remaining backoff (e.g. when the network is back). */
  reconnectNow() {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
      this.connect();
    }
  }

  connect() {
    this.timer = null;
    this.attempt += 1;
    this.handlers.onState("connecting");
    let socket;
    try {
      socket = new WebSocket(this.url);
    } catch (err) {
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    let subscribed = false;
    socket.addEventListener("open", () => {
      const since = this.handlers.since();
      this.handlers.onState("subscribing");
      this.handlers.onSubscribe(since);
      socket.send(JSON.stringify({ type: "subscribe", jobs: "all", since }));
    });
    socket.addEventListener("message", (event) => {
      let data;
      try {
        data = JSON.parse(event.data);
      } catch (err) {
        this.handlers.onMessages([{ type: "error", message: "unreadable feed message" }]);
        return;
      }
      const list = Array.isArray(data) ? data : [data];
      if (!subscribed && list.some((m) => m && m.type === "subscribed")) {
        subscribed = true;
        this.delay = FIRST_DELAY_MS; // only a working subscription resets the backoff
        this.handlers.onState("live");
      }
      this.handlers.onMessages(list);
    });
    socket.addEventListener("close", () => {
      if (this.socket === socket) {
        this.socket = null;
        this.scheduleReconnect();
      }
    });
    // "error" is always followed by "close", which reconnects.
  }

  scheduleReconnect() {
    if (this.stopped || this.timer !== null) {
      return;
    }
    // jitter, so that many dashboards do not come back all at once
    const wait = Math.round(this.delay * (0.8 + Math.random() * 0.4));
    this.delay = Math.min(this.delay * 2, MAX_DELAY_MS);
    this.handlers.onState("reconnecting", Math.max(1, Math.round(wait / 1000)));
    this.timer = setTimeout(() => this.connect(), wait);
  }
}
