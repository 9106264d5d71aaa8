// The live stream's client logic (web/js/stream.js): the first connection goes live, every later
// one resumes from the last event seen in each group, each event reaches the screens once and in
// order whatever the server replays, a revoked session stops, a reset moves the cursor back. The
// socket is the browser's WebSocket played by the test (frames in, frames out); the timers are
// Node's mock timers, so a reconnect's back-off needs no waiting.
import assert from "node:assert/strict";
import { test } from "node:test";
import { load } from "./load.mjs";

class PlayedSocket extends EventTarget {
  static opened = [];
  constructor(url) {
    super();
    this.url = url;
    this.sent = [];
    PlayedSocket.opened.push(this);
  }
  send(text) { this.sent.push(JSON.parse(text)); }
  close() {}
  /** The server sends a frame. */
  frame(value) { this.dispatchEvent(Object.assign(new Event("message"), { data: JSON.stringify(value) })); }
  /** The connection ends with `code`. */
  end(code) { this.dispatchEvent(Object.assign(new Event("close"), { code })); }
}
globalThis.WebSocket = PlayedSocket;
globalThis.location = { protocol: "https:", host: "watch.example.org" };
const { Stream } = await load("stream.js");

function watch(stream) {
  const seen = { events: [], states: [], notices: [] };
  stream.addEventListener("event", (event) => seen.events.push(`${event.detail.group_id}:${event.detail.seq}`));
  stream.addEventListener("state", (event) => seen.states.push(event.detail));
  stream.addEventListener("notice", (event) => seen.notices.push(event.detail.event));
  return seen;
}

const event = (group, seq) => ({ type: "event", group_id: group, seq, event: "message.created", data: {} });

test("a first connection goes live; events reach the screens once, in order", () => {
  PlayedSocket.opened = [];
  const stream = new Stream("tok en");
  const seen = watch(stream);
  const socket = PlayedSocket.opened[0];
  assert.equal(socket.url, "wss://watch.example.org/v1/stream?access_token=tok%20en");
  socket.frame({ type: "ready", user_id: "u", groups: [{ id: "a", last_seq: 10 }, { id: "b", last_seq: 3 }] });
  assert.deepEqual(socket.sent, [], "nothing to resume on a first connection");
  assert.deepEqual(seen.states, ["online"]);
  for (const frame of [event("a", 11), event("a", 11), event("b", 4), event("a", 9), event("a", 12), { type: "notice", event: "read.updated" }]) {
    socket.frame(frame);
  }
  socket.frame("not json at all");
  assert.deepEqual(seen.events, ["a:11", "b:4", "a:12"], "a replayed or older event is dropped");
  assert.deepEqual(seen.notices, ["read.updated"]);
  stream.stop();
});

test("after a drop it reconnects with back-off and resumes from each group's last event, missing nothing and doubling nothing", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  PlayedSocket.opened = [];
  const stream = new Stream("token");
  const seen = watch(stream);
  const first = PlayedSocket.opened[0];
  first.frame({ type: "ready", groups: [{ id: "a", last_seq: 5 }] });
  first.frame(event("a", 6));
  stream.know("c", 40); // a screen loaded group c's history over REST up to 40
  first.end(1006);
  assert.deepEqual(seen.states, ["online", "reconnecting"]);
  assert.equal(PlayedSocket.opened.length, 1, "not at once");
  t.mock.timers.tick(600); // the first back-off is 400 ms ± 25 %
  assert.equal(PlayedSocket.opened.length, 2);
  const second = PlayedSocket.opened[1];
  second.frame({ type: "ready", groups: [{ id: "a", last_seq: 9 }, { id: "c", last_seq: 42 }, { id: "d", last_seq: 1 }] });
  assert.deepEqual(second.sent, [{ type: "resume", cursors: { a: 6, c: 40 } }], "from what the screens have; a new group starts live");
  assert.deepEqual(seen.states, ["online", "reconnecting"], "online only once the replay is done");
  for (const frame of [event("a", 6), event("a", 7), event("c", 41), event("a", 8), event("c", 42), event("a", 9)]) second.frame(frame);
  second.frame({ type: "resumed", groups: [] });
  assert.deepEqual(seen.states, ["online", "reconnecting", "online"]);
  assert.deepEqual(seen.events, ["a:6", "a:7", "c:41", "a:8", "c:42", "a:9"]);
  // A node restart after a reset: the group's cursor goes back to what the server still has.
  second.frame({ type: "reset", group_id: "a", oldest_seq: 3 });
  second.frame(event("a", 3));
  assert.equal(seen.events.at(-1), "a:3");
  stream.stop();
});

test("back-off grows to ten seconds; a revoked session stops for good", (t) => {
  t.mock.timers.enable({ apis: ["setTimeout"] });
  PlayedSocket.opened = [];
  const stream = new Stream("token");
  const seen = watch(stream);
  for (let drop = 0; drop < 8; drop += 1) {
    PlayedSocket.opened.at(-1).end(1006);
    const before = PlayedSocket.opened.length;
    t.mock.timers.tick(Math.min(10000, 400 * 2 ** Math.min(drop, 5)) * 0.74);
    assert.equal(PlayedSocket.opened.length, before, `drop ${drop}: not before its back-off`);
    t.mock.timers.tick(Math.min(10000, 400 * 2 ** Math.min(drop, 5)) * 0.52);
    assert.equal(PlayedSocket.opened.length, before + 1, `drop ${drop}: once its back-off is over`);
  }
  PlayedSocket.opened.at(-1).end(1008);
  t.mock.timers.tick(60000);
  assert.equal(seen.states.at(-1), "signed-out");
  assert.equal(PlayedSocket.opened.length, 9, "no reconnect after the session was revoked");
  stream.stop();
});
