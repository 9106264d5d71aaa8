// The groups list: one call (`GET /v1/groups`) gives each group's unread count, open alerts
// and last message; it refreshes as the stream brings news. Invitations waiting for me and
// starting a new group live here too.

import { api, path } from "../api.js";
import { field, fill, form, h, mount, time, toast } from "../ui.js";

export async function show({ main, stream, navigate }) {
  const list = h("ul", { class: "groups", "aria-label": "Your groups" });
  const invitations = h("section", { "aria-label": "Invitations" });

  async function refresh() {
    const answer = await api("GET", "/v1/groups?limit=200");
    fill(list, ...(answer.items.length ? answer.items.map(item) : [h("li", { class: "muted" }, "You are not in a group yet. Start one below, or ask your organiser for an invitation.")]));
  }

  async function refreshInvitations() {
    const answer = await api("GET", "/v1/invitations");
    if (!answer.items.length) return fill(invitations, );
    fill(invitations, h("h2", { id: "invitations-heading" }, "Invitations"), h("ul", { class: "groups" }, answer.items.map((invitation) =>
      h("li", { class: "card row spread" },
        h("span", {}, h("strong", {}, invitation.group_name ?? invitation.group?.name ?? "A group"), " invited you"),
        h("span", { class: "row" },
          h("button", { type: "button", onclick: async () => {
            const accepted = await api("POST", "/v1/invitations/accept", { invitation_id: invitation.id }).catch((error) => toast(error.sentence));
            if (accepted) navigate(`/g/${accepted.group.id}`);
          } }, "Join"),
          h("button", { type: "button", class: "secondary", onclick: async () => {
            await api("POST", path`/v1/invitations/${invitation.id}/decline`).catch((error) => toast(error.sentence));
            refreshInvitations();
          } }, "Decline"))))));
  }

  const create = form({
    label: "Start a group",
    fields: [field({ label: "Group name", name: "name", required: true, maxlength: 100, hint: "Your street or block, such as “Oak Street north”." })],
    submit: "Start group",
    action: async (values) => {
      const group = await api("POST", "/v1/groups", { name: values.name ?? "" });
      navigate(`/g/${group.id}`);
    },
  });

  mount(main, "Your groups", list, invitations, h("details", { class: "panel" }, h("summary", {}, "Start a new group"), create));
  await Promise.all([refresh(), refreshInvitations()]);

  let pending = null;
  const soon = () => {
    clearTimeout(pending);
    pending = setTimeout(() => refresh().catch(() => {}), 250);
  };
  const onNotice = (event) => {
    soon();
    if (event.detail.event === "invitation.received") refreshInvitations().catch(() => {});
  };
  stream?.addEventListener("event", soon);
  stream?.addEventListener("notice", onNotice);
  stream?.addEventListener("resumed", soon);
  return () => {
    clearTimeout(pending);
    stream?.removeEventListener("event", soon);
    stream?.removeEventListener("notice", onNotice);
    stream?.removeEventListener("resumed", soon);
  };
}

function item(group) {
  const last = group.last_message;
  const alerts = group.open_alerts ?? 0;
  const unread = group.unread ?? 0;
  const label = [group.name, unread ? `${unread} unread` : null, alerts ? `${alerts} open alert${alerts === 1 ? "" : "s"}` : null].filter(Boolean).join(", ");
  return h("li", {},
    h("a", { class: "group-link", href: `#/g/${group.id}`, "aria-label": label, dataset: { group: group.id } },
      h("span", { class: "row spread" },
        h("strong", {}, group.name),
        h("span", { class: "row" },
          alerts ? h("span", { class: "badge red", title: "Open alerts" }, `${alerts} alert${alerts === 1 ? "" : "s"}`) : null,
          unread ? h("span", { class: "badge", title: "Unread" }, String(unread)) : null)),
      last ? h("span", { class: "small muted", style: null }, h("br"), `${last.author_name ?? ""}: ${last.text ?? ""} · `, time(last.created_at)) : null));
}
