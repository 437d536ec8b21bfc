// How the timeline scrolls, as in a mature chat app:
//
// - Pinned to the newest row while the person is at the bottom: whatever changes
//   height (a new row, an image or a card that settles, fonts, the app area opening)
//   keeps them there. A ResizeObserver on the list and on the scroller does it after
//   layout and before paint, so the frame that shows a new row shows it in view, and
//   nothing on the hot path reads layout to decide.
// - Scrolled up, new rows do not move what they read; a "new messages" control counts
//   them (and says when a question waits) and takes them down.
// - Rows put above the eye (an older page) keep the row under the eye where it was.
//
// app.js tells this module about rows (arrived, older rows put in) and asks it
// whether the person is at the bottom; it never reads the DOM of rows itself.

import { $, announce, policy } from "./dom.js";
import { t } from "./i18n.js";

const STICK_PX = 24; // this close to the end counts as "at the bottom"
const TOP_PX = 40; // this close to the start asks for older rows

const view = {
  pinned: true,
  holdsNewest: true, // the window reaches the newest row (else: no pinning, page down)
  lastTop: 0,
  fresh: 0,
  question: false,
  onTop: () => {},
  onBottom: () => {},
};

export function initTimeline({ onTop, onBottom, onJump }) {
  view.onTop = onTop;
  view.onBottom = onBottom;
  const timeline = $("timeline");
  // Only the person moving up lets go of the end: rows that grew since the last
  // frame put the end further away without moving the scroll position, and must not.
  timeline.addEventListener(
    "scroll",
    () => {
      const top = timeline.scrollTop;
      const toEnd = distanceToEnd();
      if (toEnd < STICK_PX && view.holdsNewest) view.pinned = true;
      else if (toEnd >= STICK_PX && top < view.lastTop - 1) view.pinned = false;
      view.lastTop = top;
      if (view.pinned) clearFresh();
      if (top < TOP_PX) view.onTop();
      if (toEnd < TOP_PX && !view.holdsNewest) view.onBottom();
    },
    { passive: true },
  );
  const stick = new ResizeObserver(() => {
    if (view.pinned) toEnd();
  });
  stick.observe(timeline);
  stick.observe($("items"));
  $("jump").addEventListener("click", onJump);
}

function distanceToEnd() {
  const timeline = $("timeline");
  return timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight;
}

function toEnd() {
  const timeline = $("timeline");
  timeline.scrollTop = timeline.scrollHeight;
  view.lastTop = timeline.scrollTop;
}

export function pinned() {
  return view.pinned;
}

// Whether the window holds the newest row: only then can the view pin to the end.
export function holdsNewest(holds) {
  view.holdsNewest = holds;
  if (!holds) view.pinned = false;
}

// Back to the newest row, and stay there (after "Back to chat", closing an app, the
// control, or a snapshot).
export function toNewest() {
  view.pinned = true;
  clearFresh();
  toEnd();
}

// A row was added at the end. Seen when pinned; counted when the person reads history.
export function arrived(item) {
  if (item.kind === "message" && item.sender !== "user") announceMessage(item);
  if (view.pinned) return;
  if (item.sender === "user") return; // their own message: they know
  view.fresh += 1;
  if (item.kind === "interaction" && item.data.state === "pending") view.question = true;
  showFresh();
}

// A new message from someone else is said once, by the announcer: the timeline itself
// is no live region (it would say every row redrawn, every page of history put in).
function announceMessage(item) {
  const body = document.createElement("template");
  body.innerHTML = policy.createHTML(item.html || "");
  const text = body.content.textContent.replace(/\s+/g, " ").trim();
  if (text) announce(text); // who says it is the conversation's one agent, named on the page
}

function showFresh() {
  const jump = $("jump");
  jump.hidden = view.fresh === 0;
  jump.dataset.count = String(view.fresh);
  const rows = t("timeline.jump", { count: view.fresh });
  jump.textContent = view.question ? t("timeline.jump_question", { rows }) : rows;
}

function clearFresh() {
  if (view.fresh === 0 && !view.question) return;
  view.fresh = 0;
  view.question = false;
  showFresh();
}

// Run ``change`` (rows put in above the eye), keeping the first row in view where it
// was on screen. Pinned, the end stays the end instead.
export function keepAnchor(change) {
  if (view.pinned) {
    change();
    return;
  }
  const timeline = $("timeline");
  const top = timeline.getBoundingClientRect().top;
  const anchor = firstInView($("items"), top);
  const offset = anchor ? anchor.getBoundingClientRect().top - top : 0;
  change();
  if (anchor && anchor.isConnected) {
    timeline.scrollTop += anchor.getBoundingClientRect().top - top - offset;
  }
}

// The first row whose bottom is below ``top``: a binary search, rows are in order.
function firstInView(list, top) {
  const rows = list.children;
  let lo = 0;
  let hi = rows.length - 1;
  let found = null;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid].getBoundingClientRect().bottom > top) {
      found = rows[mid];
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  return found;
}
