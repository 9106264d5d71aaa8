// "Are you safe?" from a neighbour, wherever the addressee is in the app: a banner under the bar
// for each pending check-in request, with who asks, their note, the time left and the two
// answers, from the `checkin_request.received` notice or, on load, from the requests pending.

import { api, path } from "./api.js";
import { currentPosition, h, toast } from "./ui.js";

export class RequestBanners {
  constructor(element) {
    this.element = element;
    this.pending = new Map(); // id → request
    this.timer = null;
  }

  /** The pending requests asked of this user (on load, and after a reconnect). */
  async load() {
    const answer = await api("GET", "/v1/checkin-requests?role=received").catch(() => null);
    if (!answer) return;
    this.pending.clear();
    for (const request of answer.items) if (request.status === "pending") this.pending.set(request.id, request);
    this.render();
  }

  received(request) {
    if (request?.id && request.status === "pending") this.pending.set(request.id, request);
    this.render();
  }

  clear() {
    this.pending.clear();
    this.render();
  }

  async answer(request, status, box) {
    box.textContent = "";
    try {
      const location = status === "need_help" ? await currentPosition() : null;
      await api("POST", path`/v1/checkin-requests/${request.id}/answer`, location ? { status, location } : { status });
      this.pending.delete(request.id);
      this.render();
      toast(status === "safe" ? `${request.requester.display_name} has been told you are safe.` : `${request.requester.display_name}'s group has a red alert: help is coming.`);
    } catch (error) {
      box.textContent = error.sentence ?? error.message;
      if (error.status === 409 || error.status === 404) {
        this.pending.delete(request.id);
        setTimeout(() => this.render(), 4000);
      }
    }
  }

  render() {
    const now = Date.now();
    for (const [id, request] of this.pending) if (Date.parse(request.expires_at) <= now) this.pending.delete(id);
    clearInterval(this.timer);
    this.timer = this.pending.size ? setInterval(() => this.tick(), 1000) : null;
    this.element.replaceChildren(...[...this.pending.values()].map((request) => {
      const box = h("p", { class: "error", role: "alert" });
      return h("section", { class: "request-banner", role: "alert", "aria-label": "Are you safe?", dataset: { request: request.id } },
        h("p", {}, h("strong", {}, `${request.requester.display_name} asks if you are safe.`), request.note ? ` “${request.note}”` : "",
          " ", h("span", { class: "left", dataset: { expires: request.expires_at } }, timeLeft(request.expires_at))),
        box,
        h("div", { class: "row" },
          h("button", { type: "button", class: "big", onclick: () => this.answer(request, "safe", box) }, "I'm safe"),
          h("button", { type: "button", class: "big danger", onclick: () => this.answer(request, "need_help", box) }, "I need help")));
    }));
  }

  tick() {
    let lapsed = false;
    for (const left of this.element.querySelectorAll(".left")) {
      left.textContent = timeLeft(left.dataset.expires);
      if (Date.parse(left.dataset.expires) <= Date.now()) lapsed = true;
    }
    if (lapsed) this.render();
  }
}

/** "4:32 left to answer". */
function timeLeft(expiresAt) {
  const seconds = Math.max(0, Math.round((Date.parse(expiresAt) - Date.now()) / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")} left to answer`;
}
