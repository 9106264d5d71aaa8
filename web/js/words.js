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

/**
 * A sentence for every error code of the API (API.md "Errors") the app can meet, and the app's
 * own `offline`, in each language a tenant can have. English keeps the API's own message where
 * that is written for people and says more (which group, which limit); Danish always says the
 * sentence here.
 */
export const ERRORS = {
  en: {
    offline: "Roost cannot be reached. Check your connection; the page tries again by itself.",
    unavailable: "Roost is busy or being updated. Try again in a moment.",
    timeout: "Roost took too long to answer. Try again.",
    internal: "Something went wrong on Roost's side. Try again, and tell your organiser if it keeps happening.",
    unauthenticated: "You are signed out. Sign in again.",
    wrong_password: "That password is not right.",
    password_required: "Enter your password to confirm this.",
    pin_required: "Enter your PIN.",
    wrong_pin: "That PIN is not right.",
    forbidden: "You cannot do that here: ask the group's organiser.",
    not_found: "That is no longer there: it was deleted, or you are no longer in the group.",
    expired: "That link or code has expired. Ask for a new one.",
    conflict: "That was done already, or changed meanwhile. Look again and retry.",
    rate_limited: "That was done too often just now. Wait a little and try again.",
    quota_exceeded: "Your community has no room left for photos. Tell your organiser.",
    payload_too_large: "That is too big to send. Pick a smaller photo or shorten the text.",
    unsupported_media_type: "That kind of file cannot be sent. Send a photo (JPEG, PNG, WebP or HEIC) or a PDF.",
    validation_failed: "Check what you entered in the marked field.",
    invalid_json: "The app sent something Roost could not read. Reload the page and try again.",
    invalid_request: "The app sent something Roost could not read. Reload the page and try again.",
    bad_request: "The app sent something Roost could not read. Reload the page and try again.",
    unknown_type: "The app sent something Roost could not read. Reload the page and try again.",
    method_not_allowed: "The app asked for something Roost does not do. Reload the page and try again.",
    headers_too_large: "The app sent too much at once. Reload the page and try again.",
    uri_too_long: "The app sent too much at once. Reload the page and try again.",
    range_not_satisfiable: "That file could not be read. Reload the page and try again.",
    http_version_not_supported: "This browser cannot talk to Roost. Try another browser.",
    upgrade_required: "This browser cannot talk to Roost. Try another browser.",
    unsupported_websocket_version: "This browser cannot keep a live connection to Roost. Try another browser.",
    error: "Something went wrong. Try again.",
    wait: (time) => `Try again in ${time}.`,
    seconds: (n) => `${n} second${n === 1 ? "" : "s"}`,
    minutes: (n) => `${n} minute${n === 1 ? "" : "s"}`,
  },
  da: {
    offline: "Roost kan ikke nås. Tjek din forbindelse; siden prøver igen af sig selv.",
    unavailable: "Roost har travlt eller bliver opdateret. Prøv igen om et øjeblik.",
    timeout: "Roost var for længe om at svare. Prøv igen.",
    internal: "Noget gik galt hos Roost. Prøv igen, og sig det til din arrangør, hvis det bliver ved.",
    unauthenticated: "Du er logget ud, eller oplysningerne passer ikke. Log ind igen.",
    wrong_password: "Adgangskoden er forkert.",
    password_required: "Skriv din adgangskode for at bekræfte.",
    pin_required: "Skriv din pinkode.",
    wrong_pin: "Pinkoden er forkert.",
    forbidden: "Det kan du ikke her: spørg gruppens arrangør.",
    not_found: "Det findes ikke længere: det er slettet, eller du er ikke længere med i gruppen.",
    expired: "Linket eller koden er udløbet. Bed om en ny.",
    conflict: "Det er allerede gjort eller blevet ændret imens. Se efter og prøv igen.",
    rate_limited: "Det er gjort for mange gange lige nu. Vent lidt, og prøv igen.",
    quota_exceeded: "Der er ikke mere plads til billeder i jeres fællesskab. Sig det til din arrangør.",
    payload_too_large: "Det er for stort at sende. Vælg et mindre billede, eller gør teksten kortere.",
    unsupported_media_type: "Den slags fil kan ikke sendes. Send et billede (JPEG, PNG, WebP eller HEIC) eller en PDF.",
    validation_failed: "Tjek det, du har skrevet i det markerede felt.",
    invalid_json: "Appen sendte noget, Roost ikke kunne læse. Genindlæs siden, og prøv igen.",
    invalid_request: "Appen sendte noget, Roost ikke kunne læse. Genindlæs siden, og prøv igen.",
    bad_request: "Appen sendte noget, Roost ikke kunne læse. Genindlæs siden, og prøv igen.",
    unknown_type: "Appen sendte noget, Roost ikke kunne læse. Genindlæs siden, og prøv igen.",
    method_not_allowed: "Appen bad om noget, Roost ikke gør. Genindlæs siden, og prøv igen.",
    headers_too_large: "Appen sendte for meget på én gang. Genindlæs siden, og prøv igen.",
    uri_too_long: "Appen sendte for meget på én gang. Genindlæs siden, og prøv igen.",
    range_not_satisfiable: "Filen kunne ikke læses. Genindlæs siden, og prøv igen.",
    http_version_not_supported: "Denne browser kan ikke tale med Roost. Prøv en anden browser.",
    upgrade_required: "Denne browser kan ikke tale med Roost. Prøv en anden browser.",
    unsupported_websocket_version: "Denne browser kan ikke holde forbindelsen til Roost. Prøv en anden browser.",
    error: "Noget gik galt. Prøv igen.",
    wait: (time) => `Prøv igen om ${time}.`,
    seconds: (n) => `${n} sekund${n === 1 ? "" : "er"}`,
    minutes: (n) => `${n} minut${n === 1 ? "" : "ter"}`,
  },
};

/** Codes whose API message, in English, is written for people and says more than the table. */
const TELLING = new Set(["unauthenticated", "forbidden", "not_found", "expired", "conflict", "rate_limited", "validation_failed", "quota_exceeded"]);

/** Whether an API message reads as meant for a person: no "no such …", field names or byte counts. */
function forPeople(message) {
  return !!message && !/^no such\b/i.test(message) && !/\b[a-z]+_[a-z0-9_]+\b/.test(message) && !/\b\d{5,}\b/.test(message)
    && !/\b(JSON|UTF-8|header|body|token|KiB|MiB|application\/)/i.test(message);
}

/**
 * The sentence to show for an API error {code, status, message, retryAfter} in `locale` (en,
 * da; anything else reads as English), with how long to wait after a 429 or 503.
 */
export function errorSentence(error, locale = "en") {
  const words = ERRORS[locale] ?? ERRORS.en;
  const code = error.status === 0 ? "offline" : error.code;
  let sentence = words[code] ?? words.error;
  if (words === ERRORS.en && TELLING.has(code) && forPeople(error.message)) {
    const text = error.message.charAt(0).toUpperCase() + error.message.slice(1);
    sentence = /[.!?]$/.test(text) ? text : `${text}.`;
  }
  const seconds = Number(error.retryAfter);
  if (error.retryAfter && Number.isFinite(seconds) && (error.status === 429 || error.status === 503)) {
    const time = seconds < 90 ? words.seconds(Math.max(1, Math.round(seconds))) : words.minutes(Math.ceil(seconds / 60));
    sentence = `${sentence} ${words.wait(time)}`;
  }
  return sentence;
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
    case "alert.closed": return `Closed alert ${entry.target?.id ?? ""}${data.resolution ? `: “${data.resolution}”` : ""}`;
    case "alert.reopened": return `Reopened alert ${entry.target?.id ?? ""}`;
    case "templates.replaced": return `Saved the templates${Array.isArray(data.keys) && data.keys.length ? ` (${data.keys.join(", ")})` : ""}`;
    case "escalation_contact.added": return `Added the escalation contact ${name ?? ""}`.trim();
    case "escalation_contact.removed": return `Removed the escalation contact ${name ?? ""}`.trim();
    case "group.updated": return "Changed the group's settings";
    case "group.deleted": return "Deleted the group";
    default: return String(entry.action ?? "").replace(/[._]/g, " ");
  }
}
