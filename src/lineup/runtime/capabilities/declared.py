"""What this host declares: the capabilities an attached host provides and the person
has not revoked (``host_capabilities``).

Declaring a capability never grants it: every call is decided by the gateway. The
inventory lists what is declared (``apps.registry`` reads ``declared``), so whoever
changes it here refreshes the inventory in the same transaction (the gateway does).
Nothing here imports the registry: the registry imports this module.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..tables import audit
from ..txn import Sql
from .catalog import CATALOG, Capability

__all__ = ["declared", "provide", "revoked", "set_revoked"]


def declared(conn: Sql) -> dict[str, Capability]:
    """The capabilities this host declares now: provided and not revoked."""
    rows = conn.execute(
        "SELECT name FROM host_capabilities WHERE provided_at IS NOT NULL AND revoked_at IS NULL"
    ).fetchall()
    return {r[0]: CATALOG[r[0]] for r in rows if r[0] in CATALOG}


def revoked(conn: Sql, name: str) -> bool:
    """Whether the person revoked ``name`` (why it is not declared)."""
    row = conn.execute("SELECT revoked_at FROM host_capabilities WHERE name = ?", (name,))
    found = row.fetchone()
    return found is not None and found[0] is not None


def provide(conn: Sql, names: Iterable[str], now: str) -> None:
    """An attached host offers these capabilities (declared from now on, unless revoked)."""
    for name in names:
        if name not in CATALOG:
            raise ValueError(f"no such capability: {name}")
        conn.execute(
            "INSERT INTO host_capabilities (name, provided_at) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET provided_at = excluded.provided_at",
            (name, now),
        )


def set_revoked(conn: Sql, name: str, revoked: bool, now: str) -> None:
    """The person revokes (or restores) ``name`` for every requester."""
    if name not in CATALOG:
        raise ValueError(f"no such capability: {name}")
    conn.execute(
        "INSERT INTO host_capabilities (name, revoked_at) VALUES (?, ?)"
        " ON CONFLICT (name) DO UPDATE SET revoked_at = excluded.revoked_at",
        (name, now if revoked else None),
    )
    audit(conn, now, "user", "capability.policy", name, "revoked" if revoked else "restored")
