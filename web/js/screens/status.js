// The page an emergency contact follows from a missed check-in's message: where the walker
// was last seen and whether the alert is still open, refreshed every 30 s. No account needed.

import { api, path } from "../api.js";
import { createMap } from "../map.js";
import { errorBox, fill, h, mount, showError, time } from "../ui.js";

const STATUS_TEXT = { active: "walking", prompting: "overdue, being asked if safe", missed: "did not check in", escalated: "asked for help",
  completed: "home safe", cancelled: "the check-in was called off" };

export async function show({ main, query }) {
  const token = query.get("token") ?? "";
  const box = errorBox();
  const body = h("div", { class: "panel stack", "aria-live": "polite" });
  const mapBox = h("div");
  let map = null;
  mount(main, "Check-in status", box, body, mapBox);

  async function refresh() {
    try {
      const status = await api("GET", path`/v1/public/checkins/${token}`, undefined, { anonymous: true });
      showError(box, null);
      fill(body,
        h("p", {}, h("strong", {}, status.name), `: ${STATUS_TEXT[status.status] ?? status.status}`,
          status.alert_status ? ` · the alert is ${status.alert_status}` : ""),
        status.last_location ? h("p", {}, "Last seen", status.at ? [" at ", time(status.at)] : "", ".") : h("p", {}, "No place shared."),
        status.battery != null ? h("p", {}, `Phone battery ${status.battery}%`) : null);
      const place = status.last_location;
      const layers = place ? { markers: [{ lat: place.lat, lon: place.lon, label: status.name, kind: "walker" }],
        circle: place.accuracy_m ? { lat: place.lat, lon: place.lon, radius_m: place.accuracy_m } : null } : null;
      if (layers && map) map.update(layers);
      else if (layers) {
        map = createMap({ label: `Where ${status.name} was last seen`, layers });
        fill(mapBox, map.element);
      }
    } catch (error) {
      showError(box, error);
    }
  }
  await refresh();
  const timer = setInterval(refresh, 30000);
  return () => clearInterval(timer);
}
