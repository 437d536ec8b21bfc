"""Message rendering: ordinary Markdown survives, hostile Markdown comes out inert."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import pytest

from lineup.protocol.fields import MAX_TEXT_CHARS
from lineup.runtime.markdown import _sanitize, render_markdown, render_plain
from tests.runtime.xss_corpus import XSS_CORPUS, XssPayload, script_marker

# The allowlist, restated independently of the module so that widening it there
# fails here until someone looks.
ALLOWED_TAGS = {
    "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "a", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title", "rel"},
    "code": {"class"},
    "th": {"align"},
    "td": {"align"},
}
ALLOWED_SCHEMES = {"http", "https", "mailto"}
LINK_REL = "noopener noreferrer nofollow"
CODE_CLASS = re.compile(r"language-[a-z0-9+#-]{1,32}")
FORBIDDEN_SUBSTRINGS = (
    "<script", "<style", "<iframe", "<img", "<svg", "<math", "<object", "<embed",
    "<form", "<meta", "<base", "<link", "<noscript", "<template", "<!--", "<![cdata[",
)  # fmt: skip
# Browsers drop these from URLs before reading the scheme (tab, newline, leading C0).
_URL_IGNORED = re.compile(r"[\x00-\x20\x7f-\x9f\s]")
_SCHEME = re.compile(r"([a-z][a-z0-9+.-]*):", re.IGNORECASE)


class _Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.other_markup: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_comment(self, data: str) -> None:
        self.other_markup.append(f"comment {data!r}")

    def handle_decl(self, decl: str) -> None:
        self.other_markup.append(f"declaration {decl!r}")

    def handle_pi(self, data: str) -> None:
        self.other_markup.append(f"processing instruction {data!r}")

    def unknown_decl(self, data: str) -> None:
        self.other_markup.append(f"declaration {data!r}")


def _parse(fragment: str) -> _Parsed:
    parsed = _Parsed()
    parsed.feed(fragment)
    parsed.close()
    return parsed


def _href_scheme(href: str) -> str | None:
    match = _SCHEME.match(_URL_IGNORED.sub("", href))
    return match.group(1).lower() if match else None


def assert_inert(output: str) -> None:
    """The checks a hostile message's HTML must pass, whatever the input was."""
    parsed = _parse(output)
    assert parsed.other_markup == []
    for tag, attrs in parsed.elements:
        assert tag in ALLOWED_TAGS, tag
        assert set(attrs) <= ALLOWED_ATTRIBUTES.get(tag, set()), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if "href" in attrs:
            href = attrs["href"] or ""
            assert _href_scheme(href) in ALLOWED_SCHEMES, href
            assert attrs.get("rel") == LINK_REL, attrs
        if "class" in attrs:
            assert CODE_CLASS.fullmatch(attrs["class"] or ""), attrs
        if "align" in attrs:
            assert attrs["align"] in {"left", "center", "right"}, attrs
    lowered = output.lower()
    for forbidden in FORBIDDEN_SUBSTRINGS:
        assert forbidden not in lowered, forbidden


# -- Ordinary Markdown ---------------------------------------------------------------


def test_paragraphs_and_emphasis_render() -> None:
    assert render_markdown("Hello *world*, **bold** and ~~gone~~.\n\nNext `x`.") == (
        "<p>Hello <em>world</em>, <strong>bold</strong> and <s>gone</s>.</p>\n"
        "<p>Next <code>x</code>.</p>\n"
    )


def test_headings_render_at_each_level() -> None:
    assert render_markdown("# One\n\n###### Six") == "<h1>One</h1>\n<h6>Six</h6>\n"


def test_lists_and_blockquotes_render() -> None:
    assert render_markdown("- a\n- b\n\n1. x\n2. y\n\n> quoted\n\n---") == (
        "<ul>\n<li>a</li>\n<li>b</li>\n</ul>\n"
        "<ol>\n<li>x</li>\n<li>y</li>\n</ol>\n"
        "<blockquote>\n<p>quoted</p>\n</blockquote>\n<hr>\n"
    )


def test_hard_line_break_renders_as_br() -> None:
    assert render_markdown("one  \ntwo") == "<p>one<br>\ntwo</p>\n"


def test_fenced_code_keeps_its_language_class_and_escapes_content() -> None:
    assert render_markdown("```c++\nif (a < b) {}\n```") == (
        '<pre><code class="language-c++">if (a &lt; b) {}\n</code></pre>\n'
    )


def test_fenced_code_with_unusual_info_string_loses_the_class_only() -> None:
    assert render_markdown("```Python!\nx\n```") == "<pre><code>x\n</code></pre>\n"


def test_tables_render_with_alignment_as_align_attribute() -> None:
    assert render_markdown("| a | b | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |") == (
        "<table>\n<thead>\n<tr>\n"
        '<th align="left">a</th>\n<th align="center">b</th>\n<th align="right">c</th>\n'
        "</tr>\n</thead>\n<tbody>\n<tr>\n"
        '<td align="left">1</td>\n<td align="center">2</td>\n<td align="right">3</td>\n'
        "</tr>\n</tbody>\n</table>\n"
    )


def test_links_get_rel_and_keep_their_title() -> None:
    assert render_markdown('[docs](https://example.com/a?b=1&c=2 "The docs")') == (
        '<p><a href="https://example.com/a?b=1&amp;c=2" title="The docs" '
        f'rel="{LINK_REL}">docs</a></p>\n'
    )


def test_autolinks_and_email_autolinks_render() -> None:
    assert render_markdown("<https://example.com> <me@example.com>") == (
        f'<p><a href="https://example.com" rel="{LINK_REL}">https://example.com</a> '
        f'<a href="mailto:me@example.com" rel="{LINK_REL}">me@example.com</a></p>\n'
    )


def test_relative_links_stay_literal_text() -> None:
    assert render_markdown("[home](/settings) [top](#top)") == (
        "<p>[home](/settings) [top](#top)</p>\n"
    )


def test_bare_urls_are_not_linkified() -> None:
    assert render_markdown("see https://example.com") == "<p>see https://example.com</p>\n"


def test_image_renders_as_a_link_labelled_with_its_alt_text() -> None:
    assert render_markdown('![a cat](https://example.com/cat.png "Cat")') == (
        f'<p><a href="https://example.com/cat.png" title="Cat" rel="{LINK_REL}">a cat</a></p>\n'
    )


def test_image_without_alt_text_is_labelled_with_its_url() -> None:
    assert render_markdown("![](https://example.com/cat.png)") == (
        f'<p><a href="https://example.com/cat.png" rel="{LINK_REL}">'
        "https://example.com/cat.png</a></p>\n"
    )


def test_image_inside_a_link_renders_as_its_alt_text() -> None:
    assert render_markdown("[![build *passing*](https://ci/badge.svg)](https://ci/)") == (
        f'<p><a href="https://ci/" rel="{LINK_REL}">build passing</a></p>\n'
    )


def test_raw_html_is_shown_as_text() -> None:
    assert render_markdown("<b>bold</b>") == "<p>&lt;b&gt;bold&lt;/b&gt;</p>\n"


def test_rendering_is_deterministic() -> None:
    text = "# T\n\n| a |\n|:-:|\n| [x](https://e.com) |\n\n```py\nx\n```\n"
    assert {render_markdown(text) for _ in range(5)} == {render_markdown(text)}


def test_lone_surrogates_are_replaced_not_raised() -> None:
    assert render_markdown("a\ud800b") == "<p>a\ufffdb</p>\n"
    assert render_plain("a\udfffb") == "a\ufffdb"


def test_text_beyond_the_protocol_limit_is_not_rendered() -> None:
    output = render_markdown("a" * MAX_TEXT_CHARS + "TAIL")
    assert "TAIL" not in output
    assert output.count("a") == MAX_TEXT_CHARS


# -- Plain text ---------------------------------------------------------------------


def test_render_plain_escapes_markup() -> None:
    assert render_plain("<script>alert('x')</script> & \"q\"") == (
        "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;q&quot;"
    )


def test_render_plain_turns_every_newline_style_into_br() -> None:
    assert render_plain("a\nb\r\nc\rd") == "a<br>b<br>c<br>d"


def test_render_plain_leaves_markdown_alone() -> None:
    assert render_plain("*not* [a](https://x)") == "*not* [a](https://x)"


# -- Hostile input ------------------------------------------------------------------


def test_corpus_is_large_with_unique_names_that_carry_their_marker() -> None:
    names = [payload.name for payload in XSS_CORPUS]
    assert len(names) >= 40
    assert len(set(names)) == len(names)
    for name, text in XSS_CORPUS:
        assert re.fullmatch(r"[a-z0-9-]+", name), name
        decoded = [
            base64.b64decode(b).decode(errors="replace")
            for b in re.findall(r"base64,([\w+/=]+)", text)
        ]
        carriers = [text, *decoded]
        assert any(script_marker(name) in c or f"/__xss/{name}" in c for c in carriers), name


@pytest.mark.parametrize("payload", XSS_CORPUS, ids=[p.name for p in XSS_CORPUS])
def test_hostile_markdown_renders_inert(payload: XssPayload) -> None:
    assert_inert(render_markdown(payload.markdown))


@pytest.mark.parametrize("payload", XSS_CORPUS, ids=[p.name for p in XSS_CORPUS])
def test_hostile_markdown_output_is_a_sanitizer_fixed_point(payload: XssPayload) -> None:
    """Re-parsing the output changes nothing, so the browser sees what was checked."""
    output = render_markdown(payload.markdown)
    assert _sanitize(output) == output


@pytest.mark.parametrize("payload", XSS_CORPUS, ids=[p.name for p in XSS_CORPUS])
def test_sanitizer_alone_neutralises_the_payload_as_raw_html(payload: XssPayload) -> None:
    """The second layer holds even if the Markdown layer ever passed raw HTML through."""
    # nh3 takes UTF-8, so lone surrogates go first (render_markdown does the same).
    raw_html = payload.markdown.encode(errors="surrogatepass").decode(errors="replace")
    assert_inert(_sanitize(raw_html))


@pytest.mark.parametrize("payload", XSS_CORPUS, ids=[p.name for p in XSS_CORPUS])
def test_hostile_text_renders_inert_as_plain(payload: XssPayload) -> None:
    output = render_plain(payload.markdown)
    assert_inert(output)
    assert {tag for tag, _ in _parse(output).elements} <= {"br"}


_N = MAX_TEXT_CHARS
PATHOLOGICAL = {
    "nested-blockquotes": ">" * 10_000,
    "nested-blockquotes-full": "> " * (_N // 2),
    "emphasis-run": "*" * 30_000,
    "emphasis-alternating": "*a" * (_N // 2),
    "emphasis-mixed": "*_" * (_N // 2),
    "emphasis-unbalanced": "*a **b *c" * (_N // 9),
    "open-brackets": "[" * 20_000,
    "open-brackets-full": "[" * _N,
    "open-images-in-links": "[![" * (_N // 3),
    "open-link-destinations": "[a](" * (_N // 4),
    "nested-lists": "- " * (_N // 2),
    "indented-lists": "".join("  " * i + "- x\n" for i in range(250)),
    "backticks": "`a``" * (_N // 4),
    "angle-brackets": "<" * _N,
    "entities": "&#x41;" * (_N // 6),
    "table-columns": "|" + "a|" * (_N // 4) + "\n|" + "-|" * (_N // 4),
    "table-rows": "|a|b|\n|-|-|\n" + "|x|y|\n" * (_N // 6),
    "many-links": "[a](https://x)" * (_N // 14),
    "many-images": "![a](https://x)" * (_N // 15),
}


@pytest.mark.parametrize("text", PATHOLOGICAL.values(), ids=PATHOLOGICAL.keys())
def test_pathological_input_completes_and_renders_inert(text: str) -> None:
    output = render_markdown(text[:_N])
    assert_inert(output)
