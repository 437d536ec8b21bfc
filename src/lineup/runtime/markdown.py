"""Chat message text to HTML for the web shell: a security boundary.

The shell inserts this HTML into its own DOM, so whatever an agent writes must not be
able to run script, restyle the page, fetch remote resources or navigate within the
shell's origin. Two independent layers hold that line:

1. ``markdown-it-py`` parses CommonMark with raw HTML disabled, so every ``<`` the
   author typed comes out escaped; link destinations must be absolute
   ``http``/``https``/``mailto`` URLs or the link stays literal text.
2. ``nh3`` (ammonia) re-parses the result and keeps only an explicit allowlist of
   tags, attributes, attribute values and URL schemes, whatever layer 1 produced.

Images are never emitted: an ``<img>`` would make the shell fetch a URL of the
author's choosing as soon as the message is shown, leaking the user's IP address and
read time. ``![alt](url)`` renders as an ordinary link to ``url`` whose text is the
alt text (or the URL when the alt text is empty); inside a link it renders as its alt
text only.

Cost is bounded: input is cut at the protocol's text limit and ``maxNesting`` caps
block and inline nesting at 20 levels (deeper content is dropped rather than recursed
into), so the work is linear in the text. The constant is not small: markdown-it-py is
pure Python, and 64 KiB of unclosed ``[`` or ``[![`` takes about a second on a slow
core, against a few milliseconds for a typical message.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

import nh3
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from lineup.protocol.fields import MAX_TEXT_CHARS

__all__ = ["render_markdown", "render_plain"]

_MAX_NESTING = 20

_ALLOWED_TAGS = frozenset(
    {
        "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote",
        "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
        "table", "thead", "tbody", "tr", "th", "td",
    }
)  # fmt: skip
_ALLOWED_ATTRIBUTES = {"a": {"href", "title"}, "code": {"class"}}
_CELL_ALIGN = {"align": {"left", "center", "right"}}
_ALLOWED_ATTRIBUTE_VALUES = {"th": _CELL_ALIGN, "td": _CELL_ALIGN}
_URL_SCHEMES = frozenset({"http", "https", "mailto"})
_LINK_REL = "noopener noreferrer nofollow"
# Never reachable with raw HTML disabled; listed so a stray one loses its content too.
_DROP_WITH_CONTENT = frozenset(
    {"script", "style", "template", "noscript", "iframe", "object", "embed", "svg", "math"}
)

_CODE_CLASS = re.compile(r"language-[a-z0-9+#-]{1,32}")
_ALLOWED_LINK = re.compile(r"(?:https?|mailto):", re.IGNORECASE)
_TABLE_ALIGN_STYLE = re.compile(r"text-align:(left|center|right)")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class _ChatMarkdownIt(MarkdownIt):
    """CommonMark whose links must be absolute http, https or mailto URLs.

    The default validator only refuses a few bad schemes; relative links would
    resolve against the shell's own origin, so they are refused here too.
    """

    def validateLink(self, url: str) -> bool:
        return _ALLOWED_LINK.match(url) is not None


def _image_as_link(
    self: RendererHTML,
    tokens: Sequence[Token],
    idx: int,
    options: OptionsDict,
    env: EnvType,
) -> str:
    """Render ``![alt](src "title")`` as a link, never as ``<img>`` (see module doc)."""
    token = tokens[idx]
    alt = self.renderInlineAsText(token.children, options, env)
    src = str(token.attrGet("src") or "")
    if not src or token.meta.get("in_link"):
        return html.escape(alt)
    title = token.attrGet("title")
    title_attr = f' title="{html.escape(str(title))}"' if title else ""
    return f'<a href="{html.escape(src)}"{title_attr}>{html.escape(alt or src)}</a>'


def _mark_images_in_links(state: StateCore) -> None:
    """Flag images inside a link, so they render as text rather than a nested link."""
    for block in state.tokens:
        depth = 0
        for token in block.children or ():
            if token.type == "link_open":
                depth += 1
            elif token.type == "link_close":
                depth -= 1
            elif token.type == "image" and depth > 0:
                token.meta["in_link"] = True


def _table_align_attribute(state: StateCore) -> None:
    """Turn markdown-it's ``style="text-align:x"`` on cells into ``align="x"``.

    ``style`` is not allowed at all (CSS can restyle or overlay the shell), while
    ``align`` has three harmless values the sanitizer can check exactly.
    """
    for token in state.tokens:
        if token.type not in ("th_open", "td_open"):
            continue
        style = token.attrs.pop("style", None)
        match = _TABLE_ALIGN_STYLE.fullmatch(str(style)) if style is not None else None
        if match is not None:
            token.attrSet("align", match.group(1))


def _build_parser() -> MarkdownIt:
    md = _ChatMarkdownIt(
        "commonmark",
        {"html": False, "linkify": False, "typographer": False, "maxNesting": _MAX_NESTING},
    )
    md.enable(["table", "strikethrough"])
    md.add_render_rule("image", _image_as_link)
    md.core.ruler.push("mark_images_in_links", _mark_images_in_links)
    md.core.ruler.push("table_align_attribute", _table_align_attribute)
    return md


_PARSER = _build_parser()
"""Configured once; ``render`` keeps all per-call state in its own ``StateCore``."""


def _filter_attribute(tag: str, attribute: str, value: str) -> str | None:
    if tag == "code" and attribute == "class":
        return value if _CODE_CLASS.fullmatch(value) else None
    return value


def _sanitize(fragment: str) -> str:
    return nh3.clean(
        fragment,
        tags=_ALLOWED_TAGS,
        clean_content_tags=_DROP_WITH_CONTENT,
        attributes=_ALLOWED_ATTRIBUTES,
        attribute_filter=_filter_attribute,
        strip_comments=True,
        link_rel=_LINK_REL,
        tag_attribute_values=_ALLOWED_ATTRIBUTE_VALUES,
        url_schemes=_URL_SCHEMES,
        url_relative="deny",
    )


def _bounded(text: str) -> str:
    """Cut at the protocol limit; replace lone surrogates, which UTF-8 cannot encode."""
    return _LONE_SURROGATE.sub("\ufffd", text[:MAX_TEXT_CHARS])


def render_markdown(text: str) -> str:
    """Render a ``format: markdown`` message to HTML that is safe to insert in the shell.

    Deterministic: the same text always gives the same HTML. Never raises for a
    ``str`` input; text beyond the protocol's limit is cut off rather than rendered.
    """
    return _sanitize(_PARSER.render(_bounded(text)))


def render_plain(text: str) -> str:
    """Render a ``format: plain`` message: escaped text, line breaks as ``<br>``."""
    escaped = html.escape(_bounded(text), quote=True)
    return escaped.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")
