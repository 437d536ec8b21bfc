// LineUp surface bridge (frame side). The surface origin inlines this script first in
// every surface document, before any app code, with the mount's ids substituted below.
//
// It gives app code one frozen global, LineUpSurface:
//   event(name, data)  send a UI event up to the shell (name: ^[A-Za-z][A-Za-z0-9._:-]{0,63}$,
//                      data: a plain JSON object under 16 KiB once serialized)
//   onState(fn)        call fn(state) for every state the shell posts, starting with the
//                      last one if it came before fn was registered; returns an unsubscribe
//   resize(height)     ask the shell for a frame height in CSS pixels (the shell clamps)
// Bad arguments throw a TypeError here, so an app author sees the mistake at once; the
// shell checks every message again anyway.
//
// Limits, on purpose: this bridge is a convenience, not a security boundary. App code
// shares this realm and can call parent.postMessage with anything it likes; the shell
// (surface_host.js) validates every message and trusts nothing from here. What the
// bridge does guard against is accidental breakage: it captures, before app code runs,
// everything it relies on (parent and its postMessage, JSON, Reflect.apply, the
// MessageEvent getters, the regex test), builds messages as literals (no inherited
// setters run) and listens in the capture phase before anyone else, so a library that
// patches globals or stops propagation later does not break it. It cannot stop app code
// from ignoring it, flooding the shell (the shell rate-limits) or lying about events.
(function () {
  "use strict";

  const BOOT = __LINEUP_SURFACE_BOOT__;
  const NAMESPACE = "lineup.surface.v1";
  const MAX_DATA_BYTES = 16 * 1024;

  const global = window;
  const parentWindow = global.parent;
  const postToParent = parentWindow.postMessage;
  const apply = Reflect.apply;
  const freeze = Object.freeze;
  const getPrototypeOf = Object.getPrototypeOf;
  const isArray = Array.isArray;
  const objectPrototype = Object.prototype;
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const isFinite = Number.isFinite;
  const push = Array.prototype.push;
  const indexOf = Array.prototype.indexOf;
  const splice = Array.prototype.splice;
  const slice = Array.prototype.slice;
  const encoder = new TextEncoder();
  const encode = TextEncoder.prototype.encode;
  const test = RegExp.prototype.test;
  const EVENT_NAME = /^[A-Za-z][A-Za-z0-9._:-]{0,63}$/;
  const addListener = EventTarget.prototype.addEventListener;
  const messageData = Object.getOwnPropertyDescriptor(MessageEvent.prototype, "data").get;
  const messageSource = Object.getOwnPropertyDescriptor(MessageEvent.prototype, "source").get;
  const later = global.queueMicrotask.bind(global);
  const report = typeof global.reportError === "function" ? global.reportError.bind(global) : null;
  const TypeErrorCtor = TypeError;

  const listeners = [];
  let lastState;
  let hasState = false;

  // Every message is one object literal (own data properties only: no inherited
  // setter runs while it is built).
  function send(message) {
    apply(postToParent, parentWindow, [message, "*"]);
  }

  function isPlainObject(value) {
    if (value === null || typeof value !== "object" || isArray(value)) return false;
    const proto = getPrototypeOf(value);
    return proto === objectPrototype || proto === null;
  }

  // A plain JSON copy of data, or a TypeError: what arrives is exactly what JSON says.
  function jsonObject(data) {
    if (!isPlainObject(data)) throw new TypeErrorCtor("LineUpSurface: data must be a plain object");
    let text;
    try {
      text = stringify(data);
    } catch {
      throw new TypeErrorCtor("LineUpSurface: data must be JSON-serialisable");
    }
    if (apply(encode, encoder, [text]).length >= MAX_DATA_BYTES) {
      throw new TypeErrorCtor("LineUpSurface: data must serialise to less than 16 KiB");
    }
    return parse(text);
  }

  function deliver(fn, state) {
    try {
      fn(state);
    } catch (error) {
      if (report) report(error);
    }
  }

  function onMessage(event) {
    if (apply(messageSource, event, []) !== parentWindow) return;
    const message = apply(messageData, event, []);
    if (!isPlainObject(message) || message.namespace !== NAMESPACE) return;
    if (message.type !== "state" || message.instance_id !== BOOT.instance_id) return;
    const state = message.state;
    if (!isPlainObject(state)) return;
    lastState = state;
    hasState = true;
    const current = apply(slice, listeners, []);
    for (let i = 0; i < current.length; i++) deliver(current[i], state);
  }

  const api = freeze({
    event(name, data) {
      if (typeof name !== "string" || !apply(test, EVENT_NAME, [name])) {
        throw new TypeErrorCtor("LineUpSurface: bad event name");
      }
      const payload = jsonObject(data === undefined ? {} : data);
      send({
        namespace: NAMESPACE,
        type: "event",
        instance_id: BOOT.instance_id,
        mount_id: BOOT.mount_id,
        event: name,
        data: payload,
      });
    },
    onState(fn) {
      if (typeof fn !== "function") throw new TypeErrorCtor("LineUpSurface: onState needs a function");
      apply(push, listeners, [fn]);
      if (hasState) {
        const state = lastState;
        later(() => deliver(fn, state));
      }
      return function unsubscribe() {
        const at = apply(indexOf, listeners, [fn]);
        if (at >= 0) apply(splice, listeners, [at, 1]);
      };
    },
    resize(height) {
      if (typeof height !== "number" || !isFinite(height) || height < 0) {
        throw new TypeErrorCtor("LineUpSurface: height must be a finite, non-negative number");
      }
      send({
        namespace: NAMESPACE,
        type: "resize",
        instance_id: BOOT.instance_id,
        mount_id: BOOT.mount_id,
        height: height,
      });
    },
  });

  Object.defineProperty(global, "LineUpSurface", {
    value: api,
    writable: false,
    enumerable: true,
    configurable: false,
  });
  apply(addListener, global, ["message", onMessage, true]);
  // First message of every document, before any app code has run: the shell may post
  // the state now (this bridge keeps the last one for a late onState).
  send({
    namespace: NAMESPACE,
    type: "ready",
    instance_id: BOOT.instance_id,
    mount_id: BOOT.mount_id,
  });
})();
