"""What the Runtime tells its hosts (and itself) after a commit.

Transactions register these on their unit of work (``RuntimeTxn.emit``); the writer
hands them to the Runtime once the change is durable, in commit order. Hosts hear
them through ``Runtime.subscribe``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias

from lineup.client.connection import ConnectionState
from lineup.protocol.payloads import ClientInventory

from .apps.focus import Effect, Instances
from .records import TimelineItem

if TYPE_CHECKING:
    from .apps.installer import AppCentreChanged
    from .capabilities.gateway import CapabilitiesChanged
    from .mcp.call_store import McpCallsChanged
    from .mcp.gateway import McpServersChanged

__all__ = [
    "AppsChanged",
    "ConnectionChanged",
    "InventoryChanged",
    "Listener",
    "LocaleChosen",
    "RuntimeEvent",
    "TimelineChanged",
    "ToolCallsChanged",
]


@dataclass(frozen=True, slots=True)
class TimelineChanged:
    item: TimelineItem


@dataclass(frozen=True, slots=True)
class ConnectionChanged:
    state: ConnectionState | str


@dataclass(frozen=True, slots=True)
class ToolCallsChanged:
    """Something for these instances' apps arrived: calls bound to them arrived or
    ended (``topic`` ``tools``: the MiniApp SDK lists them again), envelopes for
    their app scope reached the inbox (``inbox``), or their own capability calls
    changed (``capabilities``)."""

    instance_ids: frozenset[str]
    topic: str = "tools"


@dataclass(frozen=True, slots=True)
class AppsChanged:
    """Instances or focus were stored: the value now stored and the effects, in order
    (``CloseSurfaces`` tells a host to take the instance's surfaces down). The kernel
    adopts every one; hosts hear those with effects."""

    instances: Instances
    effects: tuple[Effect, ...]


@dataclass(frozen=True, slots=True)
class InventoryChanged:
    """The inventory was recomputed (and published to every conversation in the same
    transaction): the registry serves it, the Runtime accepts its scopes. Internal:
    hosts are not told."""

    inventory: ClientInventory


@dataclass(frozen=True, slots=True)
class LocaleChosen:
    """The person chose the language of their client (``None``: the browser's)."""

    choice: str | None


RuntimeEvent: TypeAlias = (
    "TimelineChanged | ConnectionChanged | AppsChanged | ToolCallsChanged"
    " | CapabilitiesChanged | AppCentreChanged | InventoryChanged | LocaleChosen"
    " | McpCallsChanged | McpServersChanged"
)
Listener = Callable[["RuntimeEvent"], None]
