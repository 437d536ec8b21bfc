// A hostile surface for agents: once loaded, it leaves its document the way its state
// says ("href", "replace", "meta"), every time it is mounted; "steady" stays. Each run
// tells the agent ("started"), so the tests can count how often it ran.
function leave(mode) {
  if (mode === "href") location.href = "http://loop.attacker.test/";
  else if (mode === "replace") location.replace("http://loop.attacker.test/");
  else if (mode === "meta") {
    const meta = document.createElement("meta");
    meta.httpEquiv = "refresh";
    meta.content = "0;url=http://loop.attacker.test/";
    document.head.append(meta);
  }
}
const loaded = new Promise((resolve) => addEventListener("load", resolve, { once: true }));
let started = false;
LineUpSurface.onState((state) => {
  document.getElementById("mode").textContent = String(state.mode);
  if (started) return;
  started = true;
  LineUpSurface.event("started", { mode: String(state.mode) });
  if (state.mode !== "steady") loaded.then(() => setTimeout(() => leave(state.mode), 50));
});
