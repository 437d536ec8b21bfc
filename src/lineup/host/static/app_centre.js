// LineUp shell: the App centre (the "Apps" button in the top bar). It shows the
// Runtime's `app_centre` frame: the installed apps (built-in or delivered, with their
// version, publisher, permissions, an on/off switch, "Update to X" when the catalog
// offers a newer version, "Remove" for delivered apps, and why an app cannot run),
// the catalog's apps not installed (with "Install": the newest version it offers), and
// whether the catalog is a development one. The Runtime decides every action; the
// panel only asks (`apps_action`) and shows the receipt's words when it refuses.
// Turning off or removing an app closes its running instances (the frame says how many
// run): the panel asks first, saying how many will close, with a way back.

import { $, announce, el, showToast, trapFocus } from "./dom.js";
import { wordsFor } from "./consent.js";

let send = null;
let dialog = null;
let returnFocus = null;
let toastHome = null; // where the toasts go back to: { parent, next }
let last = null; // the last app_centre frame
let frames = 0; // how many app_centre frames came
const pending = new Map(); // app_id (or "" for refresh) -> { action, frames } until its receipt
const confirming = new Set(); // app ids whose "Remove" waits for its confirm step
const turningOff = new Set(); // app ids whose "Off" waits for its confirm step

const UNAVAILABLE = {
  version_revoked: "Revoked by the publisher \u2014 no earlier verified version",
  key_revoked: "The publisher's key was revoked",
};

// Permissions as short chips (the consent dialog's words in their title).
const CHIP = {
  "app.open_url": "Open links",
  "clipboard.write": "Copy to clipboard",
  "device.pick_file": "Pick files",
  "artifact.save": "Save files",
  "notification.show": "Notifications",
};

const DONE = {
  install: "Installed",
  update: "Updated",
  enable: "Turned on",
  disable: "Turned off",
  remove: "Removed",
  refresh: "Catalog checked",
};

const FAILED = {
  install: "Not installed",
  update: "Not updated",
  enable: "Not turned on",
  disable: "Not turned off",
  remove: "Not removed",
  refresh: "Catalog not checked",
};

const TIME_FORMAT = new Intl.DateTimeFormat([], {
  day: "numeric",
  month: "short",
  hour: "2-digit",
  minute: "2-digit",
});

function closesText(running) {
  if (!running) return "";
  return running === 1 ? "1 running instance will close." : `${running} running instances will close.`;
}

// The app's name, from the last frame (the Runtime's), for words about it.
function appName(appId) {
  const app = last?.apps.find((a) => a.app_id === appId);
  const offer = last?.offers.find((o) => o.app_id === appId);
  return app?.name || offer?.name || appId;
}

function unavailableText(code) {
  return UNAVAILABLE[code] || "This app has no version it may run";
}

function publisherText(publisher) {
  if (!publisher) return "";
  return publisher.trusted ? publisher.name || "Unnamed publisher" : "Unknown publisher";
}

function act(action, appId, version) {
  if (pending.has(appId || "")) return; // one request per app at a time
  const frame = { op: "apps_action", action };
  if (appId) frame.app_id = appId;
  if (version) frame.version = version;
  if (!send(frame)) {
    showToast("error", toastBody("The Runtime cannot be reached. Try again in a moment."));
    return;
  }
  pending.set(appId || "", { action, frames });
  render();
}

function toastBody(text, title) {
  const body = el("div", "toast-body");
  if (title) body.append(el("strong", "toast-title", title));
  body.append(el("span", "toast-text", text));
  return body;
}

function button(className, text, onClick) {
  const control = el("button", `button ${className}`, text);
  control.type = "button";
  control.addEventListener("click", () => {
    if (control.getAttribute("aria-disabled") !== "true") onClick();
  });
  return control;
}

// A control waiting for the Runtime stays focusable (focus is not lost while the
// row is drawn again) but does nothing.
function busy(control, waiting) {
  if (waiting) control.setAttribute("aria-disabled", "true");
  return control;
}

function build() {
  dialog = el("dialog", "apps");
  dialog.id = "apps";
  dialog.setAttribute("aria-labelledby", "apps-title");
  const head = el("div", "apps-head");
  const title = el("h2", "apps-title", "Apps");
  title.id = "apps-title";
  const close = button("secondary apps-close", "Close", () => dialog.close());
  head.append(title, close);

  const catalog = el("section", "apps-catalog");
  catalog.setAttribute("aria-label", "Catalog");
  const state = el("p", "apps-catalog-state");
  const dev = el("p", "apps-dev", "Development catalog (plain HTTP on this machine)");
  dev.hidden = true;
  const check = button("secondary apps-refresh", "Check for updates", () => act("refresh"));
  check.dataset.focus = "refresh";
  const line = el("div", "apps-catalog-line");
  line.append(state, check);
  catalog.append(dev, line);

  const installed = el("section", "apps-section");
  installed.setAttribute("aria-labelledby", "apps-installed-label");
  const installedLabel = el("h3", "apps-label", "Installed");
  installedLabel.id = "apps-installed-label";
  installed.append(installedLabel, el("ul", "apps-list apps-installed"));
  installed.append(el("p", "apps-empty apps-installed-empty", "No apps installed."));

  const offered = el("section", "apps-section");
  offered.setAttribute("aria-labelledby", "apps-offered-label");
  const offeredLabel = el("h3", "apps-label", "Available from the catalog");
  offeredLabel.id = "apps-offered-label";
  offered.append(offeredLabel, el("ul", "apps-list apps-offered"));
  offered.append(el("p", "apps-empty apps-offered-empty", "Nothing else to install."));

  dialog.append(head, catalog, installed, offered);
  dialog.addEventListener("close", () => {
    confirming.clear();
    turningOff.clear();
    // The toasts go back to their place in the shell, above the composer.
    if (toastHome) toastHome.parent.insertBefore($("toasts"), toastHome.next);
    if (returnFocus && returnFocus.isConnected) returnFocus.focus();
    returnFocus = null;
  });
  trapFocus(dialog);
  document.body.append(dialog);
}

export function initAppCentre(context) {
  send = context.send;
  $("apps-open").addEventListener("click", () => {
    if (!dialog) build();
    if (!send({ op: "apps" })) return;
    returnFocus = document.activeElement;
    // A modal dialog makes the rest of the page inert: its toasts show inside it.
    toastHome = { parent: $("toasts").parentElement, next: $("toasts").nextSibling };
    dialog.append($("toasts"));
    dialog.showModal();
    dialog.querySelector(".apps-close").focus();
  });
}

function chips(permissions) {
  const list = el("ul", "apps-chips");
  list.setAttribute("aria-label", "Permissions");
  if (!permissions.length) {
    list.append(el("li", "apps-chip none", "No permissions"));
    return list;
  }
  for (const name of permissions) {
    const chip = el("li", "apps-chip", CHIP[name] || name);
    chip.title = `${wordsFor(name)} (${name})`;
    list.append(chip);
  }
  return list;
}

function heading(name, version, badge, badgeClass) {
  const line = el("div", "apps-line");
  line.append(el("span", "apps-name", name), el("span", "apps-version", version));
  if (badge) line.append(el("span", `apps-badge ${badgeClass}`, badge));
  return line;
}

function installedRow(app) {
  const waiting = pending.has(app.app_id);
  // Turning on or off shows the asked state at once (the Runtime's answer follows).
  const asked = pending.get(app.app_id)?.action;
  const enabled = asked === "enable" ? true : asked === "disable" ? false : app.enabled;
  const li = el("li", "apps-row");
  li.dataset.appId = app.app_id;
  if (app.unavailable) li.classList.add("is-unavailable");
  if (!enabled) li.classList.add("is-off");
  const text = el("div", "apps-text");
  const builtIn = app.kind === "built-in";
  text.append(
    heading(
      app.name,
      app.version,
      builtIn ? "Built-in" : publisherText(app.publisher),
      builtIn ? "built-in" : "publisher",
    ),
  );
  const meta = [app.app_id];
  if (app.publisher) meta.push(`key ${app.publisher.key_id}`);
  if (app.versions.length > 1) meta.push(`stored: ${app.versions.join(", ")}`);
  text.append(el("p", "apps-meta", meta.join(" \u00b7 ")));
  text.append(chips(app.permissions));
  if (app.unavailable) {
    const reason = el("p", "apps-unavailable", unavailableText(app.unavailable));
    reason.dataset.reason = app.unavailable;
    text.append(reason);
  }

  const actions = el("div", "apps-actions");
  const toggle = el("label", "apps-switch");
  const box = el("input");
  box.type = "checkbox";
  box.setAttribute("role", "switch");
  box.checked = enabled;
  box.disabled = Boolean(app.unavailable);
  busy(box, waiting);
  box.dataset.focus = `${app.app_id}:switch`;
  box.setAttribute("aria-label", `${app.name} on`);
  box.addEventListener("change", () => {
    if (waiting) box.checked = enabled;
    else if (!box.checked && app.running > 0) {
      // Its instances would close: ask first (the switch stays on meanwhile).
      box.checked = true;
      turningOff.add(app.app_id);
      render(`${app.app_id}:keep-on`);
    } else act(box.checked ? "enable" : "disable", app.app_id);
  });
  toggle.append(box, el("span", "apps-switch-text", enabled ? "On" : "Off"));
  actions.append(toggle);
  if (turningOff.has(app.app_id)) {
    const question = `Turn off ${app.name}? ${closesText(app.running)}`;
    const ask = el("div", "apps-confirm apps-confirm-off");
    ask.setAttribute("role", "group");
    ask.setAttribute("aria-label", question);
    ask.append(el("span", "apps-confirm-text", question));
    const cancel = button("secondary apps-cancel", "Cancel", () => {
      turningOff.delete(app.app_id);
      render(`${app.app_id}:switch`);
    });
    cancel.dataset.focus = `${app.app_id}:keep-on`;
    cancel.setAttribute("aria-label", `Cancel: keep ${app.name} on`);
    const yes = button("danger apps-off-yes", "Turn off", () => {
      turningOff.delete(app.app_id);
      act("disable", app.app_id);
    });
    busy(yes, waiting);
    yes.dataset.focus = `${app.app_id}:off-yes`;
    yes.setAttribute("aria-label", `Yes, turn off ${app.name}`);
    ask.append(cancel, yes);
    actions.append(ask);
  }

  if (app.update && !app.unavailable) {
    const update = button("primary apps-update", `Update to ${app.update}`, () =>
      act("update", app.app_id, app.update),
    );
    busy(update, waiting);
    update.dataset.focus = `${app.app_id}:update`;
    update.setAttribute("aria-label", `Update ${app.name} to ${app.update}`);
    actions.append(update);
  }
  if (!builtIn) {
    if (confirming.has(app.app_id)) {
      const ask = el("div", "apps-confirm");
      ask.setAttribute("role", "group");
      const question = `Remove ${app.name}? ${closesText(app.running)}`.trim();
      ask.setAttribute("aria-label", question);
      ask.append(el("span", "apps-confirm-text", question));
      const cancel = button("secondary apps-cancel", "Keep", () => {
        confirming.delete(app.app_id);
        render(`${app.app_id}:remove`);
      });
      cancel.dataset.focus = `${app.app_id}:keep`;
      const yes = button("danger apps-remove-yes", "Remove", () => {
        confirming.delete(app.app_id);
        act("remove", app.app_id);
      });
      busy(yes, waiting);
      yes.dataset.focus = `${app.app_id}:remove-yes`;
      yes.setAttribute("aria-label", `Yes, remove ${app.name}`);
      ask.append(cancel, yes);
      actions.append(ask);
    } else {
      const remove = button("secondary apps-remove", "Remove", () => {
        confirming.add(app.app_id);
        render(`${app.app_id}:keep`);
      });
      busy(remove, waiting);
      remove.dataset.focus = `${app.app_id}:remove`;
      remove.setAttribute("aria-label", `Remove ${app.name}`);
      actions.append(remove);
    }
  }
  li.append(text, actions);
  return li;
}

function offerRow(offer) {
  const li = el("li", "apps-row");
  li.dataset.appId = offer.app_id;
  const text = el("div", "apps-text");
  // Called by the name its publisher signed; the id is a detail (older releases name
  // none: then the id is all there is).
  const name = offer.name || offer.app_id;
  text.append(heading(name, offer.version, publisherText(offer.publisher), "publisher"));
  const meta = offer.name ? [offer.app_id] : [];
  meta.push(`key ${offer.publisher.key_id}`);
  text.append(el("p", "apps-meta", meta.join(" \u00b7 ")));
  text.append(chips(offer.permissions));
  const actions = el("div", "apps-actions");
  const install = button("primary apps-install", "Install", () =>
    act("install", offer.app_id, offer.version),
  );
  busy(install, pending.has(offer.app_id));
  install.dataset.focus = `${offer.app_id}:install`;
  install.setAttribute("aria-label", `Install ${name} ${offer.version}`);
  actions.append(install);
  li.append(text, actions);
  return li;
}

// Draw the last frame again. Focus stays on the same control when it is still there
// (`focusKey` moves it to another one); a control that went away (an app removed)
// leaves focus on the list's heading, not on the page behind the dialog.
function render(focusKey) {
  if (!dialog || !last) return;
  const focused = focusKey || document.activeElement?.dataset?.focus;
  const hadFocus = dialog.contains(document.activeElement);
  const { apps, offers, catalog } = last;

  dialog.querySelector(".apps-dev").hidden = catalog.production || !catalog.fetched_at;
  dialog.querySelector(".apps-catalog-state").textContent = catalog.fetched_at
    ? `Catalog checked ${TIME_FORMAT.format(new Date(catalog.fetched_at))}`
    : "The catalog has not been checked yet.";
  const refresh = dialog.querySelector(".apps-refresh");
  if (pending.has("")) refresh.setAttribute("aria-disabled", "true");
  else refresh.removeAttribute("aria-disabled");
  refresh.textContent = pending.has("") ? "Checking\u2026" : "Check for updates";

  dialog.querySelector(".apps-installed").replaceChildren(...apps.map(installedRow));
  dialog.querySelector(".apps-installed-empty").hidden = apps.length > 0;
  dialog.querySelector(".apps-offered").replaceChildren(...offers.map(offerRow));
  dialog.querySelector(".apps-offered-empty").hidden = offers.length > 0;

  if (!focused || !hadFocus) return;
  const appId = focused.slice(0, focused.lastIndexOf(":"));
  const again =
    dialog.querySelector(`[data-focus="${CSS.escape(focused)}"]`) ||
    (appId && dialog.querySelector(`[data-focus^="${CSS.escape(appId)}:"]`));
  if (again) again.focus();
  else if (!dialog.contains(document.activeElement) || document.activeElement === document.body)
    dialog.querySelector(".apps-close").focus();
}

export function onAppCentre(frame) {
  last = frame;
  frames += 1;
  // A row whose app went away cannot wait for its confirm step any longer.
  const ids = new Set(frame.apps.map((app) => app.app_id));
  for (const id of confirming) if (!ids.has(id)) confirming.delete(id);
  // Nothing left to close (or already off): turning off needs no question any more.
  for (const id of turningOff) {
    const app = frame.apps.find((a) => a.app_id === id);
    if (!app || !app.enabled || !app.running) turningOff.delete(id);
  }
  render();
}

// A revocation moved an app back, or left it with nothing to run: tell the person,
// whether or not the App centre is open.
export function onAppFallback(frame) {
  const why = frame.reason === "key_revoked" ? "its publisher's key was revoked" : `version ${frame.from_version} was revoked`;
  const text =
    frame.outcome === "rolled_back"
      ? `${frame.name} went back to version ${frame.to_version}: ${why}.`
      : `${frame.name} is unavailable: ${why}, and no earlier verified version is here.`;
  const title = frame.outcome === "rolled_back" ? "App rolled back" : "App unavailable";
  showToast("warning apps-fallback", toastBody(text, title));
}

export function onAppsReceipt(frame) {
  const key = frame.app_id || "";
  const asked = pending.get(key);
  pending.delete(key);
  // Done: the fresh frame that says so is on its way (drawing the old one now would
  // flicker), unless it already came.
  if (frame.outcome !== "ok" || !asked || frames > asked.frames) render();
  const name = frame.app_id ? appName(frame.app_id) : "";
  if (frame.outcome === "ok") {
    const what = frame.version ? `${name} ${frame.version}` : name;
    announce(`${DONE[frame.action] || "Done"}${what ? `: ${what}` : ""}.`);
    return;
  }
  const title = `${FAILED[frame.action] || "Not done"}${name ? `: ${name}` : ""}`;
  showToast("error apps-toast", toastBody(frame.message || frame.outcome, title));
}
