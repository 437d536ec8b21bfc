// Task Dashboard: a three-column board kept in the Runtime (LineUpApp.state) and the
// worker for the app's six tools. It uses only the MiniApp SDK: no network, no storage
// of its own. What the person does on the board stays on the board; the agent learns it
// only by calling list_tasks.
"use strict";

const COLUMNS = [{ id: "todo" }, { id: "doing" }, { id: "done" }]; // names: column.<id>
const COLUMN_IDS = COLUMNS.map((c) => c.id);
const TITLE_MAX = 120;
const NOTES_MAX = 1000;
const STATE_BUDGET = 62 * 1024; // the Runtime keeps at most 64 KiB per instance
const ANSWERS_KEPT = 16;
const IMPORT_STEP_MS = 60;
const encoder = new TextEncoder();

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

// --- the board (what LineUpApp.state holds) ---------------------------------------------

let board = emptyBoard();

function emptyBoard() {
  // answered: call id -> outcome, for a call re-delivered after a reload that the app had
  // already carried out (it is answered the same way, never done twice).
  // imports: call id -> how far a running import_tasks got (resumed after a reload).
  return { v: 1, next: 1, tasks: [], answered: {}, imports: {} };
}

function isEmpty(value) {
  return !value || typeof value !== "object" || Object.keys(value).length === 0;
}

function text(value, max) {
  return typeof value === "string" ? value.trim().slice(0, max) : "";
}

// The stored state, checked: it is our own writing, but a board must never break on it.
function loadBoard(saved) {
  const loaded = emptyBoard();
  if (isEmpty(saved)) return loaded;
  const seen = new Set();
  for (const t of Array.isArray(saved.tasks) ? saved.tasks : []) {
    if (!t || typeof t.id !== "string" || !/^t\d{1,9}$/.test(t.id) || seen.has(t.id)) continue;
    const title = text(t.title, TITLE_MAX);
    if (!title) continue;
    seen.add(t.id);
    loaded.tasks.push({
      id: t.id,
      title,
      notes: text(t.notes, NOTES_MAX),
      column: COLUMN_IDS.includes(t.column) ? t.column : "todo",
    });
  }
  const highest = Math.max(0, ...loaded.tasks.map((t) => Number(t.id.slice(1))));
  loaded.next = Math.max(Number.isInteger(saved.next) ? saved.next : 1, highest + 1);
  if (saved.answered && typeof saved.answered === "object") loaded.answered = saved.answered;
  if (saved.imports && typeof saved.imports === "object") loaded.imports = saved.imports;
  return loaded;
}

function bytes(value) {
  return encoder.encode(JSON.stringify(value)).length;
}

// `message` is for the agent (English, like every tool error); `key` names what the
// person reads when their own change is refused.
class BoardError extends Error {
  constructor(code, message, key) {
    super(message);
    this.code = code;
    this.key = key;
  }
}

// Every change goes through here: applied, checked against the state budget (undone if
// it does not fit), drawn, and saved. Returns the save's promise.
function change(mutate, { by = "you" } = {}) {
  const before = JSON.stringify(board);
  const outcome = mutate();
  if (bytes(board) > STATE_BUDGET) {
    board = JSON.parse(before);
    throw new BoardError("board_full", "the board is full: delete or finish some tasks first", "board.full");
  }
  if (by === "agent" && outcome?.id) flash(outcome.id);
  render();
  return { outcome, saved: save() };
}

// One state.set at a time, in order; changes made while one is under way share the next.
let saveChain = Promise.resolve();
let queuedSave = null;
function save() {
  if (queuedSave) return queuedSave;
  const run = saveChain.then(() => {
    queuedSave = null;
    return LineUpApp.state.set(board);
  });
  queuedSave = run;
  saveChain = run.then(
    () => setSaveProblem(null),
    (error) => setSaveProblem(error),
  );
  return run;
}

function findTask(id) {
  const task = board.tasks.find((t) => t.id === id);
  if (!task) throw new BoardError("task_not_found", "no task on the board has this id");
  return task;
}

function newTask(title, notes, column) {
  const task = { id: `t${board.next}`, title: text(title, TITLE_MAX), notes: text(notes, NOTES_MAX), column };
  board.next += 1;
  board.tasks.push(task);
  return task;
}

// Moving to another column puts the task at the end of it.
function moveTo(task, column) {
  if (task.column === column) return;
  board.tasks.splice(board.tasks.indexOf(task), 1);
  task.column = column;
  board.tasks.push(task);
}

function tasksIn(column) {
  return board.tasks.filter((t) => t.column === column);
}

function inBoardOrder(tasks) {
  return COLUMN_IDS.flatMap((column) => tasks.filter((t) => t.column === column));
}

function copy(task) {
  return { id: task.id, title: task.title, notes: task.notes, column: task.column };
}

// --- tools ------------------------------------------------------------------------------

let context = null;
const handling = new Set(); // call ids taken in this document

const TOOLS = {
  "task-dashboard.open": async () => ({ instance_id: context.instance_id, tasks: board.tasks.length }),
  "task-dashboard.list_tasks": async (args) => ({
    tasks: inBoardOrder(board.tasks.filter((t) => !args.column || t.column === args.column)).map(copy),
  }),
  "task-dashboard.add_task": (args, call) =>
    remembered(call, () => newTask(args.title, args.notes || "", args.column || "todo")),
  "task-dashboard.update_task": (args, call) =>
    remembered(call, () => {
      const task = findTask(args.id);
      if (args.title !== undefined) task.title = text(args.title, TITLE_MAX);
      if (args.notes !== undefined) task.notes = text(args.notes, NOTES_MAX);
      if (args.column !== undefined) moveTo(task, args.column);
      return task;
    }),
  "task-dashboard.complete_task": (args, call) =>
    remembered(call, () => {
      const task = findTask(args.id);
      moveTo(task, "done");
      return task;
    }),
  "task-dashboard.import_tasks": importTasks,
};

// A change an agent asked for: applied and saved together with its outcome, so that the
// same call delivered again after a reload is answered without doing it twice.
async function remembered(call, mutate) {
  const { saved } = change(
    () => {
      const task = mutate();
      remember(call.call_id, { result: { task: copy(task) } });
      return task;
    },
    { by: "agent" },
  );
  await saved;
  return board.answered[call.call_id].result;
}

function remember(callId, outcome) {
  board.answered[callId] = outcome;
  const ids = Object.keys(board.answered);
  for (const old of ids.slice(0, Math.max(0, ids.length - ANSWERS_KEPT))) delete board.answered[old];
}

async function onCall(call) {
  if (handling.has(call.call_id)) return;
  handling.add(call.call_id);
  let outcome = board.answered[call.call_id];
  if (!outcome) {
    const tool = TOOLS[call.tool];
    try {
      if (!tool) throw new BoardError("tool_unknown", "this version of the board has no such tool");
      const result = await tool(call.arguments || {}, call);
      if (result === null) return; // the call ended elsewhere (closed, timed out): nothing to say
      outcome = { result };
    } catch (error) {
      if (!(error instanceof BoardError)) reportError(error);
      const code = error instanceof BoardError ? error.code : "app_error";
      outcome = { fail: { code, message: error.message || code } };
      if (board.answered[call.call_id] === undefined && error instanceof BoardError) {
        remember(call.call_id, outcome);
        save();
      }
    }
  }
  try {
    if (outcome.result) await LineUpApp.tools.complete(call.call_id, outcome.result);
    else await LineUpApp.tools.fail(call.call_id, outcome.fail.code, outcome.fail.message);
  } catch (error) {
    if (error.code !== "call_already_final" && error.code !== "call_not_found") {
      showToast(t("agent.answer_failed", { code: error.code || "error" }));
    }
  }
}

const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// import_tasks: one task at a time, slow enough to watch, with progress for the agent
// and on the board. Each step stores the new task and how far the import got in one
// state.set, so a reload resumes exactly where it stopped.
async function importTasks(args, call) {
  const id = call.call_id;
  const titles = args.titles;
  const total = titles.length;
  if (!board.imports[id]) {
    const room = STATE_BUDGET - bytes(board);
    const needed = titles.reduce((sum, t) => sum + encoder.encode(t).length + 64, 0);
    if (needed > room) throw new BoardError("board_full", `the board has no room for ${total} more tasks`);
    change(() => {
      board.imports[id] = { done: 0, total };
    });
    announce(t("import.started", { count: total }));
  }
  showImport(id, board.imports[id].done, total);
  const stop = () => {
    change(() => delete board.imports[id]);
    showImport(id, null, total);
  };
  while (board.imports[id].done < total) {
    await pause(IMPORT_STEP_MS);
    const at = board.imports[id].done;
    try {
      const { saved } = change(
        () => {
          board.imports[id].done = at + 1;
          return newTask(titles[at], "", "todo");
        },
        { by: "agent" },
      );
      showImport(id, at + 1, total);
      await saved;
      await LineUpApp.tools.reportProgress(id, { current: at + 1, total, label: t("import.progress", { done: at + 1, total }) });
    } catch (error) {
      stop();
      // The call ended without us (the app was closed, the call timed out): say nothing.
      if (error.code === "call_already_final" || error.code === "call_not_found") return null;
      throw error;
    }
  }
  const { saved } = change(() => {
    delete board.imports[id];
    remember(id, { result: { imported: total } });
  });
  await saved;
  showImport(id, total, total, true);
  announce(t("import.done", { count: total }));
  return { imported: total };
}

// --- drawing ------------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);
const ui = {
  filter: "",
  editing: null, // the task id being edited in place
  flashed: new Map(), // task id -> timer: cards the agent just changed
  undo: null,
};

function el(tag, className, content) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (content !== undefined) node.textContent = content;
  return node;
}

const ICONS = {
  left: "M12.5 4.5L7 10l5.5 5.5",
  right: "M7.5 4.5L13 10l-5.5 5.5",
  edit: "M4 16l1-4 8-8 3 3-8 8-4 1zM11.5 5.5l3 3",
  delete: "M4.5 6h11M8 6V4h4v2M6 6l.8 10h6.4L14 6",
  plus: "M10 4v12M4 10h12",
};

function icon(name) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 20 20");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[name]);
  svg.append(path);
  return svg;
}

function iconButton(name, label, key) {
  const button = el("button", `icon-button act-${name}`);
  button.type = "button";
  button.dataset.act = name;
  button.dataset.key = key;
  button.setAttribute("aria-label", label);
  button.title = label;
  button.append(icon(name));
  return button;
}

function matches(task) {
  if (!ui.filter) return true;
  const needle = ui.filter.toLowerCase();
  return task.title.toLowerCase().includes(needle) || task.notes.toLowerCase().includes(needle);
}

function columnName(id) {
  return t(`column.${id}`);
}

function buildBoard() {
  const root = $("board");
  for (const column of COLUMNS) {
    const section = el("section", "column");
    section.dataset.column = column.id;
    section.setAttribute("aria-labelledby", `col-${column.id}`);
    const head = el("div", "column-head");
    const h2 = el("h2", "column-title", columnName(column.id));
    h2.id = `col-${column.id}`;
    const count = el("span", "count");
    count.id = `count-${column.id}`;
    const add = iconButton("plus", t("column.add", { column: columnName(column.id) }), `add:${column.id}`);
    add.classList.add("column-add");
    add.addEventListener("click", () => openNewForm(column.id));
    head.append(h2, count, add);
    const list = el("ol", "cards");
    list.id = `list-${column.id}`;
    list.setAttribute("aria-labelledby", `col-${column.id}`);
    const empty = el("p", "empty");
    empty.id = `empty-${column.id}`;
    section.append(head, list, empty);
    root.append(section);
  }
}

// The language changed after the board was drawn (context() said otherwise than <html
// lang>): the column heads again, and every card redrawn.
function relabel() {
  for (const column of COLUMNS) {
    const name = columnName(column.id);
    $(`col-${column.id}`).textContent = name;
    const add = document.querySelector(`[data-key="add:${column.id}"]`);
    add.setAttribute("aria-label", t("column.add", { column: name }));
    add.title = add.getAttribute("aria-label");
  }
  for (const li of document.querySelectorAll(".card")) delete li.dataset.signature;
  render();
}

function buildCard(task) {
  const li = el("li", "card");
  li.dataset.id = task.id;
  li.dataset.column = task.column;
  fillCard(li, task);
  return li;
}

function fillCard(li, task) {
  li.dataset.column = task.column;
  li.classList.toggle("is-done", task.column === "done");
  if (ui.editing === task.id) return fillEditor(li, task);
  li.classList.remove("editing");
  li.tabIndex = 0;
  li.dataset.key = `card:${task.id}`;
  li.setAttribute("aria-labelledby", `title-${task.id}`);
  li.setAttribute("aria-describedby", `notes-${task.id} card-help`);

  const check = el("input", "card-check");
  check.type = "checkbox";
  check.checked = task.column === "done";
  check.dataset.act = "check";
  check.dataset.key = `check:${task.id}`;
  check.setAttribute("aria-label", t("task.done_check", { title: task.title }));

  const body = el("div", "card-body");
  const title = el("p", "card-title", task.title);
  title.id = `title-${task.id}`;
  const notes = el("p", "card-notes", task.notes);
  notes.id = `notes-${task.id}`;
  notes.hidden = !task.notes;
  body.append(title, notes);

  const actions = el("div", "card-actions");
  const at = COLUMN_IDS.indexOf(task.column);
  const moveLabel = (column) => t("task.move_to", { title: task.title, column: columnName(column) });
  if (at > 0) actions.append(iconButton("left", moveLabel(COLUMN_IDS[at - 1]), `left:${task.id}`));
  if (at < COLUMNS.length - 1) {
    actions.append(iconButton("right", moveLabel(COLUMN_IDS[at + 1]), `right:${task.id}`));
  }
  actions.append(
    iconButton("edit", t("task.edit", { title: task.title }), `edit:${task.id}`),
    iconButton("delete", t("task.delete", { title: task.title }), `delete:${task.id}`),
  );
  li.replaceChildren(check, body, actions);
}

function fillEditor(li, task) {
  li.classList.add("editing");
  li.removeAttribute("tabindex");
  li.removeAttribute("aria-labelledby");
  li.removeAttribute("aria-describedby");
  delete li.dataset.key;
  const form = el("form", "editor");
  form.setAttribute("aria-label", t("task.edit", { title: task.title }));
  const titleLabel = el("label", "field-label", t("task.title"));
  titleLabel.htmlFor = `edit-title-${task.id}`;
  const title = el("input", "edit-title");
  title.id = titleLabel.htmlFor;
  title.name = "title";
  title.required = true;
  title.maxLength = TITLE_MAX;
  title.value = task.title;
  title.dataset.key = `edit-title:${task.id}`;
  const notesLabel = el("label", "field-label", t("task.notes"));
  notesLabel.htmlFor = `edit-notes-${task.id}`;
  const notes = el("textarea", "edit-notes");
  notes.id = notesLabel.htmlFor;
  notes.name = "notes";
  notes.rows = 2;
  notes.maxLength = NOTES_MAX;
  notes.value = task.notes;
  notes.dataset.key = `edit-notes:${task.id}`;
  const buttons = el("div", "editor-actions");
  const saveButton = el("button", "primary small", t("task.save"));
  saveButton.type = "button";
  const cancel = el("button", "ghost small", t("common.cancel"));
  cancel.type = "button";
  cancel.dataset.act = "cancel-edit";
  buttons.append(saveButton, cancel);
  form.append(titleLabel, title, notesLabel, notes, buttons);
  onSubmit(form, saveButton, () => saveEdit(task.id, title.value, notes.value));
  form.addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      stopEditing(task.id);
    }
  });
  li.replaceChildren(form);
}

// Draw the board from `board`, reusing the cards that did not change so that focus, an
// open editor and the scroll position stay where they were.
function render() {
  const activeKey = document.activeElement?.dataset?.key || null;
  const placed = new Set();
  for (const column of COLUMNS) {
    const list = $(`list-${column.id}`);
    const all = tasksIn(column.id);
    const shown = all.filter(matches);
    shown.forEach((task, at) => {
      let li = document.querySelector(`.card[data-id="${task.id}"]`);
      const signature = JSON.stringify([task.title, task.notes, task.column, ui.editing === task.id]);
      if (!li) li = buildCard(task);
      else if (li.dataset.signature !== signature) fillCard(li, task);
      li.dataset.signature = signature;
      li.classList.toggle("flash", ui.flashed.has(task.id));
      if (list.children[at] !== li) place(list, li, list.children[at] || null);
      placed.add(task.id);
    });
    const count = $(`count-${column.id}`);
    count.textContent = ui.filter ? `${number(shown.length)}/${number(all.length)}` : number(all.length);
    count.setAttribute(
      "aria-label",
      ui.filter
        ? t("column.count_filtered", { shown: shown.length, count: all.length })
        : t("column.count", { count: all.length }),
    );
    const empty = $(`empty-${column.id}`);
    empty.hidden = shown.length > 0;
    empty.textContent = t(all.length ? "column.no_match" : `column.${column.id}_empty`);
  }
  for (const li of document.querySelectorAll(".card")) if (!placed.has(li.dataset.id)) li.remove();
  const done = tasksIn("done").length;
  $("summary").textContent = board.tasks.length ? t("board.summary", { done, count: board.tasks.length }) : "";
  if (activeKey && (!document.activeElement || document.activeElement === document.body)) focusKey(activeKey);
}

// moveBefore keeps a focused card focused where the browser has it.
function place(list, node, before) {
  if (typeof list.moveBefore === "function" && node.isConnected) {
    try {
      list.moveBefore(node, before);
      return;
    } catch {
      // fall through: insertBefore always works
    }
  }
  list.insertBefore(node, before);
}

function focusKey(key) {
  const [, id] = key.split(":");
  const target = document.querySelector(`[data-key="${key}"]`) || document.querySelector(`[data-key="card:${id}"]`);
  if (target) {
    target.focus({ preventScroll: true });
    target.scrollIntoView({ block: "nearest", inline: "nearest" });
  }
}

function flash(id) {
  clearTimeout(ui.flashed.get(id));
  ui.flashed.set(
    id,
    setTimeout(() => {
      ui.flashed.delete(id);
      document.querySelector(`.card[data-id="${id}"]`)?.classList.remove("flash");
    }, 1600),
  );
}

// --- imports on the board -------------------------------------------------------------------

const importRows = new Map(); // call id -> row element

function showImport(id, done, total, finished = false) {
  const box = $("imports");
  let row = importRows.get(id);
  if (done === null) {
    row?.remove();
    importRows.delete(id);
    box.hidden = importRows.size === 0;
    return;
  }
  if (!row) {
    row = el("div", "import-row");
    row.dataset.callId = id;
    const label = el("span", "import-text");
    label.id = `import-text-${id}`;
    const bar = el("progress", "import-bar");
    bar.setAttribute("aria-labelledby", label.id);
    row.append(el("span", "import-spinner"), label, bar);
    importRows.set(id, row);
    box.append(row);
  }
  box.hidden = false;
  row.classList.toggle("finished", finished);
  row.querySelector(".import-text").textContent = finished
    ? t("import.finished", { count: total })
    : t("import.running", { done, total });
  const bar = row.querySelector("progress");
  bar.max = total;
  bar.value = done;
  if (finished) setTimeout(() => showImport(id, null, total), 4000);
}

// --- the person's actions (never reported to the agent) ---------------------------------

function personChange(mutate, message) {
  try {
    change(mutate);
    if (message) announce(message);
    return true;
  } catch (error) {
    showToast(error.key ? t(error.key) : error.message);
    return false;
  }
}

function taskOf(node) {
  const li = node.closest(".card");
  return li ? board.tasks.find((t) => t.id === li.dataset.id) : null;
}

function moveAcross(task, step) {
  const at = COLUMN_IDS.indexOf(task.column) + step;
  if (at < 0 || at >= COLUMNS.length) return;
  const column = COLUMN_IDS[at];
  personChange(() => moveTo(task, column), t("task.moved_to", { title: task.title, column: columnName(column) }));
}

function moveWithin(task, step) {
  const same = tasksIn(task.column);
  const other = same[same.indexOf(task) + step];
  if (!other) return;
  personChange(() => {
    const a = board.tasks.indexOf(task);
    const b = board.tasks.indexOf(other);
    [board.tasks[a], board.tasks[b]] = [board.tasks[b], board.tasks[a]];
  }, t(step < 0 ? "task.moved_up" : "task.moved_down", { title: task.title }));
}

function deleteTask(task) {
  const at = board.tasks.indexOf(task);
  const siblings = [...document.querySelectorAll(`#list-${task.column} > .card`)];
  const here = siblings.findIndex((li) => li.dataset.id === task.id);
  const next = siblings[here + 1] || siblings[here - 1];
  if (!personChange(() => board.tasks.splice(at, 1))) return;
  if (ui.editing === task.id) ui.editing = null;
  if (next) next.focus();
  else $("new-toggle").focus();
  showToast(t("task.deleted", { title: task.title }), t("common.undo"), () => {
    personChange(() => {
      board.tasks.splice(Math.min(at, board.tasks.length), 0, task);
    }, t("task.restored", { title: task.title }));
    document.querySelector(`.card[data-id="${task.id}"]`)?.focus();
  });
}

function startEditing(task) {
  ui.editing = task.id;
  render();
  const input = document.querySelector(`[data-key="edit-title:${task.id}"]`);
  input?.focus();
  input?.select();
}

function stopEditing(id) {
  ui.editing = null;
  render();
  focusKey(`card:${id}`);
}

function saveEdit(id, title, notes) {
  const task = board.tasks.find((t) => t.id === id);
  if (!task) return stopEditing(id);
  const cleanTitle = text(title, TITLE_MAX);
  if (!cleanTitle) {
    showToast(t("task.needs_title"));
    return;
  }
  ui.editing = null;
  personChange(() => {
    task.title = cleanTitle;
    task.notes = text(notes, NOTES_MAX);
  }, t("task.saved", { title: cleanTitle }));
  focusKey(`card:${id}`);
}

function onBoardClick(event) {
  const control = event.target.closest("[data-act]");
  if (!control) return;
  const task = taskOf(control);
  if (!task) return;
  const act = control.dataset.act;
  if (act === "left") moveAcross(task, -1);
  else if (act === "right") moveAcross(task, 1);
  else if (act === "edit") startEditing(task);
  else if (act === "delete") deleteTask(task);
  else if (act === "cancel-edit") stopEditing(task.id);
}

function onBoardChange(event) {
  if (event.target.dataset.act !== "check") return;
  const task = taskOf(event.target);
  if (!task) return;
  const column = event.target.checked ? "done" : "todo";
  personChange(() => moveTo(task, column), t("task.moved_to", { title: task.title, column: columnName(column) }));
}

function neighbourCard(li, step) {
  const cards = [...li.parentElement.children];
  return cards[cards.indexOf(li) + step] || null;
}

function cardAcross(li, step) {
  let at = COLUMN_IDS.indexOf(li.dataset.column) + step;
  const row = [...li.parentElement.children].indexOf(li);
  while (at >= 0 && at < COLUMNS.length) {
    const cards = $(`list-${COLUMN_IDS[at]}`).children;
    if (cards.length) return cards[Math.min(row, cards.length - 1)];
    at += step;
  }
  return null;
}

function onBoardKey(event) {
  const li = event.target;
  if (!li.classList?.contains("card") || li.classList.contains("editing")) return;
  const task = taskOf(li);
  if (!task || event.altKey || event.ctrlKey || event.metaKey) return;
  const key = event.key;
  let handled = true;
  if (event.shiftKey && key === "ArrowLeft") moveAcross(task, -1);
  else if (event.shiftKey && key === "ArrowRight") moveAcross(task, 1);
  else if (event.shiftKey && key === "ArrowUp") moveWithin(task, -1);
  else if (event.shiftKey && key === "ArrowDown") moveWithin(task, 1);
  else if (key === "ArrowUp" || key === "ArrowDown") {
    const next = neighbourCard(li, key === "ArrowUp" ? -1 : 1);
    if (next) next.focus();
  } else if (key === "ArrowLeft" || key === "ArrowRight") {
    const next = cardAcross(li, key === "ArrowLeft" ? -1 : 1);
    if (next) {
      next.focus();
      next.scrollIntoView({ block: "nearest", inline: "nearest" });
    }
  } else if (key === "Enter" || key === "F2") startEditing(task);
  else if (key === "Delete" || key === "Backspace") deleteTask(task);
  else handled = false;
  if (handled) event.preventDefault();
  if (handled && event.shiftKey) focusKey(`card:${task.id}`);
}

function openNewForm(column) {
  const form = $("new-form");
  form.hidden = false;
  $("new-toggle").setAttribute("aria-expanded", "true");
  if (column) $("new-column").value = column;
  $("new-title").focus();
}

function closeNewForm() {
  const form = $("new-form");
  form.reset();
  form.hidden = true;
  $("new-toggle").setAttribute("aria-expanded", "false");
  $("new-toggle").focus();
}

function onNewSubmit() {
  const title = text($("new-title").value, TITLE_MAX);
  if (!title) {
    $("new-title").focus();
    return;
  }
  const column = $("new-column").value;
  let made = null;
  const ok = personChange(() => {
    made = newTask(title, $("new-notes").value, column);
    return made;
  }, t("task.added", { title, column: columnName(column) }));
  if (!ok) return;
  $("new-title").value = "";
  $("new-notes").value = "";
  $("new-title").focus(); // ready for the next one
  document.querySelector(`.card[data-id="${made.id}"]`)?.scrollIntoView({ block: "nearest", inline: "nearest" });
}

// The surface is sandboxed without allow-forms, so a form never submits (not even its
// submit event fires): its button and Enter in a field (Ctrl+Enter in a text area) do it.
function onSubmit(form, button, fn) {
  button.addEventListener("click", fn);
  form.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || composingEnter(event)) return;
    const area = event.target.tagName === "TEXTAREA";
    if (event.target.tagName === "INPUT" || (area && (event.ctrlKey || event.metaKey))) {
      event.preventDefault();
      fn();
    }
  });
}

// --- messages -------------------------------------------------------------------------------

function announce(message) {
  const live = $("announce");
  live.textContent = "";
  setTimeout(() => {
    live.textContent = message;
  }, 30);
}

let toastTimer = null;
function showToast(message, action, onAction) {
  const toast = $("toast");
  $("toast-text").textContent = message;
  const button = $("toast-action");
  button.hidden = !action;
  button.textContent = action || "";
  button.onclick = action
    ? () => {
        hideToast();
        onAction();
      }
    : null;
  toast.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(hideToast, action ? 7000 : 4000);
}

function hideToast() {
  $("toast").hidden = true;
}

function setSaveProblem(error) {
  $("app").classList.toggle("unsaved", Boolean(error));
  if (error) showToast(t("board.not_saved", { code: error.code || "error" }));
}

// --- start ----------------------------------------------------------------------------------

function wire() {
  buildBoard();
  const root = $("board");
  root.addEventListener("click", onBoardClick);
  root.addEventListener("change", onBoardChange);
  root.addEventListener("keydown", onBoardKey);
  $("new-toggle").addEventListener("click", () => ($("new-form").hidden ? openNewForm() : closeNewForm()));
  $("new-cancel").addEventListener("click", closeNewForm);
  $("toast-close").addEventListener("click", hideToast);
  onSubmit($("new-form"), $("new-add"), onNewSubmit);
  $("new-form").addEventListener("keydown", (event) => {
    if (event.key === "Escape") {
      event.preventDefault();
      closeNewForm();
    }
  });
  $("filter").addEventListener("input", (event) => {
    ui.filter = event.target.value.trim();
    render();
  });
  $("filter").addEventListener("keydown", (event) => {
    if (event.key === "Escape" && event.target.value) {
      event.preventDefault();
      event.target.value = "";
      ui.filter = "";
      render();
    }
  });
  document.addEventListener("keydown", (event) => {
    const typing = event.target.closest?.("input, textarea, select, [contenteditable]");
    if (typing || event.altKey || event.ctrlKey || event.metaKey) return;
    if (event.key === "/") {
      event.preventDefault();
      $("filter").focus();
    } else if (event.key === "n" || event.key === "N") {
      event.preventDefault();
      openNewForm();
    }
  });
}

async function start() {
  wire();
  context = await LineUpApp.context();
  if (setLocale(context.locale)) relabel();
  let saved = await LineUpApp.state.get();
  let continued = false;
  if (isEmpty(saved) && context.continues_instance_id) {
    saved = await LineUpApp.state.get({ of: "continued" });
    continued = !isEmpty(saved);
  }
  board = loadBoard(saved);
  if (continued) {
    // The earlier instance's calls ended with it; its tasks carry on here.
    board.answered = {};
    board.imports = {};
    await save();
  }
  render();
  $("app").removeAttribute("aria-busy");
  await LineUpApp.ready();
  LineUpApp.tools.subscribe((call) => {
    onCall(call).catch(reportError);
  });
  if (continued) showToast(t("board.continued", { count: board.tasks.length }));
  document.body.dataset.ready = "true";
}

start().catch((error) => {
  document.body.dataset.error = error.code || "error";
  showToast(t("board.no_start", { code: error.code || "error" }));
});
