"""Operator actions on an AppServer's database (used by the CLI and the demo)."""

from __future__ import annotations

import re
from pathlib import Path

from lineup.protocol.fields import ID_PATTERN

from . import auth
from .runner import storage_for
from .storage import AlreadyExists

USERNAME_PATTERN = r"^[A-Za-z0-9._-]{1,64}$"


class AdminError(Exception):
    """An operator request that cannot be done, with a message for the operator."""


async def add_user(data_dir: Path, username: str, password: str) -> str:
    if not re.match(USERNAME_PATTERN, username):
        raise AdminError("a username is 1-64 letters, digits, '.', '_' or '-'")
    if not password:
        raise AdminError("the password must not be empty")
    storage = storage_for(data_dir)
    await storage.open()
    try:
        user_id = auth.new_id("usr")
        try:
            await storage.create_user(user_id, username, auth.hash_password(password))
        except AlreadyExists as exc:
            raise AdminError(str(exc)) from None
        return user_id
    finally:
        await storage.close()


async def add_agent(data_dir: Path, agent_id: str, name: str) -> str:
    if not re.match(ID_PATTERN, agent_id):
        raise AdminError("an agent id is 1-128 letters, digits, '.', '_', ':' or '-'")
    storage = storage_for(data_dir)
    await storage.open()
    try:
        key = auth.new_agent_key()
        try:
            await storage.create_agent(agent_id, name, auth.secret_hash(key))
        except AlreadyExists as exc:
            raise AdminError(str(exc)) from None
        return key
    finally:
        await storage.close()
