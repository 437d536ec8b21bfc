// LineUp shell: DOM helpers shared by the timeline (app.js) and the interaction cards
// (cards.js). The only HTML the shell inserts is message HTML the Runtime already
// sanitized, through the one Trusted Types policy made here (the CSP allows exactly
// one, "lineup-html"); everything else is built with textContent.

import { t, time as clockTime } from "./i18n.js";

export const policy = window.trustedTypes
  ? window.trustedTypes.createPolicy("lineup-html", { createHTML: (html) => html })
  : { createHTML: (html) => html };

export const $ = (id) => document.getElementById(id);

// Up to two initials of a name, in any script ("Ada Lovelace" -> "AL", "小明" -> "小").
export function initials(name) {
  const words = (name || "?").replace(/[^\p{L}\p{N}]/gu, " ").trim().split(/\s+/);
  const first = [...(words[0] || "")][0] || "?";
  const second = [...(words[1] || "")][0] || "";
  return (first + second).toUpperCase();
}

// A row's clock time in the person's language (i18n.js: with the date when not today).
export function time(iso) {
  return clockTime(iso);
}

export function el(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text != null) element.textContent = text;
  return element;
}

export function avatarFor(item) {
  const avatar = el("span", `avatar ${item.sender}`);
  avatar.setAttribute("aria-hidden", "true");
  avatar.textContent = item.sender === "user" ? t("app.you_initial") : initials(item.sender_id);
  return avatar;
}

const TOAST_MS = 6000;
const MAX_TOASTS = 3;

// Show a toast: `body` (what it says) and a Dismiss button, in the toast stack (at most
// three). It goes away after a while, but not while it is hovered or focused: it goes
// when the person is done. Returns hide().
export function showToast(level, body) {
  const toast = el("div", `toast level-${level}`);
  toast.setAttribute("role", "status");
  const close = el("button", "toast-close", "\u00d7");
  close.type = "button";
  close.setAttribute("aria-label", t("app.toast_dismiss"));
  let timer = null;
  const hide = () => {
    clearTimeout(timer);
    const home = toast.contains(document.activeElement) && (toast.closest("dialog")?.querySelector("button") || $("input"));
    toast.remove();
    if (home) home.focus({ preventScroll: true }); // focus is not lost to the page
  };
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(hide, TOAST_MS);
  };
  close.addEventListener("click", hide);
  toast.addEventListener("mouseenter", () => clearTimeout(timer));
  toast.addEventListener("mouseleave", arm);
  toast.addEventListener("focusin", () => clearTimeout(timer));
  toast.addEventListener("focusout", arm);
  toast.append(body, close);
  const toasts = $("toasts");
  toasts.append(toast);
  while (toasts.children.length > MAX_TOASTS) toasts.firstElementChild.remove();
  arm();
  return hide;
}

// Whether an IME composition is under way in ``field`` (Chinese, Japanese, ... input):
// its Enter picks a candidate and must not send. ``composing(event)`` for a keydown
// (isComposing; keyCode 229, which Safari and some IMEs give the committing Enter;
// or between compositionstart and compositionend), ``composing()`` for anything else.
export function watchComposition(field) {
  let active = false;
  field.addEventListener("compositionstart", () => {
    active = true;
  });
  field.addEventListener("compositionend", () => {
    active = false;
  });
  field.addEventListener("blur", () => {
    active = false; // a composition the browser dropped without compositionend
  });
  return (event) => active || Boolean(event && (event.isComposing || event.keyCode === 229));
}

// Says text through the screen reader's live region.
export function announce(text) {
  const region = $("announcer");
  region.textContent = "";
  // A separate task, so the same text said twice is announced twice.
  setTimeout(() => {
    region.textContent = text;
  }, 50);
}

// Make `list`'s children exactly `nodes`, in order, moving only the ones out of place
// (elements that did not change keep their DOM node); `removed` hears each one dropped.
export function reconcile(list, nodes, removed = () => {}) {
  let child = list.firstElementChild;
  for (const node of nodes) {
    if (child === node) child = child.nextElementSibling;
    else list.insertBefore(node, child);
  }
  while (child) {
    const next = child.nextElementSibling;
    removed(child);
    child.remove();
    child = next;
  }
}

// Whether focus went nowhere when `dialog` closed (it is on the body or still inside),
// so it should go back to the control that opened it. A dialog's close event comes a
// task after the key that closed it, and the browser may already have handled the next
// keys (input runs first): focus the person has moved since is left where it is.
export function focusLost(dialog) {
  const active = document.activeElement;
  return !active || active === document.body || dialog.contains(active);
}

// Keep Tab and Shift+Tab inside `container` (a modal dialog: the browser would move
// focus out of the page after its last control).
export function trapFocus(container) {
  container.addEventListener("keydown", (event) => {
    if (event.key !== "Tab") return;
    const controls = [
      ...container.querySelectorAll("button, input, textarea, select, a[href], [tabindex='0']"),
    ].filter((control) => !control.disabled && !control.hidden && control.getClientRects().length);
    if (!controls.length) return;
    const first = controls[0];
    const last = controls[controls.length - 1];
    if (event.shiftKey && (document.activeElement === first || !container.contains(document.activeElement))) {
      event.preventDefault();
      last.focus();
    } else if (!event.shiftKey && document.activeElement === last) {
      event.preventDefault();
      first.focus();
    }
  });
}
