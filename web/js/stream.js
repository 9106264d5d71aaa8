// The live stream (API.md "The stream"): one WebSocket per signed-in tab that reconnects by
// itself and resumes from the last event seen in each group, so a screen sees each event of
// each group once, in seq order, across drops and server restarts.

export class Stream extends EventTarget {
  constructor(token) {
    super();
    this.token = token;
    /** group id → the last seq delivered to listeners */
    this.cursors = new Map();
    this.state = "connecting";
    this.attempt = 0;
    this.stopped = false;
    this.socket = null;
    this.connect();
  }

  connect() {
    if (this.stopped) return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const socket = new WebSocket(`${scheme}//${location.host}/v1/stream?access_token=${encodeURIComponent(this.token)}`);
    this.socket = socket;
    socket.addEventListener("message", (message) => this.receive(message.data));
    socket.addEventListener("close", (close) => this.closed(socket, close));
    socket.addEventListener("error", () => {});
  }

  receive(text) {
    let frame;
    try {
      frame = JSON.parse(text);
    } catch {
      return;
    }
    switch (frame.type) {
      case "ready": {
        // A first connection starts live; a later one replays what it missed, then goes live.
        const resume = {};
        for (const group of frame.groups) {
          if (this.cursors.has(group.id)) resume[group.id] = this.cursors.get(group.id);
          else this.cursors.set(group.id, group.last_seq);
        }
        if (Object.keys(resume).length > 0) this.socket.send(JSON.stringify({ type: "resume", cursors: resume }));
        else this.setState("online");
        this.attempt = 0;
        break;
      }
      case "resumed":
        this.setState("online");
        this.dispatchEvent(new CustomEvent("resumed", { detail: frame }));
        break;
      case "event": {
        const last = this.cursors.get(frame.group_id) ?? 0;
        if (frame.seq <= last) return; // already delivered
        this.cursors.set(frame.group_id, frame.seq);
        this.dispatchEvent(new CustomEvent("event", { detail: frame }));
        break;
      }
      case "notice":
        this.dispatchEvent(new CustomEvent("notice", { detail: frame }));
        break;
      case "reset":
        this.cursors.set(frame.group_id, frame.oldest_seq - 1);
        this.dispatchEvent(new CustomEvent("reset", { detail: frame }));
        break;
      default:
        break;
    }
  }

  closed(socket, close) {
    if (socket !== this.socket || this.stopped) return;
    if (close.code === 1008) {
      // The session was revoked (sign-out elsewhere, password change): no point retrying.
      this.stopped = true;
      this.setState("signed-out");
      return;
    }
    this.setState("reconnecting");
    this.attempt += 1;
    const delay = Math.min(10000, 400 * 2 ** Math.min(this.attempt - 1, 5)) * (0.75 + Math.random() * 0.5);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  /** Seen by a screen that loaded a group's history over REST, so the stream does not skip past it. */
  know(groupID, seq) {
    if (!this.cursors.has(groupID)) this.cursors.set(groupID, seq);
  }

  setState(state) {
    if (this.state === state) return;
    this.state = state;
    this.dispatchEvent(new CustomEvent("state", { detail: state }));
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.socket?.close(1000);
  }
}
