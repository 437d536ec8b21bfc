// LineUp shell: the Interact IM view. It renders what the Runtime sends over the
// host channel and sends back only intents (send, retry, history, answer, draft). The
// only HTML it inserts is message HTML the Runtime already sanitized, through a
// Trusted Types policy; everything else (interaction prompts and options included:
// they come from the agent) is built with textContent.

const policy = window.trustedTypes
  ? window.trustedTypes.createPolicy("lineup-html", { createHTML: (html) => html })
  : { createHTML: (html) => html };

const $ = (id) => document.getElementById(id);
const rendered = new Map(); // key -> { item, li }: the element shown for each row
const state = {
  conversation: null,
  userId: "",
  items: new Map(), // key -> item
  socket: null,
  retryDelay: 250,
  loadingOlder: false,
  complete: false,
};

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
  refusals: new Map(), // interaction id -> { code, message } from a refusal receipt
  countdowns: new Map(), // row key -> { element, expiresAt }
  focusWanted: new Map(), // interaction id -> data-focus of a control that was disabled
};
const DRAFT_DELAY_MS = 300;
const MAX_DRAFT_CHARS = 16384;
const TOAST_MS = 6000;
const SOON_MS = 5 * 60 * 1000; // the countdown turns amber

const CONNECTION_TEXT = {
  connecting: "Connecting…",
  connected: "Connected",
  reconnecting: "Reconnecting…",
  offline: "Offline",
  shell: "Runtime unreachable",
};

function setConnection(name) {
  const element = $("connection");
  element.dataset.state = name;
  element.textContent = CONNECTION_TEXT[name] || name;
}

function initials(name) {
  const letters = (name || "?").replace(/[^A-Za-z0-9]/g, " ").trim().split(/\s+/);
  return (letters[0]?.[0] || "?").toUpperCase() + (letters[1]?.[0] || "").toUpperCase();
}

const TIME_FORMAT = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit" });

function time(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? "" : TIME_FORMAT.format(date);
}

function el(tag, className, text) {
  const element = document.createElement(tag);
  if (className) element.className = className;
  if (text != null) element.textContent = text;
  return element;
}

function avatarFor(item) {
  const avatar = el("span", `avatar ${item.sender}`);
  avatar.setAttribute("aria-hidden", "true");
  avatar.textContent = initials(item.sender === "user" ? "You" : item.sender_id);
  return avatar;
}

const STATE_TEXT = { sending: "Sending…", sent: "Sent", failed: "Not sent", received: "" };

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
    meta.append(when);
    if (item.sender === "user") {
      meta.append(el("span", "delivery", STATE_TEXT[item.state] || item.state));
      if (item.state === "failed") {
        const retry = el("button", "retry", "Retry");
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
  } else if (item.kind === "status") {
    li.textContent = item.data.text || item.data.state;
  } else if (item.kind === "progress") {
    const label = el("span", null, item.data.label || "Working");
    const bar = document.createElement("progress");
    if (item.data.total) {
      bar.max = item.data.total;
      bar.value = item.data.current;
    }
    li.append(label, bar);
  } else if (item.kind === "error") {
    li.setAttribute("role", "alert");
    li.textContent = `${item.data.message} (${item.data.code})`;
  } else {
    li.textContent = "This message needs a newer LineUp to be shown.";
  }
  return li;
}

// --- interaction cards ----------------------------------------------------------------

const serverNow = () => Date.now() + ia.clockOffset;

const KIND_TEXT = {
  notice: "Notice",
  choice: "Question",
  confirm: "Confirmation",
  input: "Question",
};
const LEVEL_TEXT = { info: "Info", success: "Success", warning: "Warning", error: "Error" };
const FINAL_TEXT = {
  answered: "Answered",
  dismissed: "Withdrawn by the agent",
  expired: "Expired",
  failed: "Could not be completed",
  closed: "No longer open",
};
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

function remainingText(ms) {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  if (seconds >= 3600) {
    const hours = Math.floor(seconds / 3600);
    const minutes = Math.floor((seconds % 3600) / 60);
    return minutes ? `Expires in ${hours} h ${minutes} min` : `Expires in ${hours} h`;
  }
  const minutes = Math.floor(seconds / 60);
  return `Expires in ${minutes}:${String(seconds % 60).padStart(2, "0")}`;
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

function renderInteraction(item, li) {
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
    const level = LEVEL_TEXT[args.level] ? args.level : "info";
    card.classList.add(`level-${level}`);
    head.append(el("span", "card-kind", args.title || LEVEL_TEXT[level]));
  } else {
    head.append(el("span", "card-kind", KIND_TEXT[kind] || "Question"));
  }
  const prompt = el("p", "card-prompt", kind === "notice" ? args.text : args.prompt);
  prompt.id = `${base}-prompt`;
  card.append(head, prompt);

  const status = el("div", "card-status");
  status.id = `${base}-status`;
  if (kind === "notice") {
    const when = el("time", "card-time", time(item.created_at));
    when.dateTime = item.created_at;
    status.append(when);
  } else if (shown === "pending") {
    const left = el("span", "countdown");
    left.setAttribute("aria-live", "off"); // read on demand, not every second
    left.dataset.expiresAt = data.expires_at || "";
    const expiresAt = Date.parse(data.expires_at);
    if (!Number.isNaN(expiresAt)) {
      left.textContent = remainingText(expiresAt - serverNow());
      left.classList.toggle("soon", expiresAt - serverNow() < SOON_MS);
      left.title = `Open until ${time(data.expires_at)}`;
      ia.countdowns.set(item.key, { element: left, expiresAt });
    }
    status.append(left);
  } else {
    const final = el("span", `final final-${shown}`, FINAL_TEXT[shown] || shown);
    status.append(final);
    if (shown === "answered" && data.final_at) {
      const when = el("time", "card-time", time(data.final_at));
      when.dateTime = data.final_at;
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
    const alert = el("p", "card-alert", refusal.message);
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
  box.append(el("span", "answer-label", "Your answer"));
  if (kind === "choice") {
    const labels = new Map((args.options || []).map((option) => [option.id, option.label]));
    const list = el("ul", "chips");
    for (const optionId of result.selected || []) {
      list.append(el("li", "chip", labels.get(optionId) ?? optionId));
    }
    box.append(list);
  } else if (kind === "confirm") {
    const yes = result.confirmed === true;
    const label = yes ? args.confirm_label || "Confirm" : args.cancel_label || "Cancel";
    const chip = el("span", yes ? "chip chip-yes" : "chip chip-no");
    if (yes && args.danger) chip.classList.add("danger");
    chip.append(el("strong", null, yes ? "Yes" : "No"), document.createTextNode(` · ${label}`));
    box.append(chip);
  } else if (kind === "input") {
    const text = result.text ?? "";
    box.append(el("blockquote", `answer-text${text ? "" : " empty"}`, text || "(empty)"));
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
    const cancel = el("button", "button secondary", args.cancel_label || "Cancel");
    cancel.type = "button";
    cancel.dataset.focus = "cancel";
    const confirm = el("button", `button ${args.danger ? "danger" : "primary"}`);
    confirm.textContent = args.confirm_label || "Confirm";
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

  const submit = el("button", "button primary", busy ? "Sending…" : "Submit");
  submit.type = "submit";
  submit.dataset.focus = "submit";
  actions.append(submit);
  const hint = el("p", "card-hint");
  hint.id = `${base}-hint`;
  let check;
  let answer;
  if (kind === "choice") {
    [check, answer] = choiceControls(item, base, form, hint, busy);
  } else {
    [check, answer] = inputControls(item, base, form, hint, busy);
  }
  form.append(footer);
  const refresh = () => {
    submit.disabled = busy || !check();
  };
  form.addEventListener("input", refresh);
  form.addEventListener("change", refresh);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
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
      hint.textContent = `${rule} · ${count} selected`;
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
  if (low === high) return `Choose ${low}`;
  if (high >= count) {
    if (low === 0) return "Choose any";
    return low === 1 ? "Choose one or more" : `Choose at least ${low}`;
  }
  if (low === 0) return `Choose up to ${high}`;
  return `Choose ${low} to ${high}`;
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
  field.placeholder = args.placeholder || "Type your answer…";
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
  if (args.multiline) {
    field.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
  }
  const meta = el("div", "input-meta");
  meta.append(hint, counter);
  form.append(field, meta);
  const check = () => {
    const text = field.value;
    const count = chars(text);
    counter.textContent = `${count} / ${max}`;
    counter.classList.toggle("invalid", count > max);
    let message = "";
    let bad = false;
    if (count > max) {
      message = `${count - max} characters too many`;
      bad = true;
    } else if (count < min) {
      message = min === 1 ? "Type at least 1 character" : `Type at least ${min} characters`;
    } else if (pattern && text && !pattern.test(text)) {
      message = "This does not look like the requested format";
      bad = true;
    } else if (args.multiline) {
      message = "Ctrl+Enter to submit";
    }
    hint.textContent = message;
    hint.classList.toggle("invalid", bad);
    hint.classList.toggle("tip", !bad && message !== "" && count >= min); // keys: not for touch
    field.setAttribute("aria-invalid", bad ? "true" : "false");
    return count >= min && count <= max; // the pattern is a hint; the Runtime decides
  };
  return [check, () => ({ text: field.value })];
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
  if (send({ op: "draft", interaction_id: id, text })) ia.sentDrafts.set(id, text);
}

function forgetDraft(id) {
  clearTimeout(ia.draftTimers.get(id));
  ia.draftTimers.delete(id);
  ia.drafts.delete(id);
  ia.sentDrafts.delete(id);
}

function submitAnswer(item, answer) {
  const id = item.data.interaction_id;
  if (ia.inflight.has(id) || cardState(state.items.get(item.key) || item) !== "pending") return;
  clearTimeout(ia.draftTimers.get(id));
  ia.refusals.delete(id);
  const frame = {
    op: "answer",
    conversation_id: item.conversation_id,
    interaction_id: id,
    answer,
  };
  if (send(frame)) {
    ia.inflight.add(id);
  } else {
    ia.refusals.set(id, {
      code: "offline",
      message: "Not connected to LineUp. Try again in a moment.",
    });
  }
  rerender(item.key);
}

function onReceipt(frame) {
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
  const message = frame.message || "That answer did not count.";
  ia.refusals.set(id, { code: frame.outcome, message });
  const key = ia.keys.get(id);
  if (key != null) rerender(key);
}

// The countdowns: one timer for every card, touching only the small time text. A
// card whose time runs out is rebuilt once, as expired.
function tick() {
  const now = serverNow();
  for (const [key, entry] of ia.countdowns) {
    if (!entry.element.isConnected) {
      ia.countdowns.delete(key);
      continue;
    }
    const left = entry.expiresAt - now;
    if (left <= 0) {
      ia.countdowns.delete(key);
      rerender(key);
      announce("A question expired.");
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

function announce(text) {
  const region = $("announcer");
  region.textContent = "";
  // A separate task, so the same text said twice is announced twice.
  setTimeout(() => {
    region.textContent = text;
  }, 50);
}

const STATE_ANNOUNCEMENT = {
  answered: "Question answered.",
  dismissed: "The agent withdrew a question.",
  expired: "A question expired.",
  failed: "A question could not be completed.",
};

function showToast(item) {
  const args = argumentsOf(item);
  const level = LEVEL_TEXT[args.level] ? args.level : "info";
  const toasts = $("toasts");
  const toast = el("div", `toast level-${level}`);
  toast.setAttribute("role", "status");
  const body = el("button", "toast-body");
  body.type = "button";
  if (args.title) body.append(el("strong", "toast-title", args.title));
  body.append(el("span", "toast-text", args.text || ""));
  body.addEventListener("click", () => {
    hide();
    const li = rendered.get(item.key)?.li;
    const card = li?.querySelector(".card");
    if (card) {
      card.scrollIntoView({ block: "center", behavior: "smooth" });
      card.focus({ preventScroll: true });
    }
  });
  const close = el("button", "toast-close", "×");
  close.type = "button";
  close.setAttribute("aria-label", "Dismiss notification");
  close.addEventListener("click", () => hide());
  toast.append(body, close);
  let timer = null;
  const hide = () => {
    clearTimeout(timer);
    toast.remove();
  };
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(hide, TOAST_MS);
  };
  // Hovering or focusing a toast keeps it: it goes away when the person is done.
  toast.addEventListener("mouseenter", () => clearTimeout(timer));
  toast.addEventListener("mouseleave", arm);
  toast.addEventListener("focusin", () => clearTimeout(timer));
  toast.addEventListener("focusout", arm);
  toasts.append(toast);
  while (toasts.children.length > 3) toasts.firstElementChild.remove();
  arm();
}

// --- the timeline ---------------------------------------------------------------------

// Replace a row's element, keeping keyboard focus on the same control when it exists
// (or on the card when that control is gone or disabled).
function swap(old, li) {
  const active = document.activeElement;
  const focused = active && active !== document.body && old.contains(active);
  let wanted = focused ? active.dataset.focus : undefined;
  const id = li.dataset.interactionId;
  if (focused && wanted === "card" && id && ia.focusWanted.has(id)) {
    wanted = ia.focusWanted.get(id);
  }
  old.replaceWith(li);
  if (!focused) return;
  const target = wanted ? li.querySelector(`[data-focus="${CSS.escape(wanted)}"]`) : null;
  if (target && !target.disabled) {
    target.focus({ preventScroll: true });
    if (id) ia.focusWanted.delete(id);
  } else {
    const card = li.querySelector(".card");
    if (card) {
      card.focus({ preventScroll: true });
      if (id && wanted && wanted !== "card") ia.focusWanted.set(id, wanted);
    }
  }
}

function rerender(key) {
  const cached = rendered.get(key);
  if (!cached || !cached.li.isConnected) return;
  const timeline = $("timeline");
  const atBottom = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 80;
  const li = renderItem(cached.item);
  swap(cached.li, li);
  rendered.set(key, { item: cached.item, li });
  if (atBottom) timeline.scrollTop = timeline.scrollHeight;
}

function order(a, b) {
  // Stored items in sequence order; items not yet stored after them, oldest first.
  if (a.seq != null && b.seq != null) return a.seq - b.seq;
  if (a.seq != null) return -1;
  if (b.seq != null) return 1;
  return a.key - b.key;
}

function redraw() {
  const list = $("items");
  const timeline = $("timeline");
  const atBottom = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 80;
  const items = [...state.items.values()]
    .filter((item) => !state.conversation || item.conversation_id === state.conversation.id)
    .filter((item) => item.kind !== "status" || isLatestStatus(item))
    .sort(order);
  // Keep one element per row and rebuild only rows whose data changed: a long
  // conversation must not cost a full re-render per frame.
  const nodes = items.map((item) => {
    const cached = rendered.get(item.key);
    if (cached && cached.item === item) return cached.li;
    const li = renderItem(item);
    if (cached && cached.li.isConnected) swap(cached.li, li);
    rendered.set(item.key, { item, li });
    return li;
  });
  let child = list.firstElementChild;
  for (const node of nodes) {
    if (child === node) child = child.nextElementSibling;
    else list.insertBefore(node, child);
  }
  while (child) {
    const next = child.nextElementSibling;
    const key = Number(child.dataset.key);
    if (rendered.get(key)?.li === child) rendered.delete(key);
    child.remove();
    child = next;
  }
  $("empty").hidden = items.length > 0;
  const first = items.find((item) => item.seq != null);
  $("older").hidden = state.complete || !first || first.seq <= 1;
  if (atBottom) timeline.scrollTop = timeline.scrollHeight;
  acknowledgeShown();
}

// The common frame changes one row that stays where it is (a reply appended at the
// end, "sending" becoming "sent", a card answered): update that row alone, without
// sorting or walking the timeline. Anything else (status rows, history, rows that
// move) redraws.
function placeOne(item) {
  if (item.kind === "status" || !state.conversation) return false;
  if (item.conversation_id !== state.conversation.id) return true;
  const list = $("items");
  const cached = rendered.get(item.key);
  const fits = (before, after) =>
    (!before || order(rowItem(before), item) < 0) && (!after || order(item, rowItem(after)) < 0);
  const timeline = $("timeline");
  const atBottom = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 80;
  if (cached) {
    if (!cached.li.isConnected) return false;
    if (!fits(cached.li.previousElementSibling, cached.li.nextElementSibling)) return false;
    const li = renderItem(item);
    swap(cached.li, li);
    rendered.set(item.key, { item, li });
  } else {
    const last = list.lastElementChild;
    if (last && (!rendered.has(Number(last.dataset.key)) || !fits(last, null))) return false;
    const li = renderItem(item);
    list.append(li);
    rendered.set(item.key, { item, li });
    $("empty").hidden = true;
  }
  if (atBottom) timeline.scrollTop = timeline.scrollHeight;
  if (item.unread) acknowledgeShown();
  return true;
}

function rowItem(li) {
  return li ? rendered.get(Number(li.dataset.key))?.item : undefined;
}

function isLatestStatus(item) {
  let latest = null;
  for (const other of state.items.values()) {
    if (other.kind === "status" && (!latest || order(latest, other) < 0)) latest = other;
  }
  return latest === item && item.data.state !== "idle" && item.data.state !== "done";
}

function upsert(item) {
  state.items.set(item.key, item);
  if (item.kind === "interaction") {
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
}

// Interact consumes its inbox: what the user has been shown is acknowledged, so the
// Runtime stops offering it as unread. Hidden tabs acknowledge nothing.
function acknowledgeShown() {
  if (document.visibilityState !== "visible" || !state.conversation) return;
  const ids = [...state.items.values()]
    .filter((item) => item.unread && item.conversation_id === state.conversation.id)
    .map((item) => item.envelope_id)
    .slice(0, 500);
  if (ids.length && send({ op: "seen", conversation_id: state.conversation.id, envelope_ids: ids })) {
    for (const item of state.items.values()) {
      if (ids.includes(item.envelope_id)) item.unread = false;
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
  state.userId = frame.user_id;
  state.conversation = frame.conversations[0] || null;
  state.items.clear();
  rendered.clear();
  state.complete = false;
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
  frame.items.forEach(upsert);
  if (state.conversation) {
    $("conversation-title").textContent = state.conversation.title || "Chat";
    $("agent-name").textContent = state.conversation.agent_id;
    $("agent-avatar").textContent = initials(state.conversation.agent_id);
  }
  setConnection(frame.connection);
  redraw();
  fillScreen();
  // Text typed here while the Runtime was away: tell it now.
  for (const [id, text] of ia.drafts) {
    if (drafts[id] !== text) {
      ia.sentDrafts.delete(id);
      flushDraft(id);
    }
  }
}

function onItem(item) {
  const before = state.items.get(item.key);
  upsert(item);
  if (!placeOne(item)) redraw();
  if (item.kind !== "interaction") return;
  if (!before && item.data.kind === "notice" && argumentsOf(item).toast !== false) {
    showToast(item);
  } else if (before && before.data.state !== item.data.state) {
    const text = STATE_ANNOUNCEMENT[item.data.state];
    if (text) announce(text);
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
    case "connection":
      setConnection(frame.state);
      break;
    case "history": {
      const timeline = $("timeline");
      const before = timeline.scrollHeight;
      frame.items.forEach(upsert);
      state.complete = frame.complete;
      state.loadingOlder = false;
      redraw();
      timeline.scrollTop += timeline.scrollHeight - before;
      break;
    }
    case "error":
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
    socket.send(JSON.stringify({ op: "hello" }));
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
  if (state.loadingOlder || !state.conversation) return;
  const first = [...state.items.values()]
    .filter((item) => item.seq != null)
    .sort(order)[0];
  if (!first || first.seq <= 1) return;
  state.loadingOlder = true;
  send({ op: "history", conversation_id: state.conversation.id, before_seq: first.seq });
}

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  submit();
});
$("input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    submit();
  }
});
$("input").addEventListener("input", resize);
$("older").addEventListener("click", loadOlder);
$("timeline").addEventListener("scroll", () => {
  if ($("timeline").scrollTop < 40) loadOlder();
});
document.addEventListener("visibilitychange", acknowledgeShown);
// Drafts leave before the page does (a reload keeps them in the Runtime).
window.addEventListener("pagehide", () => {
  for (const id of ia.draftTimers.keys()) flushDraft(id);
});
setInterval(tick, 1000);
connect();
