"""The catalogues are complete in both languages, and the shell reads every string the
person sees from them (``lineup/locales``, ``host/static/i18n.js``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lineup.i18n import LOCALES, Catalogues, negotiate, parse_accept_language, placeholders

ROOT = Path(__file__).resolve().parents[1] / "src" / "lineup"
SHELL = ROOT / "host" / "static"
MINIAPPS = ROOT / "miniapps"
_STRINGS = re.compile(r'<script type="application/json" id="strings">(.*?)</script>', re.S)
BUNDLE_PAGES = sorted(
    p for p in MINIAPPS.glob("**/*.html") if _STRINGS.search(p.read_text("utf-8"))
)
"""The MiniApps' surfaces that carry their own catalogues: a surface can load nothing
but its HTML, CSS and JS, so the strings travel in the HTML as one JSON object,
``{"en": {...}, "zh-CN": {...}}`` (docs/miniapps.md, "Speaking the person's language")."""
CATALOGUES = [ROOT / "locales", ROOT / "agent" / "demo_locales", *BUNDLE_PAGES]
"""Every catalogue: the client's folder, the demo agent's, and each MiniApp surface's
strings."""

_PLURAL = re.compile(r"_(zero|one|two|few|many|other)$")


def _load(source: Path, locale: str) -> dict[str, str]:
    if source.suffix == ".html":
        found = _STRINGS.search(source.read_text("utf-8"))
        assert found is not None, source
        data = json.loads(found[1])[locale]
    else:
        data = json.loads((source / f"{locale}.json").read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def _base(key: str) -> str:
    return _PLURAL.sub("", key)


@pytest.mark.parametrize("folder", CATALOGUES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_key_is_in_both_languages_with_the_same_placeholders(folder: Path) -> None:
    if folder.suffix == ".html":  # a MiniApp's: exactly the two languages LineUp has
        found = _STRINGS.search(folder.read_text("utf-8"))
        assert found is not None and sorted(json.loads(found[1])) == sorted(LOCALES)
    catalogues = {locale: _load(folder, locale) for locale in LOCALES}
    for locale, strings in catalogues.items():
        assert all(isinstance(v, str) and v.strip() for v in strings.values()), locale
        assert list(strings) == sorted(strings), f"{locale}: keys out of order"
    bases = {locale: {_base(k) for k in strings} for locale, strings in catalogues.items()}
    assert bases["en"] == bases["zh-CN"], {
        "only in en": sorted(bases["en"] - bases["zh-CN"]),
        "only in zh-CN": sorted(bases["zh-CN"] - bases["en"]),
    }
    for base in bases["en"]:
        found = {
            locale: {placeholders(v) for k, v in strings.items() if _base(k) == base}
            for locale, strings in catalogues.items()
        }
        assert found["en"] == found["zh-CN"], (base, found)
    # Plural forms as each language's CLDR rules name them: English one/other,
    # Chinese other only.
    en, zh = catalogues["en"], catalogues["zh-CN"]
    for key in en:
        if key.endswith("_one"):
            assert key[:-4] + "_other" in en, key
            assert key[:-4] + "_other" in zh and key not in zh, key


def _shell_sources() -> list[Path]:
    return sorted(SHELL.glob("*.js"))


_T_CALL = re.compile(r"""\bt\(\s*(["'])([^"']+)\1""")
_T_DYNAMIC = re.compile(r"""\bt\(\s*`([^`]*)`""")


def test_every_key_the_shell_asks_for_is_in_the_catalogue() -> None:
    strings = _load(ROOT / "locales", "en")
    bases = {_base(k) for k in strings}
    missing = []
    for source in _shell_sources():
        text = source.read_text("utf-8")
        for match in _T_CALL.finditer(text):
            if match[2] not in bases:
                missing.append(f"{source.name}: {match[2]}")
        for match in _T_DYNAMIC.finditer(text):
            # t(`prefix.${name}`): some key must start with the fixed part.
            prefix = match[1].split("${", 1)[0]
            if not any(b.startswith(prefix) for b in bases):
                missing.append(f"{source.name}: {match[1]}")
    page = (SHELL / "index.html").read_text("utf-8")
    special = {"lang", "choice", "catalogue"}
    for key in re.findall(r"\[\[([A-Za-z0-9_.-]+)\]\]", page):
        if key not in special and key not in bases:
            missing.append(f"index.html: {key}")
    assert not missing


# A string literal a person would read: a capital letter, then words, or text ending
# like a sentence. Identifiers, class names, selectors, codes and URLs do not match.
_LITERAL = re.compile(r"""(["'`])((?:\\.|(?!\1)[^\\\n])*)\1""")
_PROSE = re.compile(r"^[A-Z][a-z']+(?:[ ,][A-Za-z'\u2019…,.!?:-]+)+$|^[A-Z][a-z]+[.…!?]$|[a-z]…$")
_NOT_PROSE = {
    "Content-Type",
    "Escape",
    "Enter",
    "Tab",
    "Shift",
    "ArrowUp",
    "ArrowDown",
    "ArrowLeft",
    "ArrowRight",
    "Home",
    "End",
    "PageUp",
    "PageDown",
}


def _comment_free(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return "\n".join(re.sub(r"(^|\s)//.*$", "", line) for line in text.splitlines())


@pytest.mark.parametrize("source", _shell_sources(), ids=lambda p: p.name)
def test_the_shell_hard_codes_no_string_a_person_reads(source: Path) -> None:
    found = []
    for line_no, line in enumerate(_comment_free(source.read_text("utf-8")).splitlines(), 1):
        if "console." in line:
            continue  # for developers, in English
        for match in _LITERAL.finditer(line):
            literal = match[2]
            if literal in _NOT_PROSE:
                continue
            words = re.sub(r"\$\{[^}]*\}", " ", literal).strip(" ·:")
            if _PROSE.search(words):
                found.append(f"{source.name}:{line_no}: {literal}")
    assert not found, "\n".join(found)


def _bundle_script(page: Path) -> Path:
    return page.with_suffix(".js")


_DATA_I18N = re.compile(r'data-i18n(?:-[a-z-]+)?="([^"]+)"')


@pytest.mark.parametrize("page", BUNDLE_PAGES, ids=lambda p: str(p.relative_to(MINIAPPS)))
def test_every_key_a_miniapp_asks_for_is_in_its_catalogue(page: Path) -> None:
    bases = {_base(k) for k in _load(page, "en")}
    script = _bundle_script(page).read_text("utf-8")
    asked = [m[2] for m in _T_CALL.finditer(script)]
    asked += _DATA_I18N.findall(page.read_text("utf-8"))
    # Keys built in code: t(`column.${id}`), dataset.i18nAriaLabel = `colour.${name}`.
    prefixes = [m.split("${", 1)[0] for m in re.findall(r"`([a-z_]+\.\$\{[^`]*)`", script)]
    assert asked and prefixes is not None
    assert sorted(k for k in asked if k not in bases) == []
    for prefix in prefixes:
        assert any(b.startswith(prefix) for b in bases), prefix


@pytest.mark.parametrize("page", BUNDLE_PAGES, ids=lambda p: str(p.relative_to(MINIAPPS)))
def test_a_miniapp_hard_codes_no_string_a_person_reads(page: Path) -> None:
    script = _bundle_script(page)
    found = []
    for line_no, line in enumerate(_comment_free(script.read_text("utf-8")).splitlines(), 1):
        if "console." in line or "new BoardError(" in line or "refus" in line:
            continue  # for developers, and the agent's tool errors: in English
        for match in _LITERAL.finditer(line):
            literal = match[2]
            words = re.sub(r"\$\{[^}]*\}", " ", literal).strip(" ·:")
            if literal not in _NOT_PROSE and _PROSE.search(words):
                found.append(f"{script.name}:{line_no}: {literal}")
    # The page: every text and attribute a person reads is marked for translation (key
    # caps excepted: Shift is Shift on a Chinese keyboard too).
    body = re.sub(r"<script.*?</script>|<svg.*?</svg>", "", page.read_text("utf-8"), flags=re.S)
    for element in re.finditer(r"<([a-z0-9]+)([^>]*)>([^<]*)", body):
        tag, attributes, text = element.groups()
        if re.search(r"[A-Za-z]{2}", text) and "data-i18n=" not in attributes and tag != "kbd":
            found.append(f"{page.name}: <{tag}> {text.strip()}")
        for name in ("aria-label", "placeholder", "title", "alt"):
            if f' {name}="' in attributes and f"data-i18n-{name}=" not in attributes:
                found.append(f"{page.name}: <{tag}> {name}")
    assert not found, "\n".join(found)


def test_the_page_text_of_the_shell_is_all_in_the_catalogue() -> None:
    page = (SHELL / "index.html").read_text("utf-8")
    body = re.sub(r"<script.*?</script>", "", page, flags=re.S)
    texts = [t.strip() for t in re.findall(r">([^<>]+)<", body)]
    attributes = re.findall(r'(?:placeholder|aria-label|title|alt)="([^"]*)"', body)
    loose = [t for t in texts + attributes if t and not re.fullmatch(r"\[\[[\w.-]+\]\]", t)]
    # The product's name, and the avatar's initial (aria-hidden; app.js sets it).
    assert [t for t in loose if t not in {"LineUp", "A"}] == []


@pytest.mark.parametrize(
    ("header", "tags", "locale"),
    [
        ("zh-CN,zh;q=0.9,en;q=0.8", ["zh-CN", "zh", "en"], "zh-CN"),
        ("en-US,en;q=0.9", ["en-US", "en"], "en"),
        ("fr-FR, zh-TW;q=0.5, en;q=0.7", ["fr-FR", "en", "zh-TW"], "en"),
        ("de;q=0.9, zh-Hans-CN;q=0.8", ["de", "zh-Hans-CN"], "zh-CN"),
        ("zh;q=0, en", ["en"], "en"),
        ("*", [], "en"),
        ("", [], "en"),
        ("en;q=abc, zh", ["zh"], "zh-CN"),
        ("<script>, zh_CN", ["zh_CN"], "zh-CN"),
    ],
)
def test_the_browser_s_languages_choose_the_page_s(
    header: str, tags: list[str], locale: str
) -> None:
    assert parse_accept_language(header) == tags
    assert negotiate(tags) == locale


def test_text_fills_placeholders_and_plural_forms(tmp_path: Path) -> None:
    (tmp_path / "en.json").write_text(
        json.dumps({"rows_one": "{{count}} new message", "rows_other": "{{count}} new messages"})
    )
    (tmp_path / "zh-CN.json").write_text(json.dumps({"rows_other": "{{count}} 条新消息"}))
    catalogues = Catalogues(tmp_path)  # type: ignore[arg-type]
    assert catalogues.text("en", "rows", count=1) == "1 new message"
    assert catalogues.text("en", "rows", count=3) == "3 new messages"
    assert catalogues.text("zh-CN", "rows", count=1) == "1 条新消息"
    assert catalogues.text("fr", "rows", count=2) == "2 new messages"  # not shipped: English
    assert catalogues.text("zh-CN", "nothing") == "nothing"


# --- docs/miniapps.md, "Speaking the person's language", cannot drift ----------------------

DOC = ROOT.parents[1] / "docs" / "miniapps.md"


def _doc_blocks(kind: str) -> list[str]:
    text = DOC.read_text("utf-8")
    section = text.split("## Speaking the person's language", 1)[1].split("\n## ", 1)[0]
    return re.findall(rf"^```{kind}\n(.*?)^```$", section, re.M | re.S)


def test_the_documented_catalogues_decode_and_agree(tmp_path: Path) -> None:
    [html] = _doc_blocks("html")
    page = tmp_path / "index.html"
    page.write_text(html, "utf-8")
    test_every_key_is_in_both_languages_with_the_same_placeholders(page)
    bases = {_base(k) for k in _load(page, "en")}
    assert set(_DATA_I18N.findall(html)) <= bases


@pytest.mark.parametrize("page", BUNDLE_PAGES, ids=lambda p: str(p.relative_to(MINIAPPS)))
def test_every_miniapp_carries_the_documented_loader(page: Path) -> None:
    loader, ime = _doc_blocks("js")
    script = _bundle_script(page).read_text("utf-8")
    assert loader in script
    if "<input" in page.read_text("utf-8"):  # a text field: Enter is IME-safe
        assert ime.split("\ninput.addEventListener", 1)[0] in script
