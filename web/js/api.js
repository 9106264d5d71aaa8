// The REST API of API.md: one fetch wrapper that adds the session's bearer token and turns
// the API's error shape into an ApiError the screens show in place, in words for neighbours in
// the tenant's language (the table at the end; here rather than in words.js because every
// screen needs it, the first one too, and one module fewer is one round trip fewer on a slow
// network). No DOM at the top level: Node's test runner loads it (Tests/web/).

const SESSION_KEY = "roost.session";
const LOCALE_KEY = "roost.locale";

/** The language of the tenant this device uses (its `locale`, as email follows): errors are written in it. */
export const locale = {
  get current() {
    return localStorage.getItem(LOCALE_KEY) || "en";
  },
  remember(tenant) {
    if (tenant?.locale) localStorage.setItem(LOCALE_KEY, tenant.locale);
  },
};

/** The signed-in session, kept in localStorage: {tenant, token, user, expires_at}. */
export const session = {
  read() {
    try {
      const value = JSON.parse(localStorage.getItem(SESSION_KEY) || "null");
      if (value && value.expires_at && Date.parse(value.expires_at) < Date.now()) return null;
      return value;
    } catch {
      return null;
    }
  },
  save(tenant, answer) {
    localStorage.setItem(SESSION_KEY, JSON.stringify({ tenant, token: answer.token, user: answer.user, expires_at: answer.expires_at }));
    localStorage.setItem("roost.tenant", tenant);
  },
  updateUser(user) {
    const current = this.read();
    if (current) localStorage.setItem(SESSION_KEY, JSON.stringify({ ...current, user }));
  },
  clear() {
    localStorage.removeItem(SESSION_KEY);
  },
  get token() {
    return this.read()?.token ?? null;
  },
  get user() {
    return this.read()?.user ?? null;
  },
  /** The tenant last used on this device, so the sign-in screen starts there. */
  get lastTenant() {
    return localStorage.getItem("roost.tenant") || "";
  },
};

/** An answer of the API other than 2xx, with its code, message and field (API.md "Conventions"). */
export class ApiError extends Error {
  constructor(status, error, retryAfter) {
    super(error?.message || `The server answered ${status}.`);
    this.status = status;
    this.code = error?.code || "error";
    this.field = error?.field || null;
    this.retryAfter = retryAfter;
  }

  /** The sentence to show, in the tenant's language (words.js), with how long to wait after a 429 or 503. */
  get sentence() {
    return errorSentence(this, locale.current);
  }

  /** The language `sentence` is in. */
  get lang() {
    return locale.current;
  }
}

/** A check the app makes itself before asking the API, worded for people already, marking `field` as the API's errors do. */
export class FieldError extends ApiError {
  constructor(field, message) {
    super(400, { code: "validation_failed", field, message });
  }

  get sentence() {
    return /[.!?]$/.test(this.message) ? this.message : `${this.message}.`;
  }

  get lang() {
    return "en";
  }
}

/** Listeners told when the session stops working (401 on a signed-in call). */
const signedOutListeners = new Set();
export function onSignedOut(listener) {
  signedOutListeners.add(listener);
}

/**
 * Calls the API: `api("POST", "/v1/groups", {name})`. JSON in and out; a Blob or File body
 * goes as raw bytes with its type (media upload). Resolves to the parsed body (null for 204).
 */
export async function api(method, path, body, options = {}) {
  const headers = { Accept: "application/json" };
  const token = options.token ?? session.token;
  if (token && !options.anonymous) headers.Authorization = `Bearer ${token}`;
  let payload;
  if (body instanceof Blob) {
    payload = body;
    headers["Content-Type"] = body.type || "application/octet-stream";
  } else if (body !== undefined) {
    payload = JSON.stringify(body);
    headers["Content-Type"] = "application/json; charset=utf-8";
  }
  let response;
  try {
    response = await fetch(path, { method, headers, body: payload, credentials: "omit", cache: "no-store" });
  } catch {
    throw new ApiError(0, { code: "offline", message: "Roost cannot be reached. Check your connection." });
  }
  if (response.status === 204) return null;
  const text = await response.text();
  let json = null;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  if (!response.ok) {
    const error = new ApiError(response.status, json?.error, response.headers.get("Retry-After"));
    if (response.status === 401 && headers.Authorization) signedOutListeners.forEach((listener) => listener(error));
    throw error;
  }
  return json;
}

/** An email address or a phone number typed in one field, as the API's `email` or `phone`. */
export function byAddress(text) {
  return text.includes("@") ? { email: text } : { phone: text };
}

/** Path segments, encoded. */
export function path(strings, ...values) {
  return strings.reduce((text, part, index) => text + part + (index < values.length ? encodeURIComponent(values[index]) : ""), "");
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
    muted: "An organiser has muted you in this group for now. A red alert still goes through.",
    suspended: "This account is suspended. The people who run this service can tell you why.",
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
    muted: "En arrangør har gjort dig tavs i denne gruppe for nu. En rød alarm går stadig igennem.",
    suspended: "Kontoen er spærret. Dem, der driver tjenesten, kan fortælle hvorfor.",
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
