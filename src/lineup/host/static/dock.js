// LineUp shell: the app dock and the app area. The Runtime alone decides which MiniApp
// instances run and which one holds focus; this module shows what it sends (the
// snapshot's `apps`, then an `apps` frame on every change) and sends back only requests:
// {op: "app", action: "foreground" | "background" | "close" | "continue", instance_id}. Each is
// answered with an `app_receipt`; a refusal is said in the dock, never guessed at here.
// Everything is built with textContent: app names, scopes and ids are data.
//
// Each entry is called by the label the Runtime gives it (`label`: the app's name, with
// a number for a second live instance of one app, "Task Dashboard 2"), with its app's
// icon; the app scope shows only in its tooltip. An entry whose app has questions
// waiting for the person says so (`setWaiting`, from the sub-session groups).

import { $, announce, el } from "./dom.js";
import { t } from "./i18n.js";
import { syncSurfaces } from "./surfaces.js";

// dock.state.* and dock.refusal.* in the catalogue.
const STATES = new Set(["starting", "foreground", "background", "suspended", "stopping"]);
const REFUSALS = new Set(["app_instance_not_found", "app_disabled", "lifecycle_denied"]);

function stateText(state) {
  return STATES.has(state) ? t(`dock.state.${state}`) : state;
}

const dock = {
  send: () => false,
  onFocus: () => {}, // told after every change of the instances or the focus
  apps: { records: [], stack: [], focus: null },
  pending: null, // the control keyboard focus returns to (see renderDock)
  waiting: new Map(), // instance id -> how many of its questions wait for an answer
};

export function initDock({ send, onFocus }) {
  dock.send = send;
  if (onFocus) dock.onFocus = onFocus;
  $("app-area-back").addEventListener("click", () => {
    const focus = dock.apps.focus;
    if (focus) request("background", focus);
  });
}

// The instance holding focus (shown in the app area), or null.
export function focusedRecord() {
  return dock.apps.records.find((r) => r.instance_id === dock.apps.focus) || null;
}

// What to call an instance: the Runtime's label for it ("Task Dashboard 2").
export function nameOf(record) {
  return record.label || record.app_scope;
}

// The app's icon, decorative: the label next to it says what it is.
export function appIcon(url, className) {
  const img = el("img", className);
  img.alt = "";
  img.setAttribute("aria-hidden", "true");
  img.width = 20;
  img.height = 20;
  img.decoding = "async";
  if (url) img.src = url;
  return img;
}

function waitingText(count) {
  return t("dock.waiting", { count });
}

// How many questions wait in each instance's open sub-session (app.js counts them
// from the groups the Runtime sends); the dock marks those entries.
export function setWaiting(counts) {
  const same =
    counts.size === dock.waiting.size &&
    [...counts].every(([id, count]) => dock.waiting.get(id) === count);
  if (same) return;
  dock.waiting = counts;
  renderDock();
}

// Also used by the IM's sub-session groups ("Continue" on ended work).
export function request(action, instanceId) {
  if (!dock.send({ op: "app", action, instance_id: instanceId })) {
    note(t("dock.offline"));
  }
}

function note(text) {
  $("dock-note").textContent = text;
  $("dock-note").hidden = !text;
}

// ``label``: the catalogue key of what the button does, with {{name}} for the entry.
function button(className, text, label, action, record, disabled) {
  const b = el("button", `dock-button ${className}`, text);
  b.type = "button";
  b.setAttribute("aria-label", t(label, { name: nameOf(record) }));
  b.title = t(label, { name: nameOf(record) });
  b.dataset.action = action;
  b.dataset.instanceId = record.instance_id;
  b.disabled = disabled;
  b.addEventListener("click", () => request(action, record.instance_id));
  return b;
}

function renderEntry(record, focused) {
  const li = el("li", "dock-item");
  li.dataset.instanceId = record.instance_id;
  li.dataset.state = record.state;
  if (focused) li.classList.add("focused");
  const closing = record.state === "stopping";
  const front = button("dock-front", "", "dock.front", "foreground", record, closing);
  if (focused) front.setAttribute("aria-current", "true");
  const waiting = dock.waiting.get(record.instance_id) || 0;
  li.dataset.waiting = String(waiting);
  const head = el("span", "dock-head");
  head.append(appIcon(record.icon, "dock-icon"), el("span", "dock-name", nameOf(record)));
  if (waiting) {
    // Seen (the amber count) and heard (in the button's name).
    const mark = el("span", "dock-waiting", String(waiting));
    mark.setAttribute("aria-hidden", "true");
    head.append(mark);
    front.setAttribute(
      "aria-label",
      t("dock.front_waiting", { name: nameOf(record), waiting: waitingText(waiting) }),
    );
  }
  front.title = `${nameOf(record)} (${record.app_scope})${waiting ? ` \u00b7 ${waitingText(waiting)}` : ""}`;
  front.append(head);
  front.append(el("span", `dock-state state-${record.state}`, stateText(record.state)));
  // The name starts with what is seen (WCAG 2.5.3, label in name), its words apart.
  for (const part of [front.querySelector(".dock-waiting"), front.lastChild]) part?.before(" ");
  front.setAttribute("aria-label", `${front.textContent.trim()} \u00b7 ${front.getAttribute("aria-label")}`);
  const back = button(
    "dock-back",
    "\u2013",
    "dock.back",
    "background",
    record,
    closing || record.state === "background" || record.state === "suspended",
  );
  const close = button("dock-close", "\u00d7", "dock.close", "close", record, closing);
  li.append(front, back, close);
  return li;
}

// Redraw the dock, keeping keyboard focus on the same control when it still exists and
// is enabled; else on the entry that holds focus, else on the first entry. While no
// control can take it (a close under way), the dock itself holds it until the next
// redraw; with no entry left, the composer gets it.
function renderDock() {
  const active = document.activeElement;
  const nav = $("dock");
  const list = $("dock-list");
  let wanted = null;
  if (active === nav) wanted = dock.pending;
  else if (active && list.contains(active)) {
    wanted = { id: active.dataset.instanceId, action: active.dataset.action };
  }
  dock.pending = null;
  const records = dock.apps.records;
  list.replaceChildren(...records.map((r) => renderEntry(r, r.instance_id === dock.apps.focus)));
  nav.hidden = records.length === 0;
  if (!wanted) return;
  const buttons = [...list.querySelectorAll("button")].filter((b) => !b.disabled);
  const target =
    buttons.find((b) => b.dataset.instanceId === wanted.id && b.dataset.action === wanted.action) ||
    buttons.find((b) => b.dataset.instanceId === dock.apps.focus && b.dataset.action === "foreground") ||
    buttons.find((b) => b.dataset.action === "foreground");
  if (target) {
    target.focus({ preventScroll: true });
  } else if (records.length) {
    dock.pending = wanted;
    nav.focus({ preventScroll: true });
  } else {
    $("input").focus({ preventScroll: true });
  }
}

function renderArea() {
  const focus = dock.apps.focus;
  const record = dock.apps.records.find((r) => r.instance_id === focus);
  const area = $("app-area");
  area.hidden = !record;
  document.body.classList.toggle("has-app", Boolean(record));
  if (!record) return;
  area.dataset.instanceId = record.instance_id;
  $("app-area-title").textContent = nameOf(record);
  $("app-area-title").title = `${nameOf(record)} (${record.app_scope})`;
  const icon = $("app-area-icon");
  if (icon.getAttribute("src") !== record.icon) icon.src = record.icon;
  $("app-area-state").textContent = stateText(record.state);
  $("app-area-back").setAttribute("aria-label", t("dock.area_back", { name: nameOf(record) }));
}

export function onApps(apps) {
  const before = dock.apps.focus;
  dock.apps = {
    records: apps?.records || [],
    stack: apps?.stack || [],
    focus: apps?.focus ?? null,
  };
  renderDock();
  renderArea();
  syncSurfaces(dock.apps);
  // A narrow dock scrolls sideways: keep the entry in front in view.
  const focused = $("dock-list").querySelector(".dock-item.focused");
  if (focused && before !== dock.apps.focus) {
    const list = $("dock-list");
    const left = focused.offsetLeft - list.offsetLeft;
    if (left < list.scrollLeft || left + focused.offsetWidth > list.scrollLeft + list.clientWidth) {
      list.scrollLeft = left + focused.offsetWidth - list.clientWidth;
    }
  }
  if (before !== dock.apps.focus) {
    const record = dock.apps.records.find((r) => r.instance_id === dock.apps.focus);
    announce(record ? t("dock.in_front", { name: nameOf(record) }) : t("dock.back_to_chat"));
  }
  dock.onFocus();
}

export function onAppReceipt(frame) {
  if (frame.outcome === "accepted") {
    note("");
    return;
  }
  const text = REFUSALS.has(frame.outcome)
    ? t(`dock.refusal.${frame.outcome}`)
    : t("dock.refused", { code: frame.outcome });
  note(text);
  announce(text);
}
