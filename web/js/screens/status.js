// The page an emergency contact follows from a missed check-in's message: where the walker
// was last seen and whether the alert is still open, refreshed every 30 s. No account needed.

import { api, path } from "../api.js";
import { errorBox, fill, h, mapLink, mount, showError, time } from "../ui.js";

export async function show({ main, query }) {
  const token = query.get("token") ?? "";
  const box = errorBox();
  const body = h("div", { class: "panel stack", "aria-live": "polite" });
  mount(main, "Check-in status", box, body);

  async function refresh() {
    try {
      const status = await api("GET", path`/v1/public/checkins/${token}`, undefined, { anonymous: true });
      showError(box, null);
      fill(body, 
        h("p", {}, h("strong", {}, status.name), `: ${status.status}`, status.alert_status ? ` · alert ${status.alert_status}` : ""),
        status.last_location ? h("p", {}, "Last known place: ", mapLink(status.last_location), status.at ? [" at ", time(status.at)] : "") : h("p", {}, "No place shared."),
        status.battery != null ? h("p", {}, `Phone battery ${status.battery}%`) : null);
    } catch (error) {
      showError(box, error);
    }
  }
  await refresh();
  const timer = setInterval(refresh, 30000);
  return () => clearInterval(timer);
}
