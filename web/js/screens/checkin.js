// Check-ins: start a walk with a timer or a destination, watch it count down, say "I'm safe"
// (on a PIN pad once PINs are set) or "I need help"; answer and send check-in requests.

import { api, ApiError, path } from "../api.js";
import { currentPosition, errorBox, field, fill, followPosition, form, h, mapLink, mount, showError, time, toast } from "../ui.js";

const PINS_KEY = "roost.pins";

export async function show({ main, stream, navigate }) {
  const active = h("section", { "aria-labelledby": "active-heading" });
  const requests = h("section", { "aria-labelledby": "requests-heading" });
  const starter = h("section", { "aria-labelledby": "start-heading" });
  const timers = new Set();
  const watches = new Set();

  const [groups, me] = await Promise.all([api("GET", "/v1/groups?limit=200"), api("GET", "/v1/me")]);

  const room = { main, active, requests, starter, timers, watches, groups, me, stream, navigate };
  renderStarter(room);
  await Promise.all([refresh(room), refreshRequests(room)]);
  mount(main, "Check-in", h("p", {}, "If you do not check in by the time you set, your group gets a red alert with your last known place."),
    active, starter, requests);

  const onNotice = (event) => {
    if (String(event.detail.event).startsWith("checkin")) {
      refresh(room).catch(() => {});
      refreshRequests(room).catch(() => {});
    }
  };
  stream?.addEventListener("notice", onNotice);
  return () => {
    timers.forEach(clearInterval);
    watches.forEach((watch) => navigator.geolocation?.clearWatch(watch));
    stream?.removeEventListener("notice", onNotice);
  };
}

/**
 * Every check-in of the walker's that still needs them: running, asking "are you safe?" after
 * its deadline (the grace, when "I'm safe" still stops the alert), and missed or escalated
 * (its alert went out; "I'm safe" sends the all clear), soonest due first.
 */
const OPEN_STATUSES = ["active", "prompting", "missed", "escalated"];

async function refresh(room) {
  const { active, timers, watches } = room;
  const [done, ...pages] = await Promise.all([api("GET", "/v1/checkins?status=completed&limit=1"),
    ...OPEN_STATUSES.map((status) => api("GET", `/v1/checkins?status=${status}`))]);
  // "Are you safe?" first (its grace is running), then the walks on, then those whose alert went out.
  const urgency = { prompting: 0, active: 1, escalated: 2, missed: 2 };
  const open = pages.flatMap((page) => page.items)
    .sort((a, b) => urgency[a.status] - urgency[b.status] || Date.parse(a.due_at) - Date.parse(b.due_at));
  // The walk that just ended safely says so for an hour ("You arrived at 22:10").
  const ended = done.items[0];
  const recent = ended && Date.now() - Date.parse(ended.ended_at) < 3600_000 ? ended : null;
  timers.forEach(clearInterval);
  timers.clear();
  watches.forEach((watch) => navigator.geolocation?.clearWatch(watch));
  watches.clear();
  fill(active, h("h2", { id: "active-heading" }, "Your check-ins"),
    recent ? h("p", { class: "notice", dataset: { ended: recent.id } },
      h("strong", {}, recent.reason === "arrived" ? "You arrived " : "You checked in safe "), time(recent.ended_at),
      ": your group has been told you are home safe.") : null,
    open.length ? open.map((checkin) => card(room, checkin)) : h("p", { class: "muted" }, "None running. Start one before you walk home alone."));
}

/** What a check-in's card says first, by its status. */
function headline(checkin) {
  switch (checkin.status) {
    case "prompting": return [h("strong", {}, "Time is up: are you safe? "), "Say so before your group is alerted. Due at ", time(checkin.due_at)];
    case "missed": return [h("strong", {}, "Your group was alerted: "), "you did not check in by ", time(checkin.due_at), ". If you are safe, say so."];
    case "escalated": return [h("strong", {}, "You asked for help. "), "When you are safe, say so."];
    default: return ["Due at ", time(checkin.due_at)];
  }
}

function card(room, checkin) {
  const { timers, watches } = room;
  const box = errorBox();
  const clock = h("p", { class: "countdown", role: "timer", "aria-live": "off" });
  const spoken = h("p", { class: "visually-hidden", "aria-live": "polite" });
  let asked = checkin.status !== "active";
  const tick = () => {
    const left = Math.round((Date.parse(checkin.due_at) - Date.now()) / 1000);
    // At the deadline the server asks "are you safe?": show the card as it is now.
    if (left < 0 && !asked) {
      asked = true;
      setTimeout(() => refresh(room).catch(() => {}), 1500);
    }
    const text = left >= 0 ? `${Math.floor(left / 60)}:${String(left % 60).padStart(2, "0")}` : "Overdue";
    clock.textContent = text;
    if (left >= 0 && left % 60 === 0) spoken.textContent = `${left / 60} minutes left`;
    if (left < 0 && left > -2) spoken.textContent = "Your check-in is overdue: say you are safe, or your group is told.";
  };
  tick();
  timers.add(setInterval(tick, 1000));
  const watch = followPosition(30000, (location) =>
    api("POST", path`/v1/checkins/${checkin.id}/location`, location).then(() => null, () => null));
  if (watch !== null) watches.add(watch);
  const pad = h("div");
  const end = async (action, pin) => {
    showError(box, null);
    try {
      await api("POST", path`/v1/checkins/${checkin.id}/${action}`, pin ? { pin } : {});
      toast(action === "complete" ? "Home safe. Your group has been told." : "Check-in cancelled.");
      await refresh(room);
    } catch (error) {
      if (error instanceof ApiError && error.code === "pin_required") {
        localStorage.setItem(PINS_KEY, "1");
        fill(pad, pinPad((entered) => end(action, entered)));
        pad.querySelector("button")?.focus();
        return;
      }
      showError(box, error);
    }
  };
  const pinsSet = localStorage.getItem(PINS_KEY) === "1";
  const running = checkin.status === "active" || checkin.status === "prompting";
  return h("article", { class: `card stack${running ? "" : " alerted"}`, "aria-label": "Check-in", dataset: { checkin: checkin.id, status: checkin.status } },
    h("p", { role: checkin.status === "active" ? undefined : "alert" }, ...headline(checkin), checkin.note ? ` · ${checkin.note}` : ""),
    running ? clock : null, spoken, box,
    h("div", { class: "row" },
      h("button", { type: "button", class: "big", onclick: () => (pinsSet ? fill(pad, pinPad((pin) => end("complete", pin))) : end("complete")) }, "I'm safe"),
      checkin.status === "escalated" ? null : h("button", { type: "button", class: "big danger", onclick: () => help(room, checkin, box) }, "I need help")),
    pad,
    running ? h("div", { class: "row" },
      h("button", { type: "button", class: "secondary", onclick: () => extend(room, checkin, box) }, "15 more minutes"),
      h("button", { type: "button", class: "secondary", onclick: () => (pinsSet ? fill(pad, pinPad((pin) => end("cancel", pin))) : end("cancel")) }, "Cancel check-in")) : null);
}

async function extend(room, checkin, box) {
  try {
    await api("POST", path`/v1/checkins/${checkin.id}/extend`, { due_in_s: Math.max(900, Math.round((Date.parse(checkin.due_at) - Date.now()) / 1000) + 900) });
    await refresh(room);
  } catch (error) {
    showError(box, error);
  }
}

async function help(room, checkin, box) {
  const { navigate } = room;
  try {
    const location = await currentPosition();
    const alert = await api("POST", path`/v1/checkins/${checkin.id}/help`, location ? { location } : {});
    toast("Help is on its way: your group has a red alert.");
    navigate(`/g/${alert.group_id}/alert/${alert.seq}`);
  } catch (error) {
    showError(box, error);
  }
}

function renderStarter(room) {
  const { starter, groups, me } = room;
  const choices = groups.items.map((group, index) => field({ label: group.name, name: `group:${group.id}`, type: "checkbox", checked: index === 0 }));
  const home = me.home?.location;
  const startForm = form({
    label: "Start a check-in",
    fields: [
      h("fieldset", {}, h("legend", {}, "Who watches over you"), choices),
      field({ label: "Check in within", name: "minutes", options: [["10", "10 minutes"], ["15", "15 minutes"], ["20", "20 minutes"], ["30", "30 minutes"], ["45", "45 minutes"], ["60", "1 hour"], ["90", "1½ hours"], ["120", "2 hours"]], value: "20" }),
      home ? field({ label: "End it by itself when I reach home", name: "home", type: "checkbox", checked: false }) : null,
      field({ label: "Note for your watchers", name: "note", optional: true, maxlength: 500, hint: "Where you are going, what you wear." }),
    ],
    submit: "Start check-in",
    action: async (values) => {
      const groupIDs = Object.keys(values).filter((key) => key.startsWith("group:") && values[key]).map((key) => key.slice(6));
      if (!groupIDs.length) throw new Error("Pick at least one group to watch over you.");
      const body = { group_ids: groupIDs, due_in_s: Number(values.minutes ?? 20) * 60 };
      if (values.note) body.note = values.note;
      if (values.home && home) body.destination = { lat: home.lat, lon: home.lon, radius_m: 75 };
      const location = await currentPosition();
      if (location) body.location = location;
      await api("POST", "/v1/checkins", body);
      toast("Check-in started. Your group can see it.");
      await refresh(room);
    },
  });
  fill(starter, h("h2", { id: "start-heading" }, "Start a check-in"),
    groups.items.length ? h("div", { class: "panel" }, startForm) : h("p", {}, "Join a group first: its members watch over your walk."));
}

async function refreshRequests(room) {
  const { requests } = room;
  const [received, sent] = await Promise.all([api("GET", "/v1/checkin-requests?role=received"), api("GET", "/v1/checkin-requests?role=sent")]);
  const ask = askForm(room);
  fill(requests, h("h2", { id: "requests-heading" }, "Check-in requests"),
    h("h3", {}, "Asked of you"),
    received.items.length ? h("ul", { class: "answers" }, received.items.map(receivedItem)) : h("p", { class: "muted" }, "Nobody has asked."),
    h("h3", {}, "You asked"),
    sent.items.length ? h("ul", { class: "answers" }, sent.items.map((request) => h("li", {}, `${request.addressee.display_name}: ${statusText(request.status)}`,
      request.location ? [" · last seen ", mapLink(request.location)] : "", " · ", time(request.created_at)))) : h("p", { class: "muted" }, "You have not asked anyone."),
    ask);
}

function receivedItem(request) {
  const box = errorBox();
  const answer = async (status) => {
    try {
      const location = status === "need_help" ? await currentPosition() : null;
      await api("POST", path`/v1/checkin-requests/${request.id}/answer`, location ? { status, location } : { status });
      await refreshRequests(room);
    } catch (error) {
      showError(box, error);
    }
  };
  return h("li", {}, h("strong", {}, request.requester.display_name), ` asks if you are safe${request.note ? `: “${request.note}”` : ""}`, " · ", time(request.created_at),
    box, request.status === "pending"
      ? h("div", { class: "row" }, h("button", { type: "button", onclick: () => answer("safe") }, "I'm safe"),
        h("button", { type: "button", class: "danger", onclick: () => answer("need_help") }, "I need help"))
      : h("p", { class: "small" }, statusText(request.status)));
}

function askForm(room) {
  const { groups, me } = room;
  const memberField = field({ label: "Who", name: "user_id", options: [["", "Pick a group first"]] });
  const groupField = field({ label: "In which group", name: "group_id", options: [["", "Choose…"], ...groups.items.map((group) => [group.id, group.name])] });
  groupField.querySelector("select").addEventListener("change", async (event) => {
    const select = memberField.querySelector("select");
    if (!event.target.value) return;
    const members = await api("GET", path`/v1/groups/${event.target.value}/members?limit=200`).catch(() => ({ items: [] }));
    fill(select, ...members.items.filter((member) => member.user_id !== me.id).map((member) => h("option", { value: member.user_id }, member.display_name)));
  });
  return h("details", { class: "panel" }, h("summary", {}, "Ask someone to check in"), form({
    label: "Ask someone to check in",
    fields: [groupField, memberField, field({ label: "Note", name: "note", optional: true, maxlength: 500 })],
    submit: "Ask",
    action: async (values) => {
      await api("POST", "/v1/checkin-requests", { group_id: values.group_id, user_id: values.user_id, ...(values.note ? { note: values.note } : {}) });
      toast("Asked. You will hear when they answer.");
      await refreshRequests(room);
    },
  }));
}

function statusText(status) {
  return { pending: "waiting for an answer", safe: "safe", need_help: "needs help", expired: "no answer" }[status] ?? status;
}

/** A PIN pad: digits as big buttons (and the keyboard), the entry masked. */
function pinPad(submit) {
  let digits = "";
  const shown = h("p", { class: "countdown", "aria-live": "polite", "aria-label": "PIN entered" }, "");
  const update = () => (shown.textContent = "•".repeat(digits.length) || " ");
  const press = (digit) => {
    if (digits.length < 8) digits += digit;
    update();
  };
  const keys = ["1", "2", "3", "4", "5", "6", "7", "8", "9"].map((digit) => h("button", { type: "button", class: "secondary", onclick: () => press(digit) }, digit));
  const pad = h("div", { class: "stack", role: "group", "aria-label": "Enter your PIN" }, shown,
    h("div", { class: "pinpad" }, keys,
      h("button", { type: "button", class: "secondary", "aria-label": "Delete a digit", onclick: () => { digits = digits.slice(0, -1); update(); } }, "⌫"),
      h("button", { type: "button", class: "secondary", onclick: () => press("0") }, "0"),
      h("button", { type: "button", "aria-label": "Confirm PIN", onclick: () => { const pin = digits; digits = ""; update(); submit(pin); } }, "OK")));
  pad.addEventListener("keydown", (event) => {
    if (/^[0-9]$/.test(event.key)) press(event.key);
    else if (event.key === "Backspace") { digits = digits.slice(0, -1); update(); }
  });
  update();
  return pad;
}
