"""The person's settings kept by their Runtime (``preferences``), so every tab, the
desktop window and a restart agree. Today one: the language chosen in the shell."""

from __future__ import annotations

from lineup.i18n import DEFAULT, LOCALES

from .events import LocaleChosen
from .txn import RuntimeTxn, Sql

__all__ = [
    "LOCALE",
    "SEEN_LOCALE",
    "known_locale",
    "locale_choice",
    "person_locale",
    "set_locale_choice_txn",
    "set_seen_locale_txn",
]

LOCALE = "locale"
SEEN_LOCALE = "seen_locale"
"""The language the person's newest tab showed (its browser's, when nothing is
chosen): what "the person's language" is when they chose none."""


def locale_choice(conn: Sql) -> str | None:
    """The language the person chose (one of ``LOCALES``), or ``None``: the browser's."""
    row = conn.execute("SELECT value FROM preferences WHERE name = ?", (LOCALE,)).fetchone()
    return row[0] if row is not None and row[0] in LOCALES else None


def set_locale_choice_txn(txn: RuntimeTxn, choice: str | None) -> None:
    """Store the choice (``None``: as the browser says); every host hears it."""
    if choice is not None and choice not in LOCALES:
        raise ValueError(f"not a shipped language: {choice!r}")
    if choice is None:
        txn.execute("DELETE FROM preferences WHERE name = ?", (LOCALE,))
    else:
        _put(txn, LOCALE, choice)
    txn.emit(LocaleChosen(choice))


def known_locale(conn: Sql) -> str | None:
    """The person's language as far as it is known: the one chosen, else the one their
    newest tab showed; ``None`` before either (what agents are told: not a guess)."""
    rows = dict(
        conn.execute(
            "SELECT name, value FROM preferences WHERE name IN (?, ?)", (LOCALE, SEEN_LOCALE)
        ).fetchall()
    )
    for name in (LOCALE, SEEN_LOCALE):
        if rows.get(name) in LOCALES:
            return str(rows[name])
    return None


def person_locale(conn: Sql) -> str:
    """The person's language: ``known_locale``, else English (what apps are told: a
    page must be in some language)."""
    return known_locale(conn) or DEFAULT


def set_seen_locale_txn(txn: RuntimeTxn, locale: str) -> bool:
    """A tab showed itself in ``locale``; whether that changed the stored one."""
    if locale not in LOCALES:
        raise ValueError(f"not a shipped language: {locale!r}")
    return _put(txn, SEEN_LOCALE, locale)


def _put(txn: RuntimeTxn, name: str, value: str) -> bool:
    """Set one preference; whether its value changed."""
    cur = txn.execute(
        "INSERT INTO preferences (name, value) VALUES (?, ?)"
        " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
        " WHERE value IS NOT excluded.value",
        (name, value),
    )
    return cur.rowcount > 0
