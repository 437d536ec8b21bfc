"""Operator actions on an AppServer's database (used by the CLI and the demo)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from lineup.protocol.fields import ID_PATTERN
from lineup.wire import USERNAME_PATTERN

from . import auth
from .runner import storage_for
from .storage import AlreadyExists, Storage


class AdminError(Exception):
    """An operator request that cannot be done, with a message for the operator."""


@asynccontextmanager
async def _storage(data_dir: Path, database: str | None) -> AsyncIterator[Storage]:
    storage = storage_for(data_dir, database, pool_size=2)
    await storage.open()
    try:
        yield storage
    except AlreadyExists as exc:
        raise AdminError(str(exc)) from None
    finally:
        await storage.close()


async def add_user(
    data_dir: Path, username: str, password: str, *, database: str | None = None
) -> str:
    """Create a user; return the new user id."""
    if not re.match(USERNAME_PATTERN, username):
        raise AdminError("a username is 1-64 letters, digits, '.', '_' or '-'")
    if not password:
        raise AdminError("the password must not be empty")
    user_id = auth.new_id("usr")
    async with _storage(data_dir, database) as storage:
        await storage.create_user(user_id, username, auth.hash_password(password))
    return user_id


async def add_agent(
    data_dir: Path, agent_id: str, name: str, *, database: str | None = None
) -> str:
    """Create an agent; return its API key (only its hash is stored)."""
    if not re.match(ID_PATTERN, agent_id):
        raise AdminError("an agent id is 1-128 letters, digits, '.', '_', ':' or '-'")
    key = auth.new_agent_key()
    async with _storage(data_dir, database) as storage:
        await storage.create_agent(agent_id, name, auth.secret_hash(key))
    return key
