// LineUp shell: surfaces an agent opened in the conversation (spec 000 §4), each shown
// as a card on its ui.open row. The Runtime keeps the surface's record (status and the
// latest state, which ui.patch replaces); this module mounts the surface in a
// sandboxed frame (surface_host.js, bridge only: such a surface has no MiniApp SDK),
// posts each new state to it, and sends the person's events up as {op: "ui_event"}
// (the shell checked name and data; the Runtime checks them against the surface's
// declared events and tells the agent). "Close" sends the event `close`, which ends the
// surface. A card is updated in place, never rebuilt, so its frame keeps running; a
// frame that reloads itself is mounted afresh with the current state.

import { el } from "./dom.js";
import { mountSurface } from "./surface_host.js";

const STATUS_TEXT = {
  open: "",
  closed: "Closed",
  replaced: "Replaced by a newer version",
  unavailable: "This surface is not available here.",
};

// Why a surface ended, when the Runtime ended it (not the agent or the person).
const REASON_TEXT = {
  app_revoked: "Closed: this app version was revoked",
};

const ui = {
  send: () => false,
  cards: new Map(), // item key -> { item, li, handle, mountId, pending, posted }
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

// Build the card into a fresh row (the timeline calls this once per row element).
export function renderSurfaceCard(item, li) {
  const old = ui.cards.get(item.key);
  if (old) unmount(old);
  const card = el("section", "surface-card");
  card.setAttribute("aria-label", item.data.name);
  const head = el("header", "surface-head");
  head.append(el("span", "surface-name", item.data.name), el("span", "surface-status"));
  const close = el("button", "surface-close", "Close");
  close.type = "button";
  close.setAttribute("aria-label", `Close ${item.data.name}`);
  head.append(close);
  const body = el("div", "surface-body");
  const notice = el("p", "surface-notice");
  card.append(head, body, notice);
  li.append(card);
  const entry = { item, li, handle: null, mountId: null, pending: false, posted: null };
  close.addEventListener("click", () => {
    if (entry.handle) ui.send({ op: "ui_event", mount_id: entry.mountId, event: "close", data: {} });
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
  const words = REASON_TEXT[data.reason] ?? STATUS_TEXT[data.status] ?? data.status;
  li.querySelector(".surface-status").textContent = words;
  li.querySelector(".surface-close").hidden = !open;
  const notice = li.querySelector(".surface-notice");
  notice.textContent = open ? "" : words || "";
  notice.hidden = open;
  if (!open) {
    unmount(entry);
    return;
  }
  if (entry.handle) {
    if (entry.posted !== data.state) {
      entry.posted = data.state;
      entry.handle.post(data.state);
    }
  } else if (!entry.pending) {
    requestMount(entry);
  }
}

export function onUiMounted(frame) {
  const entry = [...ui.cards.values()].find(
    (c) =>
      c.pending &&
      c.item.conversation_id === frame.conversation_id &&
      c.item.data.instance_id === frame.instance_id,
  );
  if (!entry || frame.outcome !== "accepted" || !entry.li.isConnected) {
    if (frame.mount_id) ui.send({ op: "unmount", mount_id: frame.mount_id });
    if (entry) {
      entry.pending = false;
      const notice = entry.li.querySelector(".surface-notice");
      notice.textContent = STATUS_TEXT.unavailable;
      notice.hidden = frame.outcome === "accepted";
    }
    return;
  }
  entry.pending = false;
  const mountId = frame.mount_id;
  entry.mountId = mountId;
  entry.handle = mountSurface(
    entry.li.querySelector(".surface-body"),
    { url: frame.url, instanceId: frame.instance_id, mountId },
    {
      onEvent: (name, data) => ui.send({ op: "ui_event", mount_id: mountId, event: name, data }),
      onReload: () => {
        unmount(entry);
        if (entry.item.data.status === "open") requestMount(entry);
      },
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
