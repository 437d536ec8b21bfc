"""The person's language: which one, and the strings in it.

LineUp speaks Simplified Chinese (``zh-CN``) and English (``en``). A catalogue is one
flat JSON object per language in the i18next JSON v4 format that translation tools
(Weblate, Crowdin, Lokalise, i18next itself) read: ``"key": "text"``, placeholders
``{{name}}``, plural forms as ``key_one`` / ``key_other`` chosen by the language's CLDR
plural rules (English has both, Chinese only ``_other``). The shell reads the same
files (``host/static/i18n.js``, given the catalogue inline by the Web Host), so a
string has one home (docs/decisions.md, "Catalogues").

This module has no dependencies: the host, the desktop window and the demo agent all
use it, and the agent SDK must stay importable alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

__all__ = [
    "DEFAULT",
    "LOCALES",
    "Catalogues",
    "canonical",
    "negotiate",
    "parse_accept_language",
    "placeholders",
    "plural_category",
    "shell",
]

LOCALES = ("en", "zh-CN")
"""The languages LineUp ships, as BCP 47 tags."""

DEFAULT = "en"

_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_TAG = re.compile(r"^[A-Za-z]{1,8}(?:[-_][A-Za-z0-9]{1,8})*$")


def canonical(tag: str | None) -> str | None:
    """The shipped language a BCP 47 tag asks for, or ``None``: any Chinese tag is
    ``zh-CN`` (the only Chinese LineUp has), any English one ``en``."""
    if not tag or not _TAG.match(tag):
        return None
    primary = tag.replace("_", "-").split("-", 1)[0].lower()
    if primary == "zh":
        return "zh-CN"
    if primary == "en":
        return "en"
    return None


def parse_accept_language(header: str | None) -> list[str]:
    """The tags of an ``Accept-Language`` header, most preferred first (RFC 9110 §12.5.4);
    malformed parts are skipped, ``q=0`` means "not this one"."""
    if not header:
        return []
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(header[:2000].split(",")):
        tag, _, params = part.strip().partition(";")
        tag = tag.strip()
        quality = 1.0
        for param in params.split(";"):
            name, _, value = param.strip().partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if tag and tag != "*" and quality > 0 and _TAG.match(tag):
            ranked.append((-quality, index, tag))
    return [tag for _, _, tag in sorted(ranked)]


def negotiate(preferred: Iterable[str]) -> str:
    """The first shipped language among ``preferred`` (most preferred first), else
    English."""
    for tag in preferred:
        found = canonical(tag)
        if found is not None:
            return found
    return DEFAULT


class Catalogues:
    """The catalogues in one folder (``<locale>.json`` for each of ``LOCALES``)."""

    def __init__(self, folder: Traversable) -> None:
        self._folder = folder
        self._strings: dict[str, dict[str, str]] = {}

    def strings(self, locale: str) -> Mapping[str, str]:
        """Every string of ``locale`` (English for a language not shipped)."""
        locale = locale if locale in LOCALES else DEFAULT
        found = self._strings.get(locale)
        if found is None:
            raw = json.loads(self._folder.joinpath(f"{locale}.json").read_text("utf-8"))
            if not isinstance(raw, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in raw.items()
            ):
                raise ValueError(f"{locale}.json is not a flat object of strings")
            found = self._strings[locale] = raw
        return found

    def text(self, locale: str, key: str, /, **values: object) -> str:
        """The string ``key`` in ``locale`` with its ``{{placeholders}}`` filled in; with
        an int ``count``, its plural form. A key missing in ``locale`` falls back to
        English, then to the key itself (the catalogue test keeps both complete)."""
        count = values.get("count")
        for strings in (self.strings(locale), self.strings(DEFAULT)):
            text = None
            if isinstance(count, int):
                text = strings.get(f"{key}_{plural_category(locale, count)}")
                text = text or strings.get(f"{key}_other")
            text = text or strings.get(key)
            if text is not None:
                return _PLACEHOLDER.sub(lambda m: str(values.get(m[1], m[0])), text)
        return key


def plural_category(locale: str, count: int) -> str:
    """CLDR's cardinal category for an integer: English ``one``/``other``; Chinese has
    only ``other``."""
    if locale == "en" and count == 1:
        return "one"
    return "other"


def placeholders(text: str) -> frozenset[str]:
    """The ``{{names}}`` a string fills in."""
    return frozenset(m[1] for m in _PLACEHOLDER.finditer(text))


@cache
def shell() -> Catalogues:
    """The client's catalogues (``lineup/locales``): the shell's strings, also used by
    the Web Host's own pages and the desktop window."""
    return Catalogues(resources.files("lineup").joinpath("locales"))
