// A group: its chat with live events from the stream, replies, photos, and raising an alert
// from the group's templates with one deliberate gesture (press and hold) and the browser's
// location.

import { api, path, session } from "../api.js";
import { currentPosition, errorBox, field, fill, h, mapLink, mount, severityLabel, showError, time, toast } from "../ui.js";

const HOLD_MS = 1200;

export async function show({ main, params: [groupID], stream, navigate }) {
  const me = session.user;
  const shown = new Map(); // seq → the message's element
  const waiting = []; // events that arrived while the history loaded
  let loaded = false;
  let replyTo = null;
  let replyLabel, replyBox, textArea; // the composer's parts, set when it is built
  let readTimer = null;

  const chat = h("ol", { class: "chat", "aria-label": "Messages", "aria-live": "polite", "aria-relevant": "additions" });
  const alertsBox = h("section", { "aria-label": "Open alerts" });

  const onEvent = (event) => {
    const frame = event.detail;
    if (frame.group_id !== groupID) return;
    if (!loaded) waiting.push(frame);
    else apply(frame);
  };
  stream?.addEventListener("event", onEvent);
  const cleanup = () => {
    stream?.removeEventListener("event", onEvent);
    clearTimeout(readTimer);
  };

  let group;
  let page;
  let templates;
  try {
    [group, page, templates] = await Promise.all([
      api("GET", path`/v1/groups/${groupID}`),
      api("GET", path`/v1/groups/${groupID}/messages?limit=50`),
      api("GET", path`/v1/groups/${groupID}/templates`).catch(() => ({ templates: [] })),
    ]);
  } catch (error) {
    cleanup();
    throw error;
  }

  for (const message of page.items.slice().reverse()) add(message);
  loaded = true;
  for (const frame of waiting.splice(0)) apply(frame);
  stream?.know(groupID, group.last_seq);
  refreshAlerts();
  markRead();

  const manager = group.role === "owner" || group.role === "admin";
  mount(main, group.name,
    h("p", { class: "row small" },
      group.description ? h("span", {}, group.description) : null,
      h("a", { href: `#/g/${groupID}/manage` }, manager ? "Members and settings" : "Members")),
    alertsBox,
    h("h2", { class: "visually-hidden" }, "Chat"),
    page.next ? h("p", { class: "small muted" }, "Older messages are not shown.") : null,
    chat,
    composer(),
    raisePanel());
  scrollToEnd();
  return cleanup;

  function apply(frame) {
    const data = frame.data ?? {};
    switch (frame.event) {
      case "message.created":
        add(data);
        scrollToEnd();
        markRead();
        if (data.kind === "alert") refreshAlerts();
        break;
      case "message.redacted":
      case "alert.acknowledged":
      case "alert.closed":
      case "alert.reopened":
      case "alert.repeated":
      case "alert.escalated":
        if (data.seq) reload(data.seq);
        refreshAlerts();
        break;
      default:
        break;
    }
  }

  function add(message) {
    if (shown.has(message.seq)) return;
    const element = render(message);
    shown.set(message.seq, element);
    // Keep seq order even if a late event arrives out of turn.
    const after = [...shown.keys()].filter((seq) => seq > message.seq).sort((a, b) => a - b)[0];
    if (after !== undefined && shown.get(after).isConnected) chat.insertBefore(element, shown.get(after));
    else chat.append(element);
  }

  async function reload(seq) {
    const element = shown.get(seq);
    if (!element) return;
    const message = await api("GET", path`/v1/groups/${groupID}/messages/${seq}`).catch(() => null);
    if (message) {
      const fresh = render(message);
      element.replaceWith(fresh);
      shown.set(seq, fresh);
    }
  }

  function render(message) {
    const alert = message.alert;
    const classes = ["message"];
    if (message.author?.id === me?.id) classes.push("mine");
    if (alert) classes.push(`alert-${alert.severity}`);
    const quoted = message.reply_to ? shown.get(message.reply_to)?.querySelector(".text")?.textContent : null;
    return h("li", { class: classes.join(" "), dataset: { seq: String(message.seq) } },
      h("div", { class: "meta" }, message.author?.display_name ?? "Someone", " · ", time(message.created_at)),
      message.reply_to ? h("p", { class: "quote" }, `Reply to: ${quoted ? quoted.slice(0, 80) : `message ${message.reply_to}`}`) : null,
      alert ? h("p", {}, h("span", { class: "severity" }, severityLabel(alert.severity)), ` · ${alert.status === "open" ? "open" : "closed"}`) : null,
      h("p", { class: "text" }, message.text || templateText(message.template) || (alert ? "Alert" : "")),
      message.location ? h("p", { class: "small" }, mapLink(message.location)) : null,
      message.attachments?.length ? h("div", { class: "attachments" }, message.attachments.map((attachment) =>
        attachment.content_type?.startsWith("image/")
          ? h("img", { src: attachment.url, alt: "Photo attached to the message", loading: "lazy", width: attachment.width, height: attachment.height })
          : h("a", { href: attachment.url }, "Attachment"))) : null,
      h("div", { class: "row small" },
        alert ? h("a", { href: `#/g/${groupID}/alert/${message.seq}` }, "Open alert") : null,
        h("button", { type: "button", class: "link", onclick: () => startReply(message) }, "Reply")));
  }

  function templateText(key) {
    return key ? templates.templates.find((template) => template.key === key)?.text ?? key.replaceAll("_", " ") : "";
  }

  async function refreshAlerts() {
    const answer = await api("GET", path`/v1/groups/${groupID}/alerts?status=open`).catch(() => null);
    if (!answer) return;
    fill(alertsBox, ...(answer.items.length ? [
      h("h2", {}, "Open alerts"),
      h("ul", { class: "groups" }, answer.items.map((alert) => h("li", {},
        h("a", { class: `group-link message alert-${alert.alert?.severity}`, href: `#/g/${groupID}/alert/${alert.seq}` },
          h("span", { class: "severity" }, severityLabel(alert.alert?.severity)), " ",
          alert.text || templateText(alert.template), " · ", time(alert.created_at))))),
    ] : []));
  }

  function markRead() {
    clearTimeout(readTimer);
    readTimer = setTimeout(() => {
      const seq = Math.max(0, ...shown.keys());
      if (seq > 0) api("POST", path`/v1/groups/${groupID}/read`, { seq }).catch(() => {});
    }, 800);
  }

  function scrollToEnd() {
    chat.lastElementChild?.scrollIntoView({ block: "nearest" });
  }

  function startReply(message) {
    replyTo = message.seq;
    replyLabel.textContent = `Replying to ${message.author?.display_name ?? "a message"}: ${(message.text || "").slice(0, 60)}`;
    replyBox.hidden = false;
    textArea.focus();
  }

  function composer() {
    const box = errorBox();
    const text = field({ label: "Message", name: "text", type: "textarea", rows: 2, maxlength: 4000 });
    textArea = text.querySelector("textarea");
    replyLabel = h("span");
    replyBox = h("p", { class: "small row", hidden: true }, replyLabel,
      h("button", { type: "button", class: "link", onclick: () => { replyTo = null; replyBox.hidden = true; } }, "Cancel reply"));
    const photo = h("input", { type: "file", accept: "image/*", id: `photo-${groupID}`, class: "visually-hidden" });
    const photoName = h("span", { class: "small muted" });
    photo.addEventListener("change", () => (photoName.textContent = photo.files[0] ? `Photo: ${photo.files[0].name}` : ""));
    const send = h("button", { type: "submit" }, "Send");
    const element = h("form", { class: "composer", "aria-label": "Write a message" }, box, replyBox, text,
      h("div", { class: "row" }, send, h("label", { for: photo.id, class: "button secondary" }, "Add photo"), photo, photoName));
    textArea.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey) {
        event.preventDefault();
        element.requestSubmit();
      }
    });
    element.addEventListener("submit", async (event) => {
      event.preventDefault();
      showError(box, null, element);
      const body = { client_msg_id: crypto.randomUUID(), kind: "chat", text: textArea.value.trim() };
      if (!body.text && !photo.files[0]) return;
      if (!body.text) body.text = "Photo";
      if (replyTo) body.reply_to = replyTo;
      send.disabled = true;
      try {
        if (photo.files[0]) body.attachments = [(await api("POST", "/v1/media", photo.files[0])).id];
        const message = await api("POST", path`/v1/groups/${groupID}/messages`, body);
        add(message);
        textArea.value = "";
        photo.value = "";
        photoName.textContent = "";
        replyTo = null;
        replyBox.hidden = true;
        scrollToEnd();
      } catch (error) {
        showError(box, error, element);
      } finally {
        send.disabled = false;
        textArea.focus();
      }
    });
    return element;
  }

  function raisePanel() {
    const alertTemplates = templates.templates.filter((template) => template.kind === "alert");
    const box = errorBox();
    const choices = [...alertTemplates.map((template) => [template.key, `${severityLabel(template.severity ?? "amber")}: ${template.text}`]), ["", "Other (write it below)"]];
    const pick = field({ label: "What is happening?", name: "template", options: choices, value: alertTemplates[0]?.key ?? "" });
    const severity = field({ label: "How serious?", name: "severity", options: [["amber", "Amber: be aware"], ["red", "Red: help needed now"]], value: "amber" });
    const details = field({ label: "Details", name: "details", type: "textarea", rows: 2, optional: true, maxlength: 4000 });
    const select = pick.querySelector("select");
    const severitySelect = severity.querySelector("select");
    const syncSeverity = () => {
      const template = alertTemplates.find((candidate) => candidate.key === select.value);
      severity.hidden = !!template;
      if (template) severitySelect.value = template.severity ?? "amber";
    };
    select.addEventListener("change", syncSeverity);
    syncSeverity();

    const status = h("p", { class: "small", role: "status" });
    const button = h("button", { type: "button", class: "hold big", "aria-describedby": `hold-hint-${groupID}` },
      h("span", { class: "fill", "aria-hidden": "true" }), h("span", {}, "Hold to raise the alert"));
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
        raise();
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

    async function raise() {
      showError(box, null);
      status.textContent = "Getting your location…";
      button.disabled = true;
      try {
        const location = await currentPosition();
        const template = alertTemplates.find((candidate) => candidate.key === select.value);
        const body = { client_msg_id: crypto.randomUUID(), kind: "alert", severity: severitySelect.value, text: details.querySelector("textarea").value.trim() };
        if (template) body.template = template.key;
        if (!body.text && !template) throw new Error("Say what is happening: pick one of the group's alerts or write the details.");
        if (location) body.location = location;
        const message = await api("POST", path`/v1/groups/${groupID}/messages`, body);
        add(message);
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

    return h("section", { class: "raise", "aria-labelledby": `raise-${groupID}` },
      h("h2", { id: `raise-${groupID}` }, "Raise an alert"),
      box, pick, severity, details,
      h("p", { class: "hint", id: `hold-hint-${groupID}` }, "Press and hold for a second (or hold Space) so an alert is never sent by accident. Your location goes with it if you allow it."),
      button, status);
  }
}
