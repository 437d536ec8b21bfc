// Installed into the page by benchmarks/roundtrip_browser.py (page.evaluate). It times
// one message at a time inside the page, so Playwright's own round trips are not in the
// figures. All times are performance.now(), in ms:
//   t0:        a keydown listener on window, capture phase, the first Enter after arm();
//              it runs before any listener of the app.
//   tFrame:    page_init.js's WebSocket listener (added before the app's): the frame
//              whose text holds the reply was dispatched to the page (null without it);
//              frames: page_init.js's [dispatched at, ms in the app's handlers, holds
//              the reply] of every frame since arm().
//   tDom:      a MutationObserver callback, the first time the newest reply rows hold
//              the expected text: the microtask after the DOM change, before any paint.
//   tVisible:  the start of the first animation frame (our requestAnimationFrame
//              callback) at whose layout the reply's text is in the rendered text of the
//              newest rows (innerText, read in a ResizeObserver callback: those run after
//              every rAF callback, the app's included, and after style and layout, just
//              before the frame paints). The frames are watched from tFrame on (from
//              tDom without page_init.js): a rAF loop from Enter would make the page
//              render frames it would not otherwise, which cost ~5 ms each at 10,000 rows.
//   tPaint:    a user-blocking scheduler.postTask task posted from that ResizeObserver
//              callback: the first task after the frame's rendering update, i.e. once
//              the main thread has painted that frame and handed it to the compositor.
//              The headline.
//   tPresented: Element Timing's renderTime of the reply's text (the compositor's
//              presentation time; Chromium coarsens it), null if it never came.
// Only the newest config.lookBack rows are read, so a check costs the same at 100 or
// 10,000 rows. config: {list, row, text} (the list's id, a row selector, the selector of
// the text inside a row) or {replyClass, replyFilter} (a live collection of replies).
(config) => {
  const page = window.__lineupPage || { expected: null, tFrame: null, longTasks: null };
  const replies = config.replyClass ? document.getElementsByClassName(config.replyClass) : null;
  const bench = { expected: null, round: 0, mutations: 0, resolve: null, done: null };
  const reset = () => {
    Object.assign(bench, {
      t0: null,
      tDom: null,
      tVisible: null,
      tLaidOut: null,
      tPaint: null,
      tPresented: null,
      mark: null,
      mutations: 0,
    });
  };
  reset();

  // The newest few reply elements, newest first: O(lookBack) whatever the length.
  const newest = () => {
    const found = [];
    if (replies === null) {
      const list = document.getElementById(config.list);
      let row = list ? list.lastElementChild : null;
      for (let seen = 0; row && seen < config.lookBack; seen += 1) {
        if (row.matches(config.row)) found.push(row);
        row = row.previousElementSibling;
      }
    } else {
      for (let i = replies.length - 1; i >= 0 && found.length < config.lookBack; i -= 1) {
        if (!config.replyFilter || replies[i].matches(config.replyFilter)) found.push(replies[i]);
      }
    }
    return found;
  };
  // The element holding the expected text (rendered: innerText, else textContent).
  const holding = (rendered) => {
    for (const row of newest()) {
      const target = config.text ? row.querySelector(config.text) : row;
      if (!target || !target.textContent.includes(bench.expected)) continue;
      if (!rendered || target.innerText.includes(bench.expected)) return target;
    }
    return null;
  };

  window.addEventListener(
    "keydown",
    (event) => {
      if (event.key === "Enter" && bench.expected !== null && bench.t0 === null) {
        bench.t0 = performance.now();
      }
    },
    true,
  );
  new MutationObserver(() => {
    if (bench.expected === null || bench.tDom !== null) return;
    bench.mutations += 1;
    if (holding(false) === null) return;
    bench.tDom = performance.now();
    watchFrames(bench.round);
  }).observe(document.body, { childList: true, subtree: true, characterData: true });

  // Element Timing: mark the reply's text before its first paint, read when presented.
  const timedTypes = PerformanceObserver.supportedEntryTypes || [];
  if (timedTypes.includes("element")) {
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) {
        if (entry.identifier !== bench.mark || !entry.renderTime) continue;
        bench.tPresented = Math.min(bench.tPresented ?? Infinity, entry.renderTime);
      }
    }).observe({ type: "element" });
  }
  const mark = (target) => {
    bench.mark = `lineup-bench-${bench.round}`;
    for (const element of [target, ...target.querySelectorAll("*")]) {
      element.setAttribute("elementtiming", bench.mark);
    }
  };

  const painted = (round) => {
    if (round !== bench.round || bench.tPaint !== null) return;
    bench.tPaint = performance.now();
    if (bench.resolve) bench.resolve();
  };
  // The first task after this frame's rendering update: a user-blocking task runs ahead
  // of the normal-priority tasks already queued (frames, an app's scheduler), which a
  // MessageChannel message would wait behind. (MessageChannel where there is none.)
  const channel = new MessageChannel();
  channel.port1.onmessage = (event) => painted(event.data);
  const afterRendering = (round) =>
    window.scheduler?.postTask
      ? window.scheduler.postTask(() => painted(round), { priority: "user-blocking" })
      : channel.port2.postMessage(round);
  let frameStart = null;
  const laidOut = new ResizeObserver(() => {
    if (bench.expected === null || bench.tVisible !== null || frameStart === null) return;
    const target = holding(true);
    if (target === null) {
      const round = bench.round;
      requestAnimationFrame(() => frame(round)); // not yet: look again next frame
      return;
    }
    bench.tVisible = frameStart;
    bench.tLaidOut = performance.now();
    mark(target);
    afterRendering(bench.round);
  });
  let watching = 0; // the round whose frames are watched
  const frame = (round) => {
    if (round !== bench.round || bench.expected === null || bench.tVisible !== null) return;
    frameStart = performance.now();
    // A fresh observation is reported in this frame's rendering update, after layout;
    // that callback asks for the next frame only if the reply is not visible yet.
    laidOut.unobserve(document.documentElement);
    laidOut.observe(document.documentElement);
  };
  const watchFrames = (round) => {
    if (watching === round || round !== bench.round) return;
    watching = round;
    requestAnimationFrame(() => frame(round));
  };

  bench.arm = (expected) => {
    bench.round += 1;
    reset();
    bench.expected = expected;
    page.expected = expected;
    page.tFrame = null;
    page.frames = [];
    frameStart = null;
    bench.done = new Promise((resolve) => {
      bench.resolve = resolve;
    });
    const round = bench.round;
    page.onReply = () => watchFrames(round);
  };
  const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  bench.wait = async (ms) => {
    await Promise.race([bench.done, settle(ms)]);
    // Element Timing reports after presentation, a frame or two later.
    for (let i = 0; i < 10 && bench.mark !== null && bench.tPresented === null; i += 1) {
      await settle(10);
    }
    const result = {
      t0: bench.t0,
      tFrame: page.tFrame,
      tDom: bench.tDom,
      tVisible: bench.tVisible,
      tLaidOut: bench.tLaidOut,
      tPaint: bench.tPaint,
      tPresented: bench.tPresented,
      mutations: bench.mutations,
      frames: page.frames ? page.frames.slice() : null,
    };
    bench.expected = null;
    page.expected = null;
    return result;
  };
  // Replies in the page (reads the whole timeline: call it outside the timings).
  bench.count = () =>
    replies === null
      ? document.querySelectorAll(`#${config.list} > ${config.row}`).length
      : [...replies].filter((element) => !config.replyFilter || element.matches(config.replyFilter))
          .length;
  window.__lineupBench = bench;
  return true;
}
