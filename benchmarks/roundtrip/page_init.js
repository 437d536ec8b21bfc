// Added to every page by benchmarks/roundtrip_browser.py (context.add_init_script), so it
// runs before the page's own scripts and before any of its sockets opens:
//   * every WebSocket gets a "message" listener before the app's own: the first frame
//     whose text contains window.__lineupPage.expected sets tFrame (performance.now()
//     when the page's main thread dispatches that frame) and calls onReply();
//   * the app's own "message" handlers (addEventListener or onmessage) are wrapped to
//     time them: while a message is expected, each frame adds [dispatched at, ms the
//     app's handlers took, holds the reply] to frames (the frames before the reply
//     delay it: the page handles one frame at a time);
//   * a PerformanceObserver collects long tasks (over 50 ms) as [start, duration] in
//     longTasks, from the first moment of the page; the script reads and empties it.
(() => {
  const page = (window.__lineupPage = {
    expected: null,
    tFrame: null,
    onReply: null,
    frames: [],
    longTasks: [],
  });
  try {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) page.longTasks.push([entry.startTime, entry.duration]);
    }).observe({ type: "longtask", buffered: true });
  } catch (error) {
    page.longTasks = null; // not supported: reported as such
  }
  const holdsReply = (event) =>
    page.expected !== null && typeof event.data === "string" && event.data.includes(page.expected);
  const timed = (listener) =>
    function (event) {
      const start = performance.now();
      try {
        return typeof listener === "function"
          ? listener.call(this, event)
          : listener.handleEvent(event);
      } finally {
        if (page.expected !== null) {
          page.frames.push([start, performance.now() - start, holdsReply(event)]);
        }
      }
    };
  const wrapped = new WeakMap();
  const Original = window.WebSocket;
  class Timed extends Original {
    constructor(...args) {
      super(...args);
      super.addEventListener("message", (event) => {
        const now = performance.now();
        if (page.tFrame === null && holdsReply(event)) {
          page.tFrame = now;
          if (page.onReply) page.onReply(); // the probe starts watching frames
        }
      });
    }
    addEventListener(type, listener, options) {
      if (type !== "message" || !listener) return super.addEventListener(type, listener, options);
      if (!wrapped.has(listener)) wrapped.set(listener, timed(listener));
      return super.addEventListener(type, wrapped.get(listener), options);
    }
    removeEventListener(type, listener, options) {
      const own = type === "message" && listener ? wrapped.get(listener) : undefined;
      return super.removeEventListener(type, own || listener, options);
    }
    get onmessage() {
      return this.__onmessage ?? null;
    }
    set onmessage(listener) {
      this.__onmessage = listener;
      super.onmessage = typeof listener === "function" ? timed(listener) : listener;
    }
  }
  window.WebSocket = Timed;
})();
