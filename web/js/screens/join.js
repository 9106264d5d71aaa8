// Joining: pick the tenant by its slug (its name comes from tenant discovery), then sign in or
// create an account; accept an invitation from its link; reset a forgotten password.

import { api, ApiError, byAddress, FieldError, locale, path, session } from "../api.js";
import { errorBox, field, fill, form, h, mount, showError, toast } from "../ui.js";

export async function show(context) {
  const { main, query, navigate, signedIn } = context;
  const token = query.get("token");
  const invitation = context.path === "/invitation" && token ? token : null;
  const resetting = context.path === "/reset" || context.path === "/password_reset";

  if (invitation && session.token) return acceptSignedIn(main, invitation, navigate);

  const slug = query.get("tenant") || session.lastTenant;
  const tenant = slug ? await discover(slug).catch(() => null) : null;
  if (!tenant) return chooseTenant(main, slug, context);
  if (resetting) return resetPassword(main, tenant, navigate, signedIn);
  const invited = invitation ? { group: query.get("group"), to: query.get("to"), tenantWide: query.get("kind") === "tenant" } : null;
  return signIn(main, tenant, invitation, navigate, query.get("tab"), signedIn, invited);
}

async function discover(slug) {
  const tenant = await api("GET", path`/v1/tenants/${slug.trim().toLowerCase()}`, undefined, { anonymous: true });
  locale.remember(tenant);
  return tenant;
}

function chooseTenant(main, slug, context) {
  const picked = form({
    label: "Your community",
    fields: [field({ label: "Community address", name: "tenant", value: slug, required: true, autocomplete: "organization",
      hint: "The short name your organiser gave you, such as oak-street." })],
    submit: "Continue",
    action: async (values) => {
      if (!values.tenant) throw new Error("Enter your community's short name.");
      try {
        await discover(values.tenant);
      } catch (error) {
        if (error instanceof ApiError && error.status === 404) {
          throw new FieldError("tenant", `There is no community called “${values.tenant}”. Check the spelling with your organiser.`);
        }
        throw error;
      }
      localStorage.setItem("roost.tenant", values.tenant.trim().toLowerCase());
      const params = new URLSearchParams(context.query);
      params.set("tenant", values.tenant.trim().toLowerCase());
      context.navigate(`${context.path === "/" ? "/join" : context.path}?${params}`);
    },
  });
  mount(main, "Welcome to Roost", h("p", {}, "Roost keeps your street's watch group in touch: chat, alerts and check-ins."), h("div", { class: "panel" }, picked));
}

/** Signing in or creating an account; with an invitation, what its link does, its address filled in. */
function signIn(main, tenant, invitation, navigate, tab, signedIn, invited) {
  const canRegister = tenant.registration === "open" || !!invitation;
  let mode = tab === "register" && canRegister ? "register" : invitation && canRegister ? "register" : "signin";
  // Two tabs over one panel each (WAI-ARIA's tab pattern: arrow keys move between them); what
  // is typed in one is carried to the other, so changing tab never wipes the form.
  const forms = { signin: signInForm(), register: canRegister ? registerForm() : null };
  const panels = {};
  const tabButtons = {};
  for (const [name, text] of [["signin", "Sign in"], ["register", "Create account"]]) {
    if (!forms[name]) continue;
    panels[name] = h("div", { class: "panel tab-panel", role: "tabpanel", id: `panel-${name}`, "aria-labelledby": `tab-${name}` }, forms[name]);
    tabButtons[name] = h("button", { type: "button", role: "tab", id: `tab-${name}`, "aria-controls": `panel-${name}`, onclick: () => choose(name) }, text);
  }
  const tabs = h("div", { class: "tabs", role: "tablist", "aria-label": "Sign in or create an account" }, Object.values(tabButtons));
  const panel = h("div", {}, Object.values(panels));
  tabs.addEventListener("keydown", (event) => {
    const names = Object.keys(tabButtons);
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (!step || names.length < 2) return;
    event.preventDefault();
    choose(names[(names.indexOf(mode) + step + names.length) % names.length]);
    tabButtons[mode].focus();
  });

  function choose(next) {
    for (const key of ["login", "password"]) {
      const from = forms[mode]?.querySelector(`[name=${key}]`);
      const to = forms[next]?.querySelector(`[name=${key}]`);
      if (from && to && from.value) to.value = from.value;
    }
    mode = next;
    render();
  }

  function render() {
    for (const [name, button] of Object.entries(tabButtons)) {
      button.setAttribute("aria-selected", String(name === mode));
      button.tabIndex = name === mode ? 0 : -1;
      panels[name].hidden = name !== mode;
    }
  }

  function identity(values) {
    return byAddress(values.login ?? "");
  }

  async function finish(answer) {
    await signedIn(tenant.slug, answer);
    if (invitation && mode === "signin") {
      try {
        const accepted = await api("POST", "/v1/invitations/accept", { token: invitation });
        toast(`You joined ${accepted.group.name}.`);
        return navigate(`/g/${accepted.group.id}`);
      } catch (error) {
        toast(error.sentence ?? error.message);
      }
    }
    if (invitation) {
      // A new account made with an invitation is in exactly the invitation's group: open it.
      const groups = await api("GET", "/v1/groups").catch(() => null);
      if (groups?.items.length === 1) return navigate(`/g/${groups.items[0].id}`);
    }
    navigate("/groups");
  }

  function signInForm() {
    return form({
      label: "Sign in",
      fields: [
        field({ label: "Email or phone number", name: "login", required: true, autocomplete: "username" }),
        field({ label: "Password", name: "password", type: "password", required: true, autocomplete: "current-password" }),
      ],
      submit: "Sign in",
      secondary: h("a", { href: `#/reset?tenant=${encodeURIComponent(tenant.slug)}` }, "Forgot your password?"),
      action: async (values) => {
        const answer = await api("POST", "/v1/auth/login", { tenant: tenant.slug, ...identity(values), password: values.password ?? "" }, { anonymous: true });
        await finish(answer);
      },
    });
  }

  function registerForm() {
    return form({
      label: "Create account",
      fields: [
        field({ label: "Your name", name: "display_name", required: true, autocomplete: "name", hint: "How your neighbours see you." }),
        field({ label: "Email or phone number", name: "login", required: true, autocomplete: "username",
          hint: invitation ? "Use the address your invitation came to." : "Phone numbers with their country code, such as +45 12 34 56 78." }),
        field({ label: "Password", name: "password", type: "password", required: true, autocomplete: "new-password", minlength: 10, hint: "At least 10 characters." }),
      ],
      submit: invitation ? "Create account and join" : "Create account",
      action: async (values) => {
        const login = identity(values);
        const body = { tenant: tenant.slug, ...login, password: values.password ?? "", display_name: values.display_name ?? "" };
        if (invitation) body.invitation_token = invitation;
        try {
          const answer = await api("POST", "/v1/auth/register", body, { anonymous: true });
          await finish(answer);
        } catch (error) {
          if (error instanceof ApiError && (error.field === "email" || error.field === "phone")) error.field = "login";
          throw error;
        }
      },
    });
  }

  render();
  if (invited?.to) Object.values(forms).forEach((element) => { const login = element?.querySelector("[name=login]"); if (login) login.value = invited.to; });
  const group = invited?.group ? `the watch group “${invited.group}”` : "a watch group";
  const intro = invitation && invited?.tenantWide
    ? h("div", { class: "notice" },
      h("p", {}, h("strong", {}, `This link invites ${invited.to ?? "you"} to ${tenant.name}.`)),
      h("p", {}, "Create your account below (the invited address is filled in)."),
      h("p", { class: "small" }, "The link works once and expires; do not pass it on."))
    : invitation
    ? h("div", { class: "notice" },
      h("p", {}, h("strong", {}, `This link invites ${invited?.to ?? "you"} to ${group} in ${tenant.name}.`)),
      h("p", {}, canRegister ? "Create an account below (the invited address is filled in), or sign in if you already have one here: either way you join the group at once." : "Sign in with your account here, and you join the group at once."),
      h("p", { class: "small" }, "The link works once and expires; anyone holding it can join, so do not pass it on."))
    : h("p", {}, `Sign in to ${tenant.name}.`);
  mount(main, tenant.name, intro, tabs, panel,
    h("p", { class: "small" }, "Not your community? ", h("button", { type: "button", class: "link", onclick: () => {
      localStorage.removeItem("roost.tenant");
      navigate("/join?choose=1");
    } }, "Choose another")));
}

async function acceptSignedIn(main, token, navigate) {
  const box = errorBox();
  const button = h("button", { type: "button", class: "big", onclick: async () => {
    button.disabled = true;
    showError(box, null);
    try {
      const accepted = await api("POST", "/v1/invitations/accept", { token });
      toast(`You joined ${accepted.group.name}.`);
      navigate(`/g/${accepted.group.id}`);
    } catch (error) {
      showError(box, error);
      button.disabled = false;
    }
  } }, "Join the group");
  mount(main, "Your invitation", h("div", { class: "panel stack" }, h("p", {}, "Someone invited you to their watch group."), box, button));
}

function resetPassword(main, tenant, navigate, signedIn) {
  const second = h("div");
  const request = form({
    label: "Request a reset code",
    fields: [field({ label: "Email or phone number", name: "login", required: true, autocomplete: "username" })],
    submit: "Send me a code",
    action: async (values) => {
      const login = byAddress(values.login ?? "");
      await api("POST", "/v1/auth/password-reset", { tenant: tenant.slug, ...login }, { anonymous: true });
      fill(second, h("p", { class: "notice", role: "status" }, "If that account exists, a code is on its way. It is valid for one hour."), confirm(login));
      second.querySelector("input")?.focus();
    },
  });
  function confirm(login) {
    return form({
      label: "Choose a new password",
      fields: [
        field({ label: "Code", name: "code", required: true, inputmode: "numeric", autocomplete: "one-time-code" }),
        field({ label: "New password", name: "new_password", type: "password", required: true, autocomplete: "new-password", minlength: 10, hint: "At least 10 characters." }),
      ],
      submit: "Set password and sign in",
      action: async (values) => {
        const answer = await api("POST", "/v1/auth/password-reset/confirm", { tenant: tenant.slug, ...login, code: values.code ?? "", new_password: values.new_password ?? "" }, { anonymous: true });
        await signedIn(tenant.slug, answer);
        toast("Your password is changed.");
        navigate("/groups");
      },
    });
  }
  mount(main, "Reset your password", h("p", {}, `For your account in ${tenant.name}.`), h("div", { class: "panel" }, request, second),
    h("p", {}, h("a", { href: `#/join?tenant=${encodeURIComponent(tenant.slug)}` }, "Back to sign in")));
}
