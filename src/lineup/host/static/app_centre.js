// LineUp shell: the App centre (the "Apps" button in the top bar). It shows the
// Runtime's `app_centre` frame: the installed apps (built-in or delivered, with their
// version, publisher, permissions, an on/off switch, "Update to X" when the catalog
// offers a newer version, "Remove" for delivered apps, and why an app cannot run),
// the catalog's apps not installed (with "Install": the newest version it offers), and
// whether the catalog is a development one. The Runtime decides every action; the
// panel only asks (`apps_action`) and shows the receipt's words when it refuses.
// Turning off or removing an app closes its running instances (the frame says how many
// run): the panel asks first, saying how many will close, with a way back.
// The MCP servers the person configured are listed too (`mcp_servers`): their state,
// version and tools, whether they have apps, the policy for their tools (always ask /
// run read-only tools / run all), on/off and remove (`mcp_action`).

import { $, announce, el, focusLost, showToast, trapFocus } from "./dom.js";
import { wordsFor } from "./consent.js";
import { list, t, time } from "./i18n.js";

let send = null;
let dialog = null;
let returnFocus = null;
let toastHome = null; // where the toasts go back to: { parent, next }
let last = null; // the last app_centre frame
let frames = 0; // how many app_centre frames came
const pending = new Map(); // app_id (or "" for refresh) -> { action, frames } until its receipt
const confirming = new Set(); // app ids whose "Remove" waits for its confirm step
const turningOff = new Set(); // app ids whose "Off" waits for its confirm step

// Why an installed app cannot run (centre.unavailable.*).
const UNAVAILABLE = new Set(["version_revoked", "key_revoked"]);

// Permissions as short chips (the consent dialog's words in their title).
const CHIP = {
  "app.open_url": "centre.chip.app.open_url",
  "clipboard.write": "centre.chip.clipboard.write",
  "device.pick_file": "centre.chip.device.pick_file",
  "artifact.save": "centre.chip.artifact.save",
  "notification.show": "centre.chip.notification.show",
};

// What the receipt of each action says (centre.done.* / centre.failed.*).
const ACTIONS = new Set(["install", "update", "enable", "disable", "remove", "refresh", "policy"]);

// An MCP server's state (centre.mcp.state.*) and the policies the person picks from.
const MCP_STATES = new Set(["disabled", "stopped", "starting", "ready", "restarting", "failed"]);
const MCP_POLICIES = ["ask", "read_only", "allow"];

// The Runtime's refusal codes the catalogue has words for (centre.refused.*); the
// receipt's own message is English, for logs and developers.
const REFUSED = new Set([
  "key_unknown",
  "key_revoked",
  "signature_invalid",
  "version_revoked",
  "version_downgrade",
  "app_version_conflict",
  "not_in_catalog",
  "catalog_unavailable",
  "catalog_insecure",
  "cache_unavailable",
  "artifact_too_large",
  "length_mismatch",
  "digest_mismatch",
  "archive_invalid",
  "release_mismatch",
  "release_invalid",
  "host_too_old",
  "app_not_found",
  "app_not_removable",
  "app_unavailable",
  "app_scope_conflict",
  "internal_error",
]);

function closesText(running) {
  if (!running) return "";
  return t("centre.closes", { count: running });
}

// An MCP server's actions come back as `mcp_<action>`: the same words.
const baseAction = (action) => String(action).replace(/^mcp_/, "");

function doneText(action) {
  const base = baseAction(action);
  return t(ACTIONS.has(base) ? `centre.done.${base}` : "centre.done.other");
}

function failedText(action) {
  const base = baseAction(action);
  return t(ACTIONS.has(base) ? `centre.failed.${base}` : "centre.failed.other");
}

function refusedText(code) {
  return REFUSED.has(code) ? t(`centre.refused.${code}`) : t("centre.refused.other", { code });
}

// The app's name, from the last frame (the Runtime's), for words about it.
function appName(appId) {
  const app = last?.apps.find((a) => a.app_id === appId);
  const offer = last?.offers.find((o) => o.app_id === appId);
  const server = last?.mcp_servers?.find((m) => m.key === appId);
  return app?.name || offer?.name || server?.name || appId;
}

function unavailableText(code) {
  return t(UNAVAILABLE.has(code) ? `centre.unavailable.${code}` : "centre.unavailable.other");
}

function publisherText(publisher) {
  if (!publisher) return "";
  if (!publisher.trusted) return t("centre.unknown_publisher");
  return publisher.name || t("centre.unnamed_publisher");
}

function act(action, appId, version) {
  if (pending.has(appId || "")) return; // one request per app at a time
  const frame = { op: "apps_action", action };
  if (appId) frame.app_id = appId;
  if (version) frame.version = version;
  if (!send(frame)) {
    showToast("error", toastBody(t("centre.unreachable")));
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
  const title = el("h2", "apps-title", t("centre.title"));
  title.id = "apps-title";
  const close = button("secondary apps-close", t("centre.close"), () => dialog.close());
  head.append(title, close);

  const catalog = el("section", "apps-catalog");
  catalog.setAttribute("aria-label", t("centre.catalog"));
  const state = el("p", "apps-catalog-state");
  const dev = el("p", "apps-dev", t("centre.dev"));
  dev.hidden = true;
  const check = button("secondary apps-refresh", t("centre.check"), () => act("refresh"));
  check.dataset.focus = "refresh";
  const line = el("div", "apps-catalog-line");
  line.append(state, check);
  catalog.append(dev, line);

  const installed = el("section", "apps-section");
  installed.setAttribute("aria-labelledby", "apps-installed-label");
  const installedLabel = el("h3", "apps-label", t("centre.installed"));
  installedLabel.id = "apps-installed-label";
  installed.append(installedLabel, el("ul", "apps-list apps-installed"));
  installed.append(el("p", "apps-empty apps-installed-empty", t("centre.installed_empty")));

  const offered = el("section", "apps-section");
  offered.setAttribute("aria-labelledby", "apps-offered-label");
  const offeredLabel = el("h3", "apps-label", t("centre.offered"));
  offeredLabel.id = "apps-offered-label";
  offered.append(offeredLabel, el("ul", "apps-list apps-offered"));
  offered.append(el("p", "apps-empty apps-offered-empty", t("centre.offered_empty")));

  const mcp = el("section", "apps-section apps-mcp-section");
  mcp.setAttribute("aria-labelledby", "apps-mcp-label");
  const mcpLabel = el("h3", "apps-label", t("centre.mcp.title"));
  mcpLabel.id = "apps-mcp-label";
  mcp.append(mcpLabel, el("p", "apps-mcp-note", t("centre.mcp.note")), el("ul", "apps-list apps-mcp-list"));
  mcp.hidden = true;

  dialog.append(head, catalog, installed, mcp, offered);
  dialog.addEventListener("close", () => {
    confirming.clear();
    turningOff.clear();
    // The toasts go back to their place in the shell, above the composer.
    if (toastHome) toastHome.parent.insertBefore($("toasts"), toastHome.next);
    if (returnFocus?.isConnected && focusLost(dialog)) returnFocus.focus();
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
  list.setAttribute("aria-label", t("centre.permissions"));
  if (!permissions.length) {
    list.append(el("li", "apps-chip none", t("centre.no_permissions")));
    return list;
  }
  for (const name of permissions) {
    const chip = el("li", "apps-chip", Object.hasOwn(CHIP, name) ? t(CHIP[name]) : name);
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
      builtIn ? t("centre.built_in") : publisherText(app.publisher),
      builtIn ? "built-in" : "publisher",
    ),
  );
  const meta = [app.app_id];
  if (app.publisher) meta.push(t("centre.meta_key", { id: app.publisher.key_id }));
  if (app.versions.length > 1) meta.push(t("centre.meta_stored", { versions: list(app.versions, "unit") }));
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
  box.setAttribute("aria-label", t("centre.switch_label", { name: app.name }));
  box.addEventListener("change", () => {
    if (waiting) box.checked = enabled;
    else if (!box.checked && app.running > 0) {
      // Its instances would close: ask first (the switch stays on meanwhile).
      box.checked = true;
      turningOff.add(app.app_id);
      render(`${app.app_id}:keep-on`);
    } else act(box.checked ? "enable" : "disable", app.app_id);
  });
  toggle.append(box, el("span", "apps-switch-text", t(enabled ? "centre.on" : "centre.off")));
  actions.append(toggle);
  if (turningOff.has(app.app_id)) {
    const question = t("centre.turn_off_ask", { name: app.name, closes: closesText(app.running) }).trim();
    const ask = el("div", "apps-confirm apps-confirm-off");
    ask.setAttribute("role", "group");
    ask.setAttribute("aria-label", question);
    ask.append(el("span", "apps-confirm-text", question));
    const cancel = button("secondary apps-cancel", t("centre.cancel"), () => {
      turningOff.delete(app.app_id);
      render(`${app.app_id}:switch`);
    });
    cancel.dataset.focus = `${app.app_id}:keep-on`;
    cancel.setAttribute("aria-label", t("centre.keep_on_label", { name: app.name }));
    const yes = button("danger apps-off-yes", t("centre.turn_off"), () => {
      turningOff.delete(app.app_id);
      act("disable", app.app_id);
    });
    busy(yes, waiting);
    yes.dataset.focus = `${app.app_id}:off-yes`;
    yes.setAttribute("aria-label", t("centre.turn_off_label", { name: app.name }));
    ask.append(cancel, yes);
    actions.append(ask);
  }

  if (app.update && !app.unavailable) {
    const update = button("primary apps-update", t("centre.update", { version: app.update }), () =>
      act("update", app.app_id, app.update),
    );
    busy(update, waiting);
    update.dataset.focus = `${app.app_id}:update`;
    update.setAttribute("aria-label", t("centre.update_label", { name: app.name, version: app.update }));
    actions.append(update);
  }
  if (!builtIn) {
    if (confirming.has(app.app_id)) {
      const ask = el("div", "apps-confirm");
      ask.setAttribute("role", "group");
      const question = t("centre.remove_ask", { name: app.name, closes: closesText(app.running) }).trim();
      ask.setAttribute("aria-label", question);
      ask.append(el("span", "apps-confirm-text", question));
      const cancel = button("secondary apps-cancel", t("centre.keep"), () => {
        confirming.delete(app.app_id);
        render(`${app.app_id}:remove`);
      });
      cancel.dataset.focus = `${app.app_id}:keep`;
      const yes = button("danger apps-remove-yes", t("centre.remove"), () => {
        confirming.delete(app.app_id);
        act("remove", app.app_id);
      });
      busy(yes, waiting);
      yes.dataset.focus = `${app.app_id}:remove-yes`;
      yes.setAttribute("aria-label", t("centre.remove_yes_label", { name: app.name }));
      ask.append(cancel, yes);
      actions.append(ask);
    } else {
      const remove = button("secondary apps-remove", t("centre.remove"), () => {
        confirming.add(app.app_id);
        render(`${app.app_id}:keep`);
      });
      busy(remove, waiting);
      remove.dataset.focus = `${app.app_id}:remove`;
      remove.setAttribute("aria-label", t("centre.remove_label", { name: app.name }));
      actions.append(remove);
    }
  }
  li.append(text, actions);
  return li;
}

function mcpAct(action, key, policy) {
  if (pending.has(key)) return;
  const frame = { op: "mcp_action", action, key };
  if (policy) frame.policy = policy;
  if (!send(frame)) {
    showToast("error", toastBody(t("centre.unreachable")));
    return;
  }
  pending.set(key, { action: `mcp_${action}`, frames });
  render();
}

function mcpRow(server) {
  const waiting = pending.has(server.key);
  const asked = pending.get(server.key)?.action;
  const enabled = asked === "mcp_enable" ? true : asked === "mcp_disable" ? false : server.enabled;
  const li = el("li", "apps-row apps-mcp");
  li.dataset.mcpKey = server.key;
  if (!enabled) li.classList.add("is-off");
  const text = el("div", "apps-text");
  const state = MCP_STATES.has(server.state) ? server.state : "stopped";
  text.append(heading(server.name, server.version || "", t(`centre.mcp.state.${state}`), `mcp-${state}`));
  const meta = [];
  if (server.configured_name !== server.name) meta.push(server.configured_name);
  meta.push(t("centre.mcp.tools", { count: server.tools.length }));
  if (server.has_ui) meta.push(t("centre.mcp.has_ui"));
  text.append(el("p", "apps-meta", meta.join(" \u00b7 ")));
  if (server.reason && (state === "failed" || state === "restarting")) {
    text.append(el("p", "apps-unavailable apps-mcp-reason", server.reason));
  }
  if (server.tools.length) {
    const names = el("ul", "apps-chips");
    names.setAttribute("aria-label", t("centre.mcp.tool_list"));
    for (const tool of server.tools.slice(0, 12)) {
      const chip = el("li", "apps-chip", tool.title || tool.name);
      chip.title = tool.read_only ? `${tool.name} (${t("centre.mcp.read_only")})` : tool.name;
      names.append(chip);
    }
    if (server.tools.length > 12) names.append(el("li", "apps-chip none", t("centre.mcp.more", { count: server.tools.length - 12 })));
    text.append(names);
  }

  const actions = el("div", "apps-actions");
  const policyLabel = el("label", "apps-policy");
  policyLabel.append(el("span", "apps-policy-text", t("centre.mcp.policy")));
  const select = el("select", "apps-policy-select");
  select.dataset.focus = `${server.key}:policy`;
  for (const name of MCP_POLICIES) {
    const option = el("option", null, t(`centre.mcp.policy.${name}`));
    option.value = name;
    option.selected = name === server.policy;
    select.append(option);
  }
  select.addEventListener("change", () => {
    if (waiting) select.value = server.policy;
    else mcpAct("policy", server.key, select.value);
  });
  policyLabel.append(select);
  actions.append(policyLabel);

  const toggle = el("label", "apps-switch");
  const box = el("input");
  box.type = "checkbox";
  box.setAttribute("role", "switch");
  box.checked = enabled;
  busy(box, waiting);
  box.dataset.focus = `${server.key}:switch`;
  box.setAttribute("aria-label", t("centre.switch_label", { name: server.name }));
  box.addEventListener("change", () => {
    if (waiting) box.checked = enabled;
    else mcpAct(box.checked ? "enable" : "disable", server.key);
  });
  toggle.append(box, el("span", "apps-switch-text", t(enabled ? "centre.on" : "centre.off")));
  actions.append(toggle);

  if (confirming.has(server.key)) {
    const ask = el("div", "apps-confirm");
    ask.setAttribute("role", "group");
    const question = t("centre.mcp.remove_ask", { name: server.name });
    ask.setAttribute("aria-label", question);
    ask.append(el("span", "apps-confirm-text", question));
    const cancel = button("secondary apps-cancel", t("centre.keep"), () => {
      confirming.delete(server.key);
      render(`${server.key}:remove`);
    });
    cancel.dataset.focus = `${server.key}:keep`;
    const yes = button("danger apps-remove-yes", t("centre.remove"), () => {
      confirming.delete(server.key);
      mcpAct("remove", server.key);
    });
    busy(yes, waiting);
    yes.dataset.focus = `${server.key}:remove-yes`;
    yes.setAttribute("aria-label", t("centre.remove_yes_label", { name: server.name }));
    ask.append(cancel, yes);
    actions.append(ask);
  } else {
    const remove = button("secondary apps-remove", t("centre.remove"), () => {
      confirming.add(server.key);
      render(`${server.key}:keep`);
    });
    busy(remove, waiting);
    remove.dataset.focus = `${server.key}:remove`;
    remove.setAttribute("aria-label", t("centre.remove_label", { name: server.name }));
    actions.append(remove);
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
  meta.push(t("centre.meta_key", { id: offer.publisher.key_id }));
  text.append(el("p", "apps-meta", meta.join(" \u00b7 ")));
  text.append(chips(offer.permissions));
  const actions = el("div", "apps-actions");
  const install = button("primary apps-install", t("centre.install"), () =>
    act("install", offer.app_id, offer.version),
  );
  busy(install, pending.has(offer.app_id));
  install.dataset.focus = `${offer.app_id}:install`;
  install.setAttribute("aria-label", t("centre.install_label", { name, version: offer.version }));
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
    ? t("centre.checked_at", { time: time(catalog.fetched_at) })
    : t("centre.not_checked");
  const refresh = dialog.querySelector(".apps-refresh");
  if (pending.has("")) refresh.setAttribute("aria-disabled", "true");
  else refresh.removeAttribute("aria-disabled");
  refresh.textContent = t(pending.has("") ? "centre.checking" : "centre.check");

  dialog.querySelector(".apps-installed").replaceChildren(...apps.map(installedRow));
  dialog.querySelector(".apps-installed-empty").hidden = apps.length > 0;
  dialog.querySelector(".apps-offered").replaceChildren(...offers.map(offerRow));
  dialog.querySelector(".apps-offered-empty").hidden = offers.length > 0;
  const servers = last.mcp_servers || [];
  dialog.querySelector(".apps-mcp-section").hidden = servers.length === 0;
  dialog.querySelector(".apps-mcp-list").replaceChildren(...servers.map(mcpRow));

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
  const ids = new Set([...frame.apps.map((app) => app.app_id), ...(frame.mcp_servers || []).map((m) => m.key)]);
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
  const why =
    frame.reason === "key_revoked"
      ? t("centre.fallback.why_key")
      : t("centre.fallback.why_version", { version: frame.from_version });
  const back = frame.outcome === "rolled_back";
  const text = back
    ? t("centre.fallback.rolled_back", { name: frame.name, version: frame.to_version, why })
    : t("centre.fallback.unavailable", { name: frame.name, why });
  const title = t(back ? "centre.fallback.rolled_back_title" : "centre.fallback.unavailable_title");
  showToast("warning apps-fallback", toastBody(text, title));
}

// A configured MCP server stopped working: tell the person, whether or not the App
// centre is open (what it said on its way out is in the message).
export function onMcpNotice(frame) {
  const key = frame.state === "failed" ? "centre.mcp.notice.failed" : "centre.mcp.notice.restarting";
  const title = t(key, { name: frame.name });
  showToast("warning apps-mcp-notice", toastBody(frame.reason || t("centre.mcp.notice.no_reason"), title));
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
    const done = doneText(frame.action);
    announce(what ? t("centre.done_app", { done, what }) : t("centre.done_alone", { done }));
    return;
  }
  const failed = failedText(frame.action);
  const title = name ? t("centre.failed_app", { failed, name }) : failed;
  showToast("error apps-toast", toastBody(refusedText(frame.outcome), title));
}
