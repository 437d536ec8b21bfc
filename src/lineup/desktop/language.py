"""The desktop window's language: the one the person chose in the shell (kept by the
Runtime, ``Runtime.locale_choice``), else the first shipped one of the desktop's own
preferred languages (``QLocale.system().uiLanguages()``, negotiated by
``lineup.i18n.negotiate``). The window's own strings (its title, the tray, the file
dialogs) come from the shell's catalogue (``lineup/locales``), and the web engine
sends the same preference as ``Accept-Language``, so the shell inside it matches.

No Qt at import: the choice is plain data (the tests read it without a display).
"""

from __future__ import annotations

from collections.abc import Sequence

from lineup.i18n import canonical, negotiate, shell

__all__ = ["accept_language", "desktop_locale", "system_languages", "text"]


def system_languages() -> list[str]:
    """The desktop's preferred languages, most preferred first (BCP 47 tags)."""
    from PySide6.QtCore import QLocale

    return [str(tag) for tag in QLocale.system().uiLanguages()]


def desktop_locale(choice: str | None, preferred: Sequence[str]) -> str:
    """The window's language: the person's choice, else the desktop's."""
    return canonical(choice) or negotiate(preferred)


def accept_language(choice: str | None, preferred: Sequence[str]) -> str:
    """What the web engine sends as ``Accept-Language``: the chosen language alone, or
    the desktop's languages with falling weights (``zh-CN,zh;q=0.9,en;q=0.8``)."""
    if canonical(choice) is not None:
        return str(canonical(choice))
    tags: list[str] = []
    for tag in preferred:
        tag = tag.replace("_", "-")
        if tag and tag not in tags and tag.isascii() and len(tag) <= 35:
            tags.append(tag)
    if not tags:
        return negotiate(())
    tags = tags[:9]
    return ",".join(tag if i == 0 else f"{tag};q={(10 - i) / 10:.1f}" for i, tag in enumerate(tags))


def text(locale: str, key: str, /, **values: object) -> str:
    """A string of the desktop window in ``locale`` (the shell's catalogue)."""
    return shell().text(locale, key, **values)
