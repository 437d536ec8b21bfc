// LineUp shell: the settings panel (from the top bar). First the shell's language ("As
// the browser says", English, 简体中文), then the permissions: the consent the person
// chose to remember for this Runtime session, each with "Revoke", and the host
// capabilities with an on/off switch (off: agents and apps are told it is revoked).
// The Runtime holds all of it: the panel only shows its `grants` frame and asks for
// changes. The language is remembered per user by the Runtime ({op: "locale"}); every
// tab is then told ({op: "locale", choice}) and shows itself again in it.

import { $, el, focusLost, trapFocus } from "./dom.js";
import { wordsFor } from "./consent.js";
import { choice, t } from "./i18n.js";

// The choices, as the Runtime stores them ("auto": none, the browser's languages).
const LANGUAGES = [
  ["auto", "language.auto"],
  ["en", "language.en"],
  ["zh-CN", "language.zh-CN"],
];
// Set before the page opens again in the chosen language: focus goes back to the
// button that opens this panel.
const REOPENED = "lineup.settings.language-changed";

let send = null;
let dialog = null;
let returnFocus = null;
let reloading = false; // a language was chosen: the page opens again once it is stored

// "Agent <id>" or "App <name>" (the Runtime's `label`: the app's display name).
function requesterLabel(grant) {
  const [kind, ...rest] = grant.requester.split(":");
  const name = grant.label || rest.join(":");
  if (kind === "agent") return t("settings.requester.agent", { name });
  if (kind === "app") return t("settings.requester.app", { name });
  return grant.requester;
}

function languageSection() {
  const section = el("section", "settings-section settings-language");
  section.setAttribute("aria-labelledby", "settings-language-label");
  const heading = el("h3", "settings-label");
  const label = el("label", null, t("language.label"));
  label.htmlFor = "settings-language";
  label.id = "settings-language-label";
  heading.append(label);
  const line = el("div", "settings-language-line");
  const select = el("select", "settings-language-select");
  select.id = "settings-language";
  select.setAttribute("aria-describedby", "settings-language-note");
  for (const [value, key] of LANGUAGES) {
    const option = el("option", null, t(key));
    option.value = value;
    // Each name in its own language, so a person who cannot read this one finds theirs.
    if (value !== "auto") option.lang = value;
    select.append(option);
  }
  select.value = choice;
  const apply = el("button", "button primary settings-language-apply", t("settings.language_apply"));
  apply.type = "button";
  apply.disabled = true;
  // Arrow keys change a closed <select> at once: the choice takes effect on the button,
  // so browsing the list with the keyboard reloads nothing.
  select.addEventListener("change", () => {
    apply.disabled = reloading || select.value === choice;
  });
  apply.addEventListener("click", () => chooseLanguage(select.value, apply));
  line.append(select, apply);
  const note = el("p", "settings-note", t("settings.language_note"));
  note.id = "settings-language-note";
  section.append(heading, line, note);
  return section;
}

function chooseLanguage(value, apply) {
  if (reloading || value === choice) return;
  const locale = value === "auto" ? null : value;
  if (!send({ op: "locale", locale })) return;
  reloading = true;
  apply.disabled = true;
  // Once the choice is stored, the Runtime tells every tab ({op: "locale", choice}) and
  // app.js opens the page again in it, this one included.
  sessionStorage.setItem(REOPENED, "1");
}

function build() {
  dialog = el("dialog", "settings");
  dialog.id = "settings";
  dialog.setAttribute("aria-labelledby", "settings-title");
  const head = el("div", "settings-head");
  const title = el("h2", "settings-title", t("settings.title"));
  title.id = "settings-title";
  const close = el("button", "button secondary settings-close", t("settings.close"));
  close.type = "button";
  close.addEventListener("click", () => dialog.close());
  head.append(title, close);
  const permissions = el("section", "settings-permissions");
  permissions.setAttribute("aria-labelledby", "settings-permissions-label");
  const permissionsLabel = el("h3", "settings-label settings-group", t("settings.permissions"));
  permissionsLabel.id = "settings-permissions-label";
  const grants = el("section", "settings-section");
  grants.append(
    el("h4", "settings-label", t("settings.remembered")),
    el("ul", "settings-grants"),
    el("p", "settings-empty", t("settings.none_remembered")),
  );
  const capabilities = el("section", "settings-section");
  capabilities.append(
    el("h4", "settings-label", t("settings.capabilities")),
    el("ul", "settings-capabilities"),
  );
  permissions.append(permissionsLabel, grants, capabilities);
  dialog.append(head, languageSection(), permissions);
  dialog.addEventListener("close", () => {
    if (returnFocus?.isConnected && focusLost(dialog)) returnFocus.focus();
    returnFocus = null;
  });
  trapFocus(dialog);
  document.body.append(dialog);
}

export function initSettings(context) {
  send = context.send;
  const opener = $("settings-open");
  opener.addEventListener("click", () => {
    if (!dialog) build();
    if (!send({ op: "grants" })) return;
    returnFocus = document.activeElement;
    dialog.showModal();
    dialog.querySelector(".settings-close").focus();
  });
  if (sessionStorage.getItem(REOPENED)) {
    sessionStorage.removeItem(REOPENED);
    opener.focus();
  }
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
      const revoke = el("button", "button secondary settings-revoke", t("settings.revoke"));
      revoke.type = "button";
      revoke.setAttribute(
        "aria-label",
        t("settings.revoke_label", { what: wordsFor(grant.capability), who: requesterLabel(grant) }),
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
