"""axe-core for the browser tests: installed from the npm registry, injected by the test.

``axe_script()`` installs a pinned axe-core once into a cache outside the repository
(``${XDG_CACHE_HOME:-~/.cache}/lineup/npm``, ``tests.support.npm``), file-locked. No CDN: the page
never fetches axe: the test evaluates the file's text in each frame.

``serious_violations(page)`` runs axe in the page and in every frame (each frame on its
own, ``iframes: false``, so sandboxed cross-origin surfaces are checked in their own
document), against the WCAG 2.0/2.1/2.2 A and AA rules (colour contrast included), and
returns the violations whose impact is serious or critical. ``describe`` formats them
for an assertion message.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from playwright.async_api import Error, Frame, Page

from tests.support.npm import NpmUnavailable, npm_package

AXE_VERSION = "4.14.1"
TAGS = ("wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa")
SERIOUS = frozenset({"serious", "critical"})


class AxeUnavailable(RuntimeError):
    """axe-core could not be installed (no npm, or the registry did not answer)."""


@cache
def axe_script() -> Path:
    """The path of ``axe.min.js`` of the pinned version, installed on first use."""
    try:
        package = npm_package("axe-core", AXE_VERSION, marker="axe.min.js")
    except NpmUnavailable as exc:
        raise AxeUnavailable(str(exc)) from None
    return package / "axe.min.js"


@cache
def _source() -> str:
    return axe_script().read_text(encoding="utf-8") + "\n;void 0;"


@dataclass(frozen=True)
class Violation:
    """One axe rule broken, where (frame URL) and on which nodes."""

    rule: str
    impact: str
    help: str
    frame: str
    nodes: tuple[tuple[str, str, str], ...]  # (target, html, failure summary)

    def describe(self) -> str:
        lines = [f"{self.rule} ({self.impact}): {self.help} [in {self.frame}]"]
        for target, html, summary in self.nodes[:6]:
            lines.append(f"    at {target}: {html[:160]}")
            for line in summary.splitlines():
                if line.strip():
                    lines.append(f"       {line.strip()}")
        if len(self.nodes) > 6:
            lines.append(f"    ... and {len(self.nodes) - 6} more")
        return "\n".join(lines)


_RUN = """async (tags) => {
  // What is checked is the state at rest: finish the transitions and finite animations
  // under way (a button fading in as it is enabled would be measured half-way).
  for (const animation of document.getAnimations()) {
    if (Number.isFinite(animation.effect?.getComputedTiming().endTime)) animation.finish();
  }
  const result = await window.axe.run(document, {
    runOnly: { type: "tag", values: tags },
    resultTypes: ["violations"],
    iframes: false,
  });
  return result.violations.map((v) => ({
    id: v.id,
    impact: v.impact,
    help: v.help,
    nodes: v.nodes.map((n) => ({
      target: n.target.map(String).join(" "),
      html: n.html,
      summary: n.failureSummary || "",
      impact: n.impact,
    })),
  }));
}"""


async def _in_frame(frame: Frame) -> list[Violation]:
    if frame.is_detached():
        return []
    try:
        if not await frame.evaluate("() => typeof window.axe === 'object'"):
            # Evaluated, not added as a <script>: the shell's CSP asks for Trusted Types,
            # and a script the page did not list would be refused.
            await frame.evaluate(_source())
        found: list[dict[str, Any]] = await frame.evaluate(_RUN, list(TAGS))
    except Error:
        if frame.is_detached():  # it went away while being checked: nothing to see
            return []
        raise
    where = frame.url if frame.parent_frame is not None else "the shell"
    out = []
    for v in found:
        nodes = tuple(
            (n["target"], n["html"], n["summary"]) for n in v["nodes"] if n["impact"] in SERIOUS
        )
        if v["impact"] in SERIOUS and nodes:
            out.append(Violation(v["id"], v["impact"], v["help"], where, nodes))
    return out


async def serious_violations(page: Page) -> list[Violation]:
    """Serious or critical WCAG 2.2 A/AA violations in the page and each of its frames."""
    found: list[Violation] = []
    for frame in page.frames:
        if frame.url in ("", "about:blank") and frame.parent_frame is not None:
            continue  # an iframe with no document yet
        found.extend(await _in_frame(frame))
    return found


def describe(violations: list[Violation]) -> str:
    return "\n".join(v.describe() for v in violations)
