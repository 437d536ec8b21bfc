// Draw & Guess: a drawing game between the person and the agent, using only the MiniApp
// SDK. Round A: the agent draws (draw), the person guesses, the agent takes the guesses
// (next_guess, or the "guess" event) and judges them. Round B: the person draws, the
// agent pulls the strokes (strokes, or the "snapshot" event) and guesses (guess), the
// person marks each guess. Everything that must survive a reload (score, history, the
// round, which calls were answered and with what) lives in LineUpApp.state; a call the
// Runtime delivers again after a reload gets the answer it was already given.
"use strict";

const W = 400;
const H = 300;
const POINTS = 10;
const MAX_HISTORY = 12;
const MAX_GUESSES = 40;
const MAX_ANSWERED = 40;
const MAX_STROKES = 160;
const MAX_STATE_CHARS = 60 * 1024; // the Runtime keeps at most 64 KiB
const MAX_EVENT_CHARS = 15 * 1024; // LineUpSurface.event takes under 16 KiB
const SNAPSHOT_EVERY_MS = 700;
const INK = "#2b2d42";
const COLOURS = [ // [name: colour.<name> in the strings, colour]
  ["black", "#2b2d42"],
  ["red", "#ef476f"],
  ["orange", "#f78c1f"],
  ["yellow", "#f2c014"],
  ["green", "#06a77d"],
  ["blue", "#118ab2"],
  ["brown", "#8d5a3b"],
];

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

// t() for a sentence with elements in it: the nodes of `key` with its {{placeholders}}
// filled from `values` (a Node stays itself, anything else is text).
function tNodes(key, values) {
  const marked = {};
  for (const [name, value] of Object.entries(values)) marked[name] = value instanceof Node ? `\u0000${name}\u0000` : value;
  return t(key, marked)
    .split("\u0000")
    .map((part, at) => (at % 2 ? values[part] : part))
    .filter((part) => part !== "");
}

setLocale(document.documentElement.lang || navigator.language);

// --- Enter and input methods --------------------------------------------------------------
// An Enter that picks characters in an input method (pinyin, say) must not also submit:
// the browser marks it isComposing (keyCode 229 where it does not), and it can arrive
// between compositionstart and compositionend. After compositionend, Enter submits.
let composing = false;
document.addEventListener("compositionstart", () => (composing = true), true);
document.addEventListener("compositionend", () => (composing = false), true);

function composingEnter(event) {
  return event.isComposing || event.keyCode === 229 || composing;
}

const $ = (id) => document.getElementById(id);
const app = $("app");
const ink = $("ink");
const live = $("live");
const canvas = $("canvas");

let state = { score: 0, next: 1, round: null, history: [], answered: {} };
const waiting = new Map(); // call_id -> {tool, round_id}: calls the app holds open
let pen = { color: COLOURS[0][1], width: 5 };
let drawn = { round: null, count: 0 }; // what #ink shows
let drawing = null; // the stroke under the person's pointer
let snapshotTimer = null;
let lastSnapshot = 0;

// --- persistence and answers --------------------------------------------------------------

let saving = Promise.resolve();

function save() {
  const snapshot = JSON.parse(JSON.stringify(state));
  const next = saving.then(() => LineUpApp.state.set(snapshot));
  saving = next.catch(() => {});
  return next;
}

function remember(callId, result) {
  state.answered[callId] = result;
  const ids = Object.keys(state.answered);
  for (const id of ids.slice(0, Math.max(0, ids.length - MAX_ANSWERED))) delete state.answered[id];
}

async function answer(callId, result) {
  waiting.delete(callId);
  await LineUpApp.tools.complete(callId, result);
}

async function refuse(callId, code, message) {
  waiting.delete(callId);
  await LineUpApp.tools.fail(callId, code, message);
}

function emit(name, data) {
  try {
    LineUpSurface.event(name, data);
  } catch (error) {
    console.warn(`draw-guess: ${name} event not sent`, error);
  }
}

// --- rounds -------------------------------------------------------------------------------

function current(roundId, kind) {
  const round = state.round;
  if (!round || round.id !== roundId || (kind && round.kind !== kind)) return null;
  return round;
}

function startRound(kind, callId, fields) {
  const old = state.round;
  const done = old && !old.ended ? finishRound("replaced") : [];
  const id = `r${state.next}`;
  state.next += 1;
  state.round = {
    id,
    kind,
    call_id: callId,
    seconds: fields.seconds,
    deadline: Date.now() + fields.seconds * 1000,
    strokes: [],
    guesses: [],
    ended: null,
    ...fields,
  };
  return { round: state.round, done };
}

// Ends the round (state only): the calls it leaves waiting get their answers (returned,
// to send after the state is saved).
function finishRound(outcome) {
  const round = state.round;
  round.ended = outcome;
  const points = outcome === "guessed" ? POINTS : 0;
  state.score += points;
  state.history.unshift({
    id: round.id,
    kind: round.kind,
    word: round.word || null,
    outcome,
    points,
  });
  state.history = state.history.slice(0, MAX_HISTORY);
  const done = [];
  for (const [callId, held] of waiting) {
    if (held.round_id !== round.id) continue;
    const result =
      held.tool === "draw-guess.guess"
        ? { correct: false, score: state.score, ended: outcome }
        : { guess: null, ended: outcome };
    remember(callId, result);
    done.push([callId, result]);
  }
  for (const [callId] of done) waiting.delete(callId);
  for (const guess of round.agent_guesses || []) if (guess.verdict === null) guess.verdict = "late";
  emit("round", { round_id: round.id, kind: round.kind, phase: "ended", outcome, score: state.score });
  return done;
}

async function settle(done) {
  await save();
  render();
  for (const [callId, result] of done) await answer(callId, result).catch(() => {});
}

function tick() {
  const round = state.round;
  if (round && !round.ended && Date.now() >= round.deadline) {
    settle(finishRound("timeout")).catch(failed);
  }
  renderTimer();
}

// --- tools --------------------------------------------------------------------------------

const tools = {
  "draw-guess.start_round_a": async (call, args) => {
    const fields = { word_length: args.word_length, hint: args.hint || null, seconds: args.seconds };
    const { round, done } = startRound("a", call.call_id, fields);
    const result = { round_id: round.id };
    remember(call.call_id, result);
    await settle(done);
    emit("round", { round_id: round.id, kind: "a", phase: "started", seconds: round.seconds });
    await answer(call.call_id, result);
  },

  "draw-guess.start_round_b": async (call, args) => {
    const fields = { word: args.word, seconds: args.seconds, agent_guesses: [] };
    const { round, done } = startRound("b", call.call_id, fields);
    const result = { round_id: round.id };
    remember(call.call_id, result);
    await settle(done);
    emit("round", { round_id: round.id, kind: "b", phase: "started", seconds: round.seconds });
    await answer(call.call_id, result);
  },

  "draw-guess.draw": async (call, args) => {
    const round = current(args.round_id, "a");
    if (!round) return refuse(call.call_id, "round_not_found", "no such round A");
    if (round.ended) return refuse(call.call_id, "round_over", `the round ended: ${round.ended}`);
    const before = round.strokes.length;
    round.strokes.push(...args.strokes.map(cleanStroke));
    const result = { drawn: args.strokes.length, total: round.strokes.length };
    remember(call.call_id, result);
    if (JSON.stringify(state).length > MAX_STATE_CHARS || round.strokes.length > MAX_STROKES) {
      round.strokes.length = before;
      delete state.answered[call.call_id];
      return refuse(call.call_id, "canvas_full", "the canvas holds no more strokes");
    }
    await save();
    render();
    await answer(call.call_id, result);
  },

  "draw-guess.next_guess": async (call, args) => {
    const round = current(args.round_id, "a");
    if (!round) return refuse(call.call_id, "round_not_found", "no such round A");
    const untaken = round.guesses.find((g) => !g.taken);
    if (untaken) return handOver(round, untaken, call.call_id);
    if (round.ended) return answer(call.call_id, { guess: null, ended: round.ended });
    waiting.set(call.call_id, { tool: call.tool, round_id: round.id });
    render();
  },

  "draw-guess.judge": async (call, args) => {
    const round = current(args.round_id, "a");
    if (!round) return refuse(call.call_id, "round_not_found", "no such round A");
    if (round.ended) return refuse(call.call_id, "round_over", `the round ended: ${round.ended}`);
    const latest = round.guesses[round.guesses.length - 1];
    if (args.correct && !latest) return refuse(call.call_id, "no_guess", "nothing was guessed yet");
    if (latest) latest.verdict = args.correct ? "right" : "wrong";
    if (args.hint) round.hint = args.hint;
    let done = [];
    if (args.correct) {
      round.word = latest.text;
      done = finishRound("guessed");
    } else {
      flash(t("guess.not_quite"), "lose", args.hint ? t("guess.hint", { hint: args.hint }) : t("guess.keep_guessing"));
    }
    const result = { score: state.score, ...(round.ended ? { ended: round.ended } : {}) };
    remember(call.call_id, result);
    await settle(done);
    await answer(call.call_id, result);
  },

  "draw-guess.end_round": async (call, args) => {
    const round = current(args.round_id);
    if (!round) return refuse(call.call_id, "round_not_found", "no such round");
    round.word = args.word;
    const entry = state.history.find((h) => h.id === round.id);
    if (entry) entry.word = args.word;
    const done = round.ended ? [] : finishRound("revealed");
    const result = { score: state.score, ended: round.ended };
    remember(call.call_id, result);
    await settle(done);
    await answer(call.call_id, result);
  },

  "draw-guess.strokes": async (call, args) => {
    const round = current(args.round_id, "b");
    if (!round) return refuse(call.call_id, "round_not_found", "no such round B");
    const result = { strokes: fitted(round.strokes, 120 * 1024) };
    if (round.ended) result.ended = round.ended;
    await answer(call.call_id, result);
  },

  "draw-guess.guess": async (call, args) => {
    const round = current(args.round_id, "b");
    if (!round) return refuse(call.call_id, "round_not_found", "no such round B");
    if (round.ended) {
      return answer(call.call_id, { correct: false, score: state.score, ended: round.ended });
    }
    if (!round.agent_guesses.some((g) => g.call_id === call.call_id)) {
      round.agent_guesses.push({ call_id: call.call_id, text: args.guess, verdict: null });
      round.agent_guesses = round.agent_guesses.slice(-MAX_GUESSES);
      await save();
    }
    waiting.set(call.call_id, { tool: call.tool, round_id: round.id });
    render();
  },
};

// A person's guess goes to a next_guess call: kept first, then answered. A call that is
// already over (its timeout) gives the guess back for the next one.
async function handOver(round, guess, callId) {
  guess.taken = callId;
  const result = { guess: guess.text };
  remember(callId, result);
  await save();
  render();
  try {
    await answer(callId, result);
  } catch (error) {
    if (guess.taken === callId) guess.taken = null;
    delete state.answered[callId];
    await save();
    const next = [...waiting].find(([, held]) => held.round_id === round.id);
    if (next) await handOver(round, guess, next[0]);
  }
}

function cleanStroke(stroke) {
  return {
    points: stroke.points.map(([x, y]) => [clamp(x, W), clamp(y, H)]),
    color: stroke.color || INK,
    width: stroke.width || 5,
  };
}

function clamp(value, max) {
  return Math.round(Math.min(max, Math.max(0, value)) * 10) / 10;
}

async function work(call) {
  const known = state.answered[call.call_id];
  if (known) return answer(call.call_id, known); // delivered again after a reload
  const handler = tools[call.tool];
  if (!handler) return refuse(call.call_id, "tool_unknown", "this app has no such tool");
  return handler(call, call.arguments || {});
}

// --- the person's input -------------------------------------------------------------------

// Not a <form>: the sandbox (allow-scripts only) blocks form submission.
function submitGuess() {
  const input = $("guess-input");
  const text = input.value.trim();
  const round = state.round;
  if (!text || !round || round.kind !== "a" || round.ended) return;
  input.value = "";
  const guess = { text, taken: null, verdict: null };
  round.guesses.push(guess);
  round.guesses = round.guesses.slice(-MAX_GUESSES);
  emit("guess", { round_id: round.id, guess: text });
  const held = [...waiting].find(([, h]) => h.tool === "draw-guess.next_guess" && h.round_id === round.id);
  const step = held ? handOver(round, guess, held[0]) : save().then(render);
  step.catch(failed);
  render();
}

$("guess-button").addEventListener("click", submitGuess);
$("guess-input").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !composingEnter(event)) submitGuess();
});

$("agent-guesses").addEventListener("click", (event) => {
  const button = event.target.closest("button[data-verdict]");
  const round = state.round;
  if (!button || !round || round.kind !== "b" || round.ended) return;
  const guess = round.agent_guesses.find((g) => g.call_id === button.dataset.callId);
  if (!guess || guess.verdict !== null) return;
  const correct = button.dataset.verdict === "right";
  guess.verdict = correct ? "right" : "wrong";
  waiting.delete(guess.call_id); // answered below, not as "the round ended"
  let done = [];
  if (correct) done = finishRound("guessed");
  else flash(t("agent.nope"), "lose", t("agent.keeps_guessing"));
  const result = { correct, score: state.score, ...(round.ended ? { ended: round.ended } : {}) };
  remember(guess.call_id, result);
  (async () => {
    await settle(done);
    await answer(guess.call_id, result).catch(() => {});
  })().catch(failed);
});

function canDraw() {
  const round = state.round;
  return round && round.kind === "b" && !round.ended;
}

function logical(event) {
  const point = new DOMPoint(event.clientX, event.clientY).matrixTransform(canvas.getScreenCTM().inverse());
  return [Math.round(Math.min(W, Math.max(0, point.x))), Math.round(Math.min(H, Math.max(0, point.y)))];
}

canvas.addEventListener("pointerdown", (event) => {
  if (!canDraw() || event.button !== 0) return;
  canvas.setPointerCapture(event.pointerId);
  drawing = { points: [logical(event)], color: pen.color, width: pen.width };
  live.replaceChildren(strokePath(drawing));
});

canvas.addEventListener("pointermove", (event) => {
  if (!drawing) return;
  const events = event.getCoalescedEvents ? event.getCoalescedEvents() : [event];
  for (const each of events.length ? events : [event]) {
    const point = logical(each);
    const last = drawing.points[drawing.points.length - 1];
    if (Math.hypot(point[0] - last[0], point[1] - last[1]) >= 2) drawing.points.push(point);
  }
  live.replaceChildren(strokePath(drawing));
});

function endStroke() {
  if (!drawing) return;
  const stroke = { ...drawing, points: simplify(drawing.points, 0.8) };
  drawing = null;
  live.replaceChildren();
  const round = state.round;
  if (!canDraw() || round.strokes.length >= MAX_STROKES) return;
  round.strokes.push(stroke);
  if (JSON.stringify(state).length > MAX_STATE_CHARS) {
    round.strokes.pop();
    flash(t("canvas.full"), "lose", t("canvas.full_help"));
  }
  drawChanged();
}

canvas.addEventListener("pointerup", endStroke);
canvas.addEventListener("pointercancel", endStroke);

$("undo").addEventListener("click", () => {
  if (!canDraw() || !state.round.strokes.length) return;
  state.round.strokes.pop();
  drawChanged();
});

$("clear").addEventListener("click", () => {
  if (!canDraw() || !state.round.strokes.length) return;
  state.round.strokes = [];
  drawChanged();
});

$("pen-size").addEventListener("click", () => {
  pen = { ...pen, width: pen.width === 5 ? 10 : 5 };
  renderPens();
});

for (const [name, color] of COLOURS) {
  const swatch = document.createElement("button");
  swatch.type = "button";
  swatch.className = "swatch";
  swatch.style.background = color;
  swatch.dataset.color = color;
  swatch.dataset.i18nAriaLabel = `colour.${name}`; // setLocale labels it
  swatch.setAttribute("aria-label", t(`colour.${name}`));
  swatch.addEventListener("click", () => {
    pen = { ...pen, color };
    renderPens();
  });
  $("swatches").append(swatch);
}

function drawChanged() {
  save().catch(failed);
  render();
  scheduleSnapshot();
}

// Throttled: at most one snapshot per SNAPSHOT_EVERY_MS, the last change always sent.
function scheduleSnapshot() {
  if (snapshotTimer !== null) return;
  const wait = Math.max(0, lastSnapshot + SNAPSHOT_EVERY_MS - Date.now());
  snapshotTimer = setTimeout(() => {
    snapshotTimer = null;
    lastSnapshot = Date.now();
    const round = state.round;
    if (!round || round.kind !== "b") return;
    emit("snapshot", { round_id: round.id, strokes: fitted(round.strokes, MAX_EVENT_CHARS) });
  }, wait);
}

// The strokes, simplified harder until their JSON fits in `limit` characters; the
// oldest go first if even that is not enough.
function fitted(strokes, limit) {
  const compact = (tolerance) =>
    strokes.map((s) => ({ points: simplify(s.points, tolerance), color: s.color, width: s.width }));
  for (const tolerance of [0, 1.5, 3, 6]) {
    const result = compact(tolerance);
    if (JSON.stringify(result).length <= limit) return result;
  }
  const result = compact(6);
  while (result.length && JSON.stringify(result).length > limit) result.shift();
  return result;
}

// Ramer-Douglas-Peucker on integer points.
function simplify(points, tolerance) {
  if (tolerance <= 0 || points.length < 3) return points;
  const [ax, ay] = points[0];
  const [bx, by] = points[points.length - 1];
  let index = 0;
  let far = -1;
  for (let i = 1; i < points.length - 1; i += 1) {
    const d = segmentDistance(points[i], ax, ay, bx, by);
    if (d > far) [index, far] = [i, d];
  }
  if (far <= tolerance) return [points[0], points[points.length - 1]];
  return [...simplify(points.slice(0, index + 1), tolerance).slice(0, -1), ...simplify(points.slice(index), tolerance)];
}

function segmentDistance([px, py], ax, ay, bx, by) {
  const dx = bx - ax;
  const dy = by - ay;
  const t = dx || dy ? Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy))) : 0;
  return Math.hypot(px - ax - t * dx, py - ay - t * dy);
}

// --- rendering ----------------------------------------------------------------------------

function strokePath(stroke, fresh) {
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  const [first, ...rest] = stroke.points;
  const d = `M${first[0]} ${first[1]}` + (rest.length ? rest.map(([x, y]) => `L${x} ${y}`).join("") : "l0.01 0");
  path.setAttribute("d", d);
  path.setAttribute("stroke", stroke.color || INK);
  path.setAttribute("stroke-width", String(stroke.width || 5));
  if (fresh) {
    path.setAttribute("pathLength", "1");
    path.classList.add("fresh");
    path.addEventListener("animationend", () => {
      path.classList.remove("fresh");
      path.removeAttribute("pathLength");
    });
  }
  return path;
}

function renderInk() {
  const round = state.round;
  const strokes = round ? round.strokes : [];
  const same = round && drawn.round === round.id && strokes.length >= drawn.count;
  if (!same) {
    ink.replaceChildren();
    drawn = { round: round ? round.id : null, count: 0 };
  }
  // The agent's new strokes draw themselves; a reload shows the drawing at once.
  const animate = same && round.kind === "a";
  for (const stroke of strokes.slice(drawn.count)) ink.append(strokePath(stroke, animate));
  drawn.count = strokes.length;
}

let flashTimer = null;

function flash(text, tone, small) {
  const banner = $("banner");
  banner.className = `banner flash ${tone}`;
  banner.replaceChildren(text);
  if (small) {
    const note = document.createElement("small");
    note.textContent = small;
    banner.append(note);
  }
  banner.hidden = false;
  clearTimeout(flashTimer);
  flashTimer = setTimeout(() => renderBanner(), 1600);
}

function renderBanner() {
  flashTimer = null;
  const banner = $("banner");
  const round = state.round;
  if (!round || !round.ended) {
    banner.hidden = true;
    return;
  }
  const word = round.word ? round.word : null;
  let text;
  let small;
  let tone = "lose";
  if (round.ended === "guessed") {
    tone = "win";
    text = t(round.kind === "a" ? "banner.you_got_it" : "banner.agent_got_it");
    small = t("banner.it_was", { word, points: POINTS });
  } else if (round.ended === "timeout") {
    text = t("banner.times_up");
    small = word ? t("banner.word_was", { word }) : t("banner.secret");
  } else if (round.ended === "revealed") {
    text = t("banner.round_over");
    small = word ? t("banner.word_was", { word }) : "";
  } else {
    text = t("banner.replaced");
  }
  banner.className = `banner ${tone}`;
  banner.replaceChildren(text);
  if (small) {
    const note = document.createElement("small");
    note.textContent = small;
    banner.append(note);
  }
  banner.hidden = false;
}

function renderTimer() {
  const round = state.round;
  const timer = $("timer");
  if (!round) {
    timer.hidden = true;
    return;
  }
  timer.hidden = false;
  const left = round.ended ? 0 : Math.max(0, round.deadline - Date.now());
  const seconds = Math.ceil(left / 1000);
  $("timer-text").textContent = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
  $("timer-fill").style.transform = `scaleX(${Math.min(1, left / (round.seconds * 1000))})`;
  timer.classList.toggle("low", !round.ended && seconds <= 10);
  timer.dataset.seconds = String(seconds);
}

function renderPens() {
  for (const swatch of $("swatches").children) {
    swatch.setAttribute("aria-pressed", String(swatch.dataset.color === pen.color));
  }
  $("pen-size").setAttribute("aria-pressed", String(pen.width > 5));
}

function renderPrompt(round) {
  const prompt = $("prompt");
  prompt.replaceChildren();
  if (!round) {
    prompt.textContent = t("prompt.ready");
    return;
  }
  if (round.kind === "a") {
    const blanks = document.createElement("span");
    blanks.className = "blanks";
    blanks.textContent = round.ended && round.word ? round.word : Array(round.word_length).fill("_").join(" ");
    const key = round.ended ? "prompt.was" : "prompt.guess";
    prompt.append(...tNodes(key, { word: blanks, count: round.word_length }));
  } else {
    const word = document.createElement("span");
    word.className = "word";
    word.textContent = round.word;
    prompt.append(...tNodes(round.ended ? "prompt.drew" : "prompt.draw", { word }));
  }
}

function renderGuesses(round) {
  const list = $("guesses");
  const guesses = round && round.kind === "a" ? round.guesses : [];
  list.replaceChildren(
    ...guesses.map((g) => {
      const item = document.createElement("li");
      item.textContent = g.text;
      if (g.verdict) item.dataset.verdict = g.verdict;
      return item;
    }),
  );
}

function renderAgentGuesses(round) {
  const list = $("agent-guesses");
  const guesses = round && round.kind === "b" ? round.agent_guesses : [];
  list.replaceChildren(
    ...guesses.map((g) => {
      const item = document.createElement("li");
      item.dataset.callId = g.call_id;
      const said = document.createElement("span");
      said.className = "said";
      said.textContent = g.text;
      item.append(said);
      if (g.verdict === null && !round.ended) {
        for (const verdict of ["right", "wrong"]) {
          const button = document.createElement("button");
          button.type = "button";
          button.dataset.verdict = verdict;
          button.dataset.callId = g.call_id;
          button.textContent = t(`agent.${verdict}`);
          item.append(button);
        }
      } else if (g.verdict) {
        item.dataset.verdict = g.verdict;
        const verdict = document.createElement("span");
        verdict.className = "verdict";
        verdict.textContent = t(`verdict.${g.verdict}`);
        item.append(verdict);
      }
      return item;
    }),
  );
}

function renderHistory() {
  const list = $("history-list");
  list.replaceChildren(
    ...state.history.map((h) => {
      const item = document.createElement("li");
      item.dataset.outcome = h.outcome;
      const word = h.word || "?";
      if (h.outcome === "guessed") {
        item.textContent = t(h.kind === "a" ? "history.you_guessed" : "history.agent_guessed", { word, points: h.points });
      } else if (["timeout", "revealed", "replaced"].includes(h.outcome)) {
        item.textContent = t(`history.${h.outcome}`, { word });
      } else {
        item.textContent = `${word} · ${h.outcome}`;
      }
      return item;
    }),
  );
  $("history-empty").hidden = state.history.length > 0;
}

function render() {
  const round = state.round;
  app.dataset.phase = round ? round.kind : "idle";
  if (round && round.ended) app.dataset.ended = round.ended;
  else delete app.dataset.ended;
  $("mode").textContent = t(round ? `mode.${round.kind}` : "mode.waiting");
  $("score").textContent = `★ ${number(state.score)}`;
  $("idle").hidden = Boolean(round);
  const playingA = round && round.kind === "a" && !round.ended;
  const playingB = round && round.kind === "b" && !round.ended;
  $("guess-form").hidden = !playingA;
  $("hint").hidden = !(round && round.kind === "a" && round.hint);
  $("hint").textContent = round && round.hint ? t("guess.hint", { hint: round.hint }) : "";
  const held = round && [...waiting.values()].some((h) => h.tool === "draw-guess.next_guess" && h.round_id === round.id);
  $("waiting").hidden = !(playingA && held);
  $("pens").hidden = !playingB;
  $("undo").disabled = !(playingB && round.strokes.length);
  $("clear").disabled = !(playingB && round.strokes.length);
  renderPrompt(round);
  renderGuesses(round);
  renderAgentGuesses(round);
  renderHistory();
  renderInk();
  renderPens();
  renderTimer();
  if (flashTimer === null) renderBanner();
}

function failed(error) {
  document.body.dataset.error = (error && error.code) || "error";
  console.warn("draw-guess:", error);
}

(async () => {
  const context = await LineUpApp.context();
  setLocale(context.locale);
  const saved = await LineUpApp.state.get();
  state = { ...state, ...(saved || {}) };
  render();
  await LineUpApp.ready();
  LineUpApp.tools.subscribe((call) => {
    work(call).catch(failed);
  });
  setInterval(tick, 250);
  document.body.dataset.ready = "true";
})().catch(failed);
