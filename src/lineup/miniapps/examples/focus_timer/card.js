// Focus Timer: a card an agent shows in the conversation (ui.open, surface "card").
// It gets the bridge only (LineUpSurface): the agent's state arrives through onState
// ({minutes, label}); the person's Start is sent up as the "started" event and the
// end of a session as "done" ({minutes}). Nothing is stored: a reload starts over.
// The countdown runs from a deadline on the monotonic clock, so a throttled
// background frame never drifts; it only redraws late.
"use strict";

const DEFAULT_MINUTES = 25;
const MAX_MINUTES = 600;
const DEFAULT_LABEL = "Focus";
const TICK_MS = 250;

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
  return text || DEFAULT_LABEL;
}

function clock(ms) {
  const total = Math.ceil(ms / 1000);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, "0");
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, "0")}:${seconds}` : `${minutes}:${seconds}`;
}

function plural(n, unit) {
  return `${n} ${unit}${n === 1 ? "" : "s"}`;
}

function spoken(ms) {
  const total = Math.ceil(ms / 1000);
  const minutes = Math.floor(total / 60);
  const seconds = total % 60;
  const parts = [];
  if (minutes) parts.push(plural(minutes, "minute"));
  if (seconds || !minutes) parts.push(plural(seconds, "second"));
  return parts.join(" ");
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
  timeEl.setAttribute("aria-label", `Time left: ${spoken(left)}`);
  // The ring shows the time left; a finished session shows a full (green) ring.
  const shown = timer.phase === "done" ? 0 : 100 - (100 * left) / total;
  ringEl.style.strokeDashoffset = String(shown);
  root.dataset.phase = timer.phase;
  const session = `${timer.minutes}-minute session`;
  statusEl.textContent = {
    ready: `${session}, ready to start`,
    running: `${session}, running`,
    paused: `${session}, paused`,
    done: "Done. Well focused!",
  }[timer.phase];
  startButton.textContent = timer.phase === "paused" ? "Resume" : timer.phase === "done" ? "Again" : "Start";
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
  announce(`${labelEl.textContent}: done, ${plural(timer.minutes, "minute")}.`);
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
  announce(fresh ? `Started: ${plural(timer.minutes, "minute")}.` : `Resumed: ${spoken(timer.leftMs)} left.`);
  if (fresh) LineUpSurface.event("started", { minutes: timer.minutes });
  pauseButton.focus();
}

function pause() {
  if (timer.phase !== "running") return;
  timer.leftMs = remaining();
  timer.phase = "paused";
  stopTicking();
  render();
  announce(`Paused: ${spoken(timer.leftMs)} left.`);
  startButton.focus();
}

function reset() {
  stopTicking();
  timer.phase = "ready";
  timer.minutes = timer.next;
  timer.leftMs = timer.minutes * 60000;
  render();
  announce(`Reset to ${plural(timer.minutes, "minute")}.`);
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

render();
fit();
new ResizeObserver(fit).observe(document.documentElement);
