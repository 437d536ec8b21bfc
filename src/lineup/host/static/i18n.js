// The person's language in the shell: strings from the catalogue and numbers, dates
// and times through Intl.
//
// The Web Host picks the language (the person's setting, else the browser's preferred
// languages), sets <html lang> and puts that language's catalogue into the page as
// <script type="application/json" id="catalogue">: no request, no flash of English.
// The catalogue is lineup/locales/<lang>.json, i18next JSON v4: flat keys,
// {{placeholders}}, plural forms as key_one / key_other by Intl.PluralRules.
//
// Every string the person reads comes from t(); tests/test_i18n.py fails on a key
// missing in either language or used here but absent there.

const node = document.getElementById("catalogue");
const strings = node ? JSON.parse(node.textContent) : {};

export const locale = document.documentElement.lang || "en";

// The setting behind the language: "auto" (the browser's) or a language tag.
export const choice = document.documentElement.dataset.localeChoice || "auto";

const plurals = new Intl.PluralRules(locale);

// The string ``key`` with its {{placeholders}} filled from ``values``; with a numeric
// ``count``, the plural form for it (the count itself formatted as a number).
export function t(key, values = {}) {
  let text;
  if (typeof values.count === "number") {
    text = strings[`${key}_${plurals.select(values.count)}`] ?? strings[`${key}_other`];
  }
  text = text ?? strings[key];
  if (text === undefined) {
    console.error(`i18n: no string for ${key}`);
    return key;
  }
  return text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (whole, name) => {
    if (!(name in values)) return whole;
    const value = values[name];
    return typeof value === "number" ? number(value) : String(value);
  });
}

const formats = new Map();
function format(kind, options, make) {
  const key = `${kind}:${JSON.stringify(options)}`;
  let found = formats.get(key);
  if (!found) {
    found = make(locale, options);
    formats.set(key, found);
  }
  return found;
}

export function number(value, options = {}) {
  return format("number", options, (l, o) => new Intl.NumberFormat(l, o)).format(value);
}

// A clock time ("14:05" / "下午2:05"), with the date when it is not today.
export function time(value) {
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return "";
  const today = new Date();
  const sameDay = date.toDateString() === today.toDateString();
  const options = sameDay
    ? { hour: "numeric", minute: "2-digit" }
    : { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" };
  return format("time", options, (l, o) => new Intl.DateTimeFormat(l, o)).format(date);
}

// A full date and time, for titles and tooltips.
export function dateTime(value) {
  const date = value instanceof Date ? value : new Date(value);
  if (Number.isNaN(date.getTime())) return "";
  const options = { dateStyle: "medium", timeStyle: "short" };
  return format("datetime", options, (l, o) => new Intl.DateTimeFormat(l, o)).format(date);
}

// "in 5 minutes" / "5分钟后", "2 hours ago" / "2小时前": ``ms`` from now (negative: past).
export function relative(ms) {
  const rtf = format("relative", { numeric: "auto" }, (l, o) => new Intl.RelativeTimeFormat(l, o));
  const abs = Math.abs(ms);
  const sign = ms < 0 ? -1 : 1;
  if (abs < 60_000) return rtf.format(sign * Math.round(abs / 1000), "second");
  if (abs < 3_600_000) return rtf.format(sign * Math.round(abs / 60_000), "minute");
  if (abs < 86_400_000) return rtf.format(sign * Math.round(abs / 3_600_000), "hour");
  return rtf.format(sign * Math.round(abs / 86_400_000), "day");
}

// "a, b and c" / "a、b和c".
export function list(items, type = "conjunction") {
  return format("list", { type }, (l, o) => new Intl.ListFormat(l, o)).format(items);
}

// A size in bytes, in the unit a person reads ("1.2 MB").
export function bytes(size) {
  const units = ["byte", "kilobyte", "megabyte", "gigabyte"];
  let value = size;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return number(value, {
    style: "unit",
    unit: units[unit],
    unitDisplay: unit === 0 ? "long" : "short",
    maximumFractionDigits: unit === 0 ? 0 : 1,
  });
}
