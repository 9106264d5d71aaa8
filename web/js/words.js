// Words for people: what the app shows instead of what machines say. Pure functions, no
// imports, so that Node's test runner can load this module on its own (Tests/web/).

/** A session's client as a person names it: "Chrome on Android", from a User-Agent string. */
export function deviceName(userAgent) {
  const ua = String(userAgent || "");
  if (!ua) return "Unknown device";
  // Order matters: Edge, Opera and Samsung's browser also say "Chrome"; Chrome also says "Safari".
  const browsers = [
    [/Edg(e|A|iOS)?\//, "Edge"], [/OPR\/|Opera/, "Opera"], [/SamsungBrowser\//, "Samsung Internet"],
    [/Firefox\/|FxiOS\//, "Firefox"], [/Chrome\/|CriOS\/|Chromium\//, "Chrome"], [/Safari\//, "Safari"],
  ];
  const systems = [
    [/Android/, "Android"], [/iPhone|iPad|iPod/, "iOS"], [/CrOS/, "ChromeOS"], [/Windows/, "Windows"],
    [/Mac OS X|Macintosh/, "macOS"], [/Linux/, "Linux"],
  ];
  const browser = browsers.find(([pattern]) => pattern.test(ua))?.[1];
  const system = systems.find(([pattern]) => pattern.test(ua))?.[1];
  if (browser && system) return `${browser} on ${system}`;
  if (browser || system) return browser || system;
  // Not a browser (curl, a script): its own first word, without its version.
  return ua.split(/[\s/]/)[0].slice(0, 40) || "Unknown device";
}

/**
 * What an alert says at the top of its screen and in the chat: `headline` (what happened),
 * `byline` (who raised it and how) and `note` (the words that came with it, or null). An alert
 * a check-in raised reads as what it is, never as raised by the walker: "Missed check-in: Ann".
 * `templates` are the group's ({key, text}); `at` writes a time ("10:55").
 */
export function alertWords(message, templates = [], at = (iso) => iso) {
  const who = message.author?.display_name ?? "A member";
  const details = message.alert?.details ?? {};
  const text = message.text ?? "";
  if (message.author?.type === "feed") return warningWords(text, details.cap ?? {}, who, at);
  const template = templates.find((candidate) => candidate.key === message.template);
  switch (message.template) {
    case "missed_checkin":
      return {
        headline: `Missed check-in: ${who}`,
        byline: [`${who} did not check in by ${details.due_at ? at(details.due_at) : "the time they set"}`,
          details.location_at ? `, last seen ${at(details.location_at)}` : ", with no place known",
          details.battery != null ? ` (battery ${details.battery}%)` : "", ". Roost raised this alert for them."].join(""),
        note: text && text !== `${who} did not check in on time` ? `Their note: “${text}”` : null,
      };
    case "help":
      return { headline: `${who} needs help`, byline: `${who} pressed “I need help” during a check-in.`,
        note: text && text !== "I need help" ? `“${text}”` : null };
    case "duress":
      return { headline: `Silent alarm: ${who} may be in danger`,
        byline: `${who} answered a check-in with their duress PIN. They cannot see this alert: do not mention it to them.`, note: null };
    default:
      return { headline: text || template?.text || (message.template ? message.template.replaceAll("_", " ") : "Alert"),
        byline: `Raised by ${who}`, note: text && template?.text && template.text !== text ? template.text : null };
  }
}

/** An official warning (a CAP feed's): its headline, who issued it and until when, the rest of
 * its text, and the link to it at its source. */
function warningWords(text, cap, feed, at) {
  const [headline, ...rest] = text.split("\n\n");
  return {
    headline: headline || cap.event || "Official warning",
    byline: [`Official warning from ${cap.sender_name ?? feed}`, cap.area ? ` for ${cap.area}` : "",
      cap.expires ? `, until ${at(cap.expires)}` : "", `. Roost took it from ${feed}.`].join(""),
    note: rest.join("\n\n") || null,
    source: /^https?:\/\//.test(cap.url ?? "") ? cap.url : null,
  };
}

/** An audit entry as a sentence about who was affected ("made Ben an admin"); who did it is its own column. */
export function auditText(entry) {
  const name = entry.target?.name;
  const data = entry.data ?? {};
  switch (entry.action) {
    case "member.role_changed": return `Made ${name ?? "a member"} ${data.to === "admin" ? "an admin" : `a ${data.to ?? "member"}`}`;
    case "member.removed": return `Removed ${name ?? "a member"} from the group`;
    case "invitation.sent": return "Sent an invitation";
    case "invitation.revoked": return "Revoked an invitation";
    case "bridge.created": return `Added the bridge ${name ?? ""}`.trim();
    case "bridge.revoked": return `Revoked the bridge ${name ?? ""}`.trim();
    case "bridge.changed": return `Changed the bridge ${name ?? ""}${data.arm === "disarmed" ? " (disarmed)" : ""}`.trim();
    case "alert.closed": return `Closed alert ${entry.target?.id ?? ""}${data.resolution ? `: “${data.resolution}”` : ""}`;
    case "alert.reopened": return `Reopened alert ${entry.target?.id ?? ""}`;
    case "group.cap_token_changed": return data.token ? "Made a new CAP feed address" : "Ended the CAP feed";
    case "templates.replaced": return `Saved the templates${Array.isArray(data.keys) && data.keys.length ? ` (${data.keys.join(", ")})` : ""}`;
    case "escalation_contact.added": return `Added the escalation contact ${name ?? ""}`.trim();
    case "escalation_contact.removed": return `Removed the escalation contact ${name ?? ""}`.trim();
    case "group.updated": return "Changed the group's settings";
    case "group.area_changed": return data.kind ? `Set the group's area (a ${data.kind})` : "Removed the group's own area";
    case "group.deleted": return "Deleted the group";
    case "message.redacted": return `Removed message ${entry.target?.id ?? ""}`.trim();
    case "report.closed": return `Closed a report of message ${data.seq ?? ""}${data.action === "removed" ? ", removing it" : ""}`.replace(" ,", ",");
    case "member.muted": return `Muted ${name ?? "a member"}${data.minutes ? ` for ${data.minutes} minutes` : ""}`;
    case "member.unmuted": return `Let ${name ?? "a member"} speak again`;
    case "member.blocked": return `Removed and blocked ${name ?? "a member"}`;
    default: return String(entry.action ?? "").replace(/[._]/g, " ");
  }
}
