// An alert: what and where, who answered and how, how many have seen it, the answer buttons,
// responders' live locations, replies, and closing or reopening it with a resolution.

import { api, path, session } from "../api.js";
import { createMap } from "../map.js";
import { errorBox, field, fill, followPosition, form, h, mapLink, mount, severityLabel, showError, time, toast, when } from "../ui.js";
import { alertWords } from "../words.js";

const RESPONSES = [["seen", "Seen"], ["on_my_way", "On my way"], ["cannot_help", "Can't help"]];
const RESPONSE_TEXT = Object.fromEntries(RESPONSES);
const DISTANCE_TEXT = { "<100m": "under 100 m", "100-300m": "100 to 300 m", "300m-1km": "300 m to 1 km", ">1km": "over 1 km" };

export async function show({ main, params: [groupID, seqText], stream }) {
  const seq = Number(seqText);
  const me = session.user;
  const details = h("div");
  const answers = h("section", { "aria-labelledby": "answers-heading" });
  const locations = h("section", { "aria-label": "Live locations" });
  const replies = h("section", { "aria-label": "Replies" });
  const box = errorBox();
  const buttons = h("div", { class: "row", role: "group", "aria-label": "Your answer" });
  const lifecycle = h("div");
  let message = null;
  let sharing = null;
  let templates = [];
  let sharers = []; // the newest point of each live sharer
  let map = null; // the alert's place, its accuracy, the walker's trail and the sharers, once drawn
  const mapBox = h("div");

  // Answers can come back out of order (the first load's and a live event's): the newest
  // request's answer wins, never an older one that arrived later.
  let asked = 0;
  let shown = 0;
  async function refresh() {
    const ticket = ++asked;
    const fresh = await api("GET", path`/v1/groups/${groupID}/messages/${seq}`);
    if (!fresh.alert) throw new Error("That message is not an alert.");
    if (ticket < shown) return;
    shown = ticket;
    message = fresh;
    renderDetails();
  }

  function drawMap() {
    const shown = alertLayers(message, sharers);
    if (!shown.markers.length && !shown.trail.length) return fill(mapBox);
    if (map) return map.update(shown);
    map = createMap({ label: "Where the alert is", layers: shown });
    fill(mapBox, map.element);
  }

  function renderDetails() {
    const alert = message.alert;
    const receipts = alert.receipts;
    const words = alertWords(message, templates, when);
    fill(details, h("div", { class: `card message alert-${alert.severity}` },
      h("p", {}, h("span", { class: "severity" }, severityLabel(alert.severity)), ` · ${alert.status === "open" ? "Open" : "Closed"}`,
        alert.escalation_level ? ` · escalated (level ${alert.escalation_level})` : ""),
      h("p", { class: "text headline" }, words.headline),
      words.note ? h("p", { class: "text" }, words.note) : null,
      words.source ? h("p", {}, h("a", { href: words.source, rel: "noopener noreferrer", target: "_blank" }, "Read the warning at its source")) : null,
      h("p", { class: "small muted" }, words.byline, " · ", time(message.created_at),
        alert.repeat_count ? ` · repeated ${alert.repeat_count} times` : ""),
      message.attachments?.map((attachment) => h("img", { src: attachment.url, alt: "Photo attached to the alert", width: attachment.width, height: attachment.height })),
      receipts ? h("p", { class: "seen", dataset: { seen: String(receipts.seen) } },
        `Seen by ${receipts.seen} of ${receipts.members} member${receipts.members === 1 ? "" : "s"}`,
        ` · ${receipts.acknowledged} answered · ${receipts.pushed} notified`) : null,
      alert.status === "closed" ? h("p", {}, "Closed ", alert.closed_by?.display_name ? `by ${alert.closed_by.display_name} ` : "", time(alert.closed_at),
        alert.resolution ? `: ${alert.resolution}` : "") : null));

    fill(answers, h("h2", { id: "answers-heading" }, "Answers"),
      alert.acks.length
        ? h("ul", { class: "answers" }, alert.acks.map((ack) => h("li", { dataset: { user: ack.user_id, response: ack.response } },
          h("strong", {}, ack.display_name ?? "A member"), `: ${RESPONSE_TEXT[ack.response] ?? ack.response}`, ack.note ? ` (“${ack.note}”)` : "", " · ", time(ack.at))))
        : h("p", { class: "muted" }, "Nobody has answered yet."),
      alert.nearby?.length ? [h("h3", {}, "Neighbours nearest the place"), h("ul", { class: "answers" }, alert.nearby.map((near) =>
        h("li", {}, `${near.display_name}: ${DISTANCE_TEXT[near.distance] ?? near.distance} away`, near.response ? ` · ${RESPONSE_TEXT[near.response]}` : "")))] : null);

    const mine = alert.acks.find((ack) => ack.user_id === me?.id)?.response;
    fill(buttons, ...(alert.status === "open" ? RESPONSES.map(([value, text]) =>
      h("button", { type: "button", class: mine === value ? "" : "secondary", "aria-pressed": String(mine === value), onclick: () => answer(value) }, text)) : []));
    if (alert.status === "open" && (mine === "on_my_way" || message.author?.id === me?.id)) {
      buttons.append(h("button", { type: "button", class: "secondary", "aria-pressed": String(!!sharing), onclick: toggleSharing },
        sharing ? "Stop sharing my location" : "Share my live location"));
    }
    renderLifecycle();
    drawMap();
  }

  function renderLifecycle() {
    fill(lifecycle, lifecycleForm(message.alert.status === "open", groupID, seq, refresh));
  }

  async function answer(response) {
    showError(box, null);
    try {
      message = await api("POST", path`/v1/groups/${groupID}/alerts/${seq}/ack`, { response });
      await refresh();
      buttons.querySelector('[aria-pressed="true"]')?.focus(); // the buttons were redrawn: keep the keyboard's place
      toast(`You answered “${RESPONSE_TEXT[response]}”.`);
    } catch (error) {
      showError(box, error);
    }
  }

  function toggleSharing() {
    if (sharing) {
      navigator.geolocation.clearWatch(sharing);
      sharing = null;
      renderDetails();
      return;
    }
    sharing = followPosition(2000, (location) => { // the server keeps one point per person per 2 s
      api("POST", path`/v1/groups/${groupID}/alerts/${seq}/live-location`, location).catch((error) => showError(box, error));
    }, () => showError(box, new Error("Your location is not available: allow it in the browser's settings.")));
    if (sharing === null) return showError(box, new Error("This browser cannot share a location."));
    renderDetails();
  }

  async function refreshLocations() {
    const answer = await api("GET", path`/v1/groups/${groupID}/alerts/${seq}/live-locations`).catch(() => null);
    if (!answer) return;
    sharers = answer.items;
    if (message) drawMap();
    fill(locations, ...(answer.items.length ? [h("h2", { id: "locations-heading" }, "On their way"),
      h("ul", { class: "answers" }, answer.items.map((point) => h("li", {}, h("strong", {}, point.display_name), " ",
        mapLink(point), point.battery != null ? ` · battery ${point.battery}%` : "", " · ", time(point.at))))] : []));
  }

  async function refreshReplies() {
    const answer = await api("GET", path`/v1/groups/${groupID}/messages/${seq}/replies?limit=100`).catch(() => null);
    if (answer) fill(replies, ...repliesSection(answer.items, groupID, seq, refreshReplies));
  }

  // Listening starts before the first load: a close or a reply that lands while the screen is
  // still loading is not lost (it asks again, and the newest answer wins).
  const unfollow = follow(stream, groupID, seq, { refresh, refreshReplies, refreshLocations });
  const stop = () => {
    if (sharing) navigator.geolocation.clearWatch(sharing);
    unfollow();
  };
  let group, known;
  try {
    [group, known] = await Promise.all([api("GET", path`/v1/groups/${groupID}`),
      api("GET", path`/v1/groups/${groupID}/templates`).catch(() => ({ templates: [] })), refresh(), refreshLocations(), refreshReplies()]);
  } catch (error) {
    stop();
    throw error;
  }
  templates = known.templates ?? [];
  renderDetails();
  // Closing is for the alert's author and the group's managers (API.md): others do not see the form.
  const mayClose = group.role === "owner" || group.role === "admin" || message.author?.id === me?.id;
  mount(main, `${severityLabel(message.alert.severity)} in the group`,
    h("p", {}, h("a", { href: `#/g/${groupID}` }, "Back to the group")),
    details, mapBox, box, buttons, answers, locations, replies, mayClose ? h("section", { "aria-label": "Close or reopen" }, lifecycle) : null);

  return stop;
}

/** Keeps an alert's screen current from the stream: the alert itself, its replies, its live
 * sharers. Returns what stops it. */
function follow(stream, groupID, seq, { refresh, refreshReplies, refreshLocations }) {
  const onEvent = (event) => {
    const frame = event.detail;
    if (frame.group_id !== groupID) return;
    if (frame.data?.seq === seq || frame.data?.reply_to === seq) {
      refresh().catch(() => {});
      if (frame.data?.reply_to === seq) refreshReplies();
    }
  };
  const onNotice = (event) => {
    const notice = event.detail;
    if ((notice.event === "location.updated" || notice.event === "location.ended") && notice.data?.seq === seq) refreshLocations();
  };
  stream?.addEventListener("event", onEvent);
  stream?.addEventListener("notice", onNotice);
  return () => {
    stream?.removeEventListener("event", onEvent);
    stream?.removeEventListener("notice", onNotice);
  };
}

/** What an alert's map shows: its place with the accuracy, a walker's trail, the live sharers. */
function alertLayers(message, sharers) {
  const place = message.location;
  return {
    markers: [...(place ? [{ ...place, label: message.alert.details?.checkin_id ? "Last seen" : "Alert", kind: "place" }] : []),
      ...sharers.map((point) => ({ lat: point.lat, lon: point.lon, label: point.display_name, kind: "person" }))],
    circle: place?.accuracy_m ? { lat: place.lat, lon: place.lon, radius_m: place.accuracy_m } : null,
    trail: message.alert.details?.trail ?? [],
  };
}

/** The replies (with their photos) and the form that adds one; `sent` redraws them. */
function repliesSection(items, groupID, seq, sent) {
  return [h("h2", { id: "replies-heading" }, "Replies"),
    items.length ? h("ol", { class: "chat" }, items.map((reply) => h("li", { class: "message" },
      h("div", { class: "meta" }, reply.author?.display_name ?? "Someone", " · ", time(reply.created_at)), h("p", { class: "text" }, reply.text),
      reply.attachments?.length ? h("div", { class: "attachments" }, reply.attachments.map((attachment) => attachment.content_type?.startsWith("image/")
        ? h("img", { src: attachment.url, alt: `Photo from ${reply.author?.display_name ?? "a member"}`, loading: "lazy", width: attachment.width, height: attachment.height })
        : h("a", { href: attachment.url }, "Attachment"))) : null)))
      : h("p", { class: "muted" }, "No replies yet."),
    form({
      label: "Reply to the alert",
      fields: [field({ label: "Reply", name: "text", type: "textarea", rows: 2, maxlength: 4000 })],
      submit: "Send reply",
      action: async (values, element) => {
        await api("POST", path`/v1/groups/${groupID}/messages`, { client_msg_id: crypto.randomUUID(), kind: "chat", text: values.text ?? "", reply_to: seq });
        element.reset();
        await sent();
      },
    })];
}

/** Closing an open alert with a resolution, or reopening a closed one; `done` redraws. */
function lifecycleForm(open, groupID, seq, done) {
  return form({
    label: open ? "Close the alert" : "Reopen the alert",
    fields: open ? [field({ label: "Resolution", name: "resolution", optional: true, maxlength: 1000, hint: "What happened, for the group's record (“False alarm, the cat”)." })] : [],
    submit: open ? "Close alert" : "Reopen alert",
    action: async (values) => {
      const body = open && values.resolution ? { resolution: values.resolution } : open ? {} : undefined;
      await api("POST", path`/v1/groups/${groupID}/alerts/${seq}/${open ? "close" : "reopen"}`, body);
      toast(open ? "Alert closed. Everyone told has been sent the all clear." : "Alert reopened.");
      await done();
    },
  });
}
