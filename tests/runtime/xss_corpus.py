"""Hostile chat messages for the Markdown renderer, shared with browser tests.

Every payload carries a marker naming itself, so a test that loads the rendered HTML
into a real browser can prove nothing ran or was fetched:

- script payloads call ``window.__xss('<name>')`` (see :func:`script_marker`): define
  ``window.__xss`` to record its argument and assert it was never called;
- payloads that would make the page fetch or navigate use a URL under
  ``http://xss.invalid/__xss/<name>`` (see :func:`url_marker`): route that origin
  and assert it saw no request.

``XSS_CORPUS`` is a list of ``(name, markdown_text)`` pairs; names are unique slugs,
usable as pytest ids.
"""

from __future__ import annotations

import base64
from typing import NamedTuple

MARKER_ORIGIN = "http://xss.invalid"


class XssPayload(NamedTuple):
    name: str
    markdown: str


def script_marker(name: str) -> str:
    """The JavaScript a payload runs if the renderer lets it execute."""
    return f"window.__xss('{name}')"


def url_marker(name: str) -> str:
    """The URL a payload fetches or opens if the renderer lets it."""
    return f"{MARKER_ORIGIN}/__xss/{name}"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _payload(name: str, template: str) -> XssPayload:
    """Fill ``{js}``, ``{url}`` and ``{js64}`` (a base64 script page) into a template."""
    js = script_marker(name)
    text = (
        template.replace("{js64}", _b64(f"<script>{js}</script>"))
        .replace("{svg64}", _b64(f'<svg xmlns="http://www.w3.org/2000/svg" onload="{js}"/>'))
        .replace("{js}", js)
        .replace("{url}", url_marker(name))
    )
    return XssPayload(name, text)


_TEMPLATES: list[tuple[str, str]] = [
    # Script elements.
    ("script-plain", "<script>{js}</script>"),
    ("script-uppercase", "<SCRIPT>{js}</SCRIPT>"),
    ("script-mixed-case", "<ScRiPt>{js}</sCrIpT>"),
    ("script-split", "<scr<script>ipt>{js}</scr</script>ipt>"),
    ("script-nested", "<script><script>{js}</script></script>"),
    ("script-src", '<script src="{url}.js"></script>'),
    ("script-html-block", "# Title\n\n<script>\n{js}\n</script>\n\n*after*"),
    ("script-in-emphasis", "*<script>{js}</script>*"),
    ("script-in-link-text", "[<script>{js}</script>](https://example.com)"),
    ("script-in-heading", "## <script>{js}</script>"),
    ("script-in-table-cell", "| a |\n|---|\n| <script>{js}</script> |"),
    ("script-in-list-item", "- one\n- <script>{js}</script>"),
    ("script-in-blockquote", "> <script>{js}</script>"),
    ("script-nul-in-name", "<scr\x00ipt>{js}</script>"),
    ("script-unclosed", "<script>{js}"),
    ("script-backslash-escaped", "\\<script>{js}\\</script>"),
    ("script-entity-encoded", "&lt;script&gt;{js}&lt;/script&gt;"),
    ("script-double-entity-encoded", "&amp;lt;script&amp;gt;{js}&amp;lt;/script&amp;gt;"),
    ("script-in-code-span", "`<script>{js}</script>`"),
    ("script-in-fenced-code", "```html\n<script>{js}</script>\n```"),
    # Event handlers.
    ("img-onerror", '<img src=x onerror="{js}">'),
    ("img-onerror-unquoted", "<img src=x onerror={js}>"),
    ("svg-onload", '<svg onload="{js}">'),
    ("body-onload", '<body onload="{js}">'),
    ("a-onmouseover", '<a href="https://example.com" onmouseover="{js}">hover</a>'),
    ("details-ontoggle", '<details open ontoggle="{js}"><summary>x</summary></details>'),
    ("input-autofocus-onfocus", '<input autofocus onfocus="{js}">'),
    ("video-source-onerror", '<video><source onerror="{js}"></video>'),
    ("html-block-div-onclick", '<div onclick="{js}">\n\nclick\n\n</div>'),
    ("handler-in-link-text", "[<img src=x onerror={js}>](https://example.com)"),
    # Dangerous schemes in Markdown links.
    ("link-javascript", "[click](javascript:{js})"),
    ("link-javascript-angle", "[click](<javascript:{js}>)"),
    ("link-javascript-mixed-case", "[click](JaVaScRiPt:{js})"),
    ("link-javascript-leading-space", "[click](   javascript:{js})"),
    ("link-javascript-tab-entity", "[click](jav&#x09;ascript:{js})"),
    ("link-javascript-newline-entity", "[click](java&#10;script:{js})"),
    ("link-javascript-raw-newline", "[click](java\nscript:{js})"),
    ("link-javascript-raw-tab", "[click](<java\tscript:{js}>)"),
    (
        "link-javascript-decimal-entities",
        "[click](&#106;&#97;&#118;&#97;&#115;&#99;&#114;&#105;&#112;&#116;&#58;{js})",
    ),
    ("link-javascript-hex-entity-colon", "[click](javascript&#x3A;{js})"),
    ("link-javascript-named-entity-colon", "[click](javascript&colon;{js})"),
    ("link-javascript-percent-colon", "[click](javascript%3A{js})"),
    ("link-javascript-percent-scheme", "[click](%6Aavascript:{js})"),
    ("link-javascript-backslash-colon", "[click](javascript\\:{js})"),
    ("link-javascript-control-prefix", "[click](\x01javascript:{js})"),
    ("link-javascript-nul-inside", "[click](java\x00script:{js})"),
    ("link-javascript-zero-width", "[click](java\u200bscript:{js})"),
    ("link-javascript-fullwidth", "[click](\uff4a\uff41\uff56\uff41script:{js})"),
    ("link-vbscript", '[click](vbscript:msgbox("{js}"))'),
    ("link-data-html", "[click](data:text/html,%3Cscript%3E{js}%3C/script%3E)"),
    ("link-data-html-base64", '[click](data:text/html;base64,{js64} "{js}")'),
    ("link-data-svg-base64", '[click](data:image/svg+xml;base64,{svg64} "{js}")'),
    ("link-file-scheme", "[click](file:///etc/passwd?{js})"),
    ("link-protocol-relative", "[click](//xss.invalid/__xss/link-protocol-relative)"),
    ("link-root-relative", "[click](/__xss/link-root-relative)"),
    ("link-fragment-relative", "[click](#/__xss/link-fragment-relative)"),
    ("link-title-double-quote-break", '[x](https://example.com "a\\" onmouseover=\\"{js}")'),
    ("link-title-single-quote-break", "[x](https://example.com 'a\\' onmouseover=\\'{js}')"),
    ("link-title-entity-quote-break", '[x](https://example.com "a&quot; onmouseover=&quot;{js}")'),
    ("link-href-quote-break", '[x](https://example.com/"onmouseover="{js})'),
    ("link-href-angle-quote-break", '[x](<https://example.com/" onmouseover="{js}>)'),
    # Autolinks.
    ("autolink-javascript", "<javascript:{js}>"),
    ("autolink-javascript-upper", "<JAVASCRIPT:{js}>"),
    ("autolink-vbscript", "<vbscript:{js}>"),
    ("autolink-data-html", "<data:text/html;base64,{js64}>"),
    ("autolink-email-quote-break", '<a"onmouseover="{js}"@example.com>'),
    ("autolink-url-quote-break", '<https://example.com/"onmouseover="{js}>'),
    # Reference-style links.
    ("reference-javascript", "[click][evil]\n\n[evil]: javascript:{js}"),
    ("reference-javascript-titled", '[click][evil]\n\n[evil]: javascript:{js} "title"'),
    ("reference-javascript-angle", "[click]\n\n[click]: <javascript:{js}>"),
    ("reference-data-html", "[click][evil]\n\n[evil]: data:text/html;base64,{js64}"),
    ("reference-title-quote-break", '[x][r]\n\n[r]: https://example.com "a\\" onclick=\\"{js}"'),
    # Images: scripts, data URLs and remote fetches.
    ("image-javascript", "![x](javascript:{js})"),
    ("image-data-svg", '![x](data:image/svg+xml;base64,{svg64} "{js}")'),
    ("image-data-png", '![x](data:image/png;base64,iVBORw0KGgo= "{js}")'),
    ("image-remote-http", "![tracking pixel]({url}.png)"),
    ("image-remote-https", "![](https://xss.invalid/__xss/image-remote-https.png)"),
    ("image-reference-remote", "![pixel][img]\n\n[img]: {url}.png"),
    ("image-alt-quote-break", '![x" onerror="{js}]({url}.png)'),
    ("image-title-quote-break", '![x]({url}.png "t\\" onerror=\\"{js}")'),
    ("image-inside-link", "[![badge]({url}.png)](https://example.com)"),
    ("image-html-srcset", '<img srcset="{url}.png 1x" src=x onerror="{js}">'),
    # SVG and MathML.
    ("svg-script", "<svg><script>{js}</script></svg>"),
    (
        "svg-foreignobject-iframe",
        '<svg><foreignObject><iframe src="javascript:{js}"></iframe></foreignObject></svg>',
    ),
    (
        "svg-animate-href",
        "<svg><a><animate attributeName=href values=javascript:{js} />"
        "<text x=20 y=20>click</text></a></svg>",
    ),
    ("svg-use-external", '<svg><use href="{url}.svg#x"/></svg>'),
    ("mathml-href", '<math href="javascript:{js}"><mtext>click</mtext></math>'),
    (
        "mathml-mglyph-style-mxss",
        '<math><mtext><table><mglyph><style><img src=x onerror="{js}">',
    ),
    # Embedding, navigation and forms.
    ("iframe-src", '<iframe src="javascript:{js}"></iframe>'),
    ("iframe-srcdoc", '<iframe srcdoc="&lt;script&gt;{js}&lt;/script&gt;"></iframe>'),
    ("object-data", '<object data="javascript:{js}"></object>'),
    ("embed-src", '<embed src="data:text/html;base64,{js64}">'),
    ("form-action", '<form action="javascript:{js}"><button>go</button></form>'),
    ("button-formaction", '<form><button formaction="javascript:{js}">go</button></form>'),
    ("meta-refresh", '<meta http-equiv="refresh" content="0;url=javascript:{js}">'),
    ("meta-refresh-remote", '<meta http-equiv="refresh" content="0;url={url}">'),
    ("base-href", '<base href="javascript:{js}//">'),
    ("link-stylesheet", '<link rel="stylesheet" href="{url}.css">'),
    # CSS.
    ("style-tag-expression", "<style>body{width:expression({js})}</style>"),
    ("style-tag-import", "<style>@import '{url}.css';</style>"),
    ("style-attr-url-javascript", '<p style="background:url(javascript:{js})">x</p>'),
    ("style-attr-expression", '<p style="width:expression({js})">x</p>'),
    ("style-attr-remote-url", "<p style=\"background:url('{url}.png')\">x</p>"),
    (
        "css-overlay-injection",
        '<div style="position:fixed;inset:0;z-index:99999" onclick="{js}">\n\nlogin\n\n</div>',
    ),
    # Comments, CDATA and parser-confusion (mutation XSS) classics.
    ("comment-breakout", "<!-- --!><script>{js}</script> -->"),
    ("comment-unterminated", "<!-- <script>{js}</script>"),
    ("cdata-script", "<![CDATA[<script>{js}</script>]]>"),
    ("comment-inside-attribute", '<a title="<!--" href="x"><script>{js}</script>-->'),
    ("noscript-mxss", '<noscript><p title="</noscript><img src=x onerror="{js}">"></noscript>'),
    ("template-mxss", '<template><style></template><img src=x onerror="{js}">'),
    ("title-breakout", '<title><img src=x onerror="{js}"></title>'),
    ("textarea-breakout", '<textarea></textarea><img src=x onerror="{js}">'),
    ("xmp-breakout", '<xmp></xmp><img src=x onerror="{js}">'),
    ("malformed-unclosed-attribute", '<img src=x onerror="{js}'),
    ("malformed-unclosed-anchor", '<a href="javascript:{js}"'),
    ("malformed-slash-separator", "<img/src=x/onerror={js}>"),
    # Code fence info strings become a class attribute.
    ("fence-info-quote-break", '```python" onmouseover="{js}\nprint(1)\n```'),
    ("fence-info-angle-break", '```"><script>{js}</script>\nx\n```'),
    ("fence-info-class-smuggling", "```x language-js onclick={js}\nx\n```"),
    ("fence-info-too-long", "```" + "a" * 40 + "\n{js}\n```"),
    # Unicode and bidirectional tricks.
    ("rtl-override-link-text", "[\u202egnp.exe](javascript:{js})"),
    ("rtl-override-in-href", "[x](https://example.com/\u202e{js})"),
    ("bidi-isolate-in-title", '[x](https://example.com "\u2067{js}\u2069")'),
    ("lone-surrogate", "[\ud800](javascript:{js})"),
]

XSS_CORPUS: list[XssPayload] = [_payload(name, template) for name, template in _TEMPLATES]
