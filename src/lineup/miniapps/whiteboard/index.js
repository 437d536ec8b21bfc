// Whiteboard: strokes kept as vector data in the Runtime (LineUpApp.state), drawn on a
// <canvas>, with tools for the agent. Only the MiniApp SDK: no network, no storage.
//
// A stroke is {kind, points: [[x, y], ...], color, width, text?} in board units (CSS
// pixels at 100% zoom), the same shape the tools take and give. Every app request
// crosses the shell's 64 KiB limit, so the board holds at most BOARD_BYTES of strokes
// (the state and a snapshot both fit), and an export is made to fit UPLOAD_BYTES.
"use strict";

const BOARD_BYTES = 56 * 1024;
const EVENT_BYTES = 15 * 1024; // LineUpSurface.event data is under 16 KiB
const UPLOAD_BYTES = 60 * 1024;
const MIN_ZOOM = 0.2;
const MAX_ZOOM = 5;
const DRAW_EVENT_MS = 1000;
const KIND_OF_TOOL = { pen: "path", line: "line", rect: "rect", ellipse: "ellipse" };
const TOOL_KEYS = { p: "pen", l: "line", r: "rect", o: "ellipse", t: "text", e: "eraser", h: "hand" };
const COLOURS = [ // [colour, name: colour.<name> in the strings]
  ["#1d2330", "black"], ["#e03131", "red"], ["#f08c00", "orange"], ["#2f9e44", "green"],
  ["#1971c2", "blue"], ["#7048e8", "violet"], ["#c2255c", "pink"], ["#868e96", "grey"],
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
const encoder = new TextEncoder();
const stage = $("stage");
const canvas = $("board");
const ctx = canvas.getContext("2d");
const textEntry = $("text-entry");

const board = { strokes: [], view: { x: 0, y: 0, z: 1 }, applied: [] };
const history = { undo: [], redo: [] };
const pen = { tool: "pen", color: COLOURS[0][0], width: 3 };

// ---- helpers -------------------------------------------------------------------------

function refusal(code, message) {
  const error = new Error(message || code);
  error.code = code;
  return error;
}

const jsonBytes = (value) => encoder.encode(JSON.stringify(value)).length;
const round = (n) => Math.round(n * 10) / 10;
const fontSize = (width) => 10 + 3 * width;
const clampZoom = (z) => Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, z));

function normalize(s) {
  const stroke = {
    kind: s.kind,
    points: s.points.map(([x, y]) => [round(x), round(y)]),
    color: s.color.toLowerCase(),
    width: round(s.width),
  };
  if (s.kind === "text") stroke.text = String(s.text);
  return stroke;
}

function isStroke(s) {
  return s && typeof s === "object" && ["path", "line", "rect", "ellipse", "text"].includes(s.kind) &&
    Array.isArray(s.points) && s.points.length > 0 &&
    s.points.every((p) => Array.isArray(p) && p.length === 2 && p.every(Number.isFinite)) &&
    /^#[0-9a-f]{6}$/.test(s.color) && Number.isFinite(s.width) &&
    (s.kind !== "text" || typeof s.text === "string");
}

function distToSegment(p, a, b) {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const len = dx * dx + dy * dy;
  const t = len ? Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len)) : 0;
  return Math.hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy);
}

// Ramer-Douglas-Peucker: fewer points, the same line within `tolerance`.
function simplify(points, tolerance) {
  if (points.length <= 2 || tolerance <= 0) return points;
  const keep = new Uint8Array(points.length);
  keep[0] = keep[points.length - 1] = 1;
  const stack = [[0, points.length - 1]];
  while (stack.length) {
    const [a, b] = stack.pop();
    let max = 0;
    let at = -1;
    for (let i = a + 1; i < b; i += 1) {
      const d = distToSegment(points[i], points[a], points[b]);
      if (d > max) [max, at] = [d, i];
    }
    if (max > tolerance) {
      keep[at] = 1;
      stack.push([a, at], [at, b]);
    }
  }
  return points.filter((_, i) => keep[i]);
}

function textWidth(s) {
  ctx.save();
  ctx.font = `${fontSize(s.width)}px system-ui, sans-serif`;
  const width = ctx.measureText(s.text).width;
  ctx.restore();
  return width;
}

// [x0, y0, x1, y1] of what a stroke covers.
function bounds(s) {
  if (s.kind === "text") {
    const [x, y] = s.points[0];
    return [x, y, x + textWidth(s), y + fontSize(s.width) * 1.2];
  }
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x, y] of s.points) [x0, y0, x1, y1] = [Math.min(x0, x), Math.min(y0, y), Math.max(x1, x), Math.max(y1, y)];
  const pad = s.width / 2;
  return [x0 - pad, y0 - pad, x1 + pad, y1 + pad];
}

function contentBox(pad = 16) {
  if (!board.strokes.length) return { x: 0, y: 0, w: canvas.clientWidth || 640, h: canvas.clientHeight || 360 };
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const s of board.strokes) {
    const b = bounds(s);
    [x0, y0, x1, y1] = [Math.min(x0, b[0]), Math.min(y0, b[1]), Math.max(x1, b[2]), Math.max(y1, b[3])];
  }
  return { x: Math.floor(x0 - pad), y: Math.floor(y0 - pad), w: Math.ceil(x1 - x0 + 2 * pad), h: Math.ceil(y1 - y0 + 2 * pad) };
}

// The board's size for the agent: the area shown at 100% from the origin, grown to hold every stroke.
function extent() {
  let [w, h] = [canvas.clientWidth, canvas.clientHeight];
  for (const s of board.strokes) {
    const b = bounds(s);
    [w, h] = [Math.max(w, b[2]), Math.max(h, b[3])];
  }
  return { width: Math.ceil(w), height: Math.ceil(h) };
}

function summary(s) {
  const b = bounds(s).map(Math.round);
  const out = { kind: s.kind, color: s.color, width: s.width, points: s.points.length, box: b };
  if (s.kind === "text") out.text = s.text.slice(0, 80);
  return out;
}

// ---- drawing -------------------------------------------------------------------------

function paint(c, s) {
  const p = s.points;
  c.save();
  c.strokeStyle = c.fillStyle = s.color;
  c.lineWidth = s.width;
  c.lineCap = "round";
  c.lineJoin = "round";
  const last = p[p.length - 1];
  c.beginPath();
  if (s.kind === "text") {
    c.font = `${fontSize(s.width)}px system-ui, sans-serif`;
    c.textBaseline = "top";
    c.fillText(s.text, p[0][0], p[0][1]);
  } else if (p.length === 1 || (s.kind === "path" && p.length === 2 && p[0][0] === p[1][0] && p[0][1] === p[1][1])) {
    c.arc(p[0][0], p[0][1], s.width / 2, 0, Math.PI * 2);
    c.fill();
  } else if (s.kind === "path") {
    c.moveTo(p[0][0], p[0][1]);
    for (let i = 1; i < p.length - 1; i += 1) {
      c.quadraticCurveTo(p[i][0], p[i][1], (p[i][0] + p[i + 1][0]) / 2, (p[i][1] + p[i + 1][1]) / 2);
    }
    c.lineTo(last[0], last[1]);
    c.stroke();
  } else if (s.kind === "line") {
    c.moveTo(p[0][0], p[0][1]);
    c.lineTo(last[0], last[1]);
    c.stroke();
  } else if (s.kind === "rect") {
    c.strokeRect(Math.min(p[0][0], last[0]), Math.min(p[0][1], last[1]), Math.abs(last[0] - p[0][0]), Math.abs(last[1] - p[0][1]));
  } else {
    const [cx, cy] = [(p[0][0] + last[0]) / 2, (p[0][1] + last[1]) / 2];
    c.ellipse(cx, cy, Math.abs(last[0] - p[0][0]) / 2, Math.abs(last[1] - p[0][1]) / 2, 0, 0, Math.PI * 2);
    c.stroke();
  }
  c.restore();
}

let draft = null;
let frameRequested = false;

function render() {
  if (frameRequested) return;
  frameRequested = true;
  requestAnimationFrame(() => {
    frameRequested = false;
    paintBoard();
  });
}

function paintBoard() {
  const dpr = window.devicePixelRatio || 1;
  const [w, h] = [Math.round(canvas.clientWidth * dpr), Math.round(canvas.clientHeight * dpr)];
  if (canvas.width !== w || canvas.height !== h) [canvas.width, canvas.height] = [w, h];
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, w, h);
  const { x, y, z } = board.view;
  ctx.setTransform(dpr * z, 0, 0, dpr * z, -x * z * dpr, -y * z * dpr);
  for (const s of board.strokes) paint(ctx, s);
  if (draft) paint(ctx, draft);
  updateChrome();
}

function updateChrome() {
  const n = board.strokes.length;
  $("count").textContent = t("board.strokes", { count: n });
  document.body.dataset.strokes = String(n);
  $("undo").disabled = !history.undo.length;
  $("redo").disabled = !history.redo.length;
  $("zoom-reset").textContent = number(Math.round(board.view.z * 100) / 100, { style: "percent" });
  canvas.setAttribute("aria-label", t("board.label", { count: n }));
}

let noticeTimer = null;
function notice(text) {
  $("notice").textContent = text;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => ($("notice").textContent = ""), 5000);
}

// ---- the board's changes, undo and saving --------------------------------------------

function applyOp(op, forward) {
  if (op.type === "add") {
    if (forward) board.strokes.push(...op.strokes);
    else {
      const gone = new Set(op.strokes);
      board.strokes = board.strokes.filter((s) => !gone.has(s));
    }
  } else if (op.type === "erase") {
    if (forward) for (const r of op.removed) board.strokes.splice(board.strokes.indexOf(r.stroke), 1);
    else for (const r of [...op.removed].reverse()) board.strokes.splice(r.index, 0, r.stroke);
  } else {
    board.strokes = forward ? [] : op.strokes.slice();
  }
}

// body[data-saved] is "false" while a change waits to reach the Runtime.
let saving = Promise.resolve();
let unsaved = 0;
function persist() {
  const state = {
    v: 1,
    strokes: board.strokes.slice(),
    view: { ...board.view },
    pen: { color: pen.color, width: pen.width },
    applied: board.applied.slice(-32),
  };
  unsaved += 1;
  document.body.dataset.saved = "false";
  const run = saving.then(() => LineUpApp.state.set(state));
  saving = run.catch((error) => notice(t("board.not_saved", { code: error.code || "error" }))).finally(() => {
    unsaved -= 1;
    if (!unsaved && !viewTimer) document.body.dataset.saved = "true";
  });
  return run;
}

let viewTimer = null;
function viewChanged() {
  render();
  clearTimeout(viewTimer);
  document.body.dataset.saved = "false";
  viewTimer = setTimeout(() => {
    viewTimer = null;
    persist().catch(() => {});
  }, 600);
}

// Apply one change (op) to the board, keep it for undo and save it. A change that would
// make the board too large to keep is refused (board_full) and leaves nothing behind.
async function change(op, by, callId) {
  applyOp(op, true);
  if (jsonBytes(board.strokes) > BOARD_BYTES) {
    applyOp(op, false);
    render();
    notice(t("board.full"));
    throw refusal("board_full", "the board cannot hold more strokes; clear or erase first");
  }
  history.undo.push(op);
  if (history.undo.length > 200) history.undo.shift();
  history.redo = [];
  if (callId) board.applied.push(callId);
  render();
  if (by === "person") personDrew(op);
  try {
    await persist();
  } catch (error) {
    if (history.undo[history.undo.length - 1] === op) {
      history.undo.pop();
      applyOp(op, false);
      render();
    }
    throw error;
  }
}

function undo() {
  const op = history.undo.pop();
  if (!op) return;
  applyOp(op, false);
  history.redo.push(op);
  render();
  personDrew({ type: "undo" });
  persist().catch(() => {});
}

function redo() {
  const op = history.redo.pop();
  if (!op) return;
  applyOp(op, true);
  history.undo.push(op);
  render();
  personDrew({ type: "redo" });
  persist().catch(() => {});
}

// ---- events for the agent --------------------------------------------------------------

function sendEvent(name, data) {
  try {
    LineUpSurface.event(name, data);
    return true;
  } catch {
    return false;
  }
}

let drawTimer = null;
let drawPending = null;
let drawSentAt = -Infinity;
function personDrew(op) {
  const last = op.type === "add" ? op.strokes[op.strokes.length - 1] : null;
  drawPending = { action: op.type, strokes: board.strokes.length, ...(last ? { last: summary(last) } : {}) };
  if (drawTimer) return;
  drawTimer = setTimeout(() => {
    drawTimer = null;
    drawSentAt = performance.now();
    sendEvent("draw", drawPending);
    drawPending = null;
  }, Math.max(0, drawSentAt + DRAW_EVENT_MS - performance.now()));
}

// The drawing in under `limit` bytes: paths simplified further and further, then only
// the newest strokes that fit.
function boundedSnapshot(limit = EVENT_BYTES) {
  const total = board.strokes.length;
  const base = { ...extent(), total };
  let strokes = board.strokes;
  for (const tolerance of [0, 1, 2, 4, 8]) {
    if (tolerance) {
      strokes = board.strokes.map((s) => (s.kind === "path"
        ? { ...s, points: simplify(s.points, tolerance).map(([x, y]) => [Math.round(x), Math.round(y)]) }
        : s));
    }
    const data = { ...base, strokes, simplified: tolerance > 0, truncated: false };
    if (jsonBytes(data) < limit) return data;
  }
  const budget = limit - jsonBytes({ ...base, strokes: [], simplified: true, truncated: true }) - 16;
  let used = 0;
  let from = strokes.length;
  while (from > 0 && used + jsonBytes(strokes[from - 1]) + 1 < budget) {
    from -= 1;
    used += jsonBytes(strokes[from]) + 1;
  }
  return { ...base, strokes: strokes.slice(from), simplified: true, truncated: true };
}

// ---- export ----------------------------------------------------------------------------

const escapeXml = (text) => text.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

function svgOf(s, tolerance) {
  const p = s.kind === "path" ? simplify(s.points, tolerance) : s.points;
  const last = p[p.length - 1];
  const line = `stroke="${s.color}" stroke-width="${s.width}" stroke-linecap="round" stroke-linejoin="round" fill="none"`;
  if (s.kind === "text") {
    return `<text x="${p[0][0]}" y="${p[0][1]}" font-family="system-ui, sans-serif" font-size="${fontSize(s.width)}" ` +
      `dominant-baseline="text-before-edge" fill="${s.color}">${escapeXml(s.text)}</text>`;
  }
  if (p.length === 1) return `<circle cx="${p[0][0]}" cy="${p[0][1]}" r="${s.width / 2}" fill="${s.color}"/>`;
  if (s.kind === "line") return `<line x1="${p[0][0]}" y1="${p[0][1]}" x2="${last[0]}" y2="${last[1]}" ${line}/>`;
  const [x0, y0, x1, y1] = [Math.min(p[0][0], last[0]), Math.min(p[0][1], last[1]), Math.max(p[0][0], last[0]), Math.max(p[0][1], last[1])];
  if (s.kind === "rect") return `<rect x="${x0}" y="${y0}" width="${round(x1 - x0)}" height="${round(y1 - y0)}" ${line}/>`;
  if (s.kind === "ellipse") {
    return `<ellipse cx="${round((x0 + x1) / 2)}" cy="${round((y0 + y1) / 2)}" rx="${round((x1 - x0) / 2)}" ry="${round((y1 - y0) / 2)}" ${line}/>`;
  }
  const d = [`M${p[0][0]} ${p[0][1]}`];
  for (let i = 1; i < p.length - 1; i += 1) {
    d.push(`Q${p[i][0]} ${p[i][1]} ${round((p[i][0] + p[i + 1][0]) / 2)} ${round((p[i][1] + p[i + 1][1]) / 2)}`);
  }
  d.push(`L${last[0]} ${last[1]}`);
  return `<path d="${d.join("")}" ${line}/>`;
}

function svgText() {
  const b = contentBox();
  for (const tolerance of [0, 0.5, 1, 2, 4]) {
    const text = [
      `<svg xmlns="http://www.w3.org/2000/svg" width="${b.w}" height="${b.h}" viewBox="${b.x} ${b.y} ${b.w} ${b.h}">`,
      `<rect x="${b.x}" y="${b.y}" width="${b.w}" height="${b.h}" fill="#ffffff"/>`,
      ...board.strokes.map((s) => svgOf(s, tolerance)),
      "</svg>\n",
    ].join("\n");
    if (encoder.encode(text).length <= UPLOAD_BYTES) return text;
  }
  throw refusal("export_too_large", "the drawing is too large to export as SVG");
}

function pngBase64() {
  const b = contentBox();
  for (const scale of [2, 1.5, 1, 0.75, 0.5, 0.35, 0.25]) {
    const out = document.createElement("canvas");
    out.width = Math.max(1, Math.min(8192, Math.ceil(b.w * scale)));
    out.height = Math.max(1, Math.min(8192, Math.ceil(b.h * scale)));
    const c = out.getContext("2d");
    c.fillStyle = "#ffffff";
    c.fillRect(0, 0, out.width, out.height);
    c.setTransform(scale, 0, 0, scale, -b.x * scale, -b.y * scale);
    for (const s of board.strokes) paint(c, s);
    const data = out.toDataURL("image/png").split(",")[1];
    if (data.length <= UPLOAD_BYTES) return data;
  }
  throw refusal("export_too_large", "the drawing is too large to export as PNG");
}

// Save the drawing as an artifact: the person sees the consent dialog in the shell; a
// refusal rejects with the capability's code.
async function exportBoard(format, name) {
  const base = String(name || "whiteboard").replace(/\.(svg|png)$/i, "") || "whiteboard";
  const fileName = `${base}.${format}`;
  const args = format === "svg"
    ? { name: fileName, media_type: "image/svg+xml", text: svgText() }
    : { name: fileName, media_type: "image/png", base64: pngBase64() };
  const saved = await LineUpApp.capabilities.request("artifact.save", args, {
    reason: `to save the whiteboard as ${format.toUpperCase()}`,
  });
  return { artifact_id: saved.artifact_id, name: saved.name, size: saved.size };
}

// ---- the agent's tools -----------------------------------------------------------------

async function answer(call) {
  const args = call.arguments || {};
  switch (call.tool) {
    case "whiteboard.open": {
      const context = await LineUpApp.context();
      return { instance_id: context.instance_id, strokes: board.strokes.length };
    }
    case "whiteboard.draw": {
      if (!board.applied.includes(call.call_id)) {
        await change({ type: "add", strokes: args.strokes.map(normalize) }, "agent", call.call_id);
      }
      return { added: args.strokes.length, total: board.strokes.length };
    }
    case "whiteboard.clear": {
      const cleared = board.strokes.length;
      if (cleared && !board.applied.includes(call.call_id)) {
        await change({ type: "clear", strokes: board.strokes.slice() }, "agent", call.call_id);
      }
      return { cleared };
    }
    case "whiteboard.snapshot":
      return { strokes: board.strokes, ...extent() };
    case "whiteboard.export":
      return exportBoard(args.format, args.name);
    default:
      throw refusal("tool_unknown", "the whiteboard has no such tool");
  }
}

async function work(call) {
  let result;
  try {
    result = await answer(call);
  } catch (error) {
    const code = /^[a-z][a-z0-9_]{0,63}$/.test(error.code || "") ? error.code : "whiteboard_failed";
    await LineUpApp.tools.fail(call.call_id, code, String(error.message || code).slice(0, 200));
    return;
  }
  await LineUpApp.tools.complete(call.call_id, result);
}

// ---- the person's input ----------------------------------------------------------------

const pointers = new Map();
let gesture = null;
let spaceHeld = false;
let textAt = null;

function toWorld(clientX, clientY) {
  const r = canvas.getBoundingClientRect();
  const { x, y, z } = board.view;
  return [round((clientX - r.left) / z + x), round((clientY - r.top) / z + y)];
}

function zoomAt(clientX, clientY, z) {
  const r = canvas.getBoundingClientRect();
  const view = board.view;
  const next = clampZoom(z);
  const [sx, sy] = [clientX - r.left, clientY - r.top];
  view.x = sx / view.z + view.x - sx / next;
  view.y = sy / view.z + view.y - sy / next;
  view.z = next;
  viewChanged();
}

function zoomBy(factor) {
  const r = canvas.getBoundingClientRect();
  zoomAt(r.left + r.width / 2, r.top + r.height / 2, board.view.z * factor);
}

function setTool(tool) {
  commitText();
  pen.tool = tool;
  stage.dataset.tool = tool;
  for (const b of document.querySelectorAll("button[data-tool]")) {
    const on = b.dataset.tool === tool;
    b.setAttribute("aria-checked", String(on));
    b.tabIndex = on ? 0 : -1;
  }
}

function setColour(color) {
  pen.color = color.toLowerCase();
  $("style-swatch").style.background = pen.color;
  $("custom-colour").value = pen.color;
  for (const b of document.querySelectorAll(".colours button")) b.setAttribute("aria-checked", String(b.dataset.color === pen.color));
}

function setWidth(width) {
  pen.width = width;
  $("width").value = String(width);
  $("width-value").textContent = String(width);
}

function pinchInfo() {
  const [a, b] = [...pointers.values()];
  return { cx: (a.x + b.x) / 2, cy: (a.y + b.y) / 2, d: Math.hypot(a.x - b.x, a.y - b.y) || 1 };
}

function eraseAt(from, to) {
  const r = 8 / board.view.z;
  for (let i = board.strokes.length - 1; i >= 0; i -= 1) {
    const s = board.strokes[i];
    if (hits(s, to, r) || hits(s, from, r)) {
      gesture.removed.push({ stroke: s, index: i });
      board.strokes.splice(i, 1);
    }
  }
  render();
}

function hits(s, at, r) {
  const pad = r + s.width / 2;
  const p = s.points;
  if (s.kind === "text") {
    const [x0, y0, x1, y1] = bounds(s);
    return at[0] >= x0 - r && at[0] <= x1 + r && at[1] >= y0 - r && at[1] <= y1 + r;
  }
  let outline = p;
  const last = p[p.length - 1];
  if (s.kind === "rect") outline = [p[0], [last[0], p[0][1]], last, [p[0][0], last[1]], p[0]];
  if (s.kind === "ellipse") {
    const [cx, cy, rx, ry] = [(p[0][0] + last[0]) / 2, (p[0][1] + last[1]) / 2, Math.abs(last[0] - p[0][0]) / 2, Math.abs(last[1] - p[0][1]) / 2];
    outline = Array.from({ length: 49 }, (_, i) => [cx + rx * Math.cos((i / 48) * Math.PI * 2), cy + ry * Math.sin((i / 48) * Math.PI * 2)]);
  }
  if (outline.length === 1) return Math.hypot(at[0] - p[0][0], at[1] - p[0][1]) <= pad;
  for (let i = 1; i < outline.length; i += 1) if (distToSegment(at, outline[i - 1], outline[i]) <= pad) return true;
  return false;
}

function finishGesture(cancelled) {
  const done = gesture;
  gesture = null;
  stage.classList.remove("panning");
  if (!done) return;
  if (done.type === "draw") {
    const stroke = draft;
    draft = null;
    if (cancelled || !stroke) return render();
    if (stroke.kind === "path") stroke.points = simplify(stroke.points, 0.4 / board.view.z);
    else if (stroke.points[0][0] === stroke.points[1][0] && stroke.points[0][1] === stroke.points[1][1]) return render();
    change({ type: "add", strokes: [stroke] }, "person").catch(() => {});
  } else if (done.type === "erase" && done.removed.length) {
    applyOp({ type: "erase", removed: done.removed }, false);
    change({ type: "erase", removed: done.removed }, "person").catch(() => {});
  } else if (done.type === "pan" || done.type === "pinch") {
    viewChanged();
  }
}

canvas.addEventListener("pointerdown", (ev) => {
  commitText();
  canvas.focus({ preventScroll: true });
  pointers.set(ev.pointerId, { x: ev.clientX, y: ev.clientY });
  canvas.setPointerCapture(ev.pointerId);
  if (pointers.size === 2) {
    if (gesture?.type === "draw") finishGesture(true);
    else if (gesture) finishGesture(false);
    gesture = { type: "pinch", ...pinchInfo() };
    return;
  }
  if (pointers.size > 2 || gesture) return;
  if (pen.tool === "hand" || spaceHeld || ev.button === 1) {
    gesture = { type: "pan", x: ev.clientX, y: ev.clientY };
    stage.classList.add("panning");
    ev.preventDefault();
    return;
  }
  if (ev.button !== 0) return;
  const at = toWorld(ev.clientX, ev.clientY);
  if (pen.tool === "text") {
    ev.preventDefault();
    openText(at);
    return;
  }
  if (pen.tool === "eraser") {
    gesture = { type: "erase", removed: [], last: at };
    eraseAt(at, at);
    return;
  }
  const kind = KIND_OF_TOOL[pen.tool];
  draft = { kind, points: kind === "path" ? [at] : [at, at], color: pen.color, width: pen.width };
  gesture = { type: "draw" };
  render();
});

canvas.addEventListener("pointermove", (ev) => {
  if (!pointers.has(ev.pointerId)) return;
  pointers.set(ev.pointerId, { x: ev.clientX, y: ev.clientY });
  if (!gesture) return;
  const view = board.view;
  if (gesture.type === "pinch" && pointers.size === 2) {
    const now = pinchInfo();
    view.x -= (now.cx - gesture.cx) / view.z;
    view.y -= (now.cy - gesture.cy) / view.z;
    zoomAt(now.cx, now.cy, (view.z * now.d) / gesture.d);
    gesture = { type: "pinch", ...now };
  } else if (gesture.type === "pan") {
    view.x -= (ev.clientX - gesture.x) / view.z;
    view.y -= (ev.clientY - gesture.y) / view.z;
    [gesture.x, gesture.y] = [ev.clientX, ev.clientY];
    render();
  } else if (gesture.type === "erase") {
    const at = toWorld(ev.clientX, ev.clientY);
    eraseAt(gesture.last, at);
    gesture.last = at;
  } else if (gesture.type === "draw" && draft) {
    const events = ev.getCoalescedEvents ? ev.getCoalescedEvents() : [ev];
    for (const e of events.length ? events : [ev]) {
      const at = toWorld(e.clientX, e.clientY);
      if (draft.kind === "path") {
        const prev = draft.points[draft.points.length - 1];
        if (Math.hypot(at[0] - prev[0], at[1] - prev[1]) >= 0.5 / view.z) draft.points.push(at);
      } else if (draft.kind === "line" || !ev.shiftKey) {
        draft.points[1] = at;
      } else {
        // Shift: a square or a circle.
        const [x0, y0] = draft.points[0];
        const side = Math.max(Math.abs(at[0] - x0), Math.abs(at[1] - y0));
        draft.points[1] = [round(x0 + Math.sign(at[0] - x0 || 1) * side), round(y0 + Math.sign(at[1] - y0 || 1) * side)];
      }
    }
    render();
  }
});

function pointerEnd(ev) {
  if (!pointers.delete(ev.pointerId)) return;
  if (gesture?.type === "pinch") {
    if (pointers.size < 2) finishGesture(false);
    return;
  }
  if (pointers.size === 0) finishGesture(ev.type === "pointercancel");
}
canvas.addEventListener("pointerup", pointerEnd);
canvas.addEventListener("pointercancel", pointerEnd);

stage.addEventListener("wheel", (ev) => {
  ev.preventDefault();
  const view = board.view;
  if (ev.ctrlKey || ev.metaKey) zoomAt(ev.clientX, ev.clientY, view.z * Math.exp(-ev.deltaY * 0.01));
  else {
    view.x += ev.deltaX / view.z;
    view.y += ev.deltaY / view.z;
    viewChanged();
  }
}, { passive: false });

function openText(at) {
  const { x, y, z } = board.view;
  textAt = at;
  const size = fontSize(pen.width) * z;
  Object.assign(textEntry.style, {
    left: `${(at[0] - x) * z - 3}px`, top: `${(at[1] - y) * z - 2}px`,
    fontSize: `${size}px`, height: `${size * 1.3}px`, color: pen.color,
  });
  textEntry.value = "";
  textEntry.hidden = false;
  textEntry.focus();
}

function commitText() {
  if (textEntry.hidden) return;
  const text = textEntry.value.trim();
  textEntry.hidden = true;
  if (!text || !textAt) return;
  const stroke = { kind: "text", points: [textAt], color: pen.color, width: pen.width, text: text.slice(0, 500) };
  textAt = null;
  change({ type: "add", strokes: [stroke] }, "person").catch(() => {});
}

textEntry.addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !composingEnter(ev)) {
    ev.preventDefault();
    commitText();
    canvas.focus();
  } else if (ev.key === "Escape") {
    ev.preventDefault();
    textEntry.hidden = true;
    canvas.focus();
  }
});
textEntry.addEventListener("blur", () => commitText());

document.addEventListener("keydown", (ev) => {
  const typing = ev.target instanceof HTMLInputElement || ev.target instanceof HTMLTextAreaElement;
  const key = ev.key.toLowerCase();
  const mod = ev.ctrlKey || ev.metaKey;
  if (mod && key === "z" && !typing) {
    ev.preventDefault();
    (ev.shiftKey ? redo : undo)();
    return;
  }
  if (mod && key === "y" && !typing) {
    ev.preventDefault();
    redo();
    return;
  }
  if (typing || mod || ev.altKey) return;
  if (ev.key === " " && ev.target === canvas) {
    spaceHeld = true;
    stage.classList.add("panning");
    ev.preventDefault();
  } else if (TOOL_KEYS[key]) {
    setTool(TOOL_KEYS[key]);
  } else if (key === "c") {
    $("style-panel").togglePopover();
  } else if (key === "+" || key === "=") {
    zoomBy(1.25);
  } else if (key === "-") {
    zoomBy(0.8);
  } else if (key === "0") {
    resetView();
  } else if (ev.target === canvas && key.startsWith("arrow")) {
    ev.preventDefault();
    const step = 40 / board.view.z;
    const [dx, dy] = { arrowleft: [-step, 0], arrowright: [step, 0], arrowup: [0, -step], arrowdown: [0, step] }[key];
    board.view.x += dx;
    board.view.y += dy;
    viewChanged();
  }
});
document.addEventListener("keyup", (ev) => {
  if (ev.key === " ") {
    spaceHeld = false;
    if (gesture?.type !== "pan") stage.classList.remove("panning");
  }
});

function resetView() {
  Object.assign(board.view, { x: 0, y: 0, z: 1 });
  viewChanged();
}

// ---- the toolbar -----------------------------------------------------------------------

const toolButtons = [...document.querySelectorAll("[data-tool]")];
for (const button of toolButtons) {
  button.addEventListener("click", () => setTool(button.dataset.tool));
  button.addEventListener("keydown", (ev) => {
    const step = { ArrowRight: 1, ArrowDown: 1, ArrowLeft: -1, ArrowUp: -1 }[ev.key];
    if (!step) return;
    ev.preventDefault();
    const next = toolButtons[(toolButtons.indexOf(button) + step + toolButtons.length) % toolButtons.length];
    setTool(next.dataset.tool);
    next.focus();
  });
}

for (const [color, name] of COLOURS) {
  const b = document.createElement("button");
  b.type = "button";
  b.setAttribute("role", "radio");
  b.dataset.i18nAriaLabel = `colour.${name}`; // setLocale labels it
  b.dataset.i18nTitle = `colour.${name}`;
  b.setAttribute("aria-label", t(`colour.${name}`));
  b.title = t(`colour.${name}`);
  b.dataset.color = color;
  b.style.background = color;
  b.addEventListener("click", () => {
    setColour(color);
    persist().catch(() => {});
  });
  document.querySelector(".colours").append(b);
}
$("custom-colour").addEventListener("input", (ev) => setColour(ev.target.value));
$("custom-colour").addEventListener("change", () => persist().catch(() => {}));
$("width").addEventListener("input", (ev) => setWidth(Number(ev.target.value)));
$("width").addEventListener("change", () => persist().catch(() => {}));

$("undo").addEventListener("click", undo);
$("redo").addEventListener("click", redo);
$("zoom-in").addEventListener("click", () => zoomBy(1.25));
$("zoom-out").addEventListener("click", () => zoomBy(0.8));
$("zoom-reset").addEventListener("click", resetView);
$("clear").addEventListener("click", () => {
  if (!board.strokes.length) return;
  change({ type: "clear", strokes: board.strokes.slice() }, "person")
    .then(() => notice(t("edit.cleared")), () => {});
});
$("send").addEventListener("click", () => {
  const data = boundedSnapshot();
  notice(sendEvent("snapshot", data) ? t("send.sent", { count: data.strokes.length }) : t("send.failed"));
});
for (const item of document.querySelectorAll("#export-menu [data-format]")) {
  item.addEventListener("click", async () => {
    $("export-menu").hidePopover();
    const format = item.dataset.format;
    notice(t("export.saving", { format: format.toUpperCase() }));
    try {
      const saved = await exportBoard(format);
      notice(t("export.saved", { name: saved.name }));
    } catch (error) {
      notice(t("board.not_saved", { code: error.code || "error" }));
    }
  });
}
$("export-menu").addEventListener("toggle", (ev) => {
  if (ev.newState === "open") $("export-menu").querySelector("button").focus();
});

// ---- size changes ----------------------------------------------------------------------

let lastSize = null;
let resizeTimer = null;
new ResizeObserver(() => {
  paintBoard();
  const size = { width: Math.round(stage.clientWidth), height: Math.round(stage.clientHeight) };
  if (!size.width || !size.height) return; // hidden (the app is in the background)
  if (!lastSize) {
    lastSize = size;
    return;
  }
  if (size.width === lastSize.width && size.height === lastSize.height) return;
  lastSize = size;
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => sendEvent("resize", lastSize), 400);
}).observe(stage);

// ---- start -----------------------------------------------------------------------------

function load(state) {
  if (!state || typeof state !== "object") return;
  if (Array.isArray(state.strokes)) board.strokes = state.strokes.filter(isStroke);
  const v = state.view;
  if (v && [v.x, v.y, v.z].every(Number.isFinite)) board.view = { x: v.x, y: v.y, z: clampZoom(v.z) };
  if (Array.isArray(state.applied)) board.applied = state.applied.filter((id) => typeof id === "string");
  if (state.pen && /^#[0-9a-f]{6}$/.test(state.pen.color)) setColour(state.pen.color);
  if (state.pen && Number.isFinite(state.pen.width)) setWidth(Math.min(24, Math.max(1, state.pen.width)));
}

setTool("pen");
setColour(pen.color);
setWidth(pen.width);
(async () => {
  const context = await LineUpApp.context();
  if (setLocale(context.locale)) updateChrome();
  load(await LineUpApp.state.get());
  paintBoard();
  await LineUpApp.ready().catch(() => {});
  LineUpApp.tools.subscribe((call) => {
    work(call).catch((error) => {
      document.body.dataset.error = error.code || "error";
    });
  });
  document.body.dataset.ready = "true";
})();
