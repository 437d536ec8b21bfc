"""The person's settings kept by their Runtime (``preferences``), so every tab, the
desktop window and a restart agree. Today one: the language chosen in the shell."""

from __future__ import annotations

from lineup.i18n import LOCALES

from .events import LocaleChosen
from .txn import RuntimeTxn, Sql

__all__ = ["LOCALE", "locale_choice", "set_locale_choice_txn"]

LOCALE = "locale"


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
        txn.execute(
            "INSERT INTO preferences (name, value) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET value = excluded.value",
            (LOCALE, choice),
        )
    txn.emit(LocaleChosen(choice))
