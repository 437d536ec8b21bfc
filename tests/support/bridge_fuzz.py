"""Fuzzing the surface bridge: hostile values a frame can post, how they travel to
Chromium, and a model of what ``surface_host.js`` must do with each one.

A value is a plain Python JSON value, a list (an array), an ``Obj`` (an object, with
``null`` prototype or not, keys in order, ``__proto__`` allowed as an own key) or one
of the shapes below that only JavaScript can make (``Exotic``, ``Deep``, ``Shared``,
``Sparse``, ``Rep``). ``encode`` turns a value into tagged JSON that ``DECODE_JS``
rebuilds inside the surface frame, so the frame posts the real thing (a ``Date``, a
``Map``, ``NaN``, a cycle, a sub-object shared 20,000 times) through the structured
clone, exactly as hostile app code would.

``BridgeModel`` is the rules of ``surface_host.js``'s ``onMessage`` written again in
Python, token bucket included (the page's clock is driven by the test, so the bucket is
exact): for every message it gives the one outcome the shell must produce, an
accepted ``ready``/``resize``/``event``/``request`` or a rejection code.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from lineup.runtime.apps.app_api import METHODS

__all__ = [
    "ANSWERS",
    "APP_METHODS",
    "APP_NAMESPACE",
    "DECODE_JS",
    "NAMESPACE",
    "REJECT_CODES",
    "BridgeModel",
    "Deep",
    "Exotic",
    "Obj",
    "Rep",
    "Shared",
    "Sparse",
    "encode",
    "js_json",
    "json_objects",
    "json_values",
]

# --- the constants of surface_host.js ---------------------------------------------------

NAMESPACE = "lineup.surface.v1"
APP_NAMESPACE = "lineup.app.v1"
MIN_HEIGHT = 40
MAX_HEIGHT = 4000
MAX_DATA_BYTES = 16 * 1024
MAX_REQUEST_BYTES = 96 * 1024
MAX_DEPTH = 32
RATE = 100
BURST = 200
APP_METHODS = METHODS
"""The methods the bridge relays: exactly the ones the Runtime's AppApi answers."""
FIELDS = {
    "ready": frozenset({"namespace", "type", "instance_id", "mount_id"}),
    "event": frozenset({"namespace", "type", "instance_id", "mount_id", "event", "data"}),
    "resize": frozenset({"namespace", "type", "instance_id", "mount_id", "height"}),
}
REQUEST_FIELDS = frozenset(
    {"namespace", "type", "instance_id", "mount_id", "id", "method", "params"}
)
EVENT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._:-]{0,63}")
REQUEST_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
ANSWERS = {
    "rate_limited": "rate_limited",
    "not_ready": "request_invalid",
    "unknown_method": "method_unknown",
    "bad_params": "request_invalid",
    "too_large": "too_large",
}
"""What ``surface_host.js`` answers a refused, addressed app request with (``REFUSALS``),
by its own reason; ``too_large`` is ``bad_params`` whose params are too large."""
REJECT_CODES = frozenset(
    {
        "untrusted",
        "rate_limited",
        "namespace",
        "unknown_type",
        "malformed",
        "instance_mismatch",
        "mount_mismatch",
        "duplicate_ready",
        "not_ready",
        "bad_height",
        "bad_event_name",
        "bad_data",
        "bad_request_id",
        "unknown_method",
        "bad_params",
    }
)
"""Every code ``surface_host.js`` passes to ``onReject``."""

# --- values -------------------------------------------------------------------------------

SAFE_INT = 2**53


@dataclass(frozen=True)
class Obj:
    """An object: own enumerable properties in order (a repeated key keeps its first
    place and its last value, as defineProperty does). ``null_proto``: made with
    ``Object.create(null)``; the structured clone gives the receiver a plain object."""

    pairs: tuple[tuple[str, Any], ...]
    null_proto: bool = False

    def fields(self) -> dict[str, Any]:
        return dict(self.pairs)


@dataclass(frozen=True)
class Rep:
    """``text.repeat(times)``, built in the frame (huge strings cost no transfer)."""

    text: str
    times: int

    def __str__(self) -> str:
        return self.text * self.times


@dataclass(frozen=True)
class Exotic:
    """A value the structured clone carries but JSON does not have (``neg0`` aside,
    which JSON writes as 0)."""

    kind: str
    arg: Any = None


EXOTIC_KINDS = (
    "nan",
    "inf",
    "neg_inf",
    "neg0",
    "undefined",
    "bigint",
    "date",
    "map",
    "set",
    "arraybuffer",
    "uint8array",
    "regexp",
    "boxed_bool",
    "boxed_string",
    "error",
    "cycle",
    "lone_surrogate",
)


@dataclass(frozen=True)
class Deep:
    """``leaf`` wrapped ``depth`` times in ``[...]`` (arrays) or ``{"a": ...}``."""

    depth: int
    leaf: Any
    arrays: bool


@dataclass(frozen=True)
class Shared:
    """An array holding the same sub-object ``times`` times (a DAG: cheap to clone,
    large once walked or serialised)."""

    item: Any
    times: int


@dataclass(frozen=True)
class Sparse:
    """``new Array(length)``: holes, which read as ``undefined``."""

    length: int


def encode(value: Any) -> list[Any]:
    """Tagged JSON for ``DECODE_JS``."""
    if value is None:
        return ["n"]
    if isinstance(value, bool):
        return ["b", value]
    if isinstance(value, int):
        assert -SAFE_INT <= value <= SAFE_INT, value
        return ["i", value]
    if isinstance(value, float):
        assert math.isfinite(value), value
        return ["f", value]
    if isinstance(value, str):
        return ["s", value]
    if isinstance(value, Rep):
        return ["rep", value.text, value.times]
    if isinstance(value, list):
        return ["a", [encode(v) for v in value]]
    if isinstance(value, Obj):
        return ["np" if value.null_proto else "o", [[k, encode(v)] for k, v in value.pairs]]
    if isinstance(value, Exotic):
        return ["x", value.kind, value.arg]
    if isinstance(value, Deep):
        return ["deep", value.depth, encode(value.leaf), value.arrays]
    if isinstance(value, Shared):
        return ["shared", encode(value.item), value.times]
    if isinstance(value, Sparse):
        return ["sparse", value.length]
    raise TypeError(f"not a fuzz value: {type(value).__name__}")


DECODE_JS = """
const decode = (v) => {
  switch (v[0]) {
    case "n": return null;
    case "b": case "i": case "f": case "s": return v[1];
    case "rep": return v[1].repeat(v[2]);
    case "a": return v[1].map(decode);
    case "o": case "np": {
      const o = v[0] === "o" ? {} : Object.create(null);
      for (const [k, x] of v[1]) {
        Object.defineProperty(o, k, {
          value: decode(x), enumerable: true, writable: true, configurable: true,
        });
      }
      return o;
    }
    case "deep": {
      let x = decode(v[2]);
      for (let i = 0; i < v[1]; i++) x = v[3] ? [x] : { a: x };
      return x;
    }
    case "shared": return new Array(v[2]).fill(decode(v[1]));
    case "sparse": return new Array(v[1]);
    case "x": switch (v[1]) {
      case "nan": return NaN;
      case "inf": return Infinity;
      case "neg_inf": return -Infinity;
      case "neg0": return -0;
      case "undefined": return undefined;
      case "bigint": return BigInt(v[2] ?? "12345678901234567890");
      case "date": return new Date(v[2] ?? 0);
      case "map": return new Map([["k", 1]]);
      case "set": return new Set([1, 2]);
      case "arraybuffer": return new ArrayBuffer(v[2] ?? 8);
      case "uint8array": return new Uint8Array(v[2] ?? 8);
      case "regexp": return /x+/g;
      case "boxed_bool": return new Boolean(true);
      case "boxed_string": return new String(v[2] ?? "event");
      case "error": return new Error("e");
      case "cycle": { const o = { k: 1 }; o.self = o; return o; }
      case "lone_surrogate": return "x\\ud800";
    }
  }
  throw new TypeError("not a tag: " + v[0]);
};
"""
"""Defines ``decode(tagged)`` (paste it into an evaluated function's body)."""


# --- JSON the way JavaScript writes it --------------------------------------------------


def js_number(x: float) -> str:
    """``Number.prototype.toString`` (ECMAScript Number::toString, radix 10)."""
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    digits_tuple, exponent = Decimal(repr(abs(x))).normalize().as_tuple()[1:]
    digits = "".join(map(str, digits_tuple))
    k = len(digits)
    n = k + int(exponent)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
        text = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + text


def js_json(value: Any) -> str:
    """``JSON.stringify(value)`` for a JSON value (no lone surrogates in strings)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return js_number(float(value)) if abs(value) >= 1e21 else str(value)
    if isinstance(value, float):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(js_json(v) for v in value) + "]"
    assert isinstance(value, dict), value
    return "{" + ",".join(f"{js_json(k)}:{js_json(v)}" for k, v in value.items()) + "}"


# --- the model of surface_host.js ------------------------------------------------------

_NOT_JSON = object()


def _unwrap(value: Any) -> Any:
    """A ``Deep`` as the object or array it is at its top."""
    while isinstance(value, Deep):
        if value.depth == 0:
            value = value.leaf
            continue
        inner = Deep(value.depth - 1, value.leaf, value.arrays)
        return [inner] if value.arrays else Obj((("a", inner),))
    return value


def _string(value: Any) -> str | None:
    """The string a value is in the receiver (``typeof === "string"``), else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, Rep):
        return str(value)
    return None


def as_json(value: Any, depth: int = 0) -> Any:
    """The JSON value ``value`` is once cloned, if ``isJson`` takes it (ignoring its
    visit budget: past it the size check fails as well); else ``_NOT_JSON``."""
    if isinstance(value, Deep):
        return as_json(_unwrap(value), depth)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Rep):
        return str(value)
    if isinstance(value, Exotic):
        return 0 if value.kind == "neg0" else _NOT_JSON
    if depth >= MAX_DEPTH:
        return _NOT_JSON
    if isinstance(value, Sparse):
        return [] if value.length == 0 else _NOT_JSON
    if isinstance(value, Shared):
        item = as_json(value.item, depth + 1)
        return _NOT_JSON if item is _NOT_JSON else [item] * value.times
    if isinstance(value, list):
        items = [as_json(v, depth + 1) for v in value]
        return _NOT_JSON if any(i is _NOT_JSON for i in items) else items
    assert isinstance(value, Obj), value
    out = {}
    for key, item in value.fields().items():
        converted = as_json(item, depth + 1)
        if converted is _NOT_JSON:
            return _NOT_JSON
        out[key] = converted
    return out


_INDEX = re.compile(r"0|[1-9][0-9]*")


def _js_keys(value: Obj) -> list[str]:
    """``Object.keys`` order: array-index keys ascending, then the rest as defined."""
    fields = value.fields()
    index = sorted((k for k in fields if _INDEX.fullmatch(k) and int(k) < 2**32 - 1), key=int)
    return index + [k for k in fields if k not in index]


def _walk(value: Any, depth: int, budget: list[int]) -> str:
    """``jsonWalk``'s visit of one value: ``"ok"``, ``"invalid"`` or ``"too_large"``
    (the visit budget ran out first), in the order the page walks."""
    budget[0] -= 1
    if budget[0] < 0:
        return "too_large"
    if isinstance(value, Deep):
        value = value.leaf if value.depth == 0 else _unwrap(value)
        budget[0] += 1  # the same value, seen through its wrapper: one visit
        return _walk(value, depth, budget)
    if value is None or isinstance(value, (bool, int, float, str, Rep)):
        return "ok"
    if isinstance(value, Exotic):
        if value.kind == "cycle":  # {k: 1, self: itself}, until the depth limit
            if depth >= MAX_DEPTH:
                return "invalid"
            if (found := _walk(1, depth + 1, budget)) != "ok":
                return found
            return _walk(value, depth + 1, budget)
        return "ok" if value.kind == "neg0" else "invalid"
    if depth >= MAX_DEPTH:
        return "invalid"
    if isinstance(value, Sparse):
        return "ok" if value.length == 0 else _walk(Exotic("undefined"), depth + 1, budget)
    items: list[Any]
    if isinstance(value, Shared):
        items = [value.item] * value.times
    elif isinstance(value, list):
        items = value
    else:
        assert isinstance(value, Obj), value
        fields = value.fields()
        items = [fields[k] for k in _js_keys(value)]
    for item in items:
        if (found := _walk(item, depth + 1, budget)) != "ok":
            return found
    return "ok"


def json_shape(value: Any, limit: int) -> tuple[str, Any]:
    """``jsonShape``: ``("ok", the JSON value as Python reads it)`` for a plain JSON
    object under ``limit`` bytes, else ``("invalid" | "too_large", None)``."""
    value = _unwrap(value)
    if not isinstance(value, Obj):
        return "invalid", None
    found = _walk(value, 0, [limit])
    if found != "ok":
        return found, None
    text = js_json(as_json(value))
    if len(text.encode()) >= limit:
        return "too_large", None
    return "ok", json.loads(text)  # as it reads once written by JavaScript


def json_data(value: Any, limit: int) -> Any:
    """``jsonShape`` as the accepted value, or ``_NOT_JSON``."""
    found, data = json_shape(value, limit)
    return data if found == "ok" else _NOT_JSON


@dataclass
class BridgeModel:
    """One app mount (``options.app: true``) whose clock the test drives, after its
    bridge's ``ready`` (at time 0). Each message first passes ``allow(t)`` (else
    ``rate_limited``), then ``judge``."""

    instance_id: str
    mount_id: str
    ready: bool = True
    tokens: float = BURST - 1.0
    last: float = 0.0

    def allow(self, t: float) -> bool:
        self.tokens = min(BURST, self.tokens + ((t - self.last) * RATE) / 1000)
        self.last = t
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True

    def judge(self, message: Any) -> list[Any]:
        """What the shell does with ``message`` once the rate limit let it through:
        ``["event", name, data]``, ``["resize", h]``, ``["ready"]``,
        ``["request", id, method, params]`` or ``["reject", code]``."""
        message = _unwrap(message)
        if not isinstance(message, Obj):
            return ["reject", "namespace"]
        fields = message.fields()
        namespace = _string(fields.get("namespace"))
        if namespace == APP_NAMESPACE:
            return self._request(fields)
        if namespace != NAMESPACE:
            return ["reject", "namespace"]
        kind = _string(fields.get("type"))
        if kind not in FIELDS:
            return ["reject", "unknown_type"]
        if set(fields) != FIELDS[kind]:
            return ["reject", "malformed"]
        if (refused := self._ids(fields)) is not None:
            return refused
        if kind == "ready":
            if self.ready:
                return ["reject", "duplicate_ready"]
            self.ready = True
            return ["ready"]
        if not self.ready:
            return ["reject", "not_ready"]
        if kind == "resize":
            height = fields["height"]
            if isinstance(height, Exotic) and height.kind == "neg0":
                height = 0.0
            if not isinstance(height, (int, float)) or isinstance(height, bool):
                return ["reject", "bad_height"]
            if not math.isfinite(height):
                return ["reject", "bad_height"]
            return ["resize", math.floor(min(MAX_HEIGHT, max(MIN_HEIGHT, height)) + 0.5)]
        name = _string(fields["event"])
        if name is None or not EVENT_NAME.fullmatch(name):
            return ["reject", "bad_event_name"]
        data = json_data(fields["data"], MAX_DATA_BYTES)
        if data is _NOT_JSON:
            return ["reject", "bad_data"]
        return ["event", name, data]

    def answer(self, message: Any, verdict: list[Any]) -> tuple[str, str] | None:
        """(request id, code) the shell answers ``message`` with at once, given its
        verdict: an app request it refused and can address; else None."""
        if verdict[0] != "reject" or verdict[1] not in ANSWERS:
            return None
        message = _unwrap(message)
        if not isinstance(message, Obj):
            return None
        fields = message.fields()
        if _string(fields.get("namespace")) != APP_NAMESPACE:
            return None
        if _string(fields.get("type")) != "request" or set(fields) != REQUEST_FIELDS:
            return None
        if self._ids(fields) is not None:
            return None
        request_id = _string(fields["id"])
        if request_id is None or not REQUEST_ID.fullmatch(request_id):
            return None
        if verdict[1] == "bad_params":
            shape = json_shape(fields["params"], MAX_REQUEST_BYTES)[0]
            return request_id, ANSWERS["too_large" if shape == "too_large" else "bad_params"]
        return request_id, ANSWERS[str(verdict[1])]

    def _ids(self, fields: dict[str, Any]) -> list[Any] | None:
        if _string(fields["instance_id"]) != self.instance_id:
            return ["reject", "instance_mismatch"]
        if _string(fields["mount_id"]) != self.mount_id:
            return ["reject", "mount_mismatch"]
        return None

    def _request(self, fields: dict[str, Any]) -> list[Any]:
        if _string(fields.get("type")) != "request" or set(fields) != REQUEST_FIELDS:
            return ["reject", "malformed"]
        if (refused := self._ids(fields)) is not None:
            return refused
        if not self.ready:
            return ["reject", "not_ready"]
        request_id = _string(fields["id"])
        if request_id is None or not REQUEST_ID.fullmatch(request_id):
            return ["reject", "bad_request_id"]
        method = _string(fields["method"])
        if method not in APP_METHODS:
            return ["reject", "unknown_method"]
        params = json_data(fields["params"], MAX_REQUEST_BYTES)
        if params is _NOT_JSON:
            return ["reject", "bad_params"]
        return ["request", request_id, method, params]


# --- strategies -------------------------------------------------------------------------

keys = st.text(max_size=8) | st.sampled_from(
    ["__proto__", "constructor", "toString", "namespace", "type", "0", "10", "-1", "a"]
)
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-SAFE_INT, SAFE_INT)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)


def _objects(inner: st.SearchStrategy[Any], *, null_proto: bool = False) -> st.SearchStrategy[Obj]:
    return st.lists(st.tuples(keys, inner), max_size=4).map(
        lambda pairs: Obj(tuple(pairs), null_proto)
    )


json_values = st.recursive(
    json_leaves, lambda inner: st.lists(inner, max_size=4) | _objects(inner), max_leaves=10
)
json_objects = _objects(json_values)
exotics = st.builds(Exotic, st.sampled_from(EXOTIC_KINDS))
odd_leaves = (
    exotics
    | st.builds(Sparse, st.integers(0, 5))
    | st.builds(Rep, st.sampled_from(["x", "é", "€", "\n", "\u2028"]), st.integers(0, 3000))
)
hostile_values = st.recursive(
    json_leaves | odd_leaves,
    lambda inner: (
        st.lists(inner, max_size=4)
        | _objects(inner)
        | _objects(inner, null_proto=True)
        | st.builds(Deep, st.integers(1, 300), inner, st.booleans())
        | st.builds(Shared, json_values, st.integers(1, 20_000))
    ),
    max_leaves=8,
)
