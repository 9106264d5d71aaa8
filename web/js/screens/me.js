// Me: profile and home, notifications (with Web Push on this device), devices, sessions,
// PINs, password, export and deleting the account.

import { api, FieldError, path, session } from "../api.js";
import { deviceName } from "../words.js";
import { currentPosition, errorBox, field, fill, form, h, mount, showError, time, toast } from "../ui.js";

export async function show({ main, navigate, logOut }) {
  const [me, preferences] = await Promise.all([api("GET", "/v1/me"), api("GET", "/v1/me/notifications")]);
  session.updateUser(me);
  const devices = h("div");
  const sessions = h("div");

  const profile = form({
    label: "Profile",
    fields: [
      field({ label: "Your name", name: "display_name", value: me.display_name, required: true, maxlength: 100, autocomplete: "name" }),
      field({ label: "Home address", name: "address", value: me.home?.address ?? "", optional: true, autocomplete: "address-line1", hint: "Shown only to people in your groups." }),
      field({ label: "Notes for neighbours", name: "notes", value: me.home?.notes ?? "", optional: true, hint: "A spare key with number 12, a dog called Max…" }),
      field({ label: "Use where I am now as my home's place on the map", name: "here", type: "checkbox", checked: false }),
    ],
    submit: "Save profile",
    action: async (values) => {
      const home = { address: values.address ?? null, notes: values.notes ?? null };
      if (values.here) {
        const location = await currentPosition();
        if (!location) throw new Error("Your location is not available: allow it in the browser's settings.");
        home.location = { lat: location.lat, lon: location.lon };
      }
      session.updateUser(await api("PATCH", "/v1/me", { display_name: values.display_name ?? "", home }));
      toast("Profile saved.");
    },
  });

  const notifications = form({
    label: "Notifications",
    fields: [
      field({ label: "Red alerts", name: "red", type: "checkbox", checked: preferences.push.red }),
      field({ label: "Amber alerts", name: "amber", type: "checkbox", checked: preferences.push.amber }),
      field({ label: "Answers to my alerts", name: "responses", type: "checkbox", checked: preferences.push.responses }),
      field({ label: "Every chat message", name: "chat", type: "checkbox", checked: preferences.push.chat }),
      field({ label: "Email me red alerts when no device can be reached", name: "fallback_email", type: "checkbox", checked: preferences.fallback.email }),
      field({ label: "Text me red alerts when no device can be reached", name: "fallback_sms", type: "checkbox", checked: preferences.fallback.sms }),
      field({ label: "Quiet hours start", name: "quiet_start", type: "time", value: preferences.quiet_hours?.start ?? "", optional: true, hint: "Red alerts and check-in prompts still come through." }),
      field({ label: "Quiet hours end", name: "quiet_end", type: "time", value: preferences.quiet_hours?.end ?? "", optional: true }),
      field({ label: "Share my last place if I miss a check-in request", name: "share", type: "checkbox", checked: preferences.share_location_on_unanswered_request }),
    ],
    submit: "Save notifications",
    action: async (values) => {
      if (!values.quiet_start !== !values.quiet_end) {
        // One end alone would be dropped without a word: say so instead.
        throw new FieldError(values.quiet_start ? "quiet_end" : "quiet_start", "Quiet hours need both a start and an end (or leave both empty for none)");
      }
      const quiet = values.quiet_start && values.quiet_end
        ? { start: values.quiet_start, end: values.quiet_end, time_zone: Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC" } : null;
      await api("PUT", "/v1/me/notifications", {
        push: { red: values.red, amber: values.amber, responses: values.responses, chat: values.chat },
        fallback: { email: values.fallback_email, sms: values.fallback_sms }, quiet_hours: quiet,
        share_location_on_unanswered_request: values.share,
      });
      toast("Notification settings saved.");
    },
  });

  const pins = form({
    label: "PINs for check-ins",
    fields: [
      field({ label: "Safe PIN", name: "safe_pin", type: "password", inputmode: "numeric", pattern: "[0-9]{4,8}", autocomplete: "new-password", hint: "4 to 8 digits: ends a check-in." }),
      field({ label: "Duress PIN", name: "duress_pin", type: "password", inputmode: "numeric", pattern: "[0-9]{4,8}", autocomplete: "new-password",
        hint: "Looks exactly like the safe one, but silently tells your group you are in danger." }),
      field({ label: "Current password", name: "current_password", type: "password", autocomplete: "current-password",
        hint: "Needed to replace PINs you have set, so a phone left signed in cannot switch them off." }),
    ],
    submit: "Set PINs",
    action: async (values, element) => {
      const body = { safe_pin: values.safe_pin ?? "", duress_pin: values.duress_pin ?? "" };
      if (values.current_password) body.current_password = values.current_password;
      await api("PUT", "/v1/me/pins", body);
      localStorage.setItem("roost.pins", "1");
      element.reset();
      toast("PINs set. Check-ins now end with your PIN.");
    },
  });

  const password = form({
    label: "Change password",
    fields: [
      field({ label: "Current password", name: "current_password", type: "password", required: true, autocomplete: "current-password" }),
      field({ label: "New password", name: "new_password", type: "password", required: true, autocomplete: "new-password", minlength: 10, hint: "At least 10 characters. Your other devices are signed out." }),
    ],
    submit: "Change password",
    action: async (values, element) => {
      await api("POST", "/v1/me/password", { current_password: values.current_password ?? "", new_password: values.new_password ?? "" });
      element.reset();
      toast("Password changed.");
    },
  });

  const exportBox = errorBox();
  const exportButton = h("button", { type: "button", class: "secondary", onclick: async () => {
    showError(exportBox, null);
    try {
      const response = await fetch("/v1/me/export", { headers: { Authorization: `Bearer ${session.token}` } });
      if (!response.ok) throw new Error(`The export failed (${response.status}).`);
      const url = URL.createObjectURL(await response.blob());
      const link = h("a", { href: url, download: "roost-export.json" });
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (error) {
      showError(exportBox, error);
    }
  } }, "Download my data");

  const remove = form({
    label: "Delete account",
    fields: [field({ label: "Password", name: "current_password", type: "password", required: true, autocomplete: "current-password",
      hint: "Your name, addresses and places are erased. Your messages stay, from “deleted user”." })],
    submit: "Delete my account",
    action: async (values) => {
      if (!window.confirm("Delete your account for good?")) return;
      await api("DELETE", "/v1/me", { current_password: values.current_password ?? "" });
      session.clear();
      toast("Your account is deleted.");
      navigate("/join");
    },
  });
  remove.querySelector("button[type=submit]").classList.add("danger");

  mount(main, "Me",
    h("p", {}, `${me.display_name} · ${me.email ?? me.phone ?? ""}`),
    h("section", { class: "panel", "aria-label": "Profile and home" }, h("h2", {}, "Profile and home"), profile),
    h("section", { class: "panel", "aria-label": "Notifications" }, h("h2", {}, "Notifications"), notifications),
    h("section", { class: "panel", "aria-labelledby": "devices-heading" }, devices),
    h("section", { class: "panel", "aria-label": "Sessions" }, sessions),
    h("section", { class: "panel", "aria-label": "PINs" }, h("h2", {}, "PINs for check-ins"), pins),
    h("section", { class: "panel", "aria-label": "Password" }, h("h2", {}, "Password"), password),
    h("section", { class: "panel", "aria-label": "Your data" }, h("h2", {}, "Your data"), exportBox, exportButton, h("h3", {}, "Delete account"), remove));
  const room = { main, me, preferences, devices, sessions, navigate, logOut };
  await Promise.all([refreshDevices(room), refreshSessions(room)]);
}

async function refreshDevices(room) {
  const { devices } = room;
  const answer = await api("GET", "/v1/me/devices");
  const box = errorBox();
  fill(devices, h("h2", { id: "devices-heading" }, "Devices"), box,
    answer.items.length ? h("ul", { class: "answers" }, answer.items.map((device) => h("li", { class: "row spread" },
      h("span", {}, device.platform === "webpush" ? "A browser" : device.platform === "unifiedpush" ? "UnifiedPush" : device.platform, " · added ", time(device.created_at)),
      h("button", { type: "button", class: "secondary", onclick: async () => {
        await api("DELETE", path`/v1/me/devices/${device.id}`).catch((error) => showError(box, error));
        refreshDevices(room);
      } }, "Remove")))) : h("p", { class: "muted" }, "No device gets alerts yet."),
    h("button", { type: "button", onclick: () => enablePush(box).then(() => refreshDevices(room)) }, "Get alerts on this device"));
}

async function refreshSessions(room) {
  const { sessions, navigate, logOut } = room;
  const answer = await api("GET", "/v1/me/sessions");
  fill(sessions, h("h2", {}, "Where you are signed in"),
    h("table", {}, h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Device"), h("th", { scope: "col" }, "Last used"), h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Action")))),
      h("tbody", {}, answer.items.map((item) => h("tr", {},
        h("td", { title: item.client || "" }, deviceName(item.client), item.current ? " (this one)" : ""),
        h("td", {}, time(item.last_used_at)),
        h("td", {}, item.current ? "" : h("button", { type: "button", class: "secondary", onclick: async () => {
          await api("DELETE", path`/v1/me/sessions/${item.id}`).catch((error) => toast(error.sentence));
          refreshSessions(room);
        } }, "Sign out")))))),
    h("p", { class: "row" },
      h("button", { type: "button", class: "secondary", onclick: logOut }, "Sign out"),
      h("button", { type: "button", class: "secondary", onclick: async () => {
        await api("POST", "/v1/auth/logout-all").catch(() => {});
        session.clear();
        navigate("/join");
      } }, "Sign out everywhere")));
}

/** Subscribes this browser to Web Push with the deployment's VAPID key and registers it. */
async function enablePush(box) {
  showError(box, null);
  try {
    if (!("serviceWorker" in navigator) || !("PushManager" in window)) throw new Error(pushUnavailable());
    if ((await Notification.requestPermission()) !== "granted") throw new Error("Notifications are blocked for Roost in this browser's settings.");
    const { public_key: key } = await api("GET", "/v1/push/vapid-public-key");
    const registration = await navigator.serviceWorker.ready;
    const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: base64url(key) });
    const json = subscription.toJSON();
    await api("POST", "/v1/me/devices", { platform: "webpush", subscription: { endpoint: json.endpoint, keys: json.keys } });
    toast("This device now gets alerts.");
  } catch (error) {
    showError(box, error);
  }
}

/**
 * Why this browser offers no push, and what to do: Safari on iPhone and iPad (iOS 16.4 and later)
 * pushes only to a web app added to the Home Screen and opened from there.
 */
function pushUnavailable() {
  const apple = /iPhone|iPad|iPod/.test(navigator.userAgent) || (navigator.platform === "MacIntel" && navigator.maxTouchPoints > 1);
  const installed = window.matchMedia("(display-mode: standalone)").matches || navigator.standalone === true;
  if (apple && !installed) {
    return "On iPhone and iPad, alerts come to Roost on your Home Screen: tap Share, then Add to Home Screen, open Roost from there and tap this again (iOS 16.4 or later).";
  }
  return "This browser cannot receive notifications.";
}

function base64url(text) {
  const padded = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (character) => character.charCodeAt(0));
}
