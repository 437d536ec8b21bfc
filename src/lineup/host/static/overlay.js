// LineUp shell: questions beside the app in front (spec 002 §7.3). While an app instance
// holds focus, the agent's pending questions of its sub-session show as cards in the
// shell's question panel in the app area, so the person answers where they are looking.
// The panel is part of the shell page and takes its own place in the app area (beside
// the app's frame, or under it on a narrow screen): it covers none of the app's
// controls, and the app's sandboxed frame can neither see, answer nor dismiss these
// cards (the Runtime has no such request either). Its background is opaque and its text
// dark on light, so it reads the same whatever the app shows.
//
// A card is shown in one place at a time: in the panel, or in its IM group. While the
// panel shows a card, the group holds a short stand-in that points to it. The person
// can fold the panel ("Later"); switching to the chat or to another app folds it too.
// Folded, the cards go back to the group, which says "waiting for your answer", and the
// app area's title bar keeps a button to unfold them (in the bar's own space, never
// over the app). Coming back to the app unfolds them. Either way there is one card to
// answer, and the Runtime takes the first answer only.
//
// This module never imports app.js: initOverlay lends it what it needs.
//   renderItem(item) -> li       builds a card row (as the timeline does)
//   swap(old, li)                replaces a row, keeping keyboard focus
//   focused() -> record | null   the instance holding focus (from the dock)
//   pendingFor(instanceId)       -> { sessionId, items } pending cards of its open group
//   refreshGroup(sessionId)      redraws a group row after cards moved in or out

import { $, announce, el, reconcile } from "./dom.js";
import { t } from "./i18n.js";

let context = null;
const ov = {
  instanceId: null, // the instance the overlay belongs to now
  sessionId: null,
  folded: false, // folded by the person, until the focus changes
  rows: new Map(), // key -> { item, li }: the cards the overlay shows
};

export function initOverlay(ctx) {
  context = ctx;
  $("app-overlay-fold").addEventListener("click", () => {
    ov.folded = true;
    refreshOverlay();
    $("app-overlay-bar").focus({ preventScroll: true });
  });
  $("app-overlay-bar").addEventListener("click", () => {
    ov.folded = false;
    refreshOverlay();
    const card = $("app-overlay-items").querySelector(".card");
    if (card) card.focus({ preventScroll: true });
  });
}

// Whether the overlay shows the card of this row key (then its group does not).
export function overlayShows(key) {
  return ov.rows.has(key);
}

export function overlayRow(key) {
  return ov.rows.get(key)?.li;
}

// Rebuild one card the overlay shows; false when it does not show it.
export function rerenderInOverlay(key, item) {
  const cached = ov.rows.get(key);
  if (!cached || !cached.li.isConnected) return false;
  const li = context.renderItem(item || cached.item);
  context.swap(cached.li, li);
  ov.rows.set(key, { item: item || cached.item, li });
  return true;
}

// Bring the overlay's card to the person's attention (the group's stand-in calls it).
export function showOverlayCard(key) {
  ov.folded = false;
  refreshOverlay();
  const card = ov.rows.get(key)?.li.querySelector(".card");
  if (card) card.focus({ preventScroll: false });
}

function plural(n) {
  return t("overlay.waiting", { count: n });
}

// Work out what the overlay shows from the focus and the groups, and show it.
export function refreshOverlay() {
  if (!context) return;
  const record = context.focused();
  const instanceId = record ? record.instance_id : null;
  if (instanceId !== ov.instanceId) {
    ov.instanceId = instanceId;
    ov.folded = false; // coming back to an app shows its questions again
  }
  const found = instanceId ? context.pendingFor(instanceId) : null;
  const pending = found ? found.items : [];
  const items = ov.folded ? [] : pending;
  const before = ov.sessionId;
  const owned = new Set(ov.rows.keys());
  const list = $("app-overlay-items");
  const next = new Map();
  const nodes = items.map((item) => {
    const cached = ov.rows.get(item.key);
    if (cached && cached.item === item && cached.li.parentElement === list) {
      next.set(item.key, cached);
      return cached.li;
    }
    const li = context.renderItem(item);
    if (cached && cached.li.isConnected) context.swap(cached.li, li);
    next.set(item.key, { item, li });
    return li;
  });
  ov.rows = next;
  ov.sessionId = found ? found.sessionId : null;
  reconcile(list, nodes);

  const overlay = $("app-overlay");
  const wasHidden = overlay.hidden;
  overlay.hidden = items.length === 0;
  $("app-area").classList.toggle("asking", items.length > 0); // room for the panel
  $("app-overlay-title").textContent =
    items.length > 1 ? t("overlay.title_count", { count: items.length }) : t("overlay.title");
  const bar = $("app-overlay-bar");
  bar.hidden = !(ov.folded && pending.length);
  bar.textContent = t("overlay.show", { waiting: plural(pending.length) });
  if (wasHidden && items.length) announce(t("overlay.announce"));

  // Cards that moved in or out: their groups show them, or a stand-in, again.
  const changed = owned.size !== next.size || [...next.keys()].some((key) => !owned.has(key));
  if (changed || before !== ov.sessionId) {
    if (before) context.refreshGroup(before);
    if (ov.sessionId && ov.sessionId !== before) context.refreshGroup(ov.sessionId);
  }
}

// The stand-in a group shows for a card the overlay holds.
export function standIn(item) {
  const li = el("li", "item overlaid");
  li.dataset.key = String(item.key);
  li.dataset.interactionId = item.data.interaction_id;
  const text = el("span", "overlaid-text", t("overlay.stand_in"));
  const go = el("button", "overlaid-show", t("overlay.go"));
  go.type = "button";
  go.addEventListener("click", () => showOverlayCard(item.key));
  li.append(text, go);
  return li;
}
