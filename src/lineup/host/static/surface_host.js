// LineUp shell: frames one MiniApp surface and is the only place its messages enter.
//
// The surface is untrusted code from the surface origin (lineup.host.surface), shown in
//   <iframe sandbox="allow-scripts" referrerpolicy="no-referrer" allow="">
// so it has an opaque origin ("null"): a message is identified by
// event.source === frame.contentWindow, and state is posted to it with target "*".
// Everything a frame sends is checked here before the shell acts on it: namespace,
// instance and mount ids, type, the exact set of fields, the event name grammar, data
// that is a plain JSON object under 16 KiB; a token bucket (100/s, burst 200) keeps a
// postMessage flood from swamping the shell. Whatever fails is dropped and counted
// (handle.rejected, handle.rejections) and reported with onReject(code).
//
// A frame can reload or navigate itself, and the new document passes the source check.
// So the first "load" is the mounted document; a second one marks the mount untrusted
// for good: its messages are dropped, post() sends nothing and onReload() tells the
// shell to mount afresh (a new frame element, its src set before it is inserted, so a
// remount adds no session-history entry), at most RELOAD_LIMIT times in
// RELOAD_WINDOW_MS (reloadLimit). (The surface origin serves each document once, so a
// reloaded frame holds an empty 410 page; the shell's CSP frame-src limits where else
// it can go.) What the shell cannot stop: Chromium puts a frame's own cross-document
// navigation (location.href, after its load) and its pushState in the shell's joint
// session history; location.replace, reload and a meta refresh add nothing.
//
// An app mount (a MiniApp instance's own surface, options.app) also relays the MiniApp
// SDK's requests (namespace lineup.app.v1): exactly {namespace, type: "request",
// instance_id, mount_id, id, method, params}, a known method, a short id and params a
// plain JSON object under 96 KiB, to onRequest(id, method, params); the shell answers
// with respond(id, ok, payload) and nudges the app with push(topic). A request this
// mount refuses is answered at once, never dropped, whenever it can be addressed (the
// right shape, this mount's ids, a valid id): {ok: false, error: {code, message}} with
// rate_limited, method_unknown, too_large or request_invalid (REFUSALS), so the SDK's
// promise rejects with that code instead of waiting for its timeout. A message that
// cannot be addressed, or one from a frame that is no longer trusted, gets no answer.
// A surface an agent opened has no such bridge (spec 000 §4.2): its lineup.app.v1
// messages are refused.
//
// Not set: credentialless. The frame's opaque origin already has no cookies or storage,
// and its network partition is keyed by that opaque origin, so credentialless would add
// nothing but a dependency on a secure-context-only feature.

import { t } from "./i18n.js";

export const NAMESPACE = "lineup.surface.v1";
export const MIN_HEIGHT = 40;
export const MAX_HEIGHT = 4000;
export const MAX_DATA_BYTES = 16 * 1024;
export const MAX_DEPTH = 32;
export const APP_NAMESPACE = "lineup.app.v1";
// Above the Runtime's 64 KiB state limit, so that an oversized state.set is the
// Runtime's to refuse (state_too_large); params this large are refused here.
export const MAX_REQUEST_BYTES = 96 * 1024;
// The Runtime's AppApi methods (lineup.runtime.apps.app_api.METHODS).
export const APP_METHODS = new Set([
  "context.get",
  "lifecycle.ready",
  "lifecycle.requestForeground",
  "lifecycle.requestBackground",
  "lifecycle.requestClose",
  "tools.list",
  "tools.progress",
  "tools.complete",
  "tools.fail",
  "tools.cancel",
  "state.get",
  "state.set",
  "inbox.list",
  "inbox.acknowledge",
  "capabilities.request",
  "capabilities.get",
]);
const REQUEST_FIELDS = ["namespace", "type", "instance_id", "mount_id", "id", "method", "params"];
// What a refused app request is answered with, by the shell's own reason (onReject's
// code). The codes are lineup.protocol.ErrorCode values (docs/miniapps.md lists them).
// The messages are for the app's developer, in English and in the SDK's own style
// (app_sdk.js): an app shows the person its own words, chosen by the code.
export const REFUSALS = Object.freeze({
  rate_limited: { code: "rate_limited", message: "too many requests: try again shortly" },
  not_ready: { code: "request_invalid", message: "the surface has not started yet" },
  unknown_method: { code: "method_unknown", message: "no such method" },
  bad_params: { code: "request_invalid", message: "params must be a plain JSON object" },
  too_large: { code: "too_large", message: "params must serialise to less than 96 KiB" },
});
const REQUEST_ID = /^[A-Za-z0-9_-]{1,64}$/;
const EVENT_NAME = /^[A-Za-z][A-Za-z0-9._:-]{0,63}$/;
const FIELDS = {
  ready: ["namespace", "type", "instance_id", "mount_id"],
  event: ["namespace", "type", "instance_id", "mount_id", "event", "data"],
  resize: ["namespace", "type", "instance_id", "mount_id", "height"],
};
const encoder = new TextEncoder();

function isPlainObject(value) {
  return (
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

function hasExactly(message, fields) {
  const keys = Object.keys(message);
  return keys.length === fields.length && fields.every((key) => Object.hasOwn(message, key));
}

// "ok" if value is JSON as it is: null, booleans, finite numbers, well-formed strings
// (no lone surrogate: the host channel's decoder refuses one), arrays and plain objects,
// nested at most MAX_DEPTH deep; "invalid" at the first value that is not. A structured
// clone can also carry Dates, Maps, typed arrays, cycles, undefined and NaN;
// JSON.stringify would quietly turn those into something else, so they are refused
// instead. The walk visits at most `limit` values (each costs at least a byte once
// serialised, so a value with more is "too_large"), so shared sub-objects cannot make it
// exponential.
function jsonWalk(root, limit) {
  let budget = limit;
  const walk = (value, depth) => {
    if (--budget < 0) return "too_large";
    if (value === null || typeof value === "boolean") return "ok";
    if (typeof value === "string") return value.isWellFormed() ? "ok" : "invalid";
    if (typeof value === "number") return Number.isFinite(value) ? "ok" : "invalid";
    if (typeof value !== "object" || depth >= MAX_DEPTH) return "invalid";
    if (Array.isArray(value)) {
      if (Object.getPrototypeOf(value) !== Array.prototype) return "invalid";
      for (let i = 0; i < value.length; i++) {
        const found = walk(value[i], depth + 1);
        if (found !== "ok") return found;
      }
      return "ok";
    }
    if (!isPlainObject(value)) return "invalid";
    for (const key of Object.keys(value)) {
      if (!key.isWellFormed()) return "invalid";
      const found = walk(value[key], depth + 1);
      if (found !== "ok") return found;
    }
    return "ok";
  };
  return walk(root, 0);
}

// "ok" if data is a plain JSON object under `limit` bytes once serialised; else
// "too_large" or "invalid".
function jsonShape(data, limit = MAX_DATA_BYTES) {
  if (!isPlainObject(data)) return "invalid";
  const found = jsonWalk(data, limit);
  if (found !== "ok") return found;
  return encoder.encode(JSON.stringify(data)).length < limit ? "ok" : "too_large";
}

// A token bucket on the page's monotonic clock.
function tokenBucket(rate, burst, now) {
  let tokens = burst;
  let last = now();
  return () => {
    const t = now();
    tokens = Math.min(burst, tokens + ((t - last) * rate) / 1000);
    last = t;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  };
}

const noop = () => {};

// How often a surface that reloads or navigates itself is mounted afresh: at most
// RELOAD_LIMIT times in any RELOAD_WINDOW_MS. A document that keeps doing it would
// otherwise run again (and send its events again) for ever; its owner (ui_cards.js,
// surfaces.js) stops it instead and offers "Reopen".
export const RELOAD_LIMIT = 3;
export const RELOAD_WINDOW_MS = 30_000;

/** A count of one surface's remounts: spend() is true while one more is allowed. */
export function reloadLimit({ limit = RELOAD_LIMIT, windowMs = RELOAD_WINDOW_MS, now } = {}) {
  const clock = now ?? (() => performance.now());
  let times = [];
  return {
    spend() {
      const t = clock();
      times = times.filter((at) => t - at < windowMs);
      if (times.length >= limit) return false;
      times.push(t);
      return true;
    },
  };
}

/**
 * Frame the surface at `url` inside `container` and relay its messages. `title` (the
 * frame's accessible name, e.g. the app's name) defaults to the catalogue's
 * "MiniApp surface" in the person's language.
 *
 * callbacks: onEvent(name, data), onResize(height), onReady(), onReload(),
 * onReject(code), onRequest(id, method, params) (app mounts); all optional.
 * options: {rate, burst, now} for the rate limit, app: true for an app mount.
 * Returns {frame, post(state), respond(id, ok, payload), push(topic), unmount(),
 * trusted, ready, rejected, rejections}.
 */
export function mountSurface(container, { url, instanceId, mountId, title }, callbacks = {}, options = {}) {
  for (const [name, value] of [["url", url], ["instanceId", instanceId], ["mountId", mountId]]) {
    if (typeof value !== "string" || value === "") throw new TypeError(`mountSurface: ${name} is required`);
  }
  const {
    onEvent = noop,
    onResize = noop,
    onReady = noop,
    onReload = noop,
    onReject = noop,
    onRequest = noop,
  } = callbacks;
  const app = options.app === true;
  const allow = tokenBucket(
    options.rate ?? 100,
    options.burst ?? 200,
    options.now ?? (() => performance.now()),
  );
  const counts = Object.create(null);
  let rejected = 0;
  let loads = 0;
  let trusted = true;
  let ready = false;
  let mounted = true;
  let pending = null;

  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.setAttribute("allow", "");
  frame.setAttribute("title", typeof title === "string" && title ? title : t("surface_host.frame_title"));
  frame.className = "surface-frame";
  frame.dataset.instanceId = instanceId;
  frame.style.height = `${MIN_HEIGHT}px`;

  function reject(code) {
    rejected += 1;
    counts[code] = (counts[code] || 0) + 1;
    onReject(code);
  }

  function send(state) {
    frame.contentWindow?.postMessage(
      { namespace: NAMESPACE, type: "state", instance_id: instanceId, state },
      "*",
    );
  }

  function onMessage(event) {
    if (event.source === null || event.source !== frame.contentWindow) return; // not ours
    if (!trusted) return reject("untrusted");
    const message = event.data;
    if (!allow()) return refuse(app ? addressed(message) : null, "rate_limited");
    if (app && isPlainObject(message) && message.namespace === APP_NAMESPACE) {
      return onAppRequest(message);
    }
    if (!isPlainObject(message) || message.namespace !== NAMESPACE) return reject("namespace");
    // A string only: hasOwn would coerce ["event"] to "event" (found by fuzzing).
    const type = typeof message.type === "string" ? message.type : null;
    const fields = type !== null && Object.hasOwn(FIELDS, type) ? FIELDS[type] : null;
    if (fields === null) return reject("unknown_type");
    if (!hasExactly(message, fields)) return reject("malformed");
    if (message.instance_id !== instanceId) return reject("instance_mismatch");
    if (message.mount_id !== mountId) return reject("mount_mismatch");
    if (message.type === "ready") {
      if (ready) return reject("duplicate_ready");
      ready = true;
      frame.dataset.ready = "true";
      if (pending !== null) send(pending);
      pending = null;
      return onReady();
    }
    if (!ready) return reject("not_ready");
    if (message.type === "resize") {
      const height = message.height;
      if (typeof height !== "number" || !Number.isFinite(height)) return reject("bad_height");
      const clamped = Math.round(Math.min(MAX_HEIGHT, Math.max(MIN_HEIGHT, height)));
      frame.style.height = `${clamped}px`;
      return onResize(clamped);
    }
    if (typeof message.event !== "string" || !EVENT_NAME.test(message.event)) {
      return reject("bad_event_name");
    }
    if (jsonShape(message.data) !== "ok") return reject("bad_data");
    return onEvent(message.event, message.data);
  }

  // The id of an app request addressed to this mount (the right shape, its ids, a
  // valid id), else null: only such a request can be answered.
  function addressed(message) {
    if (!isPlainObject(message) || message.namespace !== APP_NAMESPACE) return null;
    if (message.type !== "request" || !hasExactly(message, REQUEST_FIELDS)) return null;
    if (message.instance_id !== instanceId || message.mount_id !== mountId) return null;
    return typeof message.id === "string" && REQUEST_ID.test(message.id) ? message.id : null;
  }

  // Refuse a message; an addressed app request (id not null) is answered at once.
  function refuse(id, reason, answer = REFUSALS[reason]) {
    if (id !== null) sendApp({ type: "response", id, ok: false, error: { ...answer } });
    reject(reason);
  }

  function onAppRequest(message) {
    if (message.type !== "request" || !hasExactly(message, REQUEST_FIELDS)) return reject("malformed");
    if (message.instance_id !== instanceId) return reject("instance_mismatch");
    if (message.mount_id !== mountId) return reject("mount_mismatch");
    const id = addressed(message);
    if (!ready) return refuse(id, "not_ready");
    if (id === null) return reject("bad_request_id");
    if (typeof message.method !== "string" || !APP_METHODS.has(message.method)) {
      return refuse(id, "unknown_method");
    }
    const shape = jsonShape(message.params, MAX_REQUEST_BYTES);
    if (shape !== "ok") return refuse(id, "bad_params", REFUSALS[shape === "too_large" ? "too_large" : "bad_params"]);
    return onRequest(id, message.method, message.params);
  }

  function sendApp(message) {
    frame.contentWindow?.postMessage({ namespace: APP_NAMESPACE, instance_id: instanceId, ...message }, "*");
  }

  function onLoad() {
    loads += 1;
    if (loads > 1 && trusted) {
      trusted = false;
      frame.dataset.trusted = "false";
      onReload();
    }
  }

  window.addEventListener("message", onMessage);
  frame.addEventListener("load", onLoad);
  frame.src = url; // before insertion: the frame never shows (or loads) about:blank
  container.append(frame);

  return {
    frame,
    /** Post the surface's state; before "ready" the latest one waits. False once untrusted. */
    post(state) {
      if (!isPlainObject(state)) throw new TypeError("surface state must be a plain object");
      if (!trusted || !mounted) return false;
      if (ready) send(state);
      else pending = state;
      return true;
    },
    /** Answer one app request (app mounts); false once untrusted. */
    respond(id, ok, payload) {
      if (!app || !trusted || !mounted) return false;
      sendApp(ok ? { type: "response", id, ok: true, result: payload } : { type: "response", id, ok: false, error: payload });
      return true;
    },
    /** Tell the app something changed for it (topic "tools" or "inbox"). */
    push(topic) {
      if (!app || !trusted || !mounted || !ready) return false;
      sendApp({ type: "push", topic });
      return true;
    },
    unmount() {
      if (!mounted) return;
      mounted = false;
      trusted = false;
      window.removeEventListener("message", onMessage);
      frame.removeEventListener("load", onLoad);
      frame.remove();
    },
    get trusted() {
      return trusted && mounted;
    },
    get ready() {
      return ready;
    },
    get rejected() {
      return rejected;
    },
    get rejections() {
      return Object.freeze({ ...counts });
    },
  };
}
