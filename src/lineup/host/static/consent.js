// LineUp shell: host capabilities. The consent dialog for the calls an agent or an
// app makes (app.call / capabilities.request) and the providers that run in this tab
// once the Runtime approved a call and this tab claimed it. (The files calls saved or
// picked are timeline rows of their own: artifacts.js.)
//
// The Runtime decides; this module only asks the person and reports. A call's reason
// and arguments come from the requester: they are shown with textContent, never as
// HTML. A provider runs only on `capability_run` (the Runtime's approval and this tab's
// claim); the one that needs the click's user activation (a window, the file chooser)
// runs while it lasts, because the deciding tab claims in the same step.

import { announce, el, showToast, trapFocus } from "./dom.js";
import { bytes, t } from "./i18n.js";

// What the timeline lends this module, set once by initConsent:
//   send(frame) -> bool   sends a frame on the host channel
let context = null;

// The catalogue's words for each host capability (consent.capability.*).
export const WORDS = {
  "app.open_url": "consent.capability.app.open_url",
  "clipboard.write": "consent.capability.clipboard.write",
  "device.pick_file": "consent.capability.device.pick_file",
  "artifact.save": "consent.capability.artifact.save",
  "notification.show": "consent.capability.notification.show",
};
const OPEN = new Set(["awaiting_consent", "approved", "executing"]);
const PREVIEW_CHARS = 2000;

const caps = {
  clockOffset: 0, // the Runtime's clock minus this browser's, in ms
  calls: new Map(), // "conv/call/kind" -> call view (open calls only)
  expiredHere: new Set(), // keys whose time ran out here (the Runtime says so soon)
  claimed: new Set(), // keys this tab asked to claim (once each)
  deciding: new Set(), // keys whose decision is on its way
  refusal: new Map(), // key -> code of the last refused decision
  shown: null, // key of the call the dialog shows
  returnFocus: null, // what had focus before the dialog opened
};

const serverNow = () => Date.now() + caps.clockOffset;
const keyOf = (call) => `${call.conversation_id}/${call.call_id}/${call.requester_kind}`;
const idOf = (call) => ({
  conversation_id: call.conversation_id,
  call_id: call.call_id,
  requester_kind: call.requester_kind,
});

export function wordsFor(capability) {
  return Object.hasOwn(WORDS, capability) ? t(WORDS[capability]) : capability;
}

// Who asks, as the person knows them: "the app Task Dashboard 2" (the Runtime's label
// for the instance) or "the agent <id>".
export function requesterText(call) {
  const name = call.requester_label || call.requester;
  const kind = { app: "consent.requester.app", mcp: "consent.requester.mcp" }[call.requester_kind];
  return t(kind || "consent.requester.agent", { name });
}

// The dialog's title: the capability's words, or for an MCP server's tool its name.
function titleText(call) {
  if (call.requester_kind === "mcp") return t("consent.mcp.title", { tool: call.tool_title || call.tool });
  return wordsFor(call.capability);
}

// The catalogue's string ``key`` with the element ``node`` where its {{slot}} is (the
// words around it come before or after it as the language puts them).
function around(key, slot, node) {
  const [before, after = ""] = t(key).split(`{{${slot}}}`);
  return [before, node, after].filter((part) => part !== "");
}

// --- the dialog ---------------------------------------------------------------------------

let dialog = null;

function buildDialog() {
  dialog = el("dialog", "consent");
  dialog.id = "consent";
  dialog.setAttribute("aria-labelledby", "consent-title");
  dialog.setAttribute("aria-describedby", "consent-who consent-reason");
  // Escape is a refusal: closing without deciding would only bring the dialog back.
  dialog.addEventListener("cancel", (event) => {
    event.preventDefault();
    const call = caps.calls.get(caps.shown);
    if (call) decide(call, false);
  });
  trapFocus(dialog);
  document.body.append(dialog);
}

function pendingCalls() {
  return [...caps.calls.values()].filter(
    (call) =>
      call.state === "awaiting_consent" &&
      !caps.expiredHere.has(keyOf(call)) &&
      serverNow() < Date.parse(call.expires_at),
  );
}

// Show the first pending call, or close the dialog when none is left.
function refreshDialog() {
  const pending = pendingCalls();
  if (!pending.length) {
    caps.shown = null;
    if (dialog?.open) {
      dialog.close();
      const back = caps.returnFocus;
      caps.returnFocus = null;
      if (back && back.isConnected && back !== document.body) back.focus({ preventScroll: true });
    }
    return;
  }
  if (!dialog) buildDialog();
  const call = pending[0];
  const key = keyOf(call);
  if (caps.shown !== key) {
    caps.shown = key;
    renderDialog(call);
  }
  const queue = dialog.querySelector(".consent-queue");
  queue.textContent = pending.length > 1 ? t("consent.queue", { index: 1, total: pending.length }) : "";
  queue.hidden = pending.length < 2;
  updateButtons(call);
  if (!dialog.open) {
    caps.returnFocus = document.activeElement;
    dialog.showModal();
    focusFirst();
  }
}

function focusFirst() {
  const target =
    dialog.querySelector(".consent-phrase-input") ||
    dialog.querySelector(".consent-ack input") ||
    dialog.querySelector(".consent-deny");
  target?.focus();
}

function renderDialog(call) {
  const key = keyOf(call);
  const form = el("form", "consent-form");
  form.method = "dialog";
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    decide(call, true);
  });
  const head = el("header", "consent-head");
  const queue = el("p", "consent-queue");
  queue.hidden = true;
  const title = el("h2", "consent-title", titleText(call));
  title.id = "consent-title";
  const who = el("p", "consent-who");
  who.id = "consent-who";
  const name = el("strong", null, requesterText(call));
  name.title = call.requester; // the app's scope, or the agent's id
  who.append(...around("consent.asked_by", "who", name));
  head.append(queue, title, who);

  const reason = el("section", "consent-reason");
  reason.append(el("h3", "consent-label", t("consent.reason")));
  const said = el("p", "consent-reason-text", call.reason || t("consent.no_reason"));
  if (call.requester_kind === "mcp") reason.firstChild.textContent = t("consent.mcp.about");
  said.id = "consent-reason";
  reason.append(said);

  form.append(head, reason, details(call));

  const countdown = el("p", "consent-countdown");
  countdown.setAttribute("aria-live", "off");
  form.append(countdown);

  if (call.risk === "system_permission") {
    const ack = el("label", "consent-check consent-ack");
    const box = el("input");
    box.type = "checkbox";
    box.addEventListener("change", () => updateButtons(call));
    ack.append(box, el("span", null, t("consent.acknowledge")));
    form.append(ack);
  }
  if (call.risk === "restricted" && call.phrase) {
    const label = el("label", "consent-phrase");
    const code = el("code", "consent-phrase-text", call.phrase);
    label.append(...around("consent.phrase", "phrase", code).map((part) =>
      typeof part === "string" ? el("span", null, part) : part,
    ));
    const input = el("input", "consent-phrase-input answer-field");
    input.type = "text";
    input.autocomplete = "off";
    input.spellcheck = false;
    input.maxLength = 64;
    input.addEventListener("input", () => updateButtons(call));
    label.append(input);
    form.append(label);
  }
  if (call.requester_kind === "mcp") {
    form.append(el("p", "consent-note consent-mcp-note", t(call.read_only ? "consent.mcp.read_only" : "consent.mcp.may_change")));
  } else if (call.risk === "user_confirmation") {
    const remember = el("label", "consent-check consent-remember");
    const box = el("input");
    box.type = "checkbox";
    remember.append(box, el("span", null, t("consent.remember")));
    form.append(remember);
  }
  const alert = el("p", "consent-alert");
  alert.setAttribute("role", "alert");
  alert.hidden = true;
  form.append(alert);

  const actions = el("div", "consent-actions");
  const deny = el("button", "button secondary consent-deny", t("consent.deny"));
  deny.type = "button";
  deny.addEventListener("click", () => decide(call, false));
  const allow = el("button", "button primary consent-allow", t("consent.allow"));
  allow.type = "submit";
  actions.append(deny, allow);
  form.append(actions);
  dialog.replaceChildren(form);
  dialog.dataset.callId = call.call_id;
  dialog.dataset.capability = call.capability;
  dialog.dataset.key = key;
  tickDialog();
}

function details(call) {
  const box = el("section", "consent-details");
  const args = call.arguments || {};
  const row = (label, value, className) => {
    box.append(el("h3", "consent-label", label), el("p", className || "consent-value", value));
  };
  if (call.capability === "app.open_url") {
    let site = "";
    try {
      site = new URL(args.url).host;
    } catch {
      site = "";
    }
    if (site) row(t("consent.site"), site, "consent-value consent-site");
    row(t("consent.full_address"), String(args.url || ""), "consent-value consent-url");
  } else if (call.capability === "clipboard.write") {
    const text = String(args.text || "");
    const count = [...text].length;
    box.append(el("h3", "consent-label", t("consent.text_to_copy", { count })));
    const preview = el("pre", "consent-preview");
    preview.textContent = text.length > PREVIEW_CHARS ? `${text.slice(0, PREVIEW_CHARS)}…` : text;
    if (!text) preview.textContent = t("consent.empty");
    box.append(preview);
  } else if (call.capability === "artifact.save") {
    row(t("consent.file_name"), String(args.name || ""), "consent-value consent-file-name");
    row(t("consent.type"), String(args.media_type || ""));
    row(t("consent.size"), sizeText(savedSize(args)));
  } else if (call.capability === "device.pick_file") {
    const accept = Array.isArray(args.accept) && args.accept.length ? args.accept.join(", ") : t("consent.any_file");
    row(t("consent.allowed_types"), accept);
    box.append(el("p", "consent-note", t("consent.pick_note")));
  } else if (Object.keys(args).length) {
    box.append(el("h3", "consent-label", t("consent.details")));
    const raw = el("pre", "consent-preview");
    raw.textContent = JSON.stringify(args, null, 2);
    box.append(raw);
  }
  return box;
}

function savedSize(args) {
  if (typeof args.text === "string") return new TextEncoder().encode(args.text).length;
  if (typeof args.base64 === "string") {
    const padding = (args.base64.match(/=*$/) || [""])[0].length;
    return Math.max(0, Math.floor((args.base64.length * 3) / 4) - padding);
  }
  return 0;
}

// A size as the person's language writes it ("18 bytes", "1.2 MB" / "18字节").
export function sizeText(size) {
  return bytes(size);
}

function updateButtons(call) {
  if (!dialog || caps.shown !== keyOf(call)) return;
  const busy = caps.deciding.has(keyOf(call));
  const ack = dialog.querySelector(".consent-ack input");
  const phrase = dialog.querySelector(".consent-phrase-input");
  const ready =
    (!ack || ack.checked) && (!phrase || phrase.value.trim() === call.phrase);
  dialog.querySelector(".consent-allow").disabled = busy || !ready;
  dialog.querySelector(".consent-deny").disabled = busy;
  dialog.querySelector(".consent-form").setAttribute("aria-busy", String(busy));
  const alert = dialog.querySelector(".consent-alert");
  const code = caps.refusal.get(keyOf(call));
  alert.hidden = !code;
  alert.textContent = code ? refusalText(code) : "";
}

function refusalText(code) {
  if (code === "confirmation_required") return t("consent.refused.confirmation_required");
  return t("consent.refused.other", { code });
}

function decide(call, allow) {
  const key = keyOf(call);
  if (caps.deciding.has(key)) return;
  const frame = { op: "consent", ...idOf(call), allow };
  if (allow) {
    frame.remember = !!dialog.querySelector(".consent-remember input")?.checked;
    frame.acknowledged = !!dialog.querySelector(".consent-ack input")?.checked;
    const phrase = dialog.querySelector(".consent-phrase-input");
    if (phrase) frame.confirmation = phrase.value.trim().slice(0, 64);
  }
  if (!context.send(frame)) return;
  caps.deciding.add(key);
  caps.refusal.delete(key);
  updateButtons(call);
}

function tickDialog() {
  if (!dialog || !caps.shown) return;
  const call = caps.calls.get(caps.shown);
  const countdown = dialog.querySelector(".consent-countdown");
  if (!call || !countdown) return;
  const left = Date.parse(call.expires_at) - serverNow();
  if (left <= 0) {
    // Out of time here: the Runtime expires it (and tells every tab) in a moment.
    caps.expiredHere.add(caps.shown);
    announce(t("consent.expired_here"));
    refreshDialog();
    return;
  }
  // A countdown clock: m:ss, or h:mm:ss past an hour (digits in every language).
  const seconds = Math.ceil(left / 1000);
  const minutes = Math.floor(seconds / 60);
  const ss = String(seconds % 60).padStart(2, "0");
  const clock = minutes >= 60
    ? `${Math.floor(minutes / 60)}:${String(minutes % 60).padStart(2, "0")}:${ss}`
    : `${minutes}:${ss}`;
  const text = t("consent.expires_in", { time: clock });
  if (countdown.textContent !== text) countdown.textContent = text;
  countdown.classList.toggle("soon", left < 30_000);
}

// --- providers ----------------------------------------------------------------------------

function report(call, ok, value) {
  const frame = { op: "capability_done", ...idOf(call), ok };
  if (ok) frame.result = value;
  else frame.code = value;
  context.send(frame);
}

async function run(call) {
  try {
    switch (call.capability) {
      case "app.open_url":
        return openUrl(call);
      case "clipboard.write":
        try {
          await navigator.clipboard.writeText(String(call.arguments.text ?? ""));
          return report(call, true, { written: true });
        } catch {
          return report(call, false, "clipboard_denied");
        }
      case "device.pick_file":
        return pickFile(call);
      case "notification.show":
        showNotification(call.arguments);
        return report(call, true, { shown: true });
      default:
        return report(call, false, "provider_failed");
    }
  } catch {
    return report(call, false, "provider_failed");
  }
}

function openUrl(call) {
  let url = null;
  try {
    url = new URL(String(call.arguments.url));
  } catch {
    url = null;
  }
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:")) {
    return report(call, false, "capability_input_invalid");
  }
  // Without the person's click (a remembered grant, a reload) the browser blocks the
  // window; "noopener" makes window.open return null either way, so ask first.
  if (navigator.userActivation && !navigator.userActivation.isActive) {
    return report(call, false, "popup_blocked");
  }
  window.open(url.href, "_blank", "noopener,noreferrer");
  return report(call, true, { opened: true });
}

function pickFile(call) {
  const input = el("input", "consent-file-input");
  input.type = "file";
  input.hidden = true;
  const accept = Array.isArray(call.arguments.accept) ? call.arguments.accept : [];
  if (accept.length) input.accept = accept.join(",");
  let settled = false;
  const settle = () => {
    settled = true;
    input.remove();
  };
  input.addEventListener("cancel", () => {
    if (settled) return;
    settle();
    report(call, false, "cancelled_by_user");
  });
  input.addEventListener("change", () => {
    if (settled) return;
    const file = input.files && input.files[0];
    settle();
    if (!file) report(call, false, "cancelled_by_user");
    else upload(call, file);
  });
  document.body.append(input);
  input.click(); // inside the Allow click's user activation
}

async function upload(call, file) {
  const query = new URLSearchParams(idOf(call));
  try {
    const response = await fetch(`/capabilities/upload?${query}`, {
      method: "POST",
      credentials: "same-origin",
      headers: {
        "Content-Type": file.type || "application/octet-stream",
        "X-File-Name": encodeURIComponent(file.name),
        "X-Upload-Token": call.upload_token || "",
      },
      body: file,
    });
    if (!response.ok && response.status !== 413 && response.status !== 409) {
      report(call, false, "provider_failed");
    }
    if (response.status === 413) announce(t("consent.too_large"));
  } catch {
    report(call, false, "provider_failed");
  }
}

function showNotification(args) {
  const title = String(args.title || "");
  const body = String(args.body || "");
  const text = el("div", "toast-body");
  text.append(el("strong", "toast-title", title));
  if (body) text.append(el("span", "toast-text", body));
  showToast("info capability-toast", text);
  // A system notification only where the person already allowed them: never asked here.
  if ("Notification" in window && Notification.permission === "granted") {
    try {
      new Notification(title, { body });
    } catch {
      // Some browsers allow them from service workers only: the toast is enough.
    }
  }
}

// --- what the timeline calls --------------------------------------------------------------

export function initConsent(timeline) {
  context = timeline;
  setInterval(tickDialog, 1000);
}

export function resetConsent(frame) {
  const now = Date.parse(frame.now);
  caps.clockOffset = Number.isNaN(now) ? 0 : now - Date.now();
  caps.calls.clear();
  caps.claimed.clear();
  caps.deciding.clear();
  caps.refusal.clear();
  caps.shown = null;
  onCapabilities(frame.capability_calls || []);
}

export function onCapabilities(calls) {
  for (const call of calls) {
    const key = keyOf(call);
    if (call.state !== "awaiting_consent") caps.deciding.delete(key);
    if (OPEN.has(call.state)) caps.calls.set(key, call);
    else {
      caps.calls.delete(key);
      caps.expiredHere.delete(key);
      caps.claimed.delete(key);
      caps.refusal.delete(key);
    }
    if (call.state === "expired") announce(t("consent.expired", { what: wordsFor(call.capability) }));
    // Approved without a dialog (display_only, remembered consent): the first tab
    // to claim it runs it. A person's "allow" is claimed by the tab that decided.
    const unattended = call.decision === "automatic" || call.decision === "remembered";
    if (call.state === "approved" && call.runs_in === "shell" && unattended && !caps.claimed.has(key)) {
      caps.claimed.add(key);
      context.send({ op: "claim", ...idOf(call) });
    }
  }
  refreshDialog();
}

export function onCapabilityRun(frame) {
  caps.calls.set(keyOf(frame), frame);
  run(frame);
}

export function onCapabilityReceipt(frame) {
  const key = keyOf(frame);
  if (frame.action !== "consent") return;
  caps.deciding.delete(key);
  if (frame.outcome === "accepted") {
    const call = caps.calls.get(key);
    if (call && call.state === "awaiting_consent") caps.calls.set(key, { ...call, state: "decided" });
  } else if (frame.outcome === "confirmation_required") {
    caps.refusal.set(key, frame.outcome);
  } else {
    caps.calls.delete(key); // over, or gone: its dialog closes
  }
  const call = caps.calls.get(key);
  if (call) updateButtons(call);
  refreshDialog();
}
