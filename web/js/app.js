// The app's shell: hash routes to screens, the navigation, the one live stream, and the
// service worker. Each screen is a module exporting `show(context)`, which fills `main`
// and may return a function that tears it down when another screen replaces it. A screen
// imports nothing from here: what it may ask of the shell (navigate, signedIn, logOut) comes
// in its context, so no module imports another in a circle.

import { api, locale, onSignedOut, path, session } from "./api.js";
import { Stream } from "./stream.js";
import { h, toast } from "./ui.js";

const routes = [
  [/^\/?$/, () => (session.token ? "groups" : "join")],
  [/^\/join$/, () => "join"],
  [/^\/invitation$/, () => "join"],
  [/^\/reset$/, () => "join"],
  [/^\/password_reset$/, () => "join"],
  [/^\/groups$/, () => "groups"],
  [/^\/new-group$/, () => "groups"],
  [/^\/g\/([0-9a-f-]{36})$/, () => "group"],
  [/^\/g\/([0-9a-f-]{36})\/alert\/(\d+)$/, () => "alert"],
  [/^\/g\/([0-9a-f-]{36})\/manage$/, () => "organiser"],
  [/^\/checkin$/, () => "checkin"],
  [/^\/me$/, () => "me"],
  [/^\/escalation_contact_confirm$/, () => "confirm"],
  [/^\/emergency_contact_confirm$/, () => "confirm"],
  [/^\/address_changed$/, () => "confirm"],
  [/^\/checkin-status$/, () => "status"],
];

const publicScreens = new Set(["join", "confirm", "status"]);
const screens = {
  join: () => import("./screens/join.js"),
  groups: () => import("./screens/groups.js"),
  group: () => import("./screens/group.js"),
  alert: () => import("./screens/alert.js"),
  organiser: () => import("./screens/organiser.js"),
  checkin: () => import("./screens/checkin.js"),
  me: () => import("./screens/me.js"),
  confirm: () => import("./screens/confirm.js"),
  status: () => import("./screens/status.js"),
};

let stream = null;
let teardown = null;
/** Check-in requests' banners (requests.js, loaded once someone is signed in: not on the first screen's path). */
let bannersModule = null;
const banners = {
  call(method, ...args) {
    bannersModule ??= import("./requests.js").then(({ RequestBanners }) => new RequestBanners(document.getElementById("requests")));
    bannersModule.then((instance) => instance[method](...args)).catch(() => {});
  },
  load() { this.call("load"); },
  received(request) { this.call("received", request); },
  clear() { if (bannersModule) this.call("clear"); },
};
let showing = 0;
/** Set while the screen shown failed because Roost could not be reached: it is shown again
 * once Roost can be (the stream back online, the browser back online, or every 15 s). */
let unreachable = false;
let retryTimer = null;

function showAgainIfUnreachable() {
  if (unreachable) show();
}

/** The route of the location: {path, params, query}; a `/join?token=` link arrives as a path. */
function currentRoute() {
  let hash = location.hash.replace(/^#/, "");
  if (!hash && location.pathname !== "/") {
    hash = location.pathname === "/join" ? `/invitation${location.search}` : `${location.pathname}${location.search}`;
    history.replaceState(null, "", `/#${hash}`);
  }
  const [pathPart, queryPart] = hash.split("?");
  return { path: pathPart || "/", query: new URLSearchParams(queryPart || "") };
}

function navigate(to) {
  if (location.hash === `#${to}`) show();
  else location.hash = to;
}

function liveStream() {
  const token = session.token;
  if (!token) {
    stream?.stop();
    stream = null;
    return null;
  }
  if (stream && stream.token === token) return stream;
  stream?.stop();
  stream = new Stream(token);
  shareSession();
  const status = document.getElementById("connection");
  stream.addEventListener("state", (event) => {
    const state = event.detail;
    status.className = `connection ${state}`;
    status.textContent = state === "reconnecting" ? "Reconnecting…" : state === "connecting" ? "Connecting…" : "";
    // Not when this device signed out itself (logging out, deleting the account): it said why.
    if (state === "signed-out" && session.token) signOut("Your session has ended. Please sign in again.");
    if (state === "online") {
      showAgainIfUnreachable();
      banners.load(); // what was asked while the stream was away
    }
  });
  stream.addEventListener("notice", (event) => {
    const notice = event.detail;
    if (notice.event === "invitation.received") toast("You have a new invitation to a group.");
    if (notice.event === "group.removed") toast("You are no longer in a group.");
    if (notice.event === "checkin_request.received") banners.received(notice.data);
    // "Are you safe?" at a walk's deadline: the check-in screen, wherever the walker was (as the push opens it).
    if (notice.event === "checkin.prompt" && !location.hash.startsWith("#/checkin")) {
      toast("Time is up on your check-in: are you safe?");
      navigate("/checkin");
    }
  });
  return stream;
}

/** Tells the service worker the session, so a notification's buttons can answer an alert. */
function shareSession() {
  navigator.serviceWorker?.ready.then((registration) => registration.active?.postMessage({ type: "session", token: session.token })).catch(() => {});
}

function signOut(reason) {
  session.clear();
  banners.clear();
  shareSession();
  stream?.stop();
  stream = null;
  if (reason) toast(reason);
  navigate("/join");
}

function renderNav(active) {
  const nav = document.getElementById("nav");
  if (!session.token) {
    nav.replaceChildren();
    return;
  }
  const items = [["groups", "#/groups", "Groups"], ["checkin", "#/checkin", "Check-in"], ["me", "#/me", "Me"]];
  const current = active === "group" || active === "alert" || active === "organiser" ? "groups" : active;
  nav.replaceChildren(h("ul", {}, items.map(([name, href, text]) =>
    h("li", {}, h("a", { href, "aria-current": name === current ? "page" : null }, text)))));
}

async function show() {
  const ticket = ++showing;
  unreachable = false;
  clearTimeout(retryTimer);
  const route = currentRoute();
  let screen = "join";
  let match = null;
  for (const [pattern, pick] of routes) {
    match = route.path.match(pattern);
    if (match) {
      screen = pick();
      break;
    }
  }
  if (!match) screen = session.token ? "groups" : "join";
  if (!session.token && !publicScreens.has(screen)) screen = "join";
  teardown?.();
  teardown = null;
  renderNav(screen);
  const main = document.getElementById("main");
  try {
    const module = await screens[screen]();
    if (ticket !== showing) return;
    const result = await module.show({
      main, path: route.path, params: match ? match.slice(1) : [], query: route.query, stream: liveStream(), navigate, signedIn, logOut,
    });
    if (ticket !== showing) {
      if (typeof result === "function") result();
      return;
    }
    teardown = typeof result === "function" ? result : null;
  } catch (error) {
    if (ticket !== showing) return;
    // Unreachable (no answer, or the server or its database away): the screen comes back by itself.
    unreachable = [0, 502, 503, 504].includes(error?.status);
    if (unreachable) retryTimer = setTimeout(showAgainIfUnreachable, 15_000);
    main.replaceChildren(h("h1", {}, "Something went wrong"),
      h("p", { class: "error", role: "alert" }, error?.sentence || error?.message || String(error)),
      unreachable ? h("p", {}, "This page loads again by itself as soon as Roost answers.") : null,
      h("p", {}, h("a", { href: "#/groups" }, "Back to your groups")));
  }
}

onSignedOut((error) => {
  if (session.token) signOut(error.code === "unauthenticated" ? "Your session has ended. Please sign in again." : error.message);
});

async function signedIn(tenant, answer) {
  session.save(tenant, answer);
  liveStream();
}

async function logOut() {
  try {
    await api("POST", "/v1/auth/logout");
  } catch {
    // Already gone: signing out locally is what matters.
  }
  signOut("Signed out.");
}

window.addEventListener("hashchange", show);
window.addEventListener("online", showAgainIfUnreachable);
show().then(() => {
  // The manifest (installing the app) once the first screen is drawn: on a slow network it
  // would take one of the browser's six connections from the modules the screen needs.
  document.head.append(h("link", { rel: "manifest", href: "/manifest.webmanifest" }));
}); // a module script runs once the document is parsed
// The tenant's language, learnt again once a load (the operator may have changed it).
if (session.read()?.tenant) api("GET", path`/v1/tenants/${session.read().tenant}`, undefined, { anonymous: true }).then(locale.remember, () => {});

if ("serviceWorker" in navigator) {
  navigator.serviceWorker.register("/sw.js", { scope: "/" }).catch(() => {});
  navigator.serviceWorker.addEventListener("message", (event) => {
    if (event.data?.type === "open" && event.data.url) location.hash = event.data.url.replace(/^.*#/, "");
  });
}
