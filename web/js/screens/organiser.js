// The organiser's room for a group, one section at a time: members and roles, invitations by
// email or phone, bridges (key and secret shown once), templates, the group's area, escalation
// settings and contacts, official warnings and the group's CAP feed, the audit log. A plain member sees the member list, where the group
// watches, and can leave.

import { api, byAddress, path, session } from "../api.js";
import { createMap } from "../map.js";
import { currentPosition, errorBox, field, fill, form, h, mount, showError, time, toast } from "../ui.js";
import { auditText } from "../words.js";

/** The room's sections, one on the screen at a time (`?s=`), each loading only its own data. */
const SECTIONS = [["members", "Members"], ["invitations", "Invitations"], ["bridges", "Bridges"], ["templates", "Templates"],
  ["area", "Area"], ["warnings", "Warnings"], ["escalation", "Escalation"], ["audit", "Audit log"]];
const LOADERS = { members, invitations, bridges, templates, area, warnings, escalation, audit };

/** The map layers of an area as the API gives it ({polygon: [[lon, lat], ...]} or {circle}). */
function areaLayers(shape) {
  if (shape?.polygon) return { area: shape.polygon.map(([lon, lat]) => ({ lat, lon })) };
  if (shape?.circle) return { circle: shape.circle };
  return {};
}

/** Where the group watches, as a map with a line saying whose area it is; null with none. */
function areaMap(answer) {
  if (!answer.area) return null;
  const whose = answer.source === "tenant" ? "The community's default area (the group has none of its own)." : "The group's own area.";
  return h("div", {}, createMap({ label: "Where the group watches", layers: areaLayers(answer.area), height: 200 }).element, h("p", { class: "small muted" }, whose));
}

export async function show({ main, params: [groupID], query, navigate }) {
  const me = session.user;
  const group = await api("GET", path`/v1/groups/${groupID}`);
  const manager = group.role === "owner" || group.role === "admin";
  const shown = manager && LOADERS[query.get("s")] ? query.get("s") : "members";
  const sections = Object.fromEntries(SECTIONS.map(([name]) => [name, h("section", { class: "panel", "aria-labelledby": `${name}-heading` })]));
  const room = { groupID, group, manager, me, sections, navigate };
  await LOADERS[shown](room);
  mount(main, `${group.name}: ${manager ? "members and settings" : "members"}`,
    h("p", {}, h("a", { href: `#/g/${groupID}` }, "Back to the chat")),
    manager ? h("nav", { class: "sections", "aria-label": "Settings sections" }, h("ul", {}, SECTIONS.map(([name, text]) =>
      h("li", {}, h("a", { href: `#/g/${groupID}/manage?s=${name}`, "aria-current": name === shown ? "page" : null }, text))))) : null,
    sections[shown]);
}

const ROLE_TEXT = { owner: "Owner", admin: "Admin", member: "Member", coordinator: "Coordinator" };

async function members(room) {
  const { groupID, group, manager, me, sections, navigate } = room;
  const [answer, watched] = await Promise.all([api("GET", path`/v1/groups/${groupID}/members?limit=200`),
    api("GET", path`/v1/groups/${groupID}/area`).catch(() => ({ area: null }))]);
  const box = errorBox();
  const act = (call) => async () => {
    showError(box, null);
    try {
      await call();
      await members(room);
    } catch (error) {
      showError(box, error);
    }
  };
  fill(sections.members, h("h2", { id: "members-heading" }, `Members (${answer.items.length})`), box,
    h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Name"), h("th", { scope: "col" }, "Role"), h("th", { scope: "col" }, "Joined"),
      manager ? h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Actions")) : null)),
    h("tbody", {}, answer.items.map((member) => h("tr", { dataset: { user: member.user_id } },
      h("td", {}, member.display_name, member.user_id === me?.id ? " (you)" : ""),
      h("td", {}, ROLE_TEXT[member.role] ?? member.role),
      h("td", {}, time(member.joined_at)),
      manager ? h("td", {}, h("div", { class: "row" }, member.role === "owner" || member.user_id === me?.id ? null : [
        group.role === "owner" ? h("button", { type: "button", class: "secondary", onclick: act(() =>
          api("PATCH", path`/v1/groups/${groupID}/members/${member.user_id}`, { role: member.role === "admin" ? "member" : "admin" })) },
        member.role === "admin" ? `Make ${member.display_name} a member` : `Make ${member.display_name} an admin`) : null,
        h("button", { type: "button", class: "secondary destructive", onclick: act(async () => {
          if (window.confirm(`Remove ${member.display_name} from the group?`)) await api("DELETE", path`/v1/groups/${groupID}/members/${member.user_id}`);
        }) }, `Remove ${member.display_name}`),
      ])) : null)))),
    group.role !== "owner" ? h("p", {}, h("button", { type: "button", class: "secondary destructive", onclick: async () => {
      if (!window.confirm("Leave this group?")) return;
      try {
        await api("DELETE", path`/v1/groups/${groupID}/members/${me.id}`);
        navigate("/groups");
      } catch (error) {
        showError(box, error);
      }
    } }, "Leave the group")) : null,
    watched.area ? h("h3", {}, "Where the group watches") : null, areaMap(watched));
}

async function invitations(room) {
  const { groupID, sections } = room;
  const answer = await api("GET", path`/v1/groups/${groupID}/invitations?limit=100`);
  const invite = form({
    label: "Invite a neighbour",
    fields: [
      field({ label: "Email or phone number", name: "address", required: true, autocomplete: "off", hint: "The invitation goes to that address only; it is valid for 7 days." }),
      field({ label: "Role", name: "role", options: [["member", "Member"], ["admin", "Admin"]], value: "member" }),
    ],
    submit: "Send invitation",
    action: async (values, element) => {
      const address = values.address ?? "";
      const body = byAddress(address);
      if (values.role === "admin") body.role = "admin";
      await api("POST", path`/v1/groups/${groupID}/invitations`, body).catch((error) => {
        if (error.field === "email" || error.field === "phone") error.field = "address";
        throw error;
      });
      element.reset();
      toast(`Invitation sent to ${address}.`);
      await invitations(room);
    },
  });
  fill(sections.invitations, h("h2", { id: "invitations-heading" }, "Invitations"), invite,
    answer.items.length ? h("ul", { class: "answers" }, answer.items.map((item) => h("li", { class: "row spread" },
      h("span", {}, item.email ?? item.phone, ` · ${item.role} · ${item.status}`, item.status === "pending" ? [" · until ", time(item.expires_at)] : ""),
      item.status === "pending" ? h("button", { type: "button", class: "secondary destructive", onclick: async () => {
        await api("DELETE", path`/v1/groups/${groupID}/invitations/${item.id}`).catch((error) => toast(error.sentence));
        invitations(room);
      } }, `Revoke the invitation to ${item.email ?? item.phone}`) : null))) : null);
}

async function bridges(room) {
  const { groupID, sections } = room;
  const answer = await api("GET", path`/v1/groups/${groupID}/bridges`);
  const shownOnce = h("div");
  const create = form({
    label: "Add a bridge",
    fields: [
      field({ label: "Name", name: "name", required: true, maxlength: 100, hint: "The alarm panel or camera system, such as “Number 12's alarm”." }),
      field({ label: "Sign its requests with a secret (replay protection)", name: "signing", type: "checkbox", checked: true }),
      field({ label: "Heartbeat every (seconds)", name: "heartbeat_s", type: "number", min: 60, max: 86400, optional: true, hint: "Tell the group's managers when it goes quiet." }),
      field({ label: "Address", name: "address", maxlength: 200, optional: true, hint: "Its alerts say whose house it is, such as “12 Elm Street”." }),
      field({ label: "At most one alert per condition every (minutes)", name: "cooldown_m", type: "number", min: 1, max: 1440, optional: true,
        hint: "A siren that fires again sooner counts as a repeat." }),
      field({ label: "Give it a secret URL (for cameras that cannot sign or set headers)", name: "hook", type: "checkbox" }),
    ],
    submit: "Add bridge",
    action: async (values, element) => {
      const body = { name: values.name ?? "", signing: values.signing && !values.hook, hook: values.hook };
      if (values.heartbeat_s) body.heartbeat_s = Number(values.heartbeat_s);
      if (values.address) body.place = { address: values.address };
      if (values.cooldown_m) body.cooldown_s = Number(values.cooldown_m) * 60;
      const created = await api("POST", path`/v1/groups/${groupID}/bridges`, body);
      element.reset();
      await bridges(room);
      sections.bridges.insertBefore(shownOnce, sections.bridges.children[1]);
      fill(shownOnce, h("div", { class: "notice stack", role: "status" },
        h("p", {}, h("strong", {}, "Copy these now: they are shown only once.")),
        secret("Key", created.key), created.secret ? secret("Signing secret", created.secret) : null,
        created.hook_path ? secret("Secret URL", `${window.location.origin}${created.hook_path}`) : null));
    },
  });
  fill(sections.bridges, h("h2", { id: "bridges-heading" }, "Bridges (alarm panels, cameras)"),
    answer.items.length ? h("ul", { class: "answers" }, answer.items.map((bridge) => h("li", { class: "row spread" },
      h("span", {}, bridge.name, bridge.place?.address ? ` · ${bridge.place.address}` : "",
        bridge.arm === "disarmed" ? " · disarmed: records, pages nobody" : "",
        bridge.last_seen_at ? [" · last heard ", time(bridge.last_seen_at)] : " · never heard from"),
      h("button", { type: "button", class: "secondary", onclick: async () => {
        const arm = bridge.arm === "disarmed" ? "armed" : "disarmed";
        await api("PATCH", path`/v1/groups/${groupID}/bridges/${bridge.id}`, { arm }).catch((error) => toast(error.sentence));
        bridges(room);
      } }, bridge.arm === "disarmed" ? `Arm ${bridge.name}` : `Disarm ${bridge.name}`),
      h("button", { type: "button", class: "secondary destructive", onclick: async () => {
        if (!window.confirm(`Revoke ${bridge.name}? Its key stops working at once.`)) return;
        await api("DELETE", path`/v1/groups/${groupID}/bridges/${bridge.id}`).catch((error) => toast(error.sentence));
        bridges(room);
      } }, `Revoke ${bridge.name}`)))) : h("p", { class: "muted" }, "No bridges."),
    h("details", {}, h("summary", {}, "Add a bridge"), create));
}

async function templates(room) {
  const { groupID, sections } = room;
  const answer = await api("GET", path`/v1/groups/${groupID}/templates`);
  const rows = h("div", { class: "stack" });
  const box = errorBox();
  // No browser bubbles: every refusal is said on the row at fault, in the page's own words.
  const save = h("form", { "aria-label": "Templates", novalidate: true }, box, rows,
    h("div", { class: "row" }, h("button", { type: "button", class: "secondary", onclick: () => templateRow(rows).querySelector("input")?.focus() }, "Add a template"),
      h("button", { type: "submit" }, "Save templates")));
  answer.templates.forEach((template) => templateRow(rows, template));
  save.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError(box, null, save);
    rows.querySelectorAll(".error").forEach((rowBox) => showError(rowBox, null));
    const list = [...rows.children].map((set) => {
      const value = (name) => set.querySelector(`[data-name=${name}]`).value.trim();
      const template = { key: value("key"), text: value("text"), kind: value("kind") };
      if (template.kind === "alert") template.severity = value("severity"); // a chat message has no severity
      return template;
    });
    try {
      await api("PUT", path`/v1/groups/${groupID}/templates`, { templates: list });
      toast("Templates saved.");
    } catch (error) {
      // "templates.2.severity": the error goes on that row, at that field.
      const row = /^templates\.(\d+)\./.exec(error.field ?? "");
      const set = row ? rows.children[Number(row[1])] : null;
      showError(set ? set.querySelector(".error") : box, error, save);
    }
  });
  fill(sections.templates, h("h2", { id: "templates-heading" }, "Alert and message templates"),
    h("p", { class: "small muted" }, "Members raise alerts from these with one gesture; chat templates are quick replies."), save);
}

/** One template's row: its fields are named by its place (templates.N.key) so an error can name them. */
function templateRow(rows, template = { key: "", text: "", kind: "alert", severity: "amber" }) {
  const named = (element, name) => {
    element.querySelector("input, select").dataset.name = name;
    return element;
  };
  const severity = named(field({ label: "Severity", name: "severity", options: [["amber", "Amber: be aware"], ["red", "Red: help needed now"], ["info", "Info"]],
    value: template.severity ?? "amber" }), "severity");
  const kind = named(field({ label: "Kind", name: "kind", options: [["alert", "Alert"], ["chat", "Chat message"]], value: template.kind }), "kind");
  const legend = h("legend", {});
  const set = h("fieldset", { class: "card template" }, legend, errorBox(),
    named(field({ label: "Short name", name: "key", value: template.key, pattern: "[a-z0-9_]{1,64}", hint: "Lower-case letters, digits and _ (burglary, smoke)." }), "key"),
    named(field({ label: "Text", name: "text", value: template.text, maxlength: 4000 }), "text"),
    h("div", { class: "two" }, kind, severity),
    h("button", { type: "button", class: "secondary destructive", onclick: () => { set.remove(); renumber(rows); } }, "Delete this template"));
  const sync = () => (severity.hidden = kind.querySelector("select").value !== "alert");
  kind.querySelector("select").addEventListener("change", sync);
  sync();
  rows.append(set);
  renumber(rows);
  return set;
}

function renumber(rows) {
  [...rows.children].forEach((set, index) => {
    set.querySelector("legend").textContent = `Template ${index + 1}`;
    set.querySelectorAll("[data-name]").forEach((control) => (control.name = `templates.${index}.${control.dataset.name}`));
    set.querySelector("button.destructive").textContent = `Delete template ${index + 1}`;
  });
}

async function area(room) {
  const { groupID, sections } = room;
  const answer = await api("GET", path`/v1/groups/${groupID}/area`);
  const box = errorBox();
  const set = form({
    label: "Set the area round where you are",
    fields: [field({ label: "Radius in metres", name: "radius_m", type: "number", min: 50, max: 100000, value: answer.area?.circle?.radius_m ?? 500,
      hint: "50 to 100,000. Official warnings that reach this circle will reach the group." })],
    submit: "Centre on my location",
    action: async (values) => {
      const place = await currentPosition();
      if (!place) throw new Error("Your browser did not give a location: allow it, or set the area through the API.");
      await api("PUT", path`/v1/groups/${groupID}/area`, { circle: { lat: place.lat, lon: place.lon, radius_m: Number(values.radius_m) } });
      toast("Area saved.");
      await area(room);
    },
  });
  const remove = answer.source === "group" ? h("button", { type: "button", class: "secondary destructive", onclick: async () => {
    showError(box, null);
    try {
      await api("DELETE", path`/v1/groups/${groupID}/area`);
      toast("The group's own area removed.");
      await area(room);
    } catch (error) {
      showError(box, error);
    }
  } }, "Remove the group's own area") : null;
  fill(sections.area, h("h2", { id: "area-heading" }, "Where the group watches"),
    h("p", { class: "small" }, "A polygon of the streets can be drawn through the API (PUT /v1/groups/{id}/area)."),
    areaMap(answer) ?? h("p", { class: "muted" }, "No area yet."), box, remove, set);
}

const SEVERITY_OPTIONS = [["info", "Every warning, information too"], ["amber", "Amber and red"], ["red", "Red only"]];

async function warnings(room) {
  const { groupID, group, sections } = room;
  const settings = form({
    label: "Official warnings",
    fields: [
      field({ label: "Official warnings reach the group", name: "enabled", type: "checkbox", checked: group.feeds.enabled }),
      field({ label: "Which warnings", name: "min_severity", options: SEVERITY_OPTIONS, value: group.feeds.min_severity,
        hint: "Extreme and severe warnings are red, moderate ones amber, the rest information." }),
      field({ label: "Drill mode: test and exercise messages reach the group too", name: "drill", type: "checkbox", checked: group.drill }),
    ],
    submit: "Save warning settings",
    action: async (values) => {
      room.group = await api("PATCH", path`/v1/groups/${groupID}`, {
        feeds: { enabled: !!values.enabled, min_severity: values.min_severity ?? "amber" }, drill: !!values.drill });
      toast("Warning settings saved.");
      await warnings(room);
    },
  });
  fill(sections.warnings, h("h2", { id: "warnings-heading" }, "Official warnings"),
    h("p", { class: "small" }, "Warnings from the feeds your community's operator set up (weather, flood, civil protection) whose area meets the group's."),
    settings, h("h3", {}, "The group's alerts for other systems"), capFeed(room));
}

/** The owner's CAP feed address: made (shown once), made anew (the old one stops), or ended. */
function capFeed(room) {
  const { groupID, group } = room;
  if (group.role !== "owner") return h("p", { class: "muted" }, "The owner can give other systems (a council's dashboard) a CAP feed of the group's alerts.");
  const shown = h("div");
  const box = errorBox();
  const act = (call) => async () => {
    showError(box, null);
    try {
      await call();
    } catch (error) {
      showError(box, error);
    }
  };
  return h("div", {}, h("p", { class: "small" }, "An Atom feed of CAP 1.2 documents: every change of the group's alerts, places rounded to 200 m, nothing hidden from anyone."),
    box, shown, h("div", { class: "row" },
      h("button", { type: "button", class: "secondary", onclick: act(async () => {
        const made = await api("POST", path`/v1/groups/${groupID}/cap-token`);
        fill(shown, secret("Feed address", made.atom_url), h("p", { class: "small" }, "Shown once. Any earlier address has stopped working."));
      }) }, "Make a feed address"),
      h("button", { type: "button", class: "secondary destructive", onclick: act(async () => {
        await api("DELETE", path`/v1/groups/${groupID}/cap-token`);
        fill(shown);
        toast("The CAP feed has ended.");
      }) }, "End the feed")));
}

async function escalation(room) {
  const { groupID, group, sections } = room;
  const contacts = await api("GET", path`/v1/groups/${groupID}/escalation-contacts`);
  const settings = form({
    label: "Escalation settings",
    fields: [
      field({ label: "Escalate an unanswered red alert after (seconds)", name: "escalate_after_s", type: "number", min: 60, max: 3600,
        value: group.escalate_after_s ?? "", optional: true, hint: "60 to 3600; empty to never escalate." }),
      field({ label: "Neighbours within this many metres get a critical push", name: "nearby_m", type: "number", min: 0, value: group.nearby_m }),
    ],
    submit: "Save escalation settings",
    action: async (values) => {
      await api("PATCH", path`/v1/groups/${groupID}`, {
        escalate_after_s: values.escalate_after_s ? Number(values.escalate_after_s) : null, nearby_m: Number(values.nearby_m ?? group.nearby_m),
      });
      toast("Escalation settings saved.");
    },
  });
  const add = form({
    label: "Add an escalation contact",
    fields: [
      field({ label: "Name", name: "name", required: true, maxlength: 100, hint: "A warden, the housing office, a security company." }),
      field({ label: "Email or phone number", name: "address", required: true }),
    ],
    submit: "Add contact",
    action: async (values, element) => {
      const address = values.address ?? "";
      await api("POST", path`/v1/groups/${groupID}/escalation-contacts`, { name: values.name ?? "", ...byAddress(address) });
      element.reset();
      toast("Contact added: they must confirm from the message they get.");
      await escalation(room);
    },
  });
  fill(sections.escalation, h("h2", { id: "escalation-heading" }, "Escalation"), settings,
    h("h3", {}, "Escalation contacts"),
    contacts.items.length ? h("ul", { class: "answers" }, contacts.items.map((contact) => h("li", { class: "row spread" },
      h("span", {}, `${contact.name} · ${contact.email ?? contact.phone} · ${contact.confirmed ? "confirmed" : "not confirmed yet"}`),
      h("button", { type: "button", class: "secondary destructive", onclick: async () => {
        await api("DELETE", path`/v1/groups/${groupID}/escalation-contacts/${contact.id}`).catch((error) => toast(error.sentence));
        escalation(room);
      } }, `Remove ${contact.name}`)))) : h("p", { class: "muted" }, "None yet."),
    add);
}

async function audit(room) {
  const { groupID, sections } = room;
  const answer = await api("GET", path`/v1/groups/${groupID}/audit?limit=50`);
  fill(sections.audit, h("h2", { id: "audit-heading" }, "Audit log"),
    answer.items.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "When"), h("th", { scope: "col" }, "Who"), h("th", { scope: "col" }, "What"))),
      h("tbody", {}, answer.items.map((entry) => h("tr", {}, h("td", {}, time(entry.at)), h("td", {}, entry.actor.display_name ?? "Roost"),
        h("td", {}, auditText(entry)))))) : h("p", { class: "muted" }, "Nothing yet."));
}

function secret(label, value) {
  const copy = h("button", { type: "button", class: "secondary", onclick: async () => {
    try {
      await navigator.clipboard.writeText(value);
      toast(`${label} copied.`);
    } catch {
      toast("Copying is not allowed here: select the text and copy it.");
    }
  } }, `Copy ${label.toLowerCase()}`);
  return h("div", {}, h("p", { class: "small" }, label), h("p", { class: "secret", dataset: { secret: label } }, value), copy);
}
