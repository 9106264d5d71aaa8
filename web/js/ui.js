// Small DOM helpers: elements built with text nodes only (never parsed from strings), labelled form
// fields, errors shown in place and announced to screen readers.

import { ApiError } from "./api.js";

/** h("button", {class: "x", onclick}, "Text", child...) */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") element.addEventListener(key.slice(2), value);
    else if (key === "class") element.className = value;
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key in element && typeof value !== "string") element[key] = value;
    else element.setAttribute(key, value === true ? "" : value);
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces `element`'s children, skipping null, undefined and false as h() does. */
export function fill(element, ...children) {
  element.replaceChildren(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
  return element;
}

let counter = 0;
/** A unique id for label/field pairs. */
export function uid(prefix = "f") {
  counter += 1;
  return `${prefix}-${counter}`;
}

/**
 * A labelled field: field({label: "Email", name: "email", type: "email", hint, required,
 * autocomplete, value, options: [[value, text]] for a select, rows for a textarea}).
 */
export function field(spec) {
  const id = uid(spec.name);
  const hintID = spec.hint ? `${id}-hint` : undefined;
  const attributes = {
    id, name: spec.name, required: spec.required, autocomplete: spec.autocomplete, "aria-describedby": hintID,
    inputmode: spec.inputmode, placeholder: spec.placeholder, min: spec.min, max: spec.max, step: spec.step,
    minlength: spec.minlength, maxlength: spec.maxlength, pattern: spec.pattern,
  };
  let control;
  if (spec.options) {
    control = h("select", attributes, spec.options.map(([value, text]) => h("option", { value, selected: value === spec.value }, text)));
  } else if (spec.type === "textarea") {
    control = h("textarea", { ...attributes, rows: spec.rows ?? 3 });
    if (spec.value) control.value = spec.value;
  } else {
    control = h("input", { ...attributes, type: spec.type ?? "text" });
    if (spec.value !== undefined && spec.value !== null) control.value = spec.value;
  }
  if (spec.type === "checkbox") {
    control.checked = !!spec.checked;
    return h("div", { class: "field" }, h("label", { class: "check", for: id }, control, spec.label));
  }
  return h("div", { class: "field" },
    h("label", { for: id }, spec.label, spec.optional ? h("span", { class: "hint" }, " (optional)") : null),
    spec.hint ? h("p", { class: "hint", id: hintID }, spec.hint) : null,
    control);
}

/** The place a form shows its error: role=alert so it is read out when it appears. */
export function errorBox() {
  return h("div", { class: "error", role: "alert" });
}

/** Shows `error` (an ApiError or any Error) in `box`, marking the field it names. */
export function showError(box, error, form) {
  form?.querySelectorAll("[aria-invalid]").forEach((element) => element.removeAttribute("aria-invalid"));
  if (!error) {
    box.textContent = "";
    return;
  }
  box.textContent = error instanceof ApiError ? error.sentence : error.message || String(error);
  box.lang = error instanceof ApiError ? error.lang : "en";
  if (error instanceof ApiError && error.field && form) {
    const input = form.querySelector(`[name="${CSS.escape(error.field)}"]`);
    if (input) {
      input.setAttribute("aria-invalid", "true");
      input.focus();
    }
  }
}

/**
 * A form whose submit runs `action(values)`; while it runs the submit button is disabled, and
 * an error is shown in the form's own box. `fields` are nodes (field(...) results and more).
 */
export function form({ fields, submit, action, label, secondary }) {
  const box = errorBox();
  const button = h("button", { type: "submit" }, submit);
  const element = h("form", { "aria-label": label, novalidate: false }, box, fields, h("div", { class: "row" }, button, secondary));
  element.addEventListener("submit", async (event) => {
    event.preventDefault();
    showError(box, null, element);
    button.disabled = true;
    try {
      await action(values(element), element);
    } catch (error) {
      showError(box, error, element);
    } finally {
      button.disabled = false;
    }
  });
  return element;
}

/** A form's values by name (checkboxes as booleans, empty strings as undefined). */
export function values(formElement) {
  const result = {};
  for (const element of formElement.elements) {
    if (!element.name) continue;
    if (element.type === "checkbox") result[element.name] = element.checked;
    else if (element.value.trim() !== "") result[element.name] = element.value.trim();
  }
  return result;
}

/** A short message at the bottom of the screen, read out politely. */
export function toast(text) {
  const element = document.getElementById("toast");
  element.textContent = text;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => (element.textContent = ""), 5000);
}

/** Replaces the screen's content and moves focus to its heading, as a page change would. */
export function mount(main, title, ...children) {
  const heading = h("h1", { tabindex: "-1" }, title);
  fill(main, heading, children);
  document.title = `${title} · Roost`;
  heading.focus({ preventScroll: false });
  if (!mount.shown) {
    mount.shown = true;
    performance.mark("roost:first-screen"); // read by the browser tests
  }
  return heading;
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: "2-digit", minute: "2-digit" });
const dayFormat = new Intl.DateTimeFormat(undefined, { weekday: "short", day: "numeric", month: "short", hour: "2-digit", minute: "2-digit" });

/** "14:03" today, "Tue 3 Nov, 14:03" before. */
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  const today = new Date();
  return date.toDateString() === today.toDateString() ? timeFormat.format(date) : dayFormat.format(date);
}

/** A <time> element for `iso`. */
export function time(iso) {
  return h("time", { datetime: iso }, when(iso));
}

/** Text a screen reader and the eye both read for an alert's severity. */
export function severityLabel(severity) {
  return { red: "Red alert", amber: "Amber alert", info: "Info" }[severity] ?? "Alert";
}

/** A Geolocation position as the API's location: {lat, lon, accuracy_m}. */
function place(position) {
  return { lat: position.coords.latitude, lon: position.coords.longitude, accuracy_m: Math.round(position.coords.accuracy) };
}

/** The browser's current position, or null when refused or unavailable within 8 s. */
export function currentPosition() {
  if (!navigator.geolocation) return Promise.resolve(null);
  return new Promise((resolve) => {
    navigator.geolocation.getCurrentPosition((position) => resolve(place(position)), () => resolve(null),
      { enableHighAccuracy: true, timeout: 8000, maximumAge: 30000 });
  });
}

/**
 * Follows the browser's position, handing `send` a place at most once every `everyMs`; the
 * watch's id for clearWatch, or null when the browser has no geolocation.
 */
export function followPosition(everyMs, send, failed = () => {}) {
  if (!navigator.geolocation) return null;
  let last = 0;
  return navigator.geolocation.watchPosition((position) => {
    if (Date.now() - last < everyMs) return;
    last = Date.now();
    send(place(position));
  }, failed, { enableHighAccuracy: true });
}

/** A link to the place on OpenStreetMap (the app itself loads nothing from elsewhere). */
export function mapLink(location) {
  if (!location) return null;
  const { lat, lon } = location;
  return h("a", { href: `https://www.openstreetmap.org/?mlat=${lat}&mlon=${lon}#map=17/${lat}/${lon}`, target: "_blank", rel: "noopener" },
    `Map (${Number(lat).toFixed(5)}, ${Number(lon).toFixed(5)})`);
}

/** A confirmation of a destructive step. */
export function confirmStep(text) {
  return window.confirm(text);
}
