// Focus Timer: a card an agent shows in the conversation (ui.open, surface "card").
// It gets the bridge only (LineUpSurface): the agent's state arrives through onState
// ({minutes, label}); the person's Start is sent up as the "started" event and the
// end of a session as "done" ({minutes}). Nothing is stored: a reload starts over.
// The countdown runs from a deadline on the monotonic clock, so a throttled
// background frame never drifts; it only redraws late. A card has no MiniApp SDK
// context: its language is <html lang>, which the host sets to the person's.
"use strict";

const DEFAULT_MINUTES = 25;
const MAX_MINUTES = 600;
const TICK_MS = 250;

// --- the person's language ----------------------------------------------------------------
// This app's strings in both languages it speaks are the JSON in its HTML (the script
// element of type application/json, id "strings": {"en": {...}, "zh-CN": {...}}, each
// an i18next JSON v4 catalogue: flat keys, {{placeholders}}, plurals as key_one /
// key_other): a surface can load nothing else. The language is the person's: <html lang> (the host
// sets it) at once, the SDK's context().locale when it answers. Numbers and dates go
// through Intl in that language.
const STRINGS = JSON.parse(document.getElementById("strings").textContent);
let locale = "en";
let plurals = new Intl.PluralRules(locale);

// The language of ours a BCP 47 tag asks for: any Chinese is zh-CN, anything else English.
function ourLocale(tag) {
  return String(tag || "").split(/[-_]/)[0].toLowerCase() === "zh" ? "zh-CN" : "en";
}

// Speak `tag` from now on: <html lang> and every [data-i18n] / [data-i18n-<attribute>]
// in the page. True when the language changed.
function setLocale(tag) {
  const next = ourLocale(tag);
  const changed = next !== locale;
  locale = next;
  plurals = new Intl.PluralRules(locale);
  document.documentElement.lang = locale;
  for (const node of document.querySelectorAll("[data-i18n]")) node.textContent = t(node.dataset.i18n);
  for (const name of ["aria-label", "placeholder", "title"]) {
    for (const node of document.querySelectorAll(`[data-i18n-${name}]`)) {
      node.setAttribute(name, t(node.getAttribute(`data-i18n-${name}`)));
    }
  }
  return changed;
}

function lookup(strings, key, values) {
  if (typeof values.count === "number") {
    const found = strings[`${key}_${plurals.select(values.count)}`] ?? strings[`${key}_other`];
    if (found !== undefined) return found;
  }
  return strings[key];
}

// The string `key` with its {{placeholders}} filled from `values` (numbers formatted);
// with a numeric `count`, the plural form for it.
function t(key, values = {}) {
  const text = lookup(STRINGS[locale], key, values) ?? lookup(STRINGS.en, key, values) ?? key;
  return text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, name) => {
    if (!(name in values)) return whole;
    return typeof values[name] === "number" ? number(values[name]) : String(values[name]);
  });
}

function number(value, options) {
  return new Intl.NumberFormat(locale, options).format(value);
}

setLocale(document.documentElement.lang || navigator.language);

const $ = (id) => document.getElementById(id);
const root = document.querySelector(".timer");
const timeEl = $("time");
const ringEl = $("ring");
const labelEl = $("label");
const statusEl = $("status");
const announceEl = $("announce");
const startButton = $("start");
const pauseButton = $("pause");
const resetButton = $("reset");

// phase: "ready" (full time, not started), "running", "paused" or "done". `minutes` is
// this session's length, `next` the agent's latest (used from the next fresh start).
const timer = {
  minutes: DEFAULT_MINUTES,
  next: DEFAULT_MINUTES,
  phase: "ready",
  leftMs: DEFAULT_MINUTES * 60000,
  deadline: 0,
  ticker: 0,
};

function minutesOf(value) {
  const n = Number(value);
  if (!Number.isFinite(n)) return DEFAULT_MINUTES;
  return Math.min(MAX_MINUTES, Math.max(1, Math.round(n)));
}

function labelOf(value) {
  const text = typeof value === "string" ? value.trim().slice(0, 60) : "";
  return text || t("timer.focus");
}

function clock(ms) {
  const total = Math.ceil(ms / 1000);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

// "4 minutes, 5 seconds" / "4分钟5秒": Intl.DurationFormat where the browser has it,
// else the catalogue's units joined as the language joins a list of units.
function duration(minutes, seconds) {
  const parts = { ...(minutes ? { minutes } : {}), ...(seconds || !minutes ? { seconds } : {}) };
  if (typeof Intl.DurationFormat === "function") {
    return new Intl.DurationFormat(locale, { style: "long" }).format(parts);
  }
  const words = [];
  if ("minutes" in parts) words.push(t("timer.minutes", { count: minutes }));
  if ("seconds" in parts) words.push(t("timer.seconds", { count: seconds }));
  return new Intl.ListFormat(locale, { type: "unit", style: "long" }).format(words);
}

function minutesText(n) {
  return duration(n, 0);
}

function spoken(ms) {
  const total = Math.ceil(ms / 1000);
  return duration(Math.floor(total / 60), total % 60);
}

function announce(text) {
  announceEl.textContent = text;
}

function remaining() {
  return timer.phase === "running" ? Math.max(0, timer.deadline - performance.now()) : timer.leftMs;
}

function render() {
  const left = remaining();
  const total = timer.minutes * 60000;
  timeEl.textContent = clock(left);
  timeEl.setAttribute("aria-label", t("timer.time_left_spoken", { duration: spoken(left) }));
  // The ring shows the time left; a finished session shows a full (green) ring.
  const shown = timer.phase === "done" ? 0 : 100 - (100 * left) / total;
  ringEl.style.strokeDashoffset = String(shown);
  root.dataset.phase = timer.phase;
  const minutes = number(timer.minutes);
  statusEl.textContent = timer.phase === "done" ? t("timer.done") : t(`timer.${timer.phase}`, { minutes });
  startButton.textContent = t(timer.phase === "paused" ? "timer.resume" : timer.phase === "done" ? "timer.again" : "timer.start");
  startButton.disabled = timer.phase === "running";
  pauseButton.disabled = timer.phase !== "running";
  resetButton.disabled = timer.phase === "ready";
}

function stopTicking() {
  if (timer.ticker) clearInterval(timer.ticker);
  timer.ticker = 0;
}

function tick() {
  if (timer.phase !== "running") return;
  if (remaining() > 0) {
    render();
    return;
  }
  stopTicking();
  timer.phase = "done";
  timer.leftMs = 0;
  const hadFocus = document.activeElement === pauseButton;
  render();
  if (hadFocus) startButton.focus();
  announce(t("timer.announce_done", { label: labelEl.textContent, duration: minutesText(timer.minutes) }));
  LineUpSurface.event("done", { minutes: timer.minutes });
}

function start() {
  const fresh = timer.phase === "ready" || timer.phase === "done";
  if (fresh) {
    timer.minutes = timer.next;
    timer.leftMs = timer.minutes * 60000;
  }
  timer.deadline = performance.now() + timer.leftMs;
  timer.phase = "running";
  stopTicking();
  timer.ticker = setInterval(tick, TICK_MS);
  render();
  announce(
    fresh
      ? t("timer.announce_started", { duration: minutesText(timer.minutes) })
      : t("timer.announce_resumed", { duration: spoken(timer.leftMs) }),
  );
  if (fresh) LineUpSurface.event("started", { minutes: timer.minutes });
  pauseButton.focus();
}

function pause() {
  if (timer.phase !== "running") return;
  timer.leftMs = remaining();
  timer.phase = "paused";
  stopTicking();
  render();
  announce(t("timer.announce_paused", { duration: spoken(timer.leftMs) }));
  startButton.focus();
}

function reset() {
  stopTicking();
  timer.phase = "ready";
  timer.minutes = timer.next;
  timer.leftMs = timer.minutes * 60000;
  render();
  announce(t("timer.announce_reset", { duration: minutesText(timer.minutes) }));
  startButton.focus();
}

startButton.addEventListener("click", start);
pauseButton.addEventListener("click", pause);
resetButton.addEventListener("click", reset);

// The agent's state: the label at once; new minutes at once while the timer has not
// started, otherwise from the next Reset or Again (a session is never cut short).
LineUpSurface.onState((state) => {
  labelEl.textContent = labelOf(state.label);
  timer.next = minutesOf(state.minutes);
  if (timer.phase === "ready") {
    timer.minutes = timer.next;
    timer.leftMs = timer.minutes * 60000;
  }
  render();
});

function fit() {
  LineUpSurface.resize(Math.ceil(document.documentElement.getBoundingClientRect().height));
}

labelEl.textContent = labelOf("");
render();
fit();
new ResizeObserver(fit).observe(document.documentElement);
