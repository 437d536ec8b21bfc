// A surface for agents (ui.open): the bridge only (LineUpSurface), no MiniApp SDK.
let updates = 0;
let pings = 0;
LineUpSurface.onState((state) => {
  updates += 1;
  document.getElementById("text").textContent = String(state.text ?? "");
  document.getElementById("updates").textContent = String(updates);
});
document.getElementById("ping").addEventListener("click", () => {
  pings += 1;
  LineUpSurface.event("ping", { n: pings });
});
document.body.dataset.hasApp = String(typeof window.LineUpApp !== "undefined");
LineUpSurface.resize(document.documentElement.scrollHeight);
