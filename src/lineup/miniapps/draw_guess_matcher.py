"""A tiny sketch matcher for a demo agent playing Draw & Guess (round B: the person
draws, the agent guesses).

``guess_word(strokes)`` takes the vector strokes the app gives the agent (its
``snapshot`` event or the ``draw-guess.strokes`` tool: ``[{points: [[x, y], ...],
color?, width?}]``, screen coordinates with y growing downwards) and names one of
``WORDS`` from a few stroke features: closed loops, how round they are, their
corners, straight lines pointing away from a loop, and where the parts sit relative
to each other. It is a toy on purpose (no model, no dependencies): good enough to
show the round trip, and honest about not knowing (``None``).

The game speaks the person's language, so the words have names in each language the
shell has (``word_name``), and a guess counts in any of them: ``same_word("太阳",
"sun")`` (round A, where the person types the guess, Chinese through an input method).
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from lineup.i18n import canonical

__all__ = ["NAMES", "WORDS", "guess_word", "same_word", "word_name"]

WORDS = ("sun", "star", "house", "tree", "fish")
"""What the matcher can recognise, in the order it tries them."""

NAMES: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "sun": {"en": ("sun",), "zh-CN": ("太阳", "日", "太陽")},
    "star": {"en": ("star",), "zh-CN": ("星星", "星", "五角星")},
    "house": {"en": ("house", "home"), "zh-CN": ("房子", "房屋", "家", "屋子")},
    "tree": {"en": ("tree",), "zh-CN": ("树", "树木", "樹")},
    "fish": {"en": ("fish",), "zh-CN": ("鱼", "魚", "小鱼")},
}
"""Each word's names by language, the usual one first (then accepted variants: the
traditional characters a Chinese input method may give, a shorter word)."""

Point = tuple[float, float]

_CLOSED_GAP = 0.2  # end-to-start gap, as a share of the stroke's size, for a loop
_ROUND_SPREAD = 0.22  # radius spread (std / mean) under which a loop is round
_STRAIGHT = 0.9  # chord / path length over which a stroke is a straight line


@dataclass(frozen=True)
class _Shape:
    """One stroke, measured once."""

    points: tuple[Point, ...]
    left: float
    top: float
    right: float
    bottom: float
    length: float
    closed: bool

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top

    @property
    def size(self) -> float:
        return max(self.width, self.height)

    @property
    def center(self) -> Point:
        xs = [x for x, _ in self.points]
        ys = [y for _, y in self.points]
        return sum(xs) / len(xs), sum(ys) / len(ys)

    @property
    def straight(self) -> bool:
        first, last = self.points[0], self.points[-1]
        return self.length > 0 and math.dist(first, last) / self.length >= _STRAIGHT

    def radius_spread(self) -> tuple[float, float]:
        """Mean distance from the centre and its relative spread."""
        cx, cy = self.center
        radii = [math.dist((cx, cy), p) for p in self.points]
        mean = sum(radii) / len(radii)
        if mean == 0:
            return 0.0, 0.0
        var = sum((r - mean) ** 2 for r in radii) / len(radii)
        return mean, math.sqrt(var) / mean

    @property
    def round(self) -> bool:
        """A loop about as far from its centre everywhere, without the four corners of
        a box (a square's spread is small too)."""
        return self.closed and self.radius_spread()[1] <= _ROUND_SPREAD and self.corners() >= 5

    def corners(self) -> int:
        """Vertices of the simplified polygon (the closing point counted once)."""
        simple = _simplify(list(self.points), 0.08 * self.size)
        if self.closed and len(simple) > 1 and math.dist(simple[0], simple[-1]) < 0.2 * self.size:
            simple = simple[:-1]
        return len(simple)


def word_name(word: str, locale: str) -> str:
    """What ``word`` (one of ``WORDS``) is called in ``locale`` (``"en"``,
    ``"zh-CN"``); the word itself for a language or word not listed."""
    found = NAMES.get(word, {}).get(canonical(locale) or "")
    return found[0] if found else word


_MARKS = " \t\"'.!?,~\u3001\u3002\u300c\u300d\u300e\u300f\u2018\u2019\u201c\u201d"
"""What a guess may start or end with besides the word: spaces, ASCII punctuation (NFKC
makes the full-width ones ASCII), the ideographic comma and full stop, corner brackets
and curly quotes."""


def _folded(text: str) -> str:
    """A guess as compared: NFKC (full-width letters become ASCII), case folded, without
    spaces, quotes and end punctuation in either script, and without a leading article."""
    folded = unicodedata.normalize("NFKC", text).casefold().strip().strip(_MARKS)
    for article in ("a ", "an ", "the "):
        folded = folded.removeprefix(article)
    return "".join(folded.split())


def same_word(guess: str, word: str) -> bool:
    """Whether the person's ``guess`` names ``word`` (one of ``WORDS``, or any word:
    then compared as text) in any language."""
    names = {_folded(word)}
    for listed in NAMES.get(word, {}).values():
        names.update(_folded(name) for name in listed)
    return _folded(guess) in names


def guess_word(strokes: Sequence[Mapping[str, Any]]) -> str | None:
    """The word these strokes most look like, or ``None`` when none fits."""
    shapes = [shape for stroke in strokes if (shape := _measure(stroke)) is not None]
    if not shapes:
        return None
    for word, test in (
        ("sun", _is_sun),
        ("star", _is_star),
        ("house", _is_house),
        ("tree", _is_tree),
        ("fish", _is_fish),
    ):
        if test(shapes):
            return word
    return None


# --- the words -------------------------------------------------------------------------------


def _is_sun(shapes: list[_Shape]) -> bool:
    """A round loop with at least four straight rays pointing away from it."""
    for disc in shapes:
        if not disc.round or disc.width < 0.6 * disc.height or disc.height < 0.6 * disc.width:
            continue
        radius, _ = disc.radius_spread()
        rays = [s for s in shapes if s is not disc and _is_ray(s, disc.center, radius)]
        if len(rays) >= 4:
            return True
    return False


def _is_ray(shape: _Shape, center: Point, radius: float) -> bool:
    if not shape.straight or shape.length < 0.15 * radius:
        return False
    (x1, y1), (x2, y2) = shape.points[0], shape.points[-1]
    near, far = sorted(((x1, y1), (x2, y2)), key=lambda p: math.dist(center, p))
    if math.dist(center, near) < 0.85 * radius:
        return False
    out = (far[0] - near[0], far[1] - near[1])
    away = (near[0] - center[0], near[1] - center[1])
    norm = math.hypot(*out) * math.hypot(*away)
    return norm > 0 and (out[0] * away[0] + out[1] * away[1]) / norm >= 0.8


def _is_star(shapes: list[_Shape]) -> bool:
    """One closed stroke: ten points alternating far and near (an outline), or five
    points each about 144 degrees round from the last (a pentagram)."""
    for shape in shapes:
        if not shape.closed or shape.size <= 0:
            continue
        simple = _simplify(list(shape.points), 0.08 * shape.size)
        if math.dist(simple[0], simple[-1]) < 0.2 * shape.size:
            simple = simple[:-1]
        cx, cy = shape.center
        radii = [math.dist((cx, cy), p) for p in simple]
        if 9 <= len(simple) <= 11:
            outer = sorted(radii)[len(radii) // 2 :]
            inner = sorted(radii)[: len(radii) // 2]
            if sum(outer) / len(outer) > 1.5 * (sum(inner) / len(inner)):
                return True
        if len(simple) == 5:
            angles = [math.atan2(y - cy, x - cx) for x, y in simple]
            steps = [
                abs(math.degrees((b - a + math.pi) % (2 * math.pi) - math.pi))
                for a, b in zip(angles, angles[1:] + angles[:1], strict=True)
            ]
            if all(abs(step - 144) <= 25 for step in steps):
                return True
    return False


def _is_house(shapes: list[_Shape]) -> bool:
    """A box (a loop with four corners) with a roof on top: a stroke about as wide,
    sitting on the box's top edge and peaking near its middle."""
    for body in shapes:
        if not body.closed or body.corners() != 4 or body.round:
            continue
        if not 0.4 <= body.width / max(body.height, 1e-9) <= 2.5:
            continue
        for roof in shapes:
            if roof is body or roof.width < 0.6 * body.width:
                continue
            sits = abs(roof.bottom - body.top) <= 0.25 * body.height
            peak = min(roof.points, key=lambda p: p[1])
            middle = abs(peak[0] - (body.left + body.right) / 2) <= 0.3 * body.width
            if sits and middle and roof.top < body.top - 0.15 * body.height:
                return True
    return False


def _is_tree(shapes: list[_Shape]) -> bool:
    """A crown (a loop) above a trunk: a narrower, taller-than-wide stroke that starts
    at the crown, below its middle, and reaches well under it."""
    for crown in shapes:
        if not crown.closed:
            continue
        _, cy = crown.center
        for trunk in shapes:
            if trunk is crown or trunk.width >= 0.5 * crown.width:
                continue
            under = crown.left <= (trunk.left + trunk.right) / 2 <= crown.right
            below = cy <= trunk.top <= crown.bottom + 0.05 * crown.height
            long = trunk.height >= 0.35 * crown.height and trunk.bottom > crown.bottom
            if under and below and long and trunk.height > trunk.width:
                return True
    return False


def _is_fish(shapes: list[_Shape]) -> bool:
    """A long oval body (a loop at least 1.4 times as wide as tall) with a tail: a
    stroke at its left or right end, level with it."""
    for body in shapes:
        if not body.closed or body.width < 1.4 * body.height or body.corners() == 4:
            continue
        for tail in shapes:
            if tail is body or tail.height < 0.3 * body.height:
                continue
            level = body.top <= (tail.top + tail.bottom) / 2 <= body.bottom
            at_end = (
                tail.right <= body.left + 0.15 * body.width
                or tail.left >= body.right - 0.15 * body.width
            )
            if level and at_end:
                return True
    return False


# --- geometry --------------------------------------------------------------------------------


def _measure(stroke: Mapping[str, Any]) -> _Shape | None:
    raw = stroke.get("points")
    if not isinstance(raw, Sequence):
        return None
    points: list[Point] = []
    for point in raw:
        if (
            isinstance(point, Sequence)
            and len(point) >= 2
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in point[:2])
        ):
            points.append((float(point[0]), float(point[1])))
    if len(points) < 2:
        return None
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    length = sum(math.dist(a, b) for a, b in itertools.pairwise(points))
    size = max(max(xs) - min(xs), max(ys) - min(ys))
    closed = (
        len(points) >= 4
        and size > 0
        and math.dist(points[0], points[-1]) <= _CLOSED_GAP * size
        and length > 2 * size
    )
    return _Shape(tuple(points), min(xs), min(ys), max(xs), max(ys), length, closed)


def _simplify(points: list[Point], tolerance: float) -> list[Point]:
    """Ramer-Douglas-Peucker: the points that keep the shape within ``tolerance``."""
    if len(points) < 3:
        return points
    first, last = points[0], points[-1]
    index, distance = 0, -1.0
    for i in range(1, len(points) - 1):
        d = _segment_distance(points[i], first, last)
        if d > distance:
            index, distance = i, d
    if distance <= tolerance:
        return [first, last]
    return _simplify(points[: index + 1], tolerance)[:-1] + _simplify(points[index:], tolerance)


def _segment_distance(p: Point, a: Point, b: Point) -> float:
    (px, py), (ax, ay), (bx, by) = p, a, b
    dx, dy = bx - ax, by - ay
    if dx == 0 and dy == 0:
        return math.dist(p, a)
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.dist(p, (ax + t * dx, ay + t * dy))
