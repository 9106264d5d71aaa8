// A group: its chat with live events from the stream, replies, photos, and raising an alert
// from the group's templates with one deliberate gesture (press and hold) and the browser's
// location.

import { api, path, session } from "../api.js";
import { createMap } from "../map.js";
import { shrinkPhoto } from "../photo.js";
import { currentPosition, errorBox, field, fill, h, mapLink, mount, severityLabel, showError, time, toast } from "../ui.js";
import { alertWords } from "../words.js";

const HOLD_MS = 1200;

export async function show({ main, params: [groupID], stream, navigate }) {
  const chat = new GroupChat(groupID, session.user);
  const waiting = []; // events that arrived while the history loaded
  let loaded = false;
  const onEvent = (event) => {
    const frame = event.detail;
    if (frame.group_id !== groupID) return;
    if (String(frame.event).startsWith("checkin.")) walks.changed(frame);
    // A walk's alert (missed, help) changes its card: the list again.
    if (frame.event === "message.created" && ["missed_checkin", "help"].includes(frame.data?.template)) walks.refresh();
    if (!loaded) waiting.push(frame);
    else chat.apply(frame);
  };
  // Removed from the group (by its managers, or blocked): back to the groups list, saying which.
  let name = "the group";
  const walks = new Walks(groupID, session.user);
  const onNotice = (event) => {
    const notice = event.detail;
    if (notice.event === "checkin.moved" && notice.data?.group_id === groupID) walks.moved(notice.data);
    if (notice.event !== "group.removed" || notice.data?.group_id !== groupID) return;
    toast(`You are no longer a member of ${name}.`);
    navigate("/groups");
  };
  // The server says its log of this group changed under what was shown (retention, a lossy
  // failover): the screen is drawn again from the log.
  const onReset = (event) => {
    if (event.detail.group_id === groupID) navigate(`/g/${groupID}`);
  };
  stream?.addEventListener("event", onEvent);
  stream?.addEventListener("notice", onNotice);
  stream?.addEventListener("reset", onReset);
  const cleanup = () => {
    stream?.removeEventListener("event", onEvent);
    stream?.removeEventListener("notice", onNotice);
    stream?.removeEventListener("reset", onReset);
    chat.stop();
    walks.stop();
  };

  let group;
  let page;
  try {
    let templates;
    [group, page, templates] = await Promise.all([
      api("GET", path`/v1/groups/${groupID}`),
      api("GET", path`/v1/groups/${groupID}/messages?limit=50`),
      api("GET", path`/v1/groups/${groupID}/templates`).catch(() => ({ templates: [] })),
      walks.refresh(),
    ]);
    chat.templates = templates.templates;
  } catch (error) {
    cleanup();
    throw error;
  }

  name = group.name;
  for (const message of page.items.slice().reverse()) chat.add(message);
  loaded = true;
  for (const frame of waiting.splice(0)) chat.apply(frame);
  stream?.know(groupID, group.last_seq);
  chat.refreshAlerts();
  chat.markRead();

  const manager = group.role === "owner" || group.role === "admin";
  mount(main, group.name,
    h("p", { class: "row small" },
      group.description ? h("span", {}, group.description) : null,
      h("a", { href: `#/g/${groupID}/manage` }, manager ? "Members and settings" : "Members")),
    chat.alertsBox,
    walks.section,
    h("h2", { class: "visually-hidden" }, "Chat"),
    page.next ? h("p", { class: "small muted" }, "Older messages are not shown.") : null,
    chat.list,
    // The composer and the alert control stay at the bottom of the screen, under the thumb,
    // wherever the chat is scrolled.
    h("div", { class: "dock" }, chat.newPill, chat.composer(), raisePanel(chat, navigate)));
  chat.scrollToEnd();
  return cleanup;
}

/**
 * "Walking now": the walks the group watches (GET /v1/groups/{gid}/checkins), each with who,
 * the note, the deadline, the newest place, the battery and the trail on a map; new points
 * come as `checkin.moved` notices, starts, new deadlines and ends as `checkin.*` events.
 */
class Walks {
  constructor(groupID, me) {
    this.groupID = groupID;
    this.me = me;
    this.items = [];
    this.maps = new Map(); // walk id → its map
    this.section = h("section", { "aria-labelledby": `walks-${groupID}`, hidden: true });
    this.timer = setInterval(() => this.render(), 30_000); // "overdue" comes by the clock
  }

  stop() {
    clearInterval(this.timer);
  }

  async refresh() {
    const answer = await api("GET", path`/v1/groups/${this.groupID}/checkins`).catch(() => null);
    if (!answer) return;
    this.items = answer.items;
    this.render();
  }

  /** A check-in event of the group: the list again; an end is said once. */
  changed(frame) {
    const name = frame.data?.display_name ?? frame.data?.user?.display_name;
    if (frame.event === "checkin.completed" && name) toast(`${name} is home safe.`);
    this.refresh();
  }

  /** A new point of a walk's trail. */
  moved(point) {
    const walk = this.items.find((item) => item.id === point.checkin_id);
    if (!walk) return this.refresh();
    const place = { lat: point.lat, lon: point.lon, ...(point.accuracy_m != null ? { accuracy_m: point.accuracy_m } : {}) };
    walk.location = place;
    walk.location_at = point.at;
    walk.battery = point.battery ?? walk.battery;
    walk.trail = [...(walk.trail ?? []), { lat: point.lat, lon: point.lon, at: point.at, battery: point.battery }];
    this.render();
  }

  layers(walk) {
    const place = walk.location ?? walk.trail?.[walk.trail.length - 1];
    return {
      markers: place ? [{ lat: place.lat, lon: place.lon, label: walk.user.display_name, kind: "walker" }] : [],
      circle: walk.location?.accuracy_m ? { ...walk.location, radius_m: walk.location.accuracy_m } : null,
      trail: walk.trail ?? [],
    };
  }

  /** What a walk's card says first, by its status and the clock. */
  state(walk) {
    const overdue = Date.parse(walk.due_at) < Date.now();
    switch (walk.status) {
      case "prompting": return ["Overdue: Roost is asking if they are safe. Due ", time(walk.due_at)];
      case "missed": return ["Did not check in by ", time(walk.due_at), ": the group was alerted"];
      case "escalated": return ["Asked for help"];
      default: return overdue ? ["Due ", time(walk.due_at), " (just now)"] : ["Walking now, due ", time(walk.due_at)];
    }
  }

  render() {
    const items = this.items;
    this.section.hidden = !items.length;
    for (const id of [...this.maps.keys()]) if (!items.some((walk) => walk.id === id)) this.maps.delete(id);
    fill(this.section, h("h2", { id: `walks-${this.groupID}` }, "Walking now"),
      h("ul", { class: "walks" }, items.map((walk) => {
        let map = this.maps.get(walk.id);
        if (map) map.update(this.layers(walk));
        else if (walk.location || walk.trail?.length) {
          map = createMap({ label: `Where ${walk.user.display_name} is`, layers: this.layers(walk), height: 180 });
          this.maps.set(walk.id, map);
        }
        const alerted = walk.status === "missed" || walk.status === "escalated" || walk.status === "prompting";
        return h("li", { class: `card walk${alerted ? " overdue" : ""}`, dataset: { checkin: walk.id, status: walk.status } },
          h("p", {}, h("strong", {}, walk.user.id === this.me?.id ? "You" : walk.user.display_name), " · ", ...this.state(walk)),
          walk.note ? h("p", {}, `“${walk.note}”`) : null,
          h("p", { class: "small muted" }, walk.location_at ? ["Last seen ", time(walk.location_at)] : "No place shared yet",
            walk.battery != null ? ` · battery ${walk.battery}%` : ""),
          walk.alert_seq ? h("p", {}, h("a", { href: `#/g/${this.groupID}/alert/${walk.alert_seq}` }, "Open the alert")) : null,
          map?.element);
      })));
  }
}

/** The chat of one group: its messages in seq order, its open alerts, the composer. */
class GroupChat {
  constructor(groupID, me) {
    this.groupID = groupID;
    this.me = me;
    this.templates = [];
    this.shown = new Map(); // seq → the message's element
    this.readTimer = null;
    this.replyTo = null;
    this.list = h("ol", { class: "chat", "aria-label": "Messages", "aria-live": "polite", "aria-relevant": "additions" });
    this.alertsBox = h("section", { "aria-label": "Open alerts" });
    // Messages that came while the reader was scrolled up: counted on a pill that takes them down.
    this.unseen = 0;
    this.newPill = h("button", { type: "button", class: "new-pill", hidden: true, onclick: () => this.scrollToEnd() });
    this.onScroll = () => { if (this.unseen && this.atEnd()) this.clearUnseen(); };
    window.addEventListener("scroll", this.onScroll, { passive: true });
  }

  stop() {
    clearTimeout(this.readTimer);
    window.removeEventListener("scroll", this.onScroll);
  }

  /** Whether the reader is at the newest message (within a few lines of the page's end). */
  atEnd() {
    return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 80;
  }

  clearUnseen() {
    this.unseen = 0;
    this.newPill.hidden = true;
  }

  /** A stream event of this group. */
  apply(frame) {
    const data = frame.data ?? {};
    switch (frame.event) {
      case "message.created": {
        // A reader who scrolled up to read stays where they are; the pill says what came.
        const following = this.atEnd() || data.author?.id === this.me?.id;
        this.add(data);
        if (following) {
          this.scrollToEnd();
        } else {
          this.unseen += 1;
          this.newPill.textContent = `${this.unseen} new ↓`;
          this.newPill.hidden = false;
        }
        this.markRead();
        if (data.kind === "alert") this.refreshAlerts();
        break;
      }
      case "message.redacted":
      case "alert.acknowledged":
      case "alert.closed":
      case "alert.reopened":
      case "alert.repeated":
      case "alert.escalated":
      case "alert.updated":
        if (data.seq) this.reload(data.seq);
        this.refreshAlerts();
        break;
      default:
        break;
    }
  }

  add(message) {
    if (this.shown.has(message.seq)) return;
    const element = this.render(message);
    this.shown.set(message.seq, element);
    // Keep seq order even if a late event arrives out of turn.
    const after = [...this.shown.keys()].filter((seq) => seq > message.seq).sort((a, b) => a - b)[0];
    if (after !== undefined && this.shown.get(after).isConnected) this.list.insertBefore(element, this.shown.get(after));
    else this.list.append(element);
  }

  async reload(seq) {
    const element = this.shown.get(seq);
    if (!element) return;
    const message = await api("GET", path`/v1/groups/${this.groupID}/messages/${seq}`).catch(() => null);
    if (message) {
      const fresh = this.render(message);
      element.replaceWith(fresh);
      this.shown.set(seq, fresh);
    }
  }

  render(message) {
    const alert = message.alert;
    const classes = ["message"];
    if (message.author?.id === this.me?.id) classes.push("mine");
    if (alert) classes.push(`alert-${alert.severity}`);
    const quoted = message.reply_to ? this.shown.get(message.reply_to)?.querySelector(".text")?.textContent : null;
    return h("li", { class: classes.join(" "), dataset: { seq: String(message.seq) } },
      h("div", { class: "meta" }, message.author?.display_name ?? "Someone", " · ", time(message.created_at)),
      message.reply_to ? h("p", { class: "quote" }, `Reply to: ${quoted ? quoted.slice(0, 80) : `message ${message.reply_to}`}`) : null,
      alert ? h("p", {}, h("span", { class: "severity" }, severityLabel(alert.severity)), ` · ${alert.status === "open" ? "open" : "closed"}`) : null,
      h("p", { class: "text" }, alert ? alertWords(message, this.templates).headline : message.text),
      message.location ? h("p", { class: "small" }, mapLink(message.location)) : null,
      message.attachments?.length ? h("div", { class: "attachments" }, message.attachments.map((attachment) =>
        attachment.content_type?.startsWith("image/")
          ? h("img", { src: attachment.url, alt: "Photo attached to the message", loading: "lazy", width: attachment.width, height: attachment.height })
          : h("a", { href: attachment.url }, "Attachment"))) : null,
      h("div", { class: "row small" },
        alert ? h("a", { href: `#/g/${this.groupID}/alert/${message.seq}` }, "Open alert") : null,
        h("button", { type: "button", class: "link", onclick: () => this.startReply(message) }, "Reply")));
  }

  async refreshAlerts() {
    const answer = await api("GET", path`/v1/groups/${this.groupID}/alerts?status=open`).catch(() => null);
    if (!answer) return;
    fill(this.alertsBox, ...(answer.items.length ? [
      h("h2", {}, "Open alerts"),
      h("ul", { class: "groups" }, answer.items.map((alert) => h("li", {},
        h("a", { class: `group-link message alert-${alert.alert?.severity}`, href: `#/g/${this.groupID}/alert/${alert.seq}` },
          h("span", { class: "severity" }, severityLabel(alert.alert?.severity)), " ",
          alertWords(alert, this.templates).headline, " · ", time(alert.created_at))))),
    ] : []));
  }

  markRead() {
    clearTimeout(this.readTimer);
    this.readTimer = setTimeout(() => {
      const seq = Math.max(0, ...this.shown.keys());
      if (seq > 0) api("POST", path`/v1/groups/${this.groupID}/read`, { seq }).catch(() => {});
    }, 800);
  }

  /** Shows the newest message whole, just above the dock (the page's end). */
  scrollToEnd() {
    if (this.list.lastElementChild) window.scrollTo({ top: document.documentElement.scrollHeight, behavior: "instant" });
    this.clearUnseen();
  }

  startReply(message) {
    this.replyTo = message.seq;
    this.replyLabel.textContent = `Replying to ${message.author?.display_name ?? "a message"}: ${(message.text || "").slice(0, 60)}`;
    this.replyBox.hidden = false;
    this.textArea.focus();
  }

  endReply() {
    this.replyTo = null;
    this.replyBox.hidden = true;
  }

  /** The form that writes a chat line, a reply, or a photo. */
  composer() {
    const box = errorBox();
    const text = field({ label: "Message", name: "text", type: "textarea", rows: 1, maxlength: 4000, placeholder: "Write to the group" });
    this.textArea = text.querySelector("textarea");
    this.replyLabel = h("span");
    this.replyBox = h("p", { class: "small row", hidden: true }, this.replyLabel,
      h("button", { type: "button", class: "link", onclick: () => this.endReply() }, "Cancel reply"));
    const photo = h("input", { type: "file", accept: "image/*", id: `photo-${this.groupID}`, class: "visually-hidden" });
    const photoName = h("span", { class: "small muted" });
    photo.addEventListener("change", () => (photoName.textContent = photo.files[0] ? `Photo: ${photo.files[0].name}` : ""));
    const send = h("button", { type: "submit" }, "Send");
    const element = h("form", { class: "composer", "aria-label": "Write a message" }, box, this.replyBox, text,
      h("div", { class: "row" }, send, h("label", { for: photo.id, class: "button secondary" }, "Add photo"), photo, photoName));
    this.textArea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        element.requestSubmit();
      }
    });
    element.addEventListener("submit", async (event) => {
      event.preventDefault();
      showError(box, null, element);
      const body = { client_msg_id: crypto.randomUUID(), kind: "chat", text: this.textArea.value.trim() };
      if (!body.text && !photo.files[0]) return;
      if (!body.text) body.text = "Photo";
      if (this.replyTo) body.reply_to = this.replyTo;
      send.disabled = true;
      try {
        if (photo.files[0]) body.attachments = [(await api("POST", "/v1/media", await shrinkPhoto(photo.files[0]))).id];
        this.add(await api("POST", path`/v1/groups/${this.groupID}/messages`, body));
        this.textArea.value = "";
        photo.value = "";
        photoName.textContent = "";
        this.endReply();
        this.scrollToEnd();
      } catch (error) {
        showError(box, error, element);
      } finally {
        send.disabled = false;
        this.textArea.focus();
      }
    });
    return element;
  }
}

/** Raising an alert: one of the group's alert templates or words of one's own, and a button
 * that must be held (pointer, or Space/Enter) so an alert is never sent by accident. */
function raisePanel(chat, navigate) {
  const groupID = chat.groupID;
  const alertTemplates = chat.templates.filter((template) => template.kind === "alert");
  const box = errorBox();
  const choices = [...alertTemplates.map((template) => [template.key, `${severityLabel(template.severity ?? "amber")}: ${template.text}`]), ["", "Other (write it below)"]];
  const pick = field({ label: "What is happening?", name: "template", options: choices, value: alertTemplates[0]?.key ?? "" });
  const severity = field({ label: "How serious?", name: "severity", options: [["amber", "Amber: be aware"], ["red", "Red: help needed now"]], value: "amber" });
  const details = field({ label: "Details", name: "details", type: "textarea", rows: 2, optional: true, maxlength: 4000 });
  const select = pick.querySelector("select");
  const severitySelect = severity.querySelector("select");
  const chosen = () => alertTemplates.find((candidate) => candidate.key === select.value);
  // How serious, the details and how it works, one tap away; open by itself for "Other".
  // A photo goes with the alert: scaled down in the browser, uploaded as made for an alert (the
  // tenant's media quota keeps room for those).
  const photo = h("input", { type: "file", accept: "image/*", id: `alert-photo-${groupID}`, name: "alert_photo", class: "visually-hidden" });
  const photoName = h("span", { class: "small muted" });
  photo.addEventListener("change", () => (photoName.textContent = photo.files[0] ? `Photo: ${photo.files[0].name}` : ""));
  const more = h("details", { class: "raise-more" },
    h("summary", {}, "Details, photo and how serious"),
    severity, details,
    h("p", { class: "row" }, h("label", { for: photo.id, class: "button secondary" }, "Add a photo"), photo, photoName),
    h("p", { class: "hint", id: `hold-hint-${groupID}` }, "Press and hold for a second (or hold Space) so an alert is never sent by accident. Your location goes with it if you allow it."));
  const syncSeverity = () => {
    const template = chosen();
    severity.hidden = !!template;
    if (template) severitySelect.value = template.severity ?? "amber";
    else more.open = true;
  };
  select.addEventListener("change", syncSeverity);
  syncSeverity();

  const status = h("p", { class: "small", role: "status" });
  const button = h("button", { type: "button", class: "hold big", "aria-describedby": `hold-hint-${groupID}` },
    h("span", { class: "fill", "aria-hidden": "true" }), h("span", {}, "Hold to raise the alert"));

  async function raise() {
    showError(box, null);
    status.textContent = "Getting your location…";
    button.disabled = true;
    try {
      const location = await currentPosition();
      const template = chosen();
      const body = { client_msg_id: crypto.randomUUID(), kind: "alert", severity: severitySelect.value, text: details.querySelector("textarea").value.trim() };
      if (template) body.template = template.key;
      if (!body.text && !template) throw new Error("Say what is happening: pick one of the group's alerts or write the details.");
      if (location) body.location = location;
      if (photo.files[0]) {
        status.textContent = "Sending the photo…";
        body.attachments = [(await api("POST", "/v1/media?for=alert", await shrinkPhoto(photo.files[0]))).id];
      }
      const message = await api("POST", path`/v1/groups/${groupID}/messages`, body);
      chat.add(message);
      status.textContent = location ? "Alert raised with your location." : "Alert raised (your location was not shared).";
      toast("Alert raised. Your group has been told.");
      navigate(`/g/${groupID}/alert/${message.seq}`);
    } catch (error) {
      status.textContent = "";
      showError(box, error);
    } finally {
      button.disabled = false;
    }
  }

  holdToPress(button, status, raise);
  // What is happening and the button always in sight.
  return h("section", { class: "raise", "aria-labelledby": `raise-${groupID}` },
    h("h2", { id: `raise-${groupID}`, class: "visually-hidden" }, "Raise an alert"),
    box, h("div", { class: "raise-row" }, pick, button), status, more);
}

/** Calls `action` once `button` has been held for HOLD_MS; a shorter press says so in `status`. */
function holdToPress(button, status, action) {
  let timer = null;
  const start = (event) => {
    if (event.type === "keydown" && (event.repeat || (event.key !== " " && event.key !== "Enter"))) return;
    event.preventDefault();
    if (timer) return;
    button.classList.add("holding");
    status.textContent = "Keep holding…";
    timer = setTimeout(() => {
      timer = null;
      button.classList.remove("holding");
      action();
    }, HOLD_MS);
  };
  const stop = (event) => {
    if (event?.type === "keyup" && event.key !== " " && event.key !== "Enter") return;
    if (!timer) return;
    clearTimeout(timer);
    timer = null;
    button.classList.remove("holding");
    status.textContent = "Not sent: hold the button until it fills.";
  };
  button.addEventListener("pointerdown", start);
  button.addEventListener("pointerup", stop);
  button.addEventListener("pointerleave", stop);
  button.addEventListener("pointercancel", stop);
  button.addEventListener("keydown", start);
  button.addEventListener("keyup", stop);
  button.addEventListener("click", (event) => event.preventDefault());
}
