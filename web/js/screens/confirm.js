// The link an escalation or emergency contact gets: confirming needs no account.

import { api } from "../api.js";
import { errorBox, h, mount, showError } from "../ui.js";

export async function show({ main, path: route, query }) {
  const token = query.get("token") ?? "";
  const escalation = route === "/escalation_contact_confirm";
  const box = errorBox();
  const done = h("p", { role: "status" });
  const button = h("button", { type: "button", class: "big", onclick: async () => {
    button.disabled = true;
    showError(box, null);
    try {
      await api("POST", escalation ? "/v1/escalation-contacts/confirm" : "/v1/emergency-contacts/confirm", { token }, { anonymous: true });
      done.textContent = "Thank you: you are confirmed. You will only hear from Roost when someone needs help.";
      button.hidden = true;
    } catch (error) {
      showError(box, error);
      button.disabled = false;
    }
  } }, "Confirm");
  mount(main, escalation ? "Confirm you are an escalation contact" : "Confirm you are an emergency contact",
    h("div", { class: "panel stack" },
      h("p", {}, escalation
        ? "A neighbourhood watch group named you as the contact it calls when an alert goes unanswered."
        : "Someone named you as their emergency contact: you hear from Roost only if they do not get home safe."),
      box, button, done));
}
