// The links people get by email or text that need no account: an escalation or emergency
// contact's confirmation, and the undo of an address change sent to the old address.

import { api } from "../api.js";
import { errorBox, h, mount, showError } from "../ui.js";

const kinds = {
  "/escalation_contact_confirm": {
    title: "Confirm you are an escalation contact",
    text: "A neighbourhood watch group named you as the contact it calls when an alert goes unanswered.",
    path: "/v1/escalation-contacts/confirm",
    button: "Confirm",
    done: "Thank you: you are confirmed. You will only hear from Roost when someone needs help.",
  },
  "/emergency_contact_confirm": {
    title: "Confirm you are an emergency contact",
    text: "Someone named you as their emergency contact: you hear from Roost only if they do not get home safe.",
    path: "/v1/emergency-contacts/confirm",
    button: "Confirm",
    done: "Thank you: you are confirmed. You will only hear from Roost when someone needs help.",
  },
  "/address_changed": {
    title: "Undo the change of address",
    text: "Your Roost account was moved to another address. If that was not you, undo it: this address is put back and every device is signed out.",
    path: "/v1/me/contacts/undo",
    button: "Undo the change",
    done: "Done: the account has this address again and every device was signed out. Now reset your password from the sign-in screen.",
  },
};

export async function show({ main, path: route, query }) {
  const token = query.get("token") ?? "";
  const kind = kinds[route] ?? kinds["/emergency_contact_confirm"];
  const box = errorBox();
  const done = h("p", { role: "status" });
  const button = h("button", { type: "button", class: "big", onclick: async () => {
    button.disabled = true;
    showError(box, null);
    try {
      await api("POST", kind.path, { token }, { anonymous: true });
      done.textContent = kind.done;
      button.hidden = true;
    } catch (error) {
      showError(box, error);
      button.disabled = false;
    }
  } }, kind.button);
  mount(main, kind.title, h("div", { class: "panel stack" }, h("p", {}, kind.text), box, button, done));
}
