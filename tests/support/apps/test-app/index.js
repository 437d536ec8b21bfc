// The kernel's test app: a counter kept in the Runtime (state.get/set) and a worker for
// its four tools, using only the MiniApp SDK.
const count = document.getElementById("count");
const calls = document.getElementById("calls");
let state = { clicks: 0 };

function render() {
  count.textContent = String(state.clicks);
}

document.getElementById("bump").addEventListener("click", async () => {
  state = { ...state, clicks: state.clicks + 1 };
  render();
  await LineUpApp.state.set(state);
});

async function work(call) {
  const row = document.createElement("li");
  row.textContent = `${call.tool} ${call.call_id}`;
  row.dataset.callId = call.call_id;
  calls.append(row);
  const args = call.arguments || {};
  if (call.tool === "test-app.echo") {
    if (args.text === "fail") return LineUpApp.tools.fail(call.call_id, "echo_refused", "asked to fail");
    if (args.text === "hold") return null; // left running: the test closes the app
    return LineUpApp.tools.complete(call.call_id, { text: args.text });
  }
  if (call.tool === "test-app.slow") {
    const steps = args.steps || 1;
    for (let i = 1; i <= steps; i += 1) {
      await LineUpApp.tools.reportProgress(call.call_id, { current: i, total: steps, label: "step" });
    }
    return LineUpApp.tools.complete(call.call_id, { done: true });
  }
  const context = await LineUpApp.context();
  return LineUpApp.tools.complete(call.call_id, { instance_id: context.instance_id });
}

document.getElementById("copy").addEventListener("click", async () => {
  const shown = document.getElementById("copied");
  try {
    const result = await LineUpApp.capabilities.request(
      "clipboard.write",
      { text: "Hello from the test app" },
      { reason: "to put a greeting on your clipboard" },
    );
    shown.textContent = result.written ? "copied" : "not copied";
  } catch (error) {
    shown.textContent = `refused: ${error.code}`;
  }
});

let pings = 0;
document.getElementById("ping").addEventListener("click", () => {
  pings += 1;
  LineUpSurface.event("ping", { n: pings });
});
document.getElementById("shout").addEventListener("click", () => {
  LineUpSurface.event("shout", { loud: true }); // not in the manifest: never reaches the agent
});

(async () => {
  const context = await LineUpApp.context();
  document.getElementById("context").textContent = `${context.app_scope} ${context.app_version}`;
  state = { clicks: 0, ...(await LineUpApp.state.get()) };
  render();
  await LineUpApp.ready();
  LineUpApp.tools.subscribe((call) => {
    work(call).then((done) => {
      if (done) document.querySelector(`[data-call-id="${call.call_id}"]`).dataset.done = "true";
    }, (error) => {
      document.body.dataset.error = error.code || "error";
    });
  });
  LineUpApp.inbox.subscribe(async (items) => {
    for (const item of items) {
      const row = document.createElement("li");
      row.textContent = item.payload?.text ?? item.type;
      document.getElementById("inbox").append(row);
      await LineUpApp.inbox.acknowledge(item.inbox_id);
    }
  });
  document.body.dataset.ready = "true";
})();
