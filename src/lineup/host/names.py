"""What the shell calls an app instance: its app's display name, and a number for the
second and later live instances of one app ("Task Dashboard 2").

The Runtime gives every instance its app's name and an ordinal when it opens
(``MiniAppInstanceRecord.name``/``ordinal``); this module makes the label people read
from them, once, for every frame that names an instance (the dock, the app area, the
sub-session groups, the consent dialog), so the shell never composes or guesses one.
The app scope stays in the frames for tooltips and developer views only. A scope no
registered app has is shown as itself.
"""

from __future__ import annotations

from urllib.parse import quote

from lineup.runtime.apps.lifecycle import MiniAppInstanceRecord

__all__ = ["ICON_PATH", "icon_url", "instance_label", "name_or_scope", "record_label"]

ICON_PATH = "/app-icons/"
"""Where the Web Host serves an app's icon, by app scope (a generic one without)."""


def name_or_scope(name: str, app_scope: str) -> str:
    return name or app_scope


def instance_label(name: str, ordinal: int) -> str:
    """``Task Dashboard`` for the first live instance, ``Task Dashboard 2`` after."""
    return name if ordinal <= 1 else f"{name} {ordinal}"


def record_label(record: MiniAppInstanceRecord) -> str:
    return instance_label(name_or_scope(record.name, record.app_scope), record.ordinal)


def icon_url(app_scope: str) -> str:
    return ICON_PATH + quote(app_scope, safe="")
