// The REST API of API.md: one fetch wrapper that adds the session's bearer token and turns
// the API's error shape into an ApiError the screens show in place.

import { errorSentence } from "./words.js";

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
