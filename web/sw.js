// Roost's service worker: the app shell offline (network first, the cached copy when there is
// no network), and Web Push: a notification per push, with "On my way" and "Seen" on an
// alert that answer it through the API, and a tap that opens the alert.

const SHELL = "roost-shell-v1";
const SESSION = "roost-session";
const FILES = [
  "/", "/app.css", "/manifest.webmanifest", "/icon.svg", "/icon-192.png",
  "/js/app.js", "/js/api.js", "/js/ui.js", "/js/stream.js", "/js/words.js", "/js/map.js", "/js/photo.js", "/js/requests.js",
  "/js/screens/join.js", "/js/screens/groups.js", "/js/screens/group.js", "/js/screens/alert.js",
  "/js/screens/checkin.js", "/js/screens/me.js", "/js/screens/organiser.js", "/js/screens/confirm.js", "/js/screens/status.js",
];

self.addEventListener("install", (event) => {
  event.waitUntil(caches.open(SHELL).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((key) => key !== SHELL && key !== SESSION).map((key) => caches.delete(key))))
    .then(() => self.clients.claim()));
});

self.addEventListener("fetch", (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== "GET" || url.origin !== self.location.origin || url.pathname.startsWith("/v1/")) return;
  event.respondWith(fetch(event.request).then((response) => {
    if (response.ok && FILES.includes(url.pathname)) {
      const copy = response.clone();
      caches.open(SHELL).then((cache) => cache.put(url.pathname, copy));
    }
    return response;
  }).catch(async () => (await caches.match(url.pathname)) ?? (event.request.mode === "navigate" ? caches.match("/") : Response.error())));
});

// The page hands over its session so a notification's buttons can answer while no tab is open.
self.addEventListener("message", (event) => {
  if (event.data?.type !== "session") return;
  event.waitUntil(caches.open(SESSION).then((cache) => event.data.token
    ? cache.put("/session", new Response(JSON.stringify({ token: event.data.token })))
    : cache.delete("/session")));
});

async function token() {
  const response = await (await caches.open(SESSION)).match("/session");
  return response ? (await response.json()).token : null;
}

self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = { title: "Roost", body: event.data?.text() ?? "" };
  }
  const alert = (data.template === "alert" || data.template === "alert_escalated") && data.group_id && data.seq;
  const options = {
    body: data.body ?? "",
    icon: "/icon-192.png",
    badge: "/icon-192.png",
    tag: data.group_id && data.seq ? `alert-${data.group_id}-${data.seq}` : data.checkin_id ? `checkin-${data.checkin_id}` : undefined,
    renotify: !!alert,
    requireInteraction: !!alert,
    data,
    actions: alert ? [{ action: "on_my_way", title: "On my way" }, { action: "seen", title: "Seen" }] : [],
  };
  event.waitUntil(self.registration.showNotification(data.title ?? "Roost", options));
});

self.addEventListener("notificationclick", (event) => {
  const data = event.notification.data ?? {};
  event.notification.close();
  const target = data.group_id && data.seq ? `/#/g/${data.group_id}/alert/${data.seq}`
    : data.group_id ? `/#/g/${data.group_id}` : data.checkin_id || data.checkin_request_id ? "/#/checkin" : "/#/groups";
  if (event.action === "on_my_way" || event.action === "seen") {
    event.waitUntil(answer(data, event.action).catch(() => open(target)));
    return;
  }
  event.waitUntil(open(target));
});

async function answer(data, response) {
  const bearer = await token();
  if (!bearer) throw new Error("signed out");
  const reply = await fetch(`/v1/groups/${data.group_id}/alerts/${data.seq}/ack`, {
    method: "POST",
    headers: { Authorization: `Bearer ${bearer}`, "Content-Type": "application/json" },
    body: JSON.stringify({ response }),
  });
  if (!reply.ok) throw new Error(`ack ${reply.status}`);
  if (response === "on_my_way") await open(`/#/g/${data.group_id}/alert/${data.seq}`);
}

async function open(url) {
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const client of windows) {
    if ("focus" in client) {
      client.postMessage({ type: "open", url });
      return client.focus();
    }
  }
  return self.clients.openWindow(url);
}
