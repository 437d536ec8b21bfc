// LineUp MiniApp SDK (frame side). The surface origin inlines it after the bridge in
// every *app* surface (surfaces an agent opens with ui.open get the bridge only), with
// the mount's ids substituted below. It is the browser face of spec 002 §7: the app
// only *requests*; the Runtime checks ownership, state and permissions and answers each
// request exactly once.
//
//   LineUpApp.context()                        -> Promise<{instance_id, app_id, ..., locale}>
//                                              locale: the person's language, a BCP 47 tag
//                                              ("zh-CN", "en"): the one they chose, else their
//                                              newest tab's; <html lang> says the same before
//                                              the first paint (docs/miniapps.md, "Speaking
//                                              the person's language")
//   LineUpApp.ready()                          the app finished starting
//   LineUpApp.tools.subscribe(fn)              fn(call) once per pending call, again after a
//                                              reload until the app answers it
//   LineUpApp.tools.list() / get(call_id)
//   LineUpApp.tools.reportProgress(call_id, {current, total, label})
//   LineUpApp.tools.complete(call_id, result) / fail(call_id, code, message) / cancel(call_id)
//   LineUpApp.lifecycle.requestForeground() / requestBackground() / requestClose()
//   LineUpApp.state.get({of: "continued"}?) / set(object)
//   LineUpApp.inbox.list() / subscribe(fn) / acknowledge(inbox_id)
//   LineUpApp.surfaces.resize(height)          (LineUpSurface.resize)
//   LineUpApp.capabilities.request(name, args, {reason, expiresInMs})
//                                              -> the result once the person and the Runtime
//                                              decided; rejects with the status's code
//
// Every method returns a Promise; a refusal rejects with an Error whose `code` is the
// stable code of whoever refused: the Runtime, or the shell at once (rate_limited,
// method_unknown, too_large, request_invalid); `timeout` only if nobody answered in
// 30 s. Like the bridge, this is a convenience, not a boundary: the shell validates
// every message and the Runtime decides.
(function () {
  "use strict";

  const BOOT = __LINEUP_APP_BOOT__;
  const NAMESPACE = "lineup.app.v1";
  const TIMEOUT_MS = 30000;
  const parentWindow = window.parent;
  const postToParent = parentWindow.postMessage;
  const apply = Reflect.apply;
  const freeze = Object.freeze;
  const addListener = EventTarget.prototype.addEventListener;
  const messageData = Object.getOwnPropertyDescriptor(MessageEvent.prototype, "data").get;
  const messageSource = Object.getOwnPropertyDescriptor(MessageEvent.prototype, "source").get;
  const surface = window.LineUpSurface;

  let counter = 0;
  const waiting = new Map(); // request id -> {resolve, reject, timer}
  const toolListeners = [];
  const inboxListeners = [];
  const seenCalls = new Set(); // call ids handed to subscribers in this document
  const capabilityWaits = new Map(); // capability call id -> {resolve, reject}

  function refusal(code, message) {
    const error = new Error(message || code);
    error.code = code;
    return error;
  }

  function request(method, params) {
    counter += 1;
    const id = `r${counter}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        waiting.delete(id);
        reject(refusal("timeout", "the Runtime did not answer"));
      }, TIMEOUT_MS);
      waiting.set(id, { resolve, reject, timer });
      try {
        apply(postToParent, parentWindow, [
          {
            namespace: NAMESPACE,
            type: "request",
            instance_id: BOOT.instance_id,
            mount_id: BOOT.mount_id,
            id,
            method,
            params: params || {},
          },
          "*",
        ]);
      } catch {
        // Params the structured clone cannot carry (a function, a DOM node): refused
        // here with the code the shell gives params that are not JSON.
        waiting.delete(id);
        clearTimeout(timer);
        reject(refusal("request_invalid", "params must be a plain JSON object"));
      }
    });
  }

  async function refreshTools() {
    if (!toolListeners.length) return;
    const calls = await request("tools.list", {});
    for (const call of calls) {
      if (seenCalls.has(call.call_id)) continue;
      seenCalls.add(call.call_id);
      for (const fn of toolListeners.slice()) {
        try {
          fn(call);
        } catch (error) {
          reportError(error);
        }
      }
    }
  }

  async function refreshCapabilities() {
    for (const [callId, wait] of [...capabilityWaits]) {
      const call = await request("capabilities.get", { call_id: callId });
      if (call.status === "awaiting_consent" || call.status === "approved" || call.status === "executing") {
        continue;
      }
      capabilityWaits.delete(callId);
      if (call.status === "completed") wait.resolve(call.result);
      else wait.reject(refusal(call.code || call.status, `the capability call ended ${call.status}`));
    }
  }

  async function requestCapability(name, args, options) {
    const call = await request("capabilities.request", {
      name,
      arguments: args || {},
      reason: String(options?.reason || ""),
      ...(options?.expiresInMs ? { expires_in_ms: options.expiresInMs } : {}),
    });
    return new Promise((resolve, reject) => {
      capabilityWaits.set(call.call_id, { resolve, reject });
      refreshCapabilities().catch(() => {}); // it may have ended already
    });
  }

  async function refreshInbox() {
    if (!inboxListeners.length) return;
    const items = await request("inbox.list", {});
    for (const fn of inboxListeners.slice()) {
      try {
        fn(items);
      } catch (error) {
        reportError(error);
      }
    }
  }

  function onMessage(event) {
    if (apply(messageSource, event, []) !== parentWindow) return;
    const message = apply(messageData, event, []);
    if (!message || typeof message !== "object" || message.namespace !== NAMESPACE) return;
    if (message.instance_id !== BOOT.instance_id) return;
    if (message.type === "response") {
      const entry = waiting.get(message.id);
      if (!entry) return;
      waiting.delete(message.id);
      clearTimeout(entry.timer);
      if (message.ok) entry.resolve(message.result);
      else entry.reject(refusal(message.error?.code || "refused", message.error?.message));
    } else if (message.type === "push") {
      if (message.topic === "tools") refreshTools().catch(() => {});
      if (message.topic === "inbox") refreshInbox().catch(() => {});
      if (message.topic === "capabilities") refreshCapabilities().catch(() => {});
    }
  }

  apply(addListener, window, ["message", onMessage, true]);

  const api = freeze({
    context: () => request("context.get", {}),
    ready: () => request("lifecycle.ready", {}),
    tools: freeze({
      subscribe(fn) {
        if (typeof fn !== "function") throw new TypeError("LineUpApp: subscribe needs a function");
        toolListeners.push(fn);
        refreshTools().catch(() => {});
        return () => {
          const at = toolListeners.indexOf(fn);
          if (at >= 0) toolListeners.splice(at, 1);
        };
      },
      list: () => request("tools.list", {}),
      get: async (callId) => (await request("tools.list", {})).find((c) => c.call_id === callId) || null,
      reportProgress: (callId, progress) =>
        request("tools.progress", { call_id: callId, ...(progress || {}) }),
      complete: (callId, result) => request("tools.complete", { call_id: callId, result }),
      fail: (callId, code, message) =>
        request("tools.fail", { call_id: callId, code, ...(message ? { message } : {}) }),
      cancel: (callId) => request("tools.cancel", { call_id: callId }),
    }),
    lifecycle: freeze({
      requestForeground: () => request("lifecycle.requestForeground", {}),
      requestBackground: () => request("lifecycle.requestBackground", {}),
      requestClose: () => request("lifecycle.requestClose", {}),
    }),
    state: freeze({
      get: (options) => request("state.get", options || {}),
      set: (state) => request("state.set", { state }),
    }),
    inbox: freeze({
      list: () => request("inbox.list", {}),
      subscribe(fn) {
        if (typeof fn !== "function") throw new TypeError("LineUpApp: subscribe needs a function");
        inboxListeners.push(fn);
        refreshInbox().catch(() => {});
        return () => {
          const at = inboxListeners.indexOf(fn);
          if (at >= 0) inboxListeners.splice(at, 1);
        };
      },
      acknowledge: (inboxId) => request("inbox.acknowledge", { inbox_id: inboxId }),
    }),
    surfaces: freeze({
      resize: (height) => surface.resize(height),
    }),
    capabilities: freeze({
      request: requestCapability,
    }),
  });

  Object.defineProperty(window, "LineUpApp", {
    value: api,
    writable: false,
    enumerable: true,
    configurable: false,
  });
})();
