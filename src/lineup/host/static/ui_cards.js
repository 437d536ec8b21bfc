// LineUp shell: surfaces an agent opened in the conversation (spec 000 §4), each shown
// as a card on its ui.open row. The Runtime keeps the surface's record (status and the
// latest state, which ui.patch replaces); this module mounts the surface in a
// sandboxed frame (surface_host.js, bridge only: such a surface has no MiniApp SDK),
// posts each new state to it, and sends the person's events up as {op: "ui_event"}
// (the shell checked name and data; the Runtime checks them against the surface's
// declared events and tells the agent). "Close" sends the event `close`, which ends the
// surface. A card is updated in place, never rebuilt, so its frame keeps running.
//
// A frame that reloads or navigates itself is mounted afresh with the current state,
// at most RELOAD_LIMIT times in RELOAD_WINDOW_MS (surface_host.js's reloadLimit); one
// more and the card stops it: it says the app keeps reloading and offers "Reopen", and
// the shell reports {op: "surface_stopped"} so that the Runtime tells the agent once.
//
// The card is titled by the name the agent gave the surface, else the app's display
// name (from the mount's answer), else the app id; the app id and version are the
// title's tooltip. A surface's status is said once, in the header; the notice below
// the header is for what the frame cannot show (not available, stopped).
//
// A dev-mode surface (an inline bundle, or a dev surface the Runtime reads from its
// --dev-surfaces directory) says so with a "Dev" badge, and its "Reload" mounts it
// afresh: a dev surface's files are read again, so an edit shows without the agent.

import { el } from "./dom.js";
import { t } from "./i18n.js";
import { mountSurface, reloadLimit } from "./surface_host.js";

// A surface's status (surfaces.status.*), and why it ended when the Runtime says more
// than its status (surfaces.reason.*).
const STATUSES = new Set(["closed", "replaced", "unavailable"]);
const REASONS = new Set(["app_revoked", "replaced_by_newer", "replaced_by_older", "replaced_by_other_app"]);

function statusText(data) {
  if (REASONS.has(data.reason)) return t(`surfaces.reason.${data.reason}`);
  return STATUSES.has(data.status) ? t(`surfaces.status.${data.status}`) : data.status;
}

const ui = {
  send: () => false,
  cards: new Map(), // item key -> { item, li, handle, mountId, pending, posted, ... }
};

export function initUiCards({ send }) {
  ui.send = send;
}

function requestMount(card) {
  const data = card.item.data;
  if (ui.send({ op: "mount_ui", conversation_id: card.item.conversation_id, instance_id: data.instance_id })) {
    card.pending = true;
  }
}

function unmount(card) {
  if (card.handle) {
    card.handle.unmount();
    ui.send({ op: "unmount", mount_id: card.mountId });
  }
  card.handle = null;
  card.mountId = null;
  card.pending = false;
}

function title(entry) {
  const data = entry.item.data;
  return data.name && data.name !== data.app_id ? data.name : entry.appName || data.app_id;
}

function showTitle(entry) {
  const data = entry.item.data;
  const name = title(entry);
  const head = entry.li.querySelector(".surface-name");
  head.textContent = name;
  head.title = `${data.app_id} ${data.app_version}`;
  entry.li.querySelector(".surface-card").setAttribute("aria-label", name);
  entry.li.querySelector(".surface-close").setAttribute("aria-label", t("surfaces.close_label", { name }));
  entry.li.querySelector(".surface-reload").setAttribute("aria-label", t("surfaces.reload_label", { name }));
}

function showNotice(entry, text, reopen = false) {
  const notice = entry.li.querySelector(".surface-notice");
  notice.querySelector(".surface-notice-text").textContent = text;
  notice.querySelector(".surface-reopen").hidden = !reopen;
  notice.hidden = !text;
}

// Build the card into a fresh row (the timeline calls this once per row element).
export function renderSurfaceCard(item, li) {
  const old = ui.cards.get(item.key);
  if (old) unmount(old);
  const card = el("section", "surface-card");
  const head = el("header", "surface-head");
  head.append(el("span", "surface-name"), el("span", "surface-status"));
  const dev = el("span", "surface-dev", t("surfaces.dev"));
  dev.title = t("surfaces.dev_title");
  dev.hidden = !item.data.dev;
  const reload = el("button", "surface-reload", t("surfaces.reload"));
  reload.type = "button";
  reload.hidden = true;
  const close = el("button", "surface-close", t("surfaces.close"));
  close.type = "button";
  head.append(dev, reload, close);
  const body = el("div", "surface-body");
  const notice = el("p", "surface-notice");
  const reopen = el("button", "surface-reopen", t("surfaces.reopen"));
  reopen.type = "button";
  notice.append(el("span", "surface-notice-text"), reopen);
  card.append(head, body, notice);
  li.append(card);
  const entry = {
    item,
    li,
    handle: null,
    mountId: null,
    pending: false,
    posted: null,
    appName: old?.appName ?? "",
    reloads: old?.reloads ?? reloadLimit(),
    stopped: old?.stopped ?? false,
  };
  close.addEventListener("click", () => {
    if (entry.handle) ui.send({ op: "ui_event", mount_id: entry.mountId, event: "close", data: {} });
  });
  reload.addEventListener("click", () => {
    if (entry.pending) return;
    unmount(entry);
    entry.stopped = false;
    entry.reloads = reloadLimit();
    updateSurfaceCard(entry.item, entry.li);
  });
  reopen.addEventListener("click", () => {
    entry.stopped = false;
    entry.reloads = reloadLimit();
    updateSurfaceCard(entry.item, entry.li);
  });
  ui.cards.set(item.key, entry);
  updateSurfaceCard(item, li);
}

// The row's item changed (a patch, a close): update the card where it stands.
export function updateSurfaceCard(item, li) {
  const entry = ui.cards.get(item.key);
  if (!entry) return;
  entry.item = item;
  entry.li = li;
  const data = item.data;
  const open = data.status === "open";
  li.dataset.surfaceStatus = data.status;
  li.dataset.instanceId = data.instance_id;
  li.dataset.stopped = String(open && entry.stopped);
  showTitle(entry);
  const words = open ? "" : statusText(data);
  li.querySelector(".surface-status").textContent = words;
  li.querySelector(".surface-close").hidden = !open;
  li.querySelector(".surface-dev").hidden = !data.dev;
  li.querySelector(".surface-reload").hidden = !(open && data.dev);
  if (!open) {
    showNotice(entry, data.status === "unavailable" ? t("surfaces.not_here") : "");
    unmount(entry);
    return;
  }
  if (entry.stopped) {
    showNotice(entry, t("surfaces.reloading"), true);
    return;
  }
  showNotice(entry, "");
  if (entry.handle) {
    if (entry.posted !== data.state) {
      entry.posted = data.state;
      entry.handle.post(data.state);
    }
  } else if (!entry.pending) {
    requestMount(entry);
  }
}

// The frame left its document: mount afresh, or stop it once it did so too often.
function reloaded(entry) {
  if (entry.item.data.status === "open" && !entry.reloads.spend()) {
    ui.send({ op: "surface_stopped", mount_id: entry.mountId }); // before its mount goes
    entry.stopped = true;
  }
  unmount(entry);
  updateSurfaceCard(entry.item, entry.li);
}

export function onUiMounted(frame) {
  const entry = [...ui.cards.values()].find(
    (c) =>
      c.pending &&
      c.item.conversation_id === frame.conversation_id &&
      c.item.data.instance_id === frame.instance_id,
  );
  if (!entry || frame.outcome !== "accepted" || !entry.li.isConnected || entry.stopped) {
    if (frame.mount_id) ui.send({ op: "unmount", mount_id: frame.mount_id });
    if (entry) {
      entry.pending = false;
      if (frame.outcome !== "accepted") showNotice(entry, t("surfaces.not_here"));
    }
    return;
  }
  entry.pending = false;
  if (frame.name) entry.appName = frame.name;
  showTitle(entry);
  const mountId = frame.mount_id;
  entry.mountId = mountId;
  entry.handle = mountSurface(
    entry.li.querySelector(".surface-body"),
    { url: frame.url, instanceId: frame.instance_id, mountId },
    {
      onEvent: (name, data) => ui.send({ op: "ui_event", mount_id: mountId, event: name, data }),
      onReload: () => reloaded(entry),
    },
  );
  entry.posted = entry.item.data.state;
  entry.handle.post(entry.item.data.state);
}

export function onUiEventReceipt(frame) {
  if (frame.outcome !== "accepted") console.warn(`ui event refused: ${frame.outcome}`);
}

// A new snapshot: rows are rebuilt, so every card mounts afresh.
export function resetUiCards() {
  for (const entry of ui.cards.values()) unmount(entry);
  ui.cards.clear();
}
