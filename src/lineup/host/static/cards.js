// LineUp shell: the standard-interaction cards (notice / choice / confirm / input):
// rendering, the countdowns, drafts, answers and their receipts, toasts. The timeline
// (app.js) builds a card's row and hands it to renderInteraction; it tells this module
// about items, snapshots and receipts through the exported functions below. This module
// never imports app.js: what it needs from the timeline comes through initCards.

import { announce, avatarFor, el, showToast, time, watchComposition } from "./dom.js";
import { dateTime, relative, t } from "./i18n.js";

// What the timeline lends the cards, set once by initCards:
//   send(frame) -> bool      sends a frame on the host channel (false when offline)
//   rerender(key)            rebuilds the row shown for that key, if it is shown
//   currentItem(key) -> item the newest item the timeline holds for that key
//   rowOf(key) -> li         the element shown for that key, if any
let context = null;

export function initCards(timeline) {
  context = timeline;
}

// Interactions (notice / choice / confirm / input). What the person is doing on a card
// lives here, not in the DOM, so a card can be rebuilt (a new frame, a reconnect)
// without losing a selection or half-typed text.
const ia = {
  clockOffset: 0, // the Runtime's clock minus this browser's, in ms (from the snapshot)
  keys: new Map(), // interaction id -> row key
  selected: new Map(), // interaction id -> Set of option ids (choice)
  drafts: new Map(), // interaction id -> unsent text (input), kept by the Runtime too
  sentDrafts: new Map(), // interaction id -> the text the Runtime last heard
  draftTimers: new Map(), // interaction id -> debounce timer
  inflight: new Set(), // interaction ids whose answer is on its way
  refusals: new Map(), // interaction id -> { code } from a refusal receipt (or "offline")
  countdowns: new Map(), // row key -> { element, expiresAt }
  focusWanted: new Map(), // interaction id -> data-focus of a control that was disabled
};
const DRAFT_DELAY_MS = 300;
const MAX_DRAFT_CHARS = 16384;
const SOON_MS = 5 * 60 * 1000; // the countdown turns amber

const serverNow = () => Date.now() + ia.clockOffset;

// The words for these come from the catalogue: cards.kind.*, cards.level.*, cards.final.*.
const KINDS = new Set(["notice", "choice", "confirm", "input"]);
const LEVELS = new Set(["info", "success", "warning", "error"]);
const FINALS = new Set(["answered", "dismissed", "expired", "failed", "closed"]);
// The refusals the Runtime gives a code for (refusal.<code> in the catalogue); the
// Web Host sends the code only, the words are the person's language.
const REFUSALS = new Set([
  "call_already_final",
  "interaction_expired",
  "interaction_not_found",
  "answer_invalid",
  "offline",
]);
// A refusal that says the card is over, even if this tab missed the update.
const REFUSED_STATE = {
  interaction_expired: "expired",
  call_already_final: "closed",
  interaction_not_found: "closed",
};

function argumentsOf(item) {
  return item.data.arguments || {};
}

// What the card shows: the Runtime's state, or "expired" once the time has run out
// here (the Runtime expires it too and sends the update), or "closed" after a refusal.
function cardState(item) {
  const data = item.data;
  if (data.state !== "pending") return data.state;
  const refused = REFUSED_STATE[ia.refusals.get(data.interaction_id)?.code];
  if (refused) return refused;
  if (data.expires_at && serverNow() >= Date.parse(data.expires_at)) return "expired";
  return "pending";
}

// The Runtime's clock, as this tab knows it (for other cards' countdowns too).
export const runtimeNow = serverNow;

// A countdown to ``expiresAtIso`` on the row ``key``, ticked with every card's (the row
// is rebuilt once when it runs out). Used by the MCP form cards (elicit_cards.js).
export function countdownElement(key, expiresAtIso) {
  const left = el("span", "countdown");
  left.setAttribute("aria-live", "off"); // read on demand, not every second
  const expiresAt = Date.parse(expiresAtIso);
  if (!Number.isNaN(expiresAt)) {
    left.textContent = remainingText(expiresAt - serverNow());
    left.classList.toggle("soon", expiresAt - serverNow() < SOON_MS);
    left.title = t("cards.open_until", { time: dateTime(expiresAtIso) });
    ia.countdowns.set(key, { element: left, expiresAt });
  }
  return left;
}

// Whether a card still waits for the person's answer (a question, pending here too).
export function waitsForAnswer(item) {
  return item.kind === "interaction" && item.data.kind !== "notice" && cardState(item) === "pending";
}

// "Expires in 5 minutes" / "5分钟后过期": the relative time in the person's language.
function remainingText(ms) {
  return t("cards.expires", { when: relative(Math.max(1000, Math.ceil(ms / 1000) * 1000)) });
}

function refusalText(code) {
  return REFUSALS.has(code) ? t(`refusal.${code}`) : t("cards.refused");
}

function choiceBounds(args) {
  const count = (args.options || []).length;
  if (!args.multiple) return [1, 1];
  const low = args.min_selected ?? 1;
  const high = args.max_selected ?? count;
  return [low, Math.min(high, count)];
}

function chars(text) {
  return [...text].length; // code points, as the Runtime counts them
}

export function renderInteraction(item, li) {
  const data = item.data;
  const id = data.interaction_id;
  const kind = data.kind;
  const args = argumentsOf(item);
  const shown = cardState(item);
  const base = `ia-${item.key}`;
  li.classList.add(`kind-${kind}`, `is-${shown}`);
  li.dataset.interactionId = id;
  li.dataset.kind = kind;
  li.dataset.interactionState = shown;

  const card = el("section", `card card-${kind}`);
  card.tabIndex = -1;
  card.dataset.focus = "card";
  card.setAttribute("role", "group");
  card.setAttribute("aria-labelledby", `${base}-prompt`);
  card.setAttribute("aria-describedby", `${base}-status`);
  if (ia.inflight.has(id)) card.setAttribute("aria-busy", "true");

  const head = el("header", "card-head");
  if (kind === "notice") {
    const level = LEVELS.has(args.level) ? args.level : "info";
    card.classList.add(`level-${level}`);
    head.append(el("span", "card-kind", args.title || t(`cards.level.${level}`)));
  } else {
    head.append(el("span", "card-kind", t(`cards.kind.${KINDS.has(kind) ? kind : "choice"}`)));
  }
  const prompt = el("p", "card-prompt", kind === "notice" ? args.text : args.prompt);
  prompt.id = `${base}-prompt`;
  card.append(head, prompt);

  const status = el("div", "card-status");
  status.id = `${base}-status`;
  if (kind === "notice") {
    const when = el("time", "card-time", time(item.created_at));
    when.dateTime = item.created_at;
    when.title = dateTime(item.created_at);
    status.append(when);
  } else if (shown === "pending") {
    const left = el("span", "countdown");
    left.setAttribute("aria-live", "off"); // read on demand, not every second
    left.dataset.expiresAt = data.expires_at || "";
    const expiresAt = Date.parse(data.expires_at);
    if (!Number.isNaN(expiresAt)) {
      left.textContent = remainingText(expiresAt - serverNow());
      left.classList.toggle("soon", expiresAt - serverNow() < SOON_MS);
      left.title = t("cards.open_until", { time: dateTime(data.expires_at) });
      ia.countdowns.set(item.key, { element: left, expiresAt });
    }
    status.append(left);
  } else {
    const final = el("span", `final final-${shown}`, FINALS.has(shown) ? t(`cards.final.${shown}`) : shown);
    status.append(final);
    if (shown === "answered" && data.final_at) {
      const when = el("time", "card-time", time(data.final_at));
      when.dateTime = data.final_at;
      when.title = dateTime(data.final_at);
      status.append(when);
    }
  }

  if (kind !== "notice") {
    if (shown === "pending") {
      card.append(renderControls(item, base, status));
    } else {
      if (shown === "answered" && data.result) card.append(renderAnswer(kind, args, data.result));
      card.append(status);
    }
  } else {
    card.append(status);
  }
  const refusal = ia.refusals.get(id);
  if (refusal) {
    const alert = el("p", "card-alert", refusalText(refusal.code));
    alert.setAttribute("role", "alert");
    // Above the buttons while the card is open; under the outcome once it is over.
    const foot = card.querySelector(".card-foot");
    if (foot) foot.before(alert);
    else card.append(alert);
  }
  li.append(avatarFor(item), card);
}

function renderAnswer(kind, args, result) {
  const box = el("div", "card-answer");
  box.append(el("span", "answer-label", t("cards.your_answer")));
  if (kind === "choice") {
    const labels = new Map((args.options || []).map((option) => [option.id, option.label]));
    const list = el("ul", "chips");
    for (const optionId of result.selected || []) {
      list.append(el("li", "chip", labels.get(optionId) ?? optionId));
    }
    box.append(list);
  } else if (kind === "confirm") {
    const yes = result.confirmed === true;
    const label = yes ? args.confirm_label || t("cards.confirm") : args.cancel_label || t("cards.cancel");
    const chip = el("span", yes ? "chip chip-yes" : "chip chip-no");
    if (yes && args.danger) chip.classList.add("danger");
    chip.append(el("strong", null, t(yes ? "cards.yes" : "cards.no")), document.createTextNode(` · ${label}`));
    box.append(chip);
  } else if (kind === "input") {
    const text = result.text ?? "";
    box.append(el("blockquote", `answer-text${text ? "" : " empty"}`, text || t("cards.empty_answer")));
  }
  return box;
}

function renderControls(item, base, status) {
  const kind = item.data.kind;
  const id = item.data.interaction_id;
  const busy = ia.inflight.has(id);
  const form = el("form", "card-form");
  form.noValidate = true;
  form.autocomplete = "off";
  const actions = el("div", "card-actions");
  const footer = el("div", "card-foot");
  footer.append(status, actions);

  if (kind === "confirm") {
    const args = argumentsOf(item);
    const cancel = el("button", "button secondary", args.cancel_label || t("cards.cancel"));
    cancel.type = "button";
    cancel.dataset.focus = "cancel";
    const confirm = el("button", `button ${args.danger ? "danger" : "primary"}`);
    confirm.textContent = args.confirm_label || t("cards.confirm");
    confirm.type = "button";
    confirm.dataset.focus = "confirm";
    cancel.disabled = confirm.disabled = busy;
    cancel.addEventListener("click", () => submitAnswer(item, { confirmed: false }));
    confirm.addEventListener("click", () => submitAnswer(item, { confirmed: true }));
    actions.append(cancel, confirm);
    form.addEventListener("submit", (event) => event.preventDefault());
    form.append(footer);
    return form;
  }

  const submit = el("button", "button primary", t(busy ? "cards.sending" : "cards.submit"));
  submit.type = "submit";
  submit.dataset.focus = "submit";
  actions.append(submit);
  const hint = el("p", "card-hint");
  hint.id = `${base}-hint`;
  let check;
  let answer;
  let composing = () => false;
  if (kind === "choice") {
    [check, answer] = choiceControls(item, base, form, hint, busy);
  } else {
    [check, answer, composing] = inputControls(item, base, form, hint, busy);
  }
  form.append(footer);
  const refresh = () => {
    submit.disabled = busy || !check();
  };
  form.addEventListener("input", refresh);
  form.addEventListener("change", refresh);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (composing()) return; // the IME's Enter picks text, it does not answer
    refresh();
    if (!submit.disabled) submitAnswer(item, answer());
  });
  refresh();
  return form;
}

function choiceControls(item, base, form, hint, busy) {
  const id = item.data.interaction_id;
  const args = argumentsOf(item);
  const options = args.options || [];
  const multiple = !!args.multiple;
  const [low, high] = choiceBounds(args);
  if (!ia.selected.has(id)) ia.selected.set(id, new Set());
  const selected = ia.selected.get(id);
  const group = el("div", "options");
  group.setAttribute("role", multiple ? "group" : "radiogroup");
  group.setAttribute("aria-labelledby", `${base}-prompt`);
  if (multiple) group.setAttribute("aria-describedby", hint.id);
  for (const option of options) {
    const label = el("label", "option");
    const input = document.createElement("input");
    input.type = multiple ? "checkbox" : "radio";
    input.name = `${base}-option`;
    input.value = option.id;
    input.checked = selected.has(option.id);
    input.disabled = busy;
    input.dataset.focus = `option:${option.id}`;
    input.addEventListener("change", () => {
      if (!multiple) selected.clear();
      if (input.checked) selected.add(option.id);
      else selected.delete(option.id);
    });
    const text = el("span", "option-text");
    text.append(el("span", "option-label", option.label));
    if (option.description) text.append(el("span", "option-description", option.description));
    label.append(input, text);
    group.append(label);
  }
  form.append(group);
  if (multiple) form.append(hint);
  const rule = choiceRule(low, high, options.length);
  const check = () => {
    const count = selected.size;
    const valid = count >= low && count <= high;
    if (multiple) {
      hint.textContent = t("cards.selected", { rule, count });
      hint.classList.toggle("invalid", count > high);
    }
    return valid;
  };
  const answer = () => ({
    selected: options.map((option) => option.id).filter((optionId) => selected.has(optionId)),
  });
  return [check, answer];
}

function choiceRule(low, high, count) {
  if (low === high) return t("cards.choose_exactly", { count: low });
  if (high >= count) {
    if (low === 0) return t("cards.choose_any");
    return low === 1 ? t("cards.choose_one_or_more") : t("cards.choose_at_least", { count: low });
  }
  if (low === 0) return t("cards.choose_up_to", { count: high });
  return t("cards.choose_between", { low, high });
}

function patternOf(source) {
  if (!source) return null;
  for (const flags of ["u", ""]) {
    try {
      return new RegExp(`^(?:${source})$`, flags);
    } catch {
      // RE2 syntax JavaScript does not take: the Runtime checks it anyway.
    }
  }
  return null;
}

function inputControls(item, base, form, hint, busy) {
  const id = item.data.interaction_id;
  const args = argumentsOf(item);
  const min = args.min_length ?? 0;
  const max = args.max_length ?? 2000;
  const pattern = patternOf(args.pattern);
  const field = document.createElement(args.multiline ? "textarea" : "input");
  if (args.multiline) field.rows = 3;
  else field.type = "text";
  field.className = "answer-field";
  field.placeholder = args.placeholder || t("cards.placeholder");
  field.value = ia.drafts.get(id) ?? "";
  field.disabled = busy;
  field.spellcheck = true;
  field.dataset.focus = "text";
  field.setAttribute("aria-labelledby", `${base}-prompt`);
  const counter = el("span", "counter");
  counter.id = `${base}-counter`;
  counter.setAttribute("aria-live", "off");
  field.setAttribute("aria-describedby", `${hint.id} ${counter.id}`);
  field.addEventListener("input", () => keepDraft(id, field.value));
  field.addEventListener("blur", () => flushDraft(id));
  const composing = watchComposition(field);
  field.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || composing(event)) return; // the IME's Enter: left to it
    if (args.multiline && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  const meta = el("div", "input-meta");
  meta.append(hint, counter);
  form.append(field, meta);
  const check = () => {
    const text = field.value;
    const count = chars(text);
    counter.textContent = t("cards.counter", { count, max });
    counter.classList.toggle("invalid", count > max);
    let message = "";
    let bad = false;
    if (count > max) {
      message = t("cards.too_many", { count: count - max });
      bad = true;
    } else if (count < min) {
      message = t("cards.too_few", { count: min });
    } else if (pattern && text && !pattern.test(text)) {
      message = t("cards.format");
      bad = true;
    } else if (args.multiline) {
      message = t("cards.ctrl_enter");
    }
    hint.textContent = message;
    hint.classList.toggle("invalid", bad);
    hint.classList.toggle("tip", !bad && message !== "" && count >= min); // keys: not for touch
    field.setAttribute("aria-invalid", bad ? "true" : "false");
    return count >= min && count <= max; // the pattern is a hint; the Runtime decides
  };
  return [check, () => ({ text: field.value }), () => composing()];
}

function keepDraft(id, text) {
  ia.drafts.set(id, text);
  clearTimeout(ia.draftTimers.get(id));
  ia.draftTimers.set(id, setTimeout(() => flushDraft(id), DRAFT_DELAY_MS));
}

function flushDraft(id) {
  clearTimeout(ia.draftTimers.get(id));
  ia.draftTimers.delete(id);
  if (ia.inflight.has(id) || !ia.drafts.has(id)) return;
  const text = ia.drafts.get(id).slice(0, MAX_DRAFT_CHARS);
  if (ia.sentDrafts.get(id) === text) return;
  if (context.send({ op: "draft", interaction_id: id, text })) ia.sentDrafts.set(id, text);
}

function forgetDraft(id) {
  clearTimeout(ia.draftTimers.get(id));
  ia.draftTimers.delete(id);
  ia.drafts.delete(id);
  ia.sentDrafts.delete(id);
}

function submitAnswer(item, answer) {
  const id = item.data.interaction_id;
  if (ia.inflight.has(id) || cardState(context.currentItem(item.key) || item) !== "pending") return;
  clearTimeout(ia.draftTimers.get(id));
  ia.refusals.delete(id);
  const frame = {
    op: "answer",
    conversation_id: item.conversation_id,
    interaction_id: id,
    answer,
  };
  if (context.send(frame)) {
    ia.inflight.add(id);
  } else {
    ia.refusals.set(id, { code: "offline" });
  }
  context.rerender(item.key);
}

export function onReceipt(frame) {
  const id = frame.interaction_id;
  if (frame.outcome === "accepted") {
    // The answered card comes as an item frame (before this receipt, as the Runtime
    // sends them); until then the controls stay disabled.
    ia.refusals.delete(id);
    forgetDraft(id);
    return;
  }
  // Refused: shown on the card as an alert; a card that is over loses its controls.
  ia.inflight.delete(id);
  ia.refusals.set(id, { code: frame.outcome });
  const key = ia.keys.get(id);
  if (key != null) context.rerender(key);
}

// The countdowns: one timer for every card, touching only the small time text. A
// card whose time runs out is rebuilt once, as expired.
export function tick() {
  const now = serverNow();
  for (const [key, entry] of ia.countdowns) {
    if (!entry.element.isConnected) {
      ia.countdowns.delete(key);
      continue;
    }
    const left = entry.expiresAt - now;
    if (left <= 0) {
      ia.countdowns.delete(key);
      context.rerender(key);
      announce(t("cards.announce.expired"));
      continue;
    }
    const text = remainingText(left);
    if (entry.element.textContent !== text) entry.element.textContent = text;
    const soon = left < SOON_MS;
    if (entry.element.classList.contains("soon") !== soon) {
      entry.element.classList.toggle("soon", soon);
    }
  }
}

const ANNOUNCED = new Set(["answered", "dismissed", "expired", "failed"]); // cards.announce.*

function toastFor(item) {
  const args = argumentsOf(item);
  const level = LEVELS.has(args.level) ? args.level : "info";
  const body = el("button", "toast-body");
  body.type = "button";
  if (args.title) body.append(el("strong", "toast-title", args.title));
  body.append(el("span", "toast-text", args.text || ""));
  const hide = showToast(level, body);
  body.addEventListener("click", () => {
    hide();
    const li = context.rowOf(item.key);
    const card = li?.querySelector(".card");
    if (card) {
      card.scrollIntoView({ block: "center", behavior: "smooth" });
      card.focus({ preventScroll: true });
    }
  });
}

// --- what the timeline calls ------------------------------------------------------------

// A card row's control that was focused but disabled (an answer in flight): swap()
// focuses the card meanwhile and puts focus back on the control once it is enabled.
export const focusWanted = ia.focusWanted; // interaction id -> data-focus

// Every interaction item the timeline stores passes through here.
export function trackInteraction(item) {
  const id = item.data.interaction_id;
  ia.keys.set(id, item.key);
  if (item.data.state !== "pending") {
    // Over: nothing more to send for it.
    forgetDraft(id);
    ia.inflight.delete(id);
    ia.selected.delete(id);
    ia.focusWanted.delete(id);
  }
}

// A snapshot (a connect or reconnect): the Runtime's clock and drafts; returns the
// drafts for resendDrafts, called once the snapshot is shown.
export function resetCards(frame) {
  const now = Date.parse(frame.now);
  ia.clockOffset = Number.isNaN(now) ? 0 : now - Date.now();
  ia.inflight.clear(); // the snapshot says how each answer ended
  ia.refusals.clear();
  ia.countdowns.clear();
  const drafts = frame.drafts || {};
  for (const [id, text] of Object.entries(drafts)) {
    ia.sentDrafts.set(id, text);
    if (!ia.drafts.has(id)) ia.drafts.set(id, text);
  }
  return drafts;
}

// Text typed here while the Runtime was away: tell it now.
export function resendDrafts(drafts) {
  for (const [id, text] of ia.drafts) {
    if (drafts[id] !== text) {
      ia.sentDrafts.delete(id);
      flushDraft(id);
    }
  }
}

// An interaction item that just arrived (before: the one it replaces, if any): a new
// notice toasts, a card that changed state is announced.
export function interactionArrived(item, before) {
  if (!before && item.data.kind === "notice" && argumentsOf(item).toast !== false) {
    toastFor(item);
  } else if (before && before.data.state !== item.data.state) {
    if (ANNOUNCED.has(item.data.state)) announce(t(`cards.announce.${item.data.state}`));
  }
  focusQuestion(item, before);
}

// A new question takes focus when the person is not in the middle of something (focus
// on the page, the timeline or an empty composer), else the announcer says it; once it
// is answered or closed, focus goes back to where it was.
const focusReturn = new Map(); // interaction id -> the element focused before
function focusQuestion(item, before) {
  const id = item.data.interaction_id;
  const active = document.activeElement;
  if (!before && item.data.state === "pending" && item.data.kind !== "notice") {
    const idle = !active || active === document.body || active.id === "timeline" || (active.id === "input" && !active.value);
    const card = idle && context.rowOf(item.key)?.querySelector(".card");
    if (!card) {
      if (argumentsOf(item).prompt) announce(argumentsOf(item).prompt); // said, not focused: they are busy
      return;
    }
    focusReturn.set(id, active);
    card.focus({ preventScroll: true });
  } else if (before && item.data.state !== "pending" && focusReturn.has(id)) {
    const back = focusReturn.get(id);
    focusReturn.delete(id);
    const card = context.rowOf(item.key)?.querySelector(".card");
    const here = document.activeElement;
    if (back?.isConnected && (!here || here === document.body || card?.contains(here))) back.focus({ preventScroll: true });
  }
}

// Drafts leave before the page does (a reload keeps them in the Runtime).
export function flushDrafts() {
  for (const id of ia.draftTimers.keys()) flushDraft(id);
}
