// LineUp shell: the permissions panel (from the top bar). It lists the consent the
// person chose to remember for this Runtime session, each with "Revoke", and the host
// capabilities with an on/off switch (off: agents and apps are told it is revoked).
// The Runtime holds both; the panel only shows its `grants` frame and asks for changes.

import { $, el, trapFocus } from "./dom.js";
import { wordsFor } from "./consent.js";

let send = null;
let dialog = null;
let returnFocus = null;

// "Agent <id>" or "App <name>" (the Runtime's `label`: the app's display name).
function requesterLabel(grant) {
  const [kind, ...rest] = grant.requester.split(":");
  const name = grant.label || rest.join(":");
  if (kind === "agent") return `Agent ${name}`;
  if (kind === "app") return `App ${name}`;
  return grant.requester;
}

function build() {
  dialog = el("dialog", "settings");
  dialog.id = "settings";
  dialog.setAttribute("aria-labelledby", "settings-title");
  const head = el("div", "settings-head");
  const title = el("h2", "settings-title", "Permissions");
  title.id = "settings-title";
  const close = el("button", "button secondary settings-close", "Close");
  close.type = "button";
  close.addEventListener("click", () => dialog.close());
  head.append(title, close);
  const grants = el("section", "settings-section");
  grants.append(
    el("h3", "settings-label", "Remembered for this session"),
    el("ul", "settings-grants"),
    el("p", "settings-empty", "Nothing is remembered."),
  );
  const capabilities = el("section", "settings-section");
  capabilities.append(
    el("h3", "settings-label", "What agents and apps may ask for"),
    el("ul", "settings-capabilities"),
  );
  dialog.append(head, grants, capabilities);
  dialog.addEventListener("close", () => {
    if (returnFocus && returnFocus.isConnected) returnFocus.focus();
    returnFocus = null;
  });
  trapFocus(dialog);
  document.body.append(dialog);
}

export function initSettings(context) {
  send = context.send;
  $("settings-open").addEventListener("click", () => {
    if (!dialog) build();
    if (!send({ op: "grants" })) return;
    returnFocus = document.activeElement;
    dialog.showModal();
    dialog.querySelector(".settings-close").focus();
  });
}

export function onGrants(frame) {
  if (!dialog) return;
  const list = dialog.querySelector(".settings-grants");
  list.replaceChildren(
    ...frame.grants.map((grant) => {
      const li = el("li", "settings-row");
      const text = el("span", "settings-text");
      text.append(
        el("span", "settings-name", wordsFor(grant.capability)),
        el("span", "settings-meta", requesterLabel(grant)),
      );
      const revoke = el("button", "button secondary settings-revoke", "Revoke");
      revoke.type = "button";
      revoke.setAttribute(
        "aria-label",
        `Revoke ${wordsFor(grant.capability)} for ${requesterLabel(grant)}`,
      );
      revoke.addEventListener("click", () =>
        send({ op: "forget", requester: grant.requester, capability: grant.capability }),
      );
      li.append(text, revoke);
      return li;
    }),
  );
  dialog.querySelector(".settings-empty").hidden = frame.grants.length > 0;
  const capabilities = dialog.querySelector(".settings-capabilities");
  const focused = document.activeElement?.dataset?.capability;
  capabilities.replaceChildren(
    ...frame.capabilities.map((capability) => {
      const li = el("li", "settings-row");
      const label = el("label", "settings-switch");
      const box = el("input");
      box.type = "checkbox";
      box.setAttribute("role", "switch");
      box.checked = !capability.revoked;
      box.dataset.capability = capability.name;
      box.addEventListener("change", () =>
        send({ op: "capability_policy", capability: capability.name, revoked: !box.checked }),
      );
      const text = el("span", "settings-text");
      text.append(
        el("span", "settings-name", wordsFor(capability.name)),
        el("span", "settings-meta", capability.name),
      );
      label.append(text, box);
      li.append(label);
      return li;
    }),
  );
  if (focused) capabilities.querySelector(`[data-capability="${CSS.escape(focused)}"]`)?.focus();
}
