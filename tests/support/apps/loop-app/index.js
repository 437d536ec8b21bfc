// A MiniApp that reloads itself (location.href, after its load) on every start until its
// own state says {steady: true}; each start is counted in its state (runs).
const loaded = new Promise((resolve) => addEventListener("load", resolve, { once: true }));
(async () => {
  const state = await LineUpApp.state.get();
  const runs = (state.runs || 0) + 1;
  await LineUpApp.state.set({ ...state, runs });
  await LineUpApp.ready();
  LineUpApp.tools.subscribe(async (call) => {
    const context = await LineUpApp.context();
    await LineUpApp.tools.complete(call.call_id, { instance_id: context.instance_id });
  });
  document.getElementById("status").textContent = state.steady ? "steady" : `run ${runs}`;
  document.body.dataset.runs = String(runs);
  if (!state.steady) {
    await loaded;
    setTimeout(() => { location.href = "http://loop.attacker.test/"; }, 50);
  }
})();
