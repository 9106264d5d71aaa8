// Unit tests of the web app's pure modules, with Node's own test runner (scripts/web-test runs
// `node --test Tests/web/`), each module loaded as the browser loads it (load.mjs).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { load } from "./load.mjs";

const { alertWords, deviceName } = await load("words.js");
const { ERRORS, errorSentence } = await load("api.js");

test("sessions are named as people name their devices", () => {
  const cases = {
    "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36": "Chrome on Android",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1": "Safari on iOS",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0 Mobile/15E148 Safari/604.1": "Chrome on iOS",
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0": "Edge on Windows",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10.15; rv:133.0) Gecko/20100101 Firefox/133.0": "Firefox on macOS",
    "Mozilla/5.0 (Linux; Android 14; SM-S911B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36": "Samsung Internet on Android",
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/131.0.0.0 Safari/537.36": "Chrome on Linux",
    "Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36": "Chrome on ChromeOS",
    "curl/8.5.0": "curl",
    "": "Unknown device",
  };
  for (const [ua, name] of Object.entries(cases)) assert.equal(deviceName(ua), name, ua);
  assert.equal(deviceName(null), "Unknown device");
  assert.equal(deviceName("x".repeat(500)).length, 40, "a long unknown client is cut");
});


test("an alert a check-in raised reads as what it is, never as raised by the walker", () => {
  const at = (iso) => iso.slice(11, 16);
  const missed = alertWords({
    template: "missed_checkin", text: "Walking home from the station", author: { display_name: "Bob" },
    alert: { details: { due_at: "2026-11-28T22:50:00Z", location_at: "2026-11-28T22:55:00Z", battery: 41 } },
  }, [], at);
  assert.equal(missed.headline, "Missed check-in: Bob");
  assert.equal(missed.byline, "Bob did not check in by 22:50, last seen 22:55 (battery 41%). Roost raised this alert for them.");
  assert.equal(missed.note, "Their note: “Walking home from the station”");
  // With no note the server's own words are not repeated as a note; with no place, it says so.
  const bare = alertWords({ template: "missed_checkin", text: "Bob did not check in on time", author: { display_name: "Bob" },
    alert: { details: { due_at: "2026-11-28T22:50:00Z", location_at: null } } }, [], at);
  assert.equal(bare.note, null);
  assert.match(bare.byline, /with no place known\./);
  assert.equal(alertWords({ template: "help", text: "I need help", author: { display_name: "Bob" } }).headline, "Bob needs help");
  assert.match(alertWords({ template: "duress", text: "x", author: { display_name: "Bob" } }).byline, /cannot see this alert/);
});

test("an official warning says who issued it, for where, until when, and links its source", () => {
  const at = (iso) => iso.slice(11, 16);
  const warning = alertWords({
    text: "Flood warning\n\nWater is rising.\n\nMove cars.", author: { type: "feed", display_name: "Met feed" },
    alert: { details: { cap: { sender_name: "Met Office", area: "Riverside", expires: "2026-11-28T22:00:00Z", url: "https://met.example/1" } } },
  }, [], at);
  assert.deepEqual(warning, { headline: "Flood warning", byline: "Official warning from Met Office for Riverside, until 22:00. Roost took it from Met feed.",
    note: "Water is rising.\n\nMove cars.", source: "https://met.example/1" });
  const bare = alertWords({ text: "", author: { type: "feed", display_name: "Met feed" }, alert: { details: { cap: { event: "Storm", url: "javascript:x" } } } });
  assert.deepEqual(bare, { headline: "Storm", byline: "Official warning from Met feed. Roost took it from Met feed.", note: null, source: null });
});

test("a template alert shows the template's words; one's own words come first", () => {
  const templates = [{ key: "break_in", text: "Someone is breaking in" }];
  const plain = alertWords({ template: "break_in", text: "", author: { display_name: "Ann" } }, templates);
  assert.deepEqual(plain, { headline: "Someone is breaking in", byline: "Raised by Ann", note: null });
  const worded = alertWords({ template: "break_in", text: "Back door of number 12", author: { display_name: "Ann" } }, templates);
  assert.deepEqual(worded, { headline: "Back door of number 12", byline: "Raised by Ann", note: "Someone is breaking in" });
  assert.equal(alertWords({ template: "gone_key", text: "" }).headline, "gone key", "a template the group no longer has");
  assert.equal(alertWords({ text: "" }).headline, "Alert");
});

// Every code of API.md's "Errors" (Sources/RoostProtocol/HTTP/APIError.swift), and the app's own.
// Every code the server can send (read from its one list, so a new code without words fails
// here), and the app's own two.
const serverCodes = [...readFileSync(new URL("../../Sources/RoostProtocol/HTTP/APIError.swift", import.meta.url), "utf8")
  .matchAll(/static let \S+ = Code\("([a-z_]+)"\)/g)].map((match) => match[1]);
const CODES = [...serverCodes, "offline", "error"];
assert.ok(serverCodes.includes("muted") && serverCodes.length > 25, `codes read: ${serverCodes}`);

test("every error code has a sentence in English and in Danish", () => {
  for (const locale of ["en", "da"]) {
    for (const code of CODES) {
      const sentence = ERRORS[locale][code];
      assert.equal(typeof sentence, "string", `${locale} ${code}`);
      assert.match(sentence, /^[A-ZÆØÅ].*[.!?]$/, `${locale} ${code} is a sentence`);
    }
  }
  assert.notEqual(ERRORS.da.payload_too_large, ERRORS.en.payload_too_large);
});

test("errors are written for neighbours, not developers, in the tenant's language", () => {
  const tooBig = { status: 413, code: "payload_too_large", message: "The request body is larger than 26214400 bytes." };
  assert.equal(errorSentence(tooBig, "en"), "That is too big to send. Pick a smaller photo or shorten the text.");
  assert.equal(errorSentence(tooBig, "da"), "Det er for stort at sende. Vælg et mindre billede, eller gør teksten kortere.");
  // A message meant for people, saying more than the table, is kept in English.
  const taken = { status: 409, code: "conflict", message: "at most 5 check-ins at once; complete one first" };
  assert.equal(errorSentence(taken, "en"), "At most 5 check-ins at once; complete one first.");
  assert.equal(errorSentence(taken, "da"), ERRORS.da.conflict);
  // ...but not one naming a field, a "no such" or a byte count.
  assert.equal(errorSentence({ status: 400, code: "validation_failed", message: "due_in_s must be 60 s to 24 h away" }, "en"), ERRORS.en.validation_failed);
  assert.equal(errorSentence({ status: 404, code: "not_found", message: "no such group" }, "en"), ERRORS.en.not_found);
  // Unreachable, whatever the code; a 429 says how long to wait, in words of the language.
  assert.equal(errorSentence({ status: 0, code: "offline", message: "" }, "da"), ERRORS.da.offline);
  const slow = { status: 429, code: "rate_limited", message: "too many failed sign-ins; try again later", retryAfter: "900" };
  assert.equal(errorSentence(slow, "en"), "Too many failed sign-ins; try again later. Try again in 15 minutes.");
  assert.equal(errorSentence(slow, "da"), `${ERRORS.da.rate_limited} Prøv igen om 15 minutter.`);
  assert.equal(errorSentence({ ...slow, retryAfter: "1" }, "da"), `${ERRORS.da.rate_limited} Prøv igen om 1 sekund.`);
  assert.equal(errorSentence({ status: 418, code: "something_new", message: "x" }, "fr"), ERRORS.en.error, "an unknown code and language");
});

test("the audit log says whom each change affected", async () => {
  const { auditText } = await load("words.js");
  assert.equal(auditText({ action: "member.role_changed", target: { type: "user", id: "u", name: "Ben" }, data: { from: "member", to: "admin" } }),
    "Made Ben an admin");
  assert.equal(auditText({ action: "member.removed", target: { type: "user", id: "u", name: "Cy" }, data: {} }), "Removed Cy from the group");
  assert.equal(auditText({ action: "member.removed", target: { type: "user", id: "u", name: null }, data: {} }), "Removed a member from the group");
  assert.equal(auditText({ action: "alert.closed", target: { type: "alert", id: "12" }, data: { resolution: "a bonfire" } }), "Closed alert 12: “a bonfire”");
  assert.equal(auditText({ action: "templates.replaced", target: { type: "templates", id: "g" }, data: { keys: ["fire", "smoke"] } }),
    "Saved the templates (fire, smoke)");
  assert.equal(auditText({ action: "bridge.revoked", target: { type: "bridge", id: "b", name: "Panel" }, data: {} }), "Revoked the bridge Panel");
  assert.equal(auditText({ action: "member.muted", target: { type: "user", id: "u", name: "Tim" }, data: { minutes: 60 } }), "Muted Tim for 60 minutes");
  assert.equal(auditText({ action: "report.closed", target: { type: "report", id: "r" }, data: { action: "removed", seq: 7 } }),
    "Closed a report of message 7, removing it");
  assert.equal(auditText({ action: "something.new", data: {} }), "something new");
});
