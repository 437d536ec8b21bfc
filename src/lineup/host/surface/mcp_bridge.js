// LineUp MCP Apps bridge (surface side). mcp_document.py inlines it first in an MCP
// view's surface document, before the LineUp surface bridge (bridge.js, whose "ready"
// tells the shell it may post: this script's listener is in place by then), with the
// mount's boot object substituted below. The view's frame is created once the body
// (with the notice, if any) is parsed.
//
// An MCP App view (a server's ui:// HTML) is untrusted code that speaks MCP Apps
// JSON-RPC (SEP-1865, 2026-01-26) to its direct parent. This script is that parent: it
// frames the view in a nested <iframe sandbox="allow-scripts" srcdoc> (an opaque origin
// of its own, so the view cannot touch this realm; the srcdoc inherits this document's
// CSP and Connection-Allowlist), answers what it can answer itself, and relays every
// request that needs a decision to the shell as a lineup.mcp.v1 message. The shell
// hands it to the Runtime; the answer comes back and becomes the JSON-RPC response.
// The view can post to the shell directly (top.postMessage), but the shell only hears
// event.source === its frame's contentWindow, which is this document, never the view.
//
// Unlike bridge.js inside a MiniApp, this script IS a boundary: the view shares nothing
// with it but postMessage. Everything the view sends is checked here (shape, size,
// rate, method, params, order) and refused with JSON-RPC's errors, locally; only a
// well-formed request for a relayed method reaches the shell.
//
// View -> bridge (JSON-RPC), answered here:
//   ui/initialize               -> {protocolVersion, hostInfo, hostCapabilities, hostContext}
//   ping                        -> {}
//   anything else with an id    -> -32601 Method not found
// relayed to the shell (after ui/initialize was answered):
//   tools/call, resources/read, ui/open-link, ui/message, ui/update-model-context,
//   ui/request-display-mode
// notifications: ui/notifications/initialized, ui/notifications/size-changed (the view's
// frame follows its height; the shell gets a LineUpSurface.resize),
// notifications/message (the shell gets its level and size, never its data),
// notifications/cancelled (of a relayed request: the shell gets a cancel),
// ui/notifications/request-teardown; any other notification is dropped (never answered).
//
// Shell -> bridge (lineup.mcp.v1, from window.parent only): response, progress,
// tool_input, tool_result, tool_cancelled, host_context, teardown. The bridge keeps the
// protocol's order whatever the shell does: nothing reaches the view before its
// ui/notifications/initialized; tool-input at most once and before tool-result; one of
// tool-result / tool-cancelled, once; teardown is a ui/resource-teardown request whose
// answer (or TEARDOWN_TIMEOUT_MS) the shell hears as the event view.torn_down.
// docs: the message shapes are listed in mcp_document.py's module docstring.
(function () {
  "use strict";

  const BOOT = __LINEUP_MCP_BOOT__;
  const NAMESPACE = "lineup.mcp.v1";
  const PROTOCOL_VERSION = "2026-01-26";
  const MAX_MESSAGE_BYTES = 96 * 1024; // a view's message, serialised
  const MAX_DEPTH = 32;
  const MAX_PENDING = 8; // relayed requests waiting for the shell at once
  const RATE = 50; // view messages per second, sustained
  const BURST = 100;
  const TEARDOWN_TIMEOUT_MS = 3000;
  const MIN_VIEW_HEIGHT = 40;
  const MAX_VIEW_HEIGHT = 4000;
  const INITIAL_VIEW_HEIGHT = 150;
  const RELAYED = new Set([
    "tools/call",
    "resources/read",
    "ui/open-link",
    "ui/message",
    "ui/update-model-context",
    "ui/request-display-mode",
  ]);
  const DISPLAY_MODES = ["inline", "fullscreen", "pip"];
  const LOG_LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
  const CODE = /^[a-z][a-z0-9_]{0,63}$/;
  // JSON-RPC errors the bridge answers with; data.code is a stable LineUp code.
  const ERRORS = Object.freeze({
    invalid: [-32600, "Invalid Request", "request_invalid"],
    too_large: [-32600, "Request too large", "too_large"],
    unknown: [-32601, "Method not found", "method_unknown"],
    params: [-32602, "Invalid params", "request_invalid"],
    not_initialized: [-32000, "ui/initialize must come first", "request_invalid"],
    rate_limited: [-32000, "Too many requests", "rate_limited"],
    closing: [-32000, "The view is being torn down", "request_invalid"],
  });

  const global = window;
  const parentWindow = global.parent;
  const encoder = new TextEncoder();

  let view = null; // the view's <iframe>
  let viewTrusted = true;
  let loads = 0;
  let initializeAnswered = false;
  let initialized = false;
  let closing = false;
  let tornDown = false;
  let counter = 0;
  let tokens = BURST;
  let lastRefill = performance.now();
  const hostContext = Object.assign({}, BOOT.host_context);
  if (hostContext.timeZone === undefined) {
    hostContext.timeZone = Intl.DateTimeFormat().resolvedOptions().timeZone;
  }
  const pending = new Map(); // our request id -> {rpcId, method, progressToken}
  const byRpcId = new Map(); // JSON.stringify(view's id) -> our request id
  const queued = []; // host -> view notifications waiting for initialized
  const stats = { refused: 0 }; // for tests and debugging; no contents
  let toolInputSent = false;
  let toolTerminal = false;
  let heldResult = null; // a tool_result the shell sent before tool_input
  let teardownTimer = null;
  let appInfo = null; // what ui/initialize said, for the view.initialized event

  // --- helpers ----------------------------------------------------------------------

  function isPlainObject(value) {
    if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
    const proto = Object.getPrototypeOf(value);
    return proto === Object.prototype || proto === null;
  }

  // "ok" if value is JSON as it is (no Dates, Maps, cycles, NaN, lone surrogates...),
  // visiting at most `limit` values; "too_large" or "invalid" otherwise.
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

  function jsonShape(value, limit) {
    const found = jsonWalk(value, limit);
    if (found !== "ok") return found;
    return encoder.encode(JSON.stringify(value)).length < limit ? "ok" : "too_large";
  }

  function allow() {
    const now = performance.now();
    tokens = Math.min(BURST, tokens + ((now - lastRefill) * RATE) / 1000);
    lastRefill = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
  }

  function validId(id) {
    return (typeof id === "string" && id.length > 0 && id.length <= 128) || Number.isSafeInteger(id);
  }

  function toView(message) {
    if (view !== null && viewTrusted && view.contentWindow) view.contentWindow.postMessage(message, "*");
  }

  function toShell(type, fields) {
    parentWindow.postMessage(
      Object.assign({ namespace: NAMESPACE, type, instance_id: BOOT.instance_id, mount_id: BOOT.mount_id }, fields),
      "*",
    );
  }

  function event(name, data) {
    toShell("event", { name, data });
  }

  function answer(id, result) {
    toView({ jsonrpc: "2.0", id, result });
  }

  function fail(id, kind) {
    stats.refused += 1;
    const [code, message, lineup] = ERRORS[kind];
    if (id === undefined) return;
    toView({ jsonrpc: "2.0", id, error: { code, message, data: { code: lineup } } });
  }

  // --- the view's frame ---------------------------------------------------------------

  function setViewHeight(height) {
    const clamped = Math.round(Math.min(MAX_VIEW_HEIGHT, Math.max(MIN_VIEW_HEIGHT, height)));
    view.style.height = `${clamped}px`;
    const notice = document.getElementById("lineup-mcp-notice");
    const above = notice ? Math.ceil(notice.getBoundingClientRect().height) : 0;
    const surface = global.LineUpSurface; // bridge.js runs after this script
    if (surface) surface.resize(above + clamped);
  }

  function containerDimensions() {
    return { width: Math.round(document.documentElement.clientWidth), maxHeight: MAX_VIEW_HEIGHT };
  }

  function createView() {
    view = document.createElement("iframe");
    view.id = "lineup-mcp-view";
    view.setAttribute("sandbox", "allow-scripts");
    view.setAttribute("referrerpolicy", "no-referrer");
    view.setAttribute("allow", "");
    view.setAttribute("title", BOOT.title);
    view.style.cssText = "display:block;width:100%;border:0;margin:0;padding:0";
    view.addEventListener("load", () => {
      loads += 1;
      if (loads > 1 && viewTrusted) reloaded();
    });
    view.srcdoc = BOOT.view_html; // before insertion: the frame never loads about:blank
    document.body.append(view);
    setViewHeight(INITIAL_VIEW_HEIGHT);
  }

  // A view that reloads or navigates itself is a new, unverified document: it gets
  // nothing more, and what it had asked for is cancelled.
  function reloaded() {
    viewTrusted = false;
    for (const id of pending.keys()) toShell("cancel", { id });
    pending.clear();
    byRpcId.clear();
    event("view.reloaded", {});
  }

  // --- view -> bridge ---------------------------------------------------------------

  function onViewMessage(message) {
    if (!allow()) {
      const id = isPlainObject(message) && validId(message.id) && typeof message.method === "string" ? message.id : undefined;
      return fail(id, "rate_limited");
    }
    const shape = jsonWalk(message, MAX_MESSAGE_BYTES);
    const addressable = isPlainObject(message) && validId(message.id) ? message.id : null;
    if (shape === "too_large" || (shape === "ok" && encoder.encode(JSON.stringify(message)).length >= MAX_MESSAGE_BYTES)) {
      return fail(addressable, "too_large");
    }
    if (!isPlainObject(message) || message.jsonrpc !== "2.0") {
      stats.refused += 1; // not JSON-RPC at all (a library's own postMessage): dropped
      return;
    }
    if (shape !== "ok") return fail(addressable, "invalid");
    const hasMethod = Object.hasOwn(message, "method");
    const hasId = Object.hasOwn(message, "id");
    if (hasMethod && typeof message.method !== "string") return fail(addressable, "invalid");
    if (Object.hasOwn(message, "params") && !isPlainObject(message.params)) {
      return hasId ? fail(addressable, hasMethod ? "params" : "invalid") : fail(undefined, "invalid");
    }
    if (hasMethod && hasId) {
      if (!validId(message.id)) return fail(null, "invalid");
      return onViewRequest(message.id, message.method, message.params || {});
    }
    if (hasMethod) return onViewNotification(message.method, message.params || {});
    if (hasId && (Object.hasOwn(message, "result") || Object.hasOwn(message, "error"))) {
      return onViewResponse(message);
    }
    return fail(null, "invalid");
  }

  function onViewRequest(id, method, params) {
    if (method === "ping") return answer(id, {});
    if (method === "ui/initialize") return onInitialize(id, params);
    if (!RELAYED.has(method)) return fail(id, "unknown");
    if (!initializeAnswered) return fail(id, "not_initialized");
    if (closing) return fail(id, "closing");
    const key = JSON.stringify(id);
    if (byRpcId.has(key)) return fail(id, "invalid");
    const relayed = relayParams(method, params);
    if (relayed === null) return fail(id, "params");
    if (pending.size >= MAX_PENDING) return fail(id, "rate_limited");
    counter += 1;
    const ours = `v${counter}`;
    const meta = isPlainObject(params._meta) ? params._meta : null;
    const token = meta && validId(meta.progressToken) ? meta.progressToken : null;
    pending.set(ours, { rpcId: id, method, progressToken: token });
    byRpcId.set(key, ours);
    toShell("request", { id: ours, method, params: relayed });
  }

  function isString(value, max) {
    return typeof value === "string" && value.length > 0 && value.length <= max;
  }

  function contentBlocks(value) {
    const blocks = isPlainObject(value) ? [value] : value; // the spec's text shows one block
    if (!Array.isArray(blocks) || blocks.length > 64) return null;
    return blocks.every((b) => isPlainObject(b) && isString(b.type, 64)) ? blocks : null;
  }

  // The params the shell gets: only the fields the method defines, checked; null if
  // they are not what the method takes.
  function relayParams(method, params) {
    switch (method) {
      case "tools/call": {
        if (!isString(params.name, 128)) return null;
        const args = params.arguments === undefined ? {} : params.arguments;
        return isPlainObject(args) ? { name: params.name, arguments: args } : null;
      }
      case "resources/read":
        return isString(params.uri, 2048) ? { uri: params.uri } : null;
      case "ui/open-link": {
        if (!isString(params.url, 2048)) return null;
        try {
          new URL(params.url);
        } catch {
          return null;
        }
        return { url: params.url };
      }
      case "ui/message": {
        const content = contentBlocks(params.content);
        return params.role === "user" && content !== null ? { role: "user", content } : null;
      }
      case "ui/update-model-context": {
        const out = {};
        if (params.content !== undefined) {
          const content = contentBlocks(params.content);
          if (content === null) return null;
          out.content = content;
        }
        if (params.structuredContent !== undefined) {
          if (!isPlainObject(params.structuredContent)) return null;
          out.structuredContent = params.structuredContent;
        }
        return out;
      }
      case "ui/request-display-mode":
        return DISPLAY_MODES.includes(params.mode) ? { mode: params.mode } : null;
    }
    return null;
  }

  function onInitialize(id, params) {
    if (closing) return fail(id, "closing");
    const info = params.appInfo;
    if (
      typeof params.protocolVersion !== "string" ||
      !isPlainObject(info) ||
      typeof info.name !== "string" ||
      typeof info.version !== "string" ||
      (params.appCapabilities !== undefined && !isPlainObject(params.appCapabilities))
    ) {
      return fail(id, "params");
    }
    hostContext.containerDimensions = containerDimensions();
    answer(id, {
      protocolVersion: PROTOCOL_VERSION,
      hostInfo: BOOT.host_info,
      hostCapabilities: BOOT.host_capabilities,
      hostContext,
    });
    if (!initializeAnswered) {
      const caps = params.appCapabilities || {};
      const modes = Array.isArray(caps.availableDisplayModes)
        ? caps.availableDisplayModes.filter((m) => DISPLAY_MODES.includes(m))
        : [];
      appInfo = {
        app_name: info.name.slice(0, 128),
        app_version: info.version.slice(0, 64),
        protocol_version: params.protocolVersion.slice(0, 32),
        app_tools: isPlainObject(caps.tools),
        display_modes: modes,
      };
    }
    initializeAnswered = true;
  }

  function onViewNotification(method, params) {
    switch (method) {
      case "ui/notifications/initialized":
        if (!initializeAnswered || initialized) return fail(undefined, "invalid");
        initialized = true;
        event("view.initialized", appInfo);
        for (const message of queued.splice(0)) toView(message);
        return;
      case "ui/notifications/size-changed": {
        const height = params.height;
        if (height === undefined) return;
        if (typeof height !== "number" || !Number.isFinite(height) || height < 0) return fail(undefined, "params");
        return setViewHeight(height);
      }
      case "notifications/message": {
        const level = LOG_LEVELS.includes(params.level) ? params.level : "info";
        const bytes = encoder.encode(JSON.stringify(params.data === undefined ? null : params.data)).length;
        return event("view.log", { level, bytes });
      }
      case "notifications/cancelled": {
        if (!validId(params.requestId)) return;
        const key = JSON.stringify(params.requestId);
        const ours = byRpcId.get(key);
        if (ours === undefined) return;
        byRpcId.delete(key);
        pending.delete(ours); // MCP: no response after a cancellation
        return toShell("cancel", { id: ours });
      }
      case "ui/notifications/request-teardown":
        if (initialized && !closing) event("view.teardown_requested", {});
        return;
    }
    stats.refused += 1; // an unknown notification: JSON-RPC never answers one
  }

  function onViewResponse(message) {
    if (message.id === "lineup-teardown" && closing && !tornDown) {
      finishTeardown(true); // a result, or an error (a view without a teardown handler)
    }
  }

  // --- shell -> bridge --------------------------------------------------------------

  function notify(method, params) {
    const message = { jsonrpc: "2.0", method, params };
    if (initialized) toView(message);
    else queued.push(message);
  }

  function sendToolInput(args) {
    toolInputSent = true;
    notify("ui/notifications/tool-input", { arguments: args });
    if (heldResult !== null) {
      const held = heldResult;
      heldResult = null;
      notify(held.method, held.params);
    }
  }

  function onShellMessage(message) {
    if (!isPlainObject(message) || message.namespace !== NAMESPACE) return;
    if (message.instance_id !== BOOT.instance_id || typeof message.type !== "string") return;
    if (!viewTrusted || tornDown) return;
    switch (message.type) {
      case "response":
        return onShellResponse(message);
      case "progress": {
        const entry = pending.get(message.id);
        if (!entry || entry.progressToken === null || !Number.isFinite(message.progress)) return;
        const params = { progressToken: entry.progressToken, progress: message.progress };
        if (Number.isFinite(message.total)) params.total = message.total;
        if (typeof message.message === "string") params.message = message.message;
        return toView({ jsonrpc: "2.0", method: "notifications/progress", params });
      }
      case "tool_input":
        if (toolInputSent || closing || !isPlainObject(message.arguments)) return;
        return sendToolInput(message.arguments);
      case "tool_result":
      case "tool_cancelled": {
        if (toolTerminal || closing) return;
        let method, params;
        if (message.type === "tool_result") {
          if (!isPlainObject(message.result)) return;
          method = "ui/notifications/tool-result";
          params = message.result;
        } else {
          method = "ui/notifications/tool-cancelled";
          params = typeof message.reason === "string" ? { reason: message.reason } : {};
        }
        toolTerminal = true;
        if (toolInputSent || method === "ui/notifications/tool-cancelled") notify(method, params);
        else heldResult = { method, params };
        return;
      }
      case "host_context": {
        if (!isPlainObject(message.context) || closing) return;
        const changed = {};
        for (const key of Object.keys(message.context)) {
          if (key === "toolInfo") continue; // fixed for the mount's life
          changed[key] = message.context[key];
        }
        Object.assign(hostContext, changed);
        if (initialized && Object.keys(changed).length > 0) {
          toView({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: changed });
        }
        return;
      }
      case "teardown":
        return startTeardown(typeof message.reason === "string" ? message.reason : undefined);
    }
  }

  function onShellResponse(message) {
    const entry = pending.get(message.id);
    if (entry === undefined) return; // unknown, answered already, or cancelled by the view
    pending.delete(message.id);
    byRpcId.delete(JSON.stringify(entry.rpcId));
    if (message.ok === true && isPlainObject(message.result)) {
      let result = message.result;
      if (entry.method === "ui/request-display-mode" && !DISPLAY_MODES.includes(result.mode)) {
        result = { mode: hostContext.displayMode || "inline" };
      }
      return answer(entry.rpcId, result);
    }
    const error = isPlainObject(message.error) ? message.error : {};
    const code = typeof error.code === "string" && CODE.test(error.code) ? error.code : "request_invalid";
    const text = typeof error.message === "string" ? error.message.slice(0, 512) : code;
    const rpc = Number.isSafeInteger(error.rpc_code) ? error.rpc_code : -32000;
    toView({ jsonrpc: "2.0", id: entry.rpcId, error: { code: rpc, message: text, data: { code } } });
  }

  function startTeardown(reason) {
    if (closing) return;
    closing = true;
    queued.length = 0;
    if (!initialized) return finishTeardown(false);
    const params = reason === undefined ? {} : { reason };
    toView({ jsonrpc: "2.0", id: "lineup-teardown", method: "ui/resource-teardown", params });
    teardownTimer = setTimeout(() => finishTeardown(false), TEARDOWN_TIMEOUT_MS);
  }

  function finishTeardown(answered) {
    if (tornDown) return;
    tornDown = true;
    if (teardownTimer !== null) clearTimeout(teardownTimer);
    for (const [ours, entry] of pending) {
      fail(entry.rpcId, "closing");
      toShell("cancel", { id: ours });
    }
    pending.clear();
    byRpcId.clear();
    event("view.torn_down", { answered });
  }

  // --- wiring -----------------------------------------------------------------------

  global.addEventListener(
    "message",
    (e) => {
      if (e.source === parentWindow) return onShellMessage(e.data);
      if (view !== null && e.source !== null && e.source === view.contentWindow) {
        if (!viewTrusted || tornDown) return;
        return onViewMessage(e.data);
      }
    },
    true,
  );
  global.addEventListener("resize", () => {
    if (!initialized || closing) return;
    const dims = containerDimensions();
    const before = hostContext.containerDimensions || {};
    if (before.width === dims.width) return;
    hostContext.containerDimensions = dims;
    toView({ jsonrpc: "2.0", method: "ui/notifications/host-context-changed", params: { containerDimensions: dims } });
  });
  Object.defineProperty(global, "LineUpMcpBridge", {
    value: Object.freeze({
      get refused() {
        return stats.refused;
      },
      get pending() {
        return pending.size;
      },
    }),
  });
  if (document.body !== null) createView();
  else global.addEventListener("DOMContentLoaded", createView, { once: true });
})();
