// LineUp shell: the Interact IM view. It renders what the Runtime sends over the
// host channel and sends back only intents (send, retry, history, answer, draft). The
// only HTML it inserts is message HTML the Runtime already sanitized, through a
// Trusted Types policy; everything else (interaction prompts and options included:
// they come from the agent) is built with textContent.
//
// This is the entry module: the state, the host channel, the timeline and the
// composer. dom.js holds the DOM helpers and the Trusted Types policy; cards.js the
// interaction cards, which get what they need from here through initCards; dock.js
// the app dock and the app area (MiniApp instances and focus, as the Runtime decides);
// overlay.js the questions shown beside the app in front; consent.js the consent dialog
// for capability calls and their providers; artifacts.js the rows of the files they
// kept; settings.js the permissions panel; app_centre.js the App centre (installed and
// offered apps).
//
// App sub-sessions: each one is a single collapsible group row, placed where it opened
// (the Runtime gives it the key and seq of its hidden `app_session.opened` row). It
// holds only the interactions that named it (the cards, built as anywhere else) and
// the files its instance kept; those never show as loose rows. A closed group is read-only history, but a question still
// pending in it stays answerable: closing an app does not cancel its questions.

import { $, avatarFor, el, initials, policy, reconcile, time, watchComposition } from "./dom.js";
import { choice, dateTime, locale, t } from "./i18n.js";
import {
  flushDrafts,
  focusWanted,
  initCards,
  interactionArrived,
  onReceipt,
  renderInteraction,
  resendDrafts,
  resetCards,
  tick,
  trackInteraction,
  waitsForAnswer,
} from "./cards.js";
import {
  appIcon,
  focusedRecord,
  initDock,
  onAppReceipt,
  onApps,
  request as requestApp,
  setWaiting,
} from "./dock.js";
import { initSurfaces, onAppPush, onAppReply, onMounted, resetSurfaces } from "./surfaces.js";
import {
  initUiCards,
  onUiEventReceipt,
  onUiMounted,
  renderSurfaceCard,
  resetUiCards,
  updateSurfaceCard,
} from "./ui_cards.js";
import { elicitationArrived, initElicitCards, onElicitReceipt, renderElicitation, resetElicitations } from "./elicit_cards.js";
import {
  initConsent,
  onCapabilities,
  onCapabilityReceipt,
  onCapabilityRun,
  resetConsent,
} from "./consent.js";
import { renderArtifactRow } from "./artifacts.js";
import { initSettings, onGrants } from "./settings.js";
import { initAppCentre, onAppCentre, onAppFallback, onAppsReceipt, onMcpNotice } from "./app_centre.js";
import {
  initOverlay,
  overlayRow,
  overlayShows,
  refreshOverlay,
  rerenderInOverlay,
  standIn,
} from "./overlay.js";
import {
  arrived,
  holdsNewest,
  initTimeline,
  keepAnchor,
  pinned,
  toNewest,
} from "./timeline.js";

// The window: the shell holds the rows from ``state.floor`` to ``state.ceiling`` (each
// a row the Runtime knows: its key and seq; no ceiling: up to the newest). Pages come
// one at a time, asked for by those keys: older ones when the person scrolls to the
// top, newer ones when they scroll back down. At most MAX_ROWS rows are held: past
// that, the rows furthest from the eye are let go down to KEEP_ROWS (the oldest while
// the person is at the newest row, the newest while they read far back), so a
// day-long conversation costs what an hour's does, in work per row and in memory.
const MAX_ROWS = 240;
const KEEP_ROWS = 160;

const rendered = new Map(); // key -> { item, li }: the element shown for each row
const nested = new Map(); // key -> { item, li }: interaction rows shown inside a group
const groupOpen = new Map(); // app_session_id -> expanded (kept across rebuilds)
const state = {
  conversation: null,
  userId: "",
  items: new Map(), // key -> item (a group is an item of kind "app_session")
  groups: new Map(), // app_session_id -> its group item
  socket: null,
  retryDelay: 250,
  loadingOlder: null, // the floor key an older page was asked for
  loadingNewer: null, // the ceiling key a newer page was asked for ("newest": the newest)
  complete: false,
  floor: null, // { key, seq }: the oldest row held (shown or hidden)
  ceiling: null, // { key, seq }: the newest row held, when the newest rows are not
  beyond: new Set(), // keys of rows newer than the ceiling, counted as new
  unread: new Set(), // keys of rows still unacknowledged in Interact's inbox
  latestStatus: null,
};

initCards({
  send,
  rerender,
  currentItem: (key) => state.items.get(key),
  rowOf: (key) => overlayRow(key) || rendered.get(key)?.li || nested.get(key)?.li,
});
initElicitCards({
  send,
  rerender,
  currentItem: (key) => state.items.get(key),
  rowOf: (key) => overlayRow(key) || rendered.get(key)?.li || nested.get(key)?.li,
});
initDock({ send, onFocus: refreshOverlay });
initSurfaces({ send });
initConsent({ send });
initSettings({ send });
initAppCentre({ send });
initUiCards({ send });
initTimeline({ onTop: loadOlder, onBottom: loadNewer, onJump: jumpToNewest });
initOverlay({
  renderItem,
  swap,
  focused: focusedRecord,
  pendingFor,
  refreshGroup: (sessionId) => {
    const group = state.groups.get(sessionId);
    const row = group && rendered.get(group.key);
    if (row?.li.isConnected) updateGroup(row.item, row.li);
  },
});

const CONNECTION_STATES = new Set(["connecting", "connected", "reconnecting", "offline", "shell"]);

function setConnection(name) {
  const element = $("connection");
  element.dataset.state = name;
  element.textContent = CONNECTION_STATES.has(name) ? t(`connection.${name}`) : name;
  element.title = element.textContent; // a narrow top bar shows only its dot
}

// What a message of the person's says about its delivery ("received": nothing).
const DELIVERY_STATES = new Set(["sending", "sent", "failed"]);

function deliveryText(state) {
  if (state === "received") return "";
  return DELIVERY_STATES.has(state) ? t(`status.${state}`) : state;
}

function renderItem(item) {
  const li = document.createElement("li");
  li.className = `item ${item.kind} from-${item.sender} state-${item.state}`;
  li.dataset.key = String(item.key);
  li.dataset.envelopeId = item.envelope_id;
  li.dataset.state = item.state;
  if (item.kind === "message") {
    const bubble = el("div", "bubble");
    const body = el("div", "body");
    body.innerHTML = policy.createHTML(item.html || "");
    const meta = el("div", "meta");
    const when = document.createElement("time");
    when.dateTime = item.created_at;
    when.textContent = time(item.created_at);
    when.title = dateTime(item.created_at);
    meta.append(when);
    if (item.sender === "user") {
      meta.append(el("span", "delivery", deliveryText(item.state)));
      if (item.state === "failed") {
        const retry = el("button", "retry", t("status.retry"));
        retry.type = "button";
        retry.addEventListener("click", () =>
          send({ op: "retry", conversation_id: item.conversation_id, envelope_id: item.envelope_id }),
        );
        meta.append(retry);
      }
    }
    bubble.append(body, meta);
    li.append(avatarFor(item), bubble);
  } else if (item.kind === "interaction") {
    renderInteraction(item, li);
  } else if (item.kind === "elicitation") {
    renderElicitation(item, li);
  } else if (item.kind === "app_session") {
    renderGroup(item, li);
  } else if (item.kind === "surface") {
    renderSurfaceCard(item, li);
  } else if (item.kind === "status") {
    li.textContent = item.data.text || item.data.state;
  } else if (item.kind === "progress") {
    const label = el("span", null, item.data.label || t("timeline.working"));
    const bar = document.createElement("progress");
    if (item.data.total) {
      bar.max = item.data.total;
      bar.value = item.data.current;
    }
    li.append(label, bar);
  } else if (item.kind === "artifact") {
    renderArtifactRow(item, li);
  } else if (item.kind === "error") {
    li.setAttribute("role", "alert");
    li.textContent = t("timeline.error", { message: item.data.message, code: item.data.code });
  } else {
    // A type this shell does not know, or an envelope the Runtime rejected (its code).
    li.textContent =
      item.data?.type === "rejected"
        ? t("timeline.rejected", { code: item.error_code })
        : t("timeline.unknown");
  }
  return li;
}

// --- app sub-session groups -------------------------------------------------------------

const GROUP_STATES = new Set(["open", "closed"]);

function groupItems(group) {
  // The newest version of each of its interaction rows, oldest first.
  return group.data.items.map((item) => state.items.get(item.key) || item).sort(order);
}

function renderGroup(group, li) {
  const id = group.data.app_session_id;
  li.dataset.appSessionId = id;
  const details = el("details", "group");
  details.open = groupOpen.get(id) === true;
  details.addEventListener("toggle", () => groupOpen.set(id, details.open));
  const summary = el("summary", "group-head");
  summary.append(
    appIcon(group.data.icon, "group-icon"),
    el("span", "group-name"),
    el("span", "group-state"),
    el("span", "group-count"),
    el("span", "group-waiting", t("timeline.group.waiting")),
  );
  const list = el("ol", "group-items");
  details.append(summary, list);
  // Ended work can be continued: a new instance and a new group that names this one;
  // this group stays closed and its questions stay here.
  const foot = el("div", "group-foot");
  const more = el("button", "group-continue", t("timeline.group.continue"));
  more.type = "button";
  more.addEventListener("click", () => requestApp("continue", group.data.instance_id));
  foot.append(el("span", "group-continues", t("timeline.group.continues")), more);
  li.append(details, foot);
  updateGroup(group, li);
}

// Update a group row in place: its header, and its cards (only those that changed
// are rebuilt, so a half-filled card or the keyboard focus stays where it is).
function updateGroup(group, li) {
  const data = group.data;
  const items = groupItems(group);
  const waiting = items.some((item) => item.data.state === "pending");
  li.className = `item app-session session-${data.state}${waiting ? " waiting" : ""}`;
  li.dataset.sessionState = data.state;
  li.dataset.waiting = String(waiting);
  // Called as the dock calls its instance ("Task Dashboard 2"); the scope is a tooltip.
  const name = li.querySelector(".group-name");
  name.textContent = data.label || data.app_scope;
  name.title = data.app_scope;
  li.querySelector(".group-state").textContent = GROUP_STATES.has(data.state)
    ? t(`timeline.group.${data.state}`)
    : data.state;
  const cards = items.filter((item) => item.kind === "interaction").length;
  const count = Math.max(data.count, cards);
  const files = Math.max(data.files || 0, items.length - cards);
  const counted = [];
  if (count || !files) counted.push(t("timeline.group.interactions", { count }));
  if (files) counted.push(t("timeline.group.files", { count: files }));
  li.querySelector(".group-count").textContent = counted.join(" · ");
  li.querySelector(".group-waiting").hidden = !waiting;
  const closed = data.state === "closed";
  li.querySelector(".group-continue").hidden = !closed;
  li.querySelector(".group-continue").setAttribute(
    "aria-label",
    t("timeline.group.continue_label", { name: data.label || data.app_scope }),
  );
  li.querySelector(".group-continues").hidden = !data.continues;
  li.querySelector(".group-foot").hidden = !closed && !data.continues;
  const list = li.querySelector(".group-items");
  const nodes = items.map((item) => {
    if (overlayShows(item.key)) return standIn(item); // the card is in the panel beside the app
    const cached = nested.get(item.key);
    if (cached && cached.item === item && cached.li.parentElement === list) return cached.li;
    const row = renderItem(item);
    if (cached && cached.li.isConnected) swap(cached.li, row);
    nested.set(item.key, { item, li: row });
    return row;
  });
  reconcile(list, nodes);
  if (!items.length) list.append(el("li", "group-empty", t("timeline.group.empty")));
}

// The pending cards of the open group of an instance (what its overlay shows).
function pendingFor(instanceId) {
  for (const group of state.groups.values()) {
    if (group.data.instance_id !== instanceId || group.data.state !== "open") continue;
    const items = groupItems(group).filter(
      (item) => item.kind === "interaction" && item.data.state === "pending",
    );
    return { sessionId: group.data.app_session_id, items };
  }
  return null;
}

function groupOf(item) {
  const id = item.data?.app_session_id;
  return id ? state.groups.get(id) : undefined;
}

function onAppSessions(sessions) {
  for (const data of sessions) {
    const group = {
      key: data.key,
      seq: data.seq,
      kind: "app_session",
      conversation_id: data.conversation_id,
      created_at: data.opened_at,
      data,
    };
    for (const item of data.items) {
      const before = state.items.get(item.key);
      upsert(item);
      if (before && before.data.state !== item.data.state) interactionArrived(item, before);
      else if (!before && state.groups.has(data.app_session_id)) interactionArrived(item, before);
    }
    const old = state.groups.get(data.app_session_id);
    if (old && old.key !== group.key) state.items.delete(old.key);
    state.groups.set(data.app_session_id, group);
    state.items.set(group.key, group);
  }
}

// --- the timeline ---------------------------------------------------------------------

// Replace a row's element, keeping keyboard focus on the same control when it exists
// (or on the card when that control is gone or disabled).
function swap(old, li) {
  const active = document.activeElement;
  const focused = active && active !== document.body && old.contains(active);
  let wanted = focused ? active.dataset.focus : undefined;
  const id = li.dataset.interactionId;
  if (focused && wanted === "card" && id && focusWanted.has(id)) {
    wanted = focusWanted.get(id);
  }
  old.replaceWith(li);
  if (!focused) return;
  const target = wanted ? li.querySelector(`[data-focus="${CSS.escape(wanted)}"]`) : null;
  if (target && !target.disabled) {
    target.focus({ preventScroll: true });
    if (id) focusWanted.delete(id);
  } else {
    const card = li.querySelector(".card");
    if (card) {
      card.focus({ preventScroll: true });
      if (id && wanted && wanted !== "card") focusWanted.set(id, wanted);
    }
  }
}

function rerender(key) {
  const latest = state.items.get(key);
  if (latest && rerenderInOverlay(key, latest)) return;
  const inner = nested.get(key);
  if (inner && inner.li.isConnected) {
    // A card inside a group: rebuild that card, then the group's header.
    const item = state.items.get(key) || inner.item;
    const li = renderItem(item);
    swap(inner.li, li);
    nested.set(key, { item, li });
    const group = groupOf(item);
    const row = group && rendered.get(group.key);
    if (row?.li.isConnected) updateGroup(row.item, row.li);
    return;
  }
  const cached = rendered.get(key);
  if (!cached || !cached.li.isConnected) return;
  if (cached.item.kind === "surface") return; // updated in place, never rebuilt
  const li = renderItem(cached.item);
  swap(cached.li, li);
  rendered.set(key, { item: cached.item, li });
}

function order(a, b) {
  // The conversation's order: rows the AppServer stored by seq, then the rows on
  // their way to it, oldest first (the Runtime pages in the same order).
  if (a.seq != null && b.seq != null) return a.seq - b.seq || a.key - b.key;
  if (a.seq != null) return -1;
  if (b.seq != null) return 1;
  return a.key - b.key;
}

// A row of the conversation shown: in the window (others wait for their page).
function placed(item) {
  if (!state.conversation || item.conversation_id !== state.conversation.id) return false;
  if (state.ceiling && order(item, state.ceiling) > 0) return false;
  return !state.floor || order(item, state.floor) >= 0;
}

function redraw() {
  const list = $("items");
  const items = [...state.items.values()]
    .filter(placed)
    .filter((item) => item.kind !== "status" || isLatestStatus(item))
    .filter((item) => item.kind === "app_session" || !item.data?.app_session_id)
    .sort(order);
  // Keep one element per row and rebuild only rows whose data changed: a long
  // conversation must not cost a full re-render per frame.
  const nodes = items.map((item) => {
    const cached = rendered.get(item.key);
    if (cached && cached.item === item) return cached.li;
    if (item.kind === "app_session" && cached && cached.li.isConnected) {
      updateGroup(item, cached.li); // in place: its cards keep their state
      rendered.set(item.key, { item, li: cached.li });
      return cached.li;
    }
    if (item.kind === "surface" && cached && cached.li.isConnected) {
      updateSurfaceCard(item, cached.li); // in place: its frame keeps running
      rendered.set(item.key, { item, li: cached.li });
      return cached.li;
    }
    const li = renderItem(item);
    if (cached && cached.li.isConnected) swap(cached.li, li);
    rendered.set(item.key, { item, li });
    return li;
  });
  reconcile(list, nodes, (child) => {
    const key = Number(child.dataset.key);
    if (rendered.get(key)?.li === child) rendered.delete(key);
  });
  $("empty").hidden = items.length > 0;
  const olderFocused = document.activeElement === $("older"); // the person paged back
  $("older").hidden = state.complete || !state.floor;
  if (olderFocused && $("older").hidden) $("timeline").focus({ preventScroll: true }); // not lost to the page
  acknowledgeShown();
  refreshOverlay();
  refreshWaiting();
}

// --- questions waiting ----------------------------------------------------------------

const TITLE = document.title;

// How many questions wait for the person: per running instance (the dock marks them:
// those of its open sub-session, as its question panel shows them) and in all (the
// tab's title says "(2) LineUp", so a tab in the background tells the person too).
function refreshWaiting() {
  const byInstance = new Map();
  let total = 0;
  for (const group of state.groups.values()) {
    if (group.conversation_id !== state.conversation?.id) continue;
    let count = 0;
    for (const item of group.data.items) {
      if (waitsForAnswer(state.items.get(item.key) || item)) count += 1;
    }
    total += count;
    if (count && group.data.state === "open") {
      byInstance.set(group.data.instance_id, (byInstance.get(group.data.instance_id) || 0) + count);
    }
  }
  for (const item of state.items.values()) {
    if (item.conversation_id === state.conversation?.id && !item.data?.app_session_id && waitsForAnswer(item)) {
      total += 1;
    }
  }
  setWaiting(byInstance);
  const title = total ? `(${total}) ${TITLE}` : TITLE;
  if (document.title !== title) document.title = title;
}

// The common frame changes one row that stays where it is (a reply appended at the
// end, "sending" becoming "sent", a card answered): update that row alone, without
// sorting or walking the timeline. Anything else (status rows, history, rows that
// move) redraws.
function placeOne(item) {
  if (item.kind === "status" || !state.conversation) return false;
  if (item.data?.app_session_id) return false; // shown inside its group
  if (!placed(item)) return true; // another conversation, or older than the window
  const list = $("items");
  const cached = rendered.get(item.key);
  const fits = (before, after) =>
    (!before || order(rowItem(before), item) < 0) && (!after || order(item, rowItem(after)) < 0);
  if (cached) {
    if (!cached.li.isConnected) return false;
    if (!fits(cached.li.previousElementSibling, cached.li.nextElementSibling)) return false;
    if (item.kind === "surface") {
      updateSurfaceCard(item, cached.li); // in place: its frame keeps running
      rendered.set(item.key, { item, li: cached.li });
    } else {
      const li = renderItem(item);
      swap(cached.li, li);
      rendered.set(item.key, { item, li });
    }
  } else {
    const last = list.lastElementChild;
    if (last && (!rendered.has(Number(last.dataset.key)) || !fits(last, null))) return false;
    const li = renderItem(item);
    list.append(li);
    rendered.set(item.key, { item, li });
    $("empty").hidden = true;
    arrived(item);
    letGo();
  }
  if (item.unread) acknowledgeShown();
  return true;
}

// At the newest row with more than MAX_ROWS rows: let the oldest go, down to
// KEEP_ROWS, and move the floor up to the first row kept. Amortized: one pass per
// MAX_ROWS - KEEP_ROWS new rows. Groups stay known (an open app's overlay needs its
// group); they are placed again when their page comes back.
function letGo() {
  if (!pinned() || state.loadingOlder !== null) return;
  letGoOldest();
}

function letGoOldest() {
  const list = $("items");
  if (list.childElementCount <= MAX_ROWS) return;
  const kept = rowItem(list.children[list.childElementCount - KEEP_ROWS]);
  if (!kept) return;
  state.floor = { key: kept.key, seq: kept.seq };
  state.complete = false;
  while (list.firstElementChild && list.firstElementChild !== rendered.get(kept.key)?.li) {
    const li = list.firstElementChild;
    rendered.delete(Number(li.dataset.key));
    li.remove();
  }
  forget((item) => order(item, state.floor) < 0);
  $("older").hidden = false;
}

// Reading far back: let the newest rows go (they are far below the eye) and hold a
// ceiling; new rows are counted, not shown, until the person comes back down.
function letGoNewest() {
  const list = $("items");
  if (list.childElementCount <= MAX_ROWS) return;
  const kept = rowItem(list.children[KEEP_ROWS - 1]);
  if (!kept) return;
  state.ceiling = { key: kept.key, seq: kept.seq };
  holdsNewest(false);
  const last = rendered.get(kept.key)?.li;
  while (list.lastElementChild && list.lastElementChild !== last) {
    const li = list.lastElementChild;
    rendered.delete(Number(li.dataset.key));
    li.remove();
  }
  forget((item) => order(item, state.ceiling) > 0);
}

// Rows out of the window leave the shell's memory (groups stay known: an open app's
// overlay needs its group; they are placed again when their page comes back).
function forget(outside) {
  for (const [key, item] of state.items) {
    if (item.kind === "app_session" || item.data?.app_session_id) continue;
    if (outside(item)) {
      state.items.delete(key);
      state.unread.delete(key);
    }
  }
}

function rowItem(li) {
  return li ? rendered.get(Number(li.dataset.key))?.item : undefined;
}

function isLatestStatus(item) {
  const latest = state.latestStatus && state.items.get(state.latestStatus.key);
  return latest === item && item.data.state !== "idle" && item.data.state !== "done";
}

function upsert(item) {
  state.items.set(item.key, item);
  if (item.unread) state.unread.add(item.key);
  else state.unread.delete(item.key);
  if (item.kind === "status" && (!state.latestStatus || order(state.latestStatus, item) <= 0)) {
    state.latestStatus = item;
  }
  if (item.kind === "interaction") trackInteraction(item);
}

// Interact consumes its inbox: what the user has been shown is acknowledged, so the
// Runtime stops offering it as unread. Hidden tabs acknowledge nothing.
function acknowledgeShown() {
  if (document.visibilityState !== "visible" || !state.conversation || !state.unread.size) return;
  const rows = [];
  for (const key of state.unread) {
    const item = state.items.get(key);
    if (item && item.conversation_id === state.conversation.id) rows.push(item);
    if (rows.length === 500) break;
  }
  const ids = rows.map((item) => item.envelope_id);
  if (ids.length && send({ op: "seen", conversation_id: state.conversation.id, envelope_ids: ids })) {
    for (const item of rows) {
      item.unread = false;
      state.unread.delete(item.key);
    }
  }
}

function send(frame) {
  if (state.socket && state.socket.readyState === WebSocket.OPEN) {
    state.socket.send(JSON.stringify(frame));
    return true;
  }
  return false;
}

function onSnapshot(frame) {
  resetElicitations();
  state.userId = frame.user_id;
  state.conversation = frame.conversations[0] || null;
  state.items.clear();
  state.groups.clear();
  rendered.clear();
  nested.clear();
  state.unread.clear();
  state.latestStatus = null;
  state.loadingOlder = null; // a page asked for on the old channel never comes
  state.loadingNewer = null;
  state.complete = !!state.conversation && (frame.complete || []).includes(state.conversation.id);
  state.floor = (state.conversation && frame.oldest?.[state.conversation.id]) || null;
  state.ceiling = null;
  state.beyond.clear();
  holdsNewest(true);
  const drafts = resetCards(frame);
  resetConsent(frame);
  frame.items.forEach(upsert);
  onAppSessions(frame.app_sessions || []);
  if (state.conversation) {
    $("conversation-title").textContent = state.conversation.title || t("app.chat");
    $("agent-name").textContent = state.conversation.agent_id;
    $("agent-avatar").textContent = initials(state.conversation.agent_id);
  }
  setConnection(frame.connection);
  resetSurfaces();
  resetUiCards();
  onApps(frame.apps);
  redraw();
  toNewest();
  fillScreen();
  resendDrafts(drafts); // text typed here while the Runtime was away
}

function onItem(item) {
  const before = state.items.get(item.key);
  if (state.ceiling && !before && !placed(item) && item.conversation_id === state.conversation?.id) {
    // Newer than the window: counted by the "new messages" control, once per row.
    if (!state.beyond.has(item.key)) arrived(item);
    state.beyond.add(item.key);
    if (item.kind === "interaction") {
      trackInteraction(item);
      interactionArrived(item, undefined); // a notice's toast shows wherever the eye is
    }
    return;
  }
  upsert(item);
  if (!placeOne(item)) redraw();
  if (item.kind === "interaction") {
    interactionArrived(item, before);
    refreshWaiting();
  } else if (item.kind === "elicitation") {
    elicitationArrived(item, before);
  }
}

function onFrame(frame) {
  switch (frame.op) {
    case "snapshot":
      onSnapshot(frame);
      break;
    case "item":
      onItem(frame.item);
      break;
    case "receipt":
      onReceipt(frame);
      break;
    case "elicit_receipt":
      onElicitReceipt(frame);
      break;
    case "connection":
      setConnection(frame.state);
      break;
    case "locale":
      // The person chose a language (here or in another tab): the page is rendered in
      // it by the Web Host, so a tab showing another one loads itself again.
      if (frame.choice && frame.choice !== choice) location.reload();
      break;
    case "apps":
      appsChanged(frame);
      break;
    case "app_sessions":
      onAppSessions(frame.sessions);
      redraw();
      break;
    case "app_receipt":
      onAppReceipt(frame);
      break;
    case "mounted":
      onMounted(frame);
      break;
    case "app_reply":
      onAppReply(frame);
      break;
    case "app_push":
      onAppPush(frame);
      break;
    case "ui_mounted":
      onUiMounted(frame);
      break;
    case "ui_event_receipt":
      onUiEventReceipt(frame);
      break;
    case "capabilities":
      onCapabilities(frame.calls);
      break;
    case "capability_run":
      onCapabilityRun(frame);
      break;
    case "capability_receipt":
      onCapabilityReceipt(frame);
      break;
    case "grants":
      onGrants(frame);
      break;
    case "app_centre":
      onAppCentre(frame);
      break;
    case "apps_receipt":
      onAppsReceipt(frame);
      break;
    case "app_fallback":
      onAppFallback(frame);
      break;
    case "mcp_notice":
      onMcpNotice(frame);
      break;
    case "history":
      onPage(frame);
      break;
    case "error":
      state.loadingOlder = null; // a refused page may be asked for again
      state.loadingNewer = null;
      console.warn(`runtime: ${frame.code}`);
      break;
    default:
      break;
  }
}

function connect() {
  const socket = new WebSocket(`ws://${location.host}/host`);
  state.socket = socket;
  socket.addEventListener("open", () => {
    state.retryDelay = 250;
    socket.send(JSON.stringify({ op: "hello", locale }));
  });
  socket.addEventListener("message", (event) => onFrame(JSON.parse(event.data)));
  socket.addEventListener("close", (event) => {
    state.socket = null;
    if (event.code === 4403) {
      location.assign("/login");
      return;
    }
    setConnection("shell");
    const delay = state.retryDelay * (0.5 + Math.random() / 2);
    state.retryDelay = Math.min(state.retryDelay * 2, 5000);
    setTimeout(connect, delay);
  });
}

function submit() {
  const input = $("input");
  const text = input.value;
  if (!text.trim() || !state.conversation) return;
  if (send({ op: "send", conversation_id: state.conversation.id, text })) {
    input.value = "";
    resize();
  }
}

function resize() {
  const input = $("input");
  if (!input.value) {
    input.style.height = ""; // empty: back to one row without measuring (a forced layout)
    return;
  }
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 160)}px`;
}

// Older rows load when the person scrolls to the top; a timeline too short to scroll
// asks once by itself, so "Show earlier messages" only stays when there are some.
function fillScreen() {
  const timeline = $("timeline");
  if (!$("older").hidden && timeline.scrollHeight <= timeline.clientHeight) loadOlder();
}

function loadOlder() {
  if (state.loadingOlder !== null || !state.conversation || !state.floor || state.complete) {
    return;
  }
  const before = state.floor.key;
  if (send({ op: "history", conversation_id: state.conversation.id, before })) {
    state.loadingOlder = before;
  }
}

function onPage(frame) {
  if (frame.direction === "older") onOlder(frame);
  else onNewer(frame);
}

// The page just before the floor: its rows and the groups that opened in it go in
// above the eye, and the floor moves to its first row. A page for a floor that has
// moved since (the window was let go, a new snapshot) is not this window's.
function onOlder(frame) {
  const asked = state.loadingOlder;
  state.loadingOlder = null;
  if (!state.conversation || frame.conversation_id !== state.conversation.id) return;
  if (!state.floor || asked !== state.floor.key) return;
  frame.items.forEach(upsert);
  onAppSessions(frame.app_sessions || []);
  if (frame.first) state.floor = frame.first;
  state.complete = !frame.older;
  keepAnchor(redraw);
  if (!pinned()) letGoNewest();
  fillScreen();
}

function loadNewer() {
  if (state.loadingNewer !== null || !state.conversation || !state.ceiling) return;
  const after = state.ceiling.key;
  if (send({ op: "history", conversation_id: state.conversation.id, after })) {
    state.loadingNewer = after;
  }
}

// The way back down: the page just after the ceiling (below the eye: nothing moves),
// or, for "newest", the newest page in place of the whole window.
function onNewer(frame) {
  const asked = state.loadingNewer;
  state.loadingNewer = null;
  if (!state.conversation || frame.conversation_id !== state.conversation.id) return;
  if (frame.direction === "newest") {
    if (asked !== "newest") return;
    forget(() => true);
    rendered.clear();
    state.floor = frame.first || null;
    state.complete = !frame.older;
  } else if (!state.ceiling || asked !== state.ceiling.key) {
    return;
  }
  frame.items.forEach(upsert);
  onAppSessions(frame.app_sessions || []);
  state.ceiling = frame.newer ? frame.last : null;
  if (!state.ceiling) state.beyond.clear();
  holdsNewest(!state.ceiling);
  redraw();
  if (frame.direction === "newest") toNewest();
  else keepAnchor(letGoOldest);
}

// The "new messages" control: down to the newest row, which the window may not hold.
function jumpToNewest() {
  if (!state.ceiling) {
    toNewest();
    return;
  }
  if (state.loadingNewer === "newest" || !state.conversation) return;
  if (send({ op: "history", conversation_id: state.conversation.id })) {
    state.loadingNewer = "newest";
  }
}

// The app area closing (or "Back to chat") brings the person back to the newest row.
function appsChanged(frame) {
  const wasOpen = !$("app-area").hidden;
  onApps(frame);
  if (wasOpen && $("app-area").hidden) toNewest();
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  if (!composing()) submit();
});
const composing = watchComposition($("input"));
$("input").addEventListener("keydown", (event) => {
  // During a composition Enter belongs to the IME (it picks the text): left alone.
  if (event.key !== "Enter" || event.shiftKey || composing(event)) return;
  event.preventDefault();
  submit();
});
$("input").addEventListener("input", resize);
$("older").addEventListener("click", loadOlder);
$("app-area-back").addEventListener("click", toNewest);
document.addEventListener("visibilitychange", acknowledgeShown);
// Drafts leave before the page does (a reload keeps them in the Runtime).
window.addEventListener("pagehide", flushDrafts);
setInterval(() => {
  tick();
  refreshWaiting(); // a question that runs out of time stops waiting
}, 1000);
connect();
