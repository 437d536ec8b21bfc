// Installed into the page by benchmarks/roundtrip_browser.py (page.evaluate). It times
// one message at a time inside the page, so Playwright's own round trips are not in the
// figures:
//   t0: performance.now() in a keydown listener on window, capture phase, the first
//       Enter after arm(); it runs before any listener of the app.
//   t1: performance.now() in a MutationObserver callback, the first time the last few
//       reply elements (config.replyClass, filtered by config.replyFilter) contain the
//       expected text. That is the microtask after the DOM change that shows the reply,
//       before the next paint.
(config) => {
  const replies = document.getElementsByClassName(config.replyClass); // live, cheap to read
  const bench = {
    expected: null,
    t0: null,
    t1: null,
    mutations: 0,
    resolve: null,
    done: null,
  };
  const found = () => {
    let seen = 0;
    for (let i = replies.length - 1; i >= 0 && seen < config.lookBack; i -= 1) {
      const element = replies[i];
      if (config.replyFilter && !element.matches(config.replyFilter)) continue;
      seen += 1;
      if (element.textContent.includes(bench.expected)) return true;
    }
    return false;
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
    if (bench.expected === null || bench.t1 !== null) return;
    bench.mutations += 1;
    if (found()) {
      bench.t1 = performance.now();
      bench.resolve();
    }
  }).observe(document.body, { childList: true, subtree: true, characterData: true });
  bench.arm = (expected) => {
    bench.expected = expected;
    bench.t0 = null;
    bench.t1 = null;
    bench.mutations = 0;
    bench.done = new Promise((resolve) => {
      bench.resolve = resolve;
    });
  };
  bench.wait = (ms) =>
    Promise.race([bench.done, new Promise((resolve) => setTimeout(resolve, ms))]).then(() => {
      const result = { t0: bench.t0, t1: bench.t1, mutations: bench.mutations };
      bench.expected = null;
      return result;
    });
  bench.count = () =>
    [...replies].filter((element) => !config.replyFilter || element.matches(config.replyFilter))
      .length;
  window.__lineupBench = bench;
  return true;
}
