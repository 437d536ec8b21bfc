// LineUp shell: the form an MCP server asks the person to fill in (MCP elicitation,
// form mode), as a trusted card in the conversation. The Runtime owns the form: it
// checked the server's schema, it decides whether an answer counts (the first one, in
// time, valid against the schema) and it answers the server. This card shows the
// server's name and message as text (never HTML), one field per property, checks the
// answer as the Runtime will (to say what is wrong before sending), and sends one
// frame: { op: "elicit", action: "accept" | "decline" | "cancel", content }.

import { announce, avatarFor, el, time, watchComposition } from "./dom.js";
import { countdownElement, runtimeNow } from "./cards.js";
import { dateTime, t } from "./i18n.js";

// What the timeline lends, set once by initElicitCards (the same object cards.js gets).
let context = null;

export function initElicitCards(timeline) {
  context = timeline;
}

const forms = {
  values: new Map(), // elicitation id -> { name: value } being filled in (survives rebuilds)
  inflight: new Set(), // elicitation ids whose answer is on its way
  refusals: new Map(), // elicitation id -> code (a refusal receipt, or "offline")
  touched: new Map(), // elicitation id -> Set of field names to show errors for
  keys: new Map(), // elicitation id -> row key
};
const RADIO_MAX = 5; // more options than this: a select
const FINALS = new Set(["accepted", "declined", "cancelled", "expired"]); // elicit.final.*
const REFUSALS = new Set([
  "call_already_final",
  "interaction_expired",
  "elicitation_not_found",
  "elicitation_answer_invalid",
  "offline",
]); // elicit.refusal.*
const REFUSED_STATE = {
  call_already_final: "closed",
  interaction_expired: "expired",
  elicitation_not_found: "closed",
};
const EMAIL = /^[^@\s]+@[^@\s]+\.[^@\s]+$/;
const URI = /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/;

function shownState(item) {
  const data = item.data;
  if (data.state !== "pending") return data.state;
  const refused = REFUSED_STATE[forms.refusals.get(data.elicitation_id)];
  if (refused) return refused;
  if (data.expires_at && runtimeNow() >= Date.parse(data.expires_at)) return "expired";
  return "pending";
}

function labelOf(field) {
  return field.title || field.name;
}

function initialValue(field) {
  if (field.default !== undefined) return field.kind === "multi" ? [...field.default] : field.default;
  if (field.kind === "boolean") return false;
  if (field.kind === "multi") return [];
  return "";
}

function valuesOf(data) {
  const id = data.elicitation_id;
  if (!forms.values.has(id)) {
    forms.values.set(id, Object.fromEntries(data.fields.map((f) => [f.name, initialValue(f)])));
  }
  return forms.values.get(id);
}

// What is wrong with one field's value, as the Runtime checks it ("" when nothing).
function problemOf(field, value) {
  const empty = value === "" || value === null || value === undefined || (Array.isArray(value) && value.length === 0 && field.kind !== "multi");
  if (empty) return field.required ? t("elicit.error.required") : "";
  if (field.kind === "string") {
    const n = [...value].length;
    if (field.min_length != null && n < field.min_length) return t("elicit.error.too_short", { count: field.min_length });
    if (field.max_length != null && n > field.max_length) return t("elicit.error.too_long", { count: field.max_length });
    if (field.format === "email" && !EMAIL.test(value)) return t("elicit.error.email");
    if (field.format === "uri" && !URI.test(value)) return t("elicit.error.uri");
    if (field.format === "date" && !/^\d{4}-\d{2}-\d{2}$/.test(value)) return t("elicit.error.date");
    if (field.format === "date-time" && Number.isNaN(Date.parse(value))) return t("elicit.error.date_time");
    return "";
  }
  if (field.kind === "number" || field.kind === "integer") {
    const number = Number(value);
    if (!Number.isFinite(number)) return t("elicit.error.number");
    if (field.kind === "integer" && !Number.isInteger(number)) return t("elicit.error.integer");
    if (field.minimum != null && number < field.minimum) return t("elicit.error.minimum", { min: field.minimum });
    if (field.maximum != null && number > field.maximum) return t("elicit.error.maximum", { max: field.maximum });
    return "";
  }
  if (field.kind === "multi") {
    if (value.length === 0 && field.required && !field.min_items) return t("elicit.error.required");
    if (field.min_items != null && value.length < field.min_items) return t("elicit.error.min_items", { count: field.min_items });
    if (field.max_items != null && value.length > field.max_items) return t("elicit.error.max_items", { count: field.max_items });
  }
  return "";
}

// The content the Runtime gets: empty optional fields left out, numbers as numbers,
// a local date and time as an instant.
function contentOf(data) {
  const values = valuesOf(data);
  const content = {};
  for (const field of data.fields) {
    const value = values[field.name];
    if (field.kind === "boolean") content[field.name] = Boolean(value);
    else if (field.kind === "multi") {
      if (value.length || field.required || field.min_items) content[field.name] = [...value];
    } else if (value === "" || value === null || value === undefined) continue;
    else if (field.kind === "number" || field.kind === "integer") content[field.name] = Number(value);
    else if (field.format === "date-time") content[field.name] = new Date(value).toISOString();
    else content[field.name] = value;
  }
  return content;
}

export function renderElicitation(item, li) {
  const data = item.data;
  const id = data.elicitation_id;
  const shown = shownState(item);
  const base = `el-${item.key}`;
  forms.keys.set(id, item.key);
  li.classList.add("kind-elicitation", `is-${shown}`);
  li.dataset.elicitationId = id;
  li.dataset.elicitationState = shown;

  const card = el("section", "card card-elicit");
  card.tabIndex = -1;
  card.dataset.focus = "card";
  card.setAttribute("role", "group");
  card.setAttribute("aria-labelledby", `${base}-from`);
  card.setAttribute("aria-describedby", `${base}-message ${base}-status`);
  if (forms.inflight.has(id)) card.setAttribute("aria-busy", "true");

  const head = el("header", "card-head");
  const from = el("span", "card-kind", t("elicit.from", { server: data.server_name || data.server_key }));
  from.id = `${base}-from`;
  head.append(from);
  const message = el("p", "card-prompt", data.message); // text only, never HTML
  message.id = `${base}-message`;
  card.append(head, message);

  const status = el("div", "card-status");
  status.id = `${base}-status`;
  if (shown === "pending") {
    status.append(countdownElement(item.key, data.expires_at));
    card.append(renderForm(item, base, status));
  } else {
    const word = FINALS.has(shown) ? t(`elicit.final.${shown}`) : t("elicit.final.closed");
    status.append(el("span", `final final-${shown}`, word));
    if (data.final_at) {
      const when = el("time", "card-time", time(data.final_at));
      when.dateTime = data.final_at;
      when.title = dateTime(data.final_at);
      status.append(when);
    }
    if (shown === "accepted" && data.answer) card.append(renderAnswer(data));
    card.append(status);
  }
  const refusal = forms.refusals.get(id);
  if (refusal) {
    const alert = el("p", "card-alert", t(`elicit.refusal.${REFUSALS.has(refusal) ? refusal : "other"}`));
    alert.setAttribute("role", "alert");
    const foot = card.querySelector(".card-foot");
    if (foot) foot.before(alert);
    else card.append(alert);
  }
  li.append(avatarFor(item), card);
}

function renderAnswer(data) {
  const box = el("div", "card-answer");
  box.append(el("span", "answer-label", t("elicit.your_answer")));
  const list = el("dl", "elicit-answer");
  for (const field of data.fields) {
    if (!(field.name in data.answer)) continue;
    const value = data.answer[field.name];
    const labels = new Map((field.options || []).map((o) => [o.value, o.label]));
    let text;
    if (field.kind === "boolean") text = t(value ? "elicit.yes" : "elicit.no");
    else if (field.kind === "multi") text = value.map((v) => labels.get(v) ?? v).join(", ");
    else if (field.kind === "enum") text = labels.get(value) ?? value;
    else text = String(value);
    list.append(el("dt", null, labelOf(field)), el("dd", null, text));
  }
  box.append(list);
  return box;
}

function renderForm(item, base, status) {
  const data = item.data;
  const id = data.elicitation_id;
  const busy = forms.inflight.has(id);
  const values = valuesOf(data);
  if (!forms.touched.has(id)) forms.touched.set(id, new Set());
  const touched = forms.touched.get(id);
  const form = el("form", "card-form elicit-form");
  form.noValidate = true;
  form.autocomplete = "off";
  const checks = [];
  const composers = [];
  data.fields.forEach((field, index) => {
    const [row, check, composing] = renderField(field, `${base}-f${index}`, values, touched, busy);
    form.append(row);
    checks.push(check);
    if (composing) composers.push(composing);
  });

  const decline = el("button", "button secondary", t("elicit.decline"));
  decline.type = "button";
  decline.dataset.focus = "decline";
  const cancel = el("button", "button secondary", t("elicit.cancel"));
  cancel.type = "button";
  cancel.dataset.focus = "cancel";
  const accept = el("button", "button primary", t(busy ? "elicit.sending" : "elicit.accept"));
  accept.type = "submit";
  accept.dataset.focus = "accept";
  decline.disabled = cancel.disabled = accept.disabled = busy;
  decline.addEventListener("click", () => submit(item, "decline"));
  cancel.addEventListener("click", () => submit(item, "cancel"));
  const actions = el("div", "card-actions");
  actions.append(cancel, decline, accept);
  const footer = el("div", "card-foot");
  footer.append(status, actions);
  form.append(footer);
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (composers.some((composing) => composing())) return; // the IME's Enter picks text
    for (const field of data.fields) touched.add(field.name);
    const firstBad = checks.map((check) => check()).find((bad) => bad);
    if (firstBad) {
      firstBad.focus();
      announce(t("elicit.fix_errors"));
      return;
    }
    submit(item, "accept");
  });
  return form;
}

// One property: its label (title, required mark), description, control and error
// line. Returns [row, check() -> the control to focus when invalid, composing()].
function renderField(field, id, values, touched, busy) {
  const row = el("div", `elicit-field field-${field.kind}`);
  row.dataset.field = field.name;
  const describedBy = [];
  let description = null;
  if (field.description) {
    description = el("p", "field-description", field.description);
    description.id = `${id}-desc`;
    describedBy.push(description.id);
  }
  const error = el("p", "field-error");
  error.id = `${id}-err`;
  error.setAttribute("aria-live", "polite");
  describedBy.push(error.id);
  const labelText = (node) => {
    node.append(document.createTextNode(labelOf(field)));
    if (field.required) {
      const mark = el("span", "required-mark", "*");
      mark.setAttribute("aria-hidden", "true");
      node.append(mark);
    }
  };
  let focusTarget;
  let composing = null;
  let heading; // what the description follows: the label, or the group's legend
  const controls = [];

  if (field.kind === "boolean") {
    const label = el("label", "option elicit-check");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.id = id;
    box.checked = Boolean(values[field.name]);
    box.addEventListener("change", () => {
      values[field.name] = box.checked;
    });
    const text = el("span", "option-text");
    labelText(text);
    label.append(box, text);
    row.append(label);
    heading = label;
    controls.push(box);
    focusTarget = box;
  } else if (field.kind === "enum" || field.kind === "multi") {
    const multiple = field.kind === "multi";
    const options = field.options || [];
    if (!multiple && options.length > RADIO_MAX) {
      const label = el("label", "field-label");
      label.htmlFor = id;
      labelText(label);
      const select = document.createElement("select");
      select.id = id;
      select.className = "answer-field";
      const none = el("option", null, t("elicit.choose"));
      none.value = "";
      select.append(none);
      for (const option of options) {
        const node = el("option", null, option.label);
        node.value = option.value;
        select.append(node);
      }
      select.value = values[field.name] ?? "";
      select.addEventListener("change", () => {
        values[field.name] = select.value;
      });
      row.append(label, select);
      heading = label;
      controls.push(select);
      focusTarget = select;
    } else {
      const group = el("fieldset", "options elicit-options");
      const legend = el("legend", "field-label");
      labelText(legend);
      group.append(legend);
      heading = legend;
      if (!multiple) group.setAttribute("role", "radiogroup");
      if (field.required) group.setAttribute("aria-required", "true");
      for (const [n, option] of options.entries()) {
        const label = el("label", "option");
        const input = document.createElement("input");
        input.type = multiple ? "checkbox" : "radio";
        input.name = id;
        input.id = `${id}-o${n}`;
        input.value = option.value;
        const current = values[field.name];
        input.checked = multiple ? current.includes(option.value) : current === option.value;
        input.addEventListener("change", () => {
          if (!multiple) values[field.name] = option.value;
          else {
            const set = new Set(values[field.name]);
            if (input.checked) set.add(option.value);
            else set.delete(option.value);
            values[field.name] = options.map((o) => o.value).filter((v) => set.has(v));
          }
        });
        const text = el("span", "option-text");
        text.append(el("span", "option-label", option.label));
        label.append(input, text);
        group.append(label);
        controls.push(input);
      }
      group.setAttribute("aria-describedby", describedBy.join(" "));
      if (multiple && (field.min_items != null || field.max_items != null)) {
        const hint = el("p", "field-description", itemsRule(field));
        hint.id = `${id}-hint`;
        group.setAttribute("aria-describedby", `${hint.id} ${describedBy.join(" ")}`);
        row.append(group, hint);
      } else {
        row.append(group);
      }
      focusTarget = controls[0];
    }
  } else {
    const label = el("label", "field-label");
    label.htmlFor = id;
    labelText(label);
    const input = document.createElement("input");
    input.id = id;
    input.className = "answer-field";
    input.spellcheck = field.kind === "string" && !field.format;
    if (field.kind === "number" || field.kind === "integer") {
      input.type = "number";
      input.inputMode = field.kind === "integer" ? "numeric" : "decimal";
      input.step = field.kind === "integer" ? "1" : "any";
      if (field.minimum != null) input.min = String(field.minimum);
      if (field.maximum != null) input.max = String(field.maximum);
    } else {
      input.type = { email: "email", uri: "url", date: "date", "date-time": "datetime-local" }[field.format] || "text";
      if (field.max_length != null) input.maxLength = field.max_length;
    }
    const value = values[field.name];
    input.value = value === null || value === undefined ? "" : String(value);
    input.addEventListener("input", () => {
      values[field.name] = input.value;
    });
    composing = watchComposition(input);
    input.addEventListener("keydown", (event) => {
      // The IME's Enter (isComposing, keyCode 229, or within a composition) picks its
      // text: it must not submit the form, so its default (implicit submission) goes.
      if (event.key === "Enter" && composing(event)) event.preventDefault();
    });
    row.append(label, input);
    heading = label;
    controls.push(input);
    focusTarget = input;
  }
  for (const control of controls) {
    control.disabled = busy;
    control.dataset.focus = `field:${field.name}`;
    const single = control.type !== "radio" && (control.type !== "checkbox" || field.kind === "boolean");
    if (single) {
      // A control of its own (not one option of a group, which its fieldset describes).
      control.setAttribute("aria-describedby", describedBy.join(" "));
      if (field.required) control.setAttribute("aria-required", "true");
    }
  }
  if (description) heading.after(description); // read before the control is reached
  row.append(error);
  const check = () => {
    const problem = problemOf(field, values[field.name]);
    const shown = touched.has(field.name) ? problem : "";
    error.textContent = shown;
    for (const control of controls) control.setAttribute("aria-invalid", shown ? "true" : "false");
    return problem ? focusTarget : null;
  };
  const touch = () => {
    touched.add(field.name);
    check();
  };
  for (const control of controls) {
    control.addEventListener("blur", touch);
    control.addEventListener("change", touch);
    control.addEventListener("input", () => {
      if (touched.has(field.name)) check();
    });
  }
  check();
  return [row, check, composing && (() => composing())];
}

function itemsRule(field) {
  const low = field.min_items;
  const high = field.max_items;
  if (low != null && high != null) return t("elicit.items_between", { low, high });
  if (low != null) return t("elicit.items_at_least", { count: low });
  return t("elicit.items_up_to", { count: high });
}

function submit(item, action) {
  const data = item.data;
  const id = data.elicitation_id;
  const latest = context.currentItem(item.key) || item;
  if (forms.inflight.has(id) || shownState(latest) !== "pending") return;
  forms.refusals.delete(id);
  const frame = { op: "elicit", conversation_id: item.conversation_id, elicitation_id: id, action };
  if (action === "accept") frame.content = contentOf(data);
  if (context.send(frame)) forms.inflight.add(id);
  else forms.refusals.set(id, "offline");
  context.rerender(item.key);
}

// The Runtime's word on this tab's answer.
export function onElicitReceipt(frame) {
  const id = frame.elicitation_id;
  forms.inflight.delete(id);
  if (frame.outcome === "accepted") {
    forms.refusals.delete(id); // the answered card comes as an item frame
  } else {
    forms.refusals.set(id, frame.outcome);
    if (frame.outcome === "elicitation_answer_invalid") {
      announce(t("elicit.refusal.elicitation_answer_invalid"));
    }
  }
  const key = forms.keys.get(id);
  if (key != null) context.rerender(key);
}

// A snapshot: how each answer ended is in it.
export function resetElicitations() {
  forms.inflight.clear();
  forms.refusals.clear();
}

// A form item that just arrived (before: the one it replaces): a new one takes focus
// when the person is idle (else it is announced); a change of state is announced.
const focusReturn = new Map();
export function elicitationArrived(item, before) {
  const data = item.data;
  const id = data.elicitation_id;
  if (data.state !== "pending") {
    forms.values.delete(id);
    forms.touched.delete(id);
    forms.inflight.delete(id);
  }
  const active = document.activeElement;
  if (!before && data.state === "pending") {
    const idle = !active || active === document.body || active.id === "timeline" || (active.id === "input" && !active.value);
    const card = idle && context.rowOf(item.key)?.querySelector(".card");
    if (!card) {
      announce(t("elicit.announce.new", { server: data.server_name || data.server_key }));
      return;
    }
    focusReturn.set(id, active);
    card.focus({ preventScroll: true });
  } else if (before && before.data.state !== data.state) {
    if (FINALS.has(data.state)) announce(t(`elicit.announce.${data.state}`));
    if (focusReturn.has(id)) {
      const back = focusReturn.get(id);
      focusReturn.delete(id);
      const card = context.rowOf(item.key)?.querySelector(".card");
      const here = document.activeElement;
      if (back?.isConnected && (!here || here === document.body || card?.contains(here))) back.focus({ preventScroll: true });
    }
  }
}
