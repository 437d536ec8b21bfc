// Preloaded (node --require) into the npm MCP servers the tests run over HTTP: they
// listen on every interface (express's app.listen(PORT)); this binds them to loopback.
"use strict";
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const first = args[0];
  if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    if (typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
    else args[1] = "127.0.0.1";
  } else if (first && typeof first === "object" && first.path === undefined) {
    args[0] = { ...first, host: "127.0.0.1" };
  }
  return listen.apply(this, args);
};
