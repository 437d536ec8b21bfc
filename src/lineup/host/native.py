"""Native host providers: capabilities a desktop host carries out itself, outside the
page (a native file dialog, the system clipboard, system notifications, the system
browser), instead of the shell's JavaScript providers.

The decision path does not change: the Runtime's gateway decides, the person consents
in the shell, and the tab claims the approved call exactly as in a browser. Only then,
for a capability the native providers handle, the Web Host runs the provider here with
the *stored* arguments of the claimed call (never anything the page sends) and reports
its outcome to the gateway; the tab never gets a ``CapabilityRun`` for it. A provider
may decline (``None``): the claiming tab's own provider runs it then, as in a browser.

So the page has no bridge into the host at all: nothing in it can ask for a native
action that the Runtime did not approve, and each approved call runs at most once (the
gateway's claim is first-wins and its finish is once).
"""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from lineup.runtime import Runtime

__all__ = ["NativeHost", "NativeOutcome", "PickedFile"]


@dataclass(frozen=True, slots=True)
class PickedFile:
    """A file the person picked in a native dialog (``device.pick_file``)."""

    name: str
    media_type: str
    body: bytes


@dataclass(frozen=True, slots=True)
class NativeOutcome:
    """What a native provider did: a ``result`` (it fits the capability's output
    schema), a ``file`` (``device.pick_file``) or an error ``code``."""

    result: dict[str, Any] | None = None
    file: PickedFile | None = None
    code: str | None = None


class NativeHost(Protocol):
    """What a desktop host offers the Web Host. Everything is called on the Web Host's
    event loop; an implementation hands UI work to its own UI thread."""

    def attach(self, runtime: Runtime) -> Coroutine[Any, Any, None] | None:
        """The Web Host starts: the desktop may follow the Runtime's events (to badge
        what waits for the person, say). A job it returns runs among the Web Host's
        own (``lineup.host.jobs``): cancelled when the host stops, and its failure is
        logged by type instead of lost."""
        ...

    def handles(self, capability: str) -> bool: ...

    async def run(self, capability: str, arguments: dict[str, Any]) -> NativeOutcome | None:
        """Carry out one approved call; ``None`` when it is better done in the page."""
        ...
