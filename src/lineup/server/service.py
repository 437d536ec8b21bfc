"""AppServer handlers: authentication, conversations, sending and reading.

Transport-free: the HTTP routes and the WebSocket endpoint both call into here,
so every rule (who may read what, who may send what) lives in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from lineup.logs import pseudonym
from lineup.protocol import ErrorCode, Rejection, Unsupported, decode
from lineup.protocol.codec import encode

from . import auth
from .caches import CredentialCache, MembershipCache
from .errors import ApiError
from .hub import Hub
from .storage import (
    AppendOutcome,
    AppendRequest,
    AppendStatus,
    ConversationRecord,
    Principal,
    Storage,
    StorageError,
    StoredEnvelope,
)
from .throttle import LoginThrottle

log = logging.getLogger("lineup.server")

Clock = Callable[[], datetime]

MAX_PAGE = 500


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Sent:
    conversation_id: str
    envelope_id: str
    seq: int
    duplicate: bool


class AppServerService:
    def __init__(
        self,
        storage: Storage,
        hub: Hub,
        *,
        clock: Clock = _utcnow,
        token_ttl: timedelta = timedelta(days=30),
    ) -> None:
        self.storage = storage
        self.hub = hub
        self.clock = clock
        self.token_ttl = token_ttl
        self.throttle = LoginThrottle(clock)
        self.credentials = CredentialCache()
        self.members = MembershipCache()
        storage.on_commit(hub.publish)
        storage.on_conversation(hub.publish_conversation)
        storage.on_resync(hub.resync)

    # --- credentials -----------------------------------------------------------------

    async def login(self, username: str, password: str) -> tuple[str, str, datetime]:
        wait = self.throttle.retry_after(username)
        if wait is not None:
            seconds = max(1, math.ceil(wait.total_seconds()))
            log.info("login throttled", extra={"code": ErrorCode.RATE_LIMITED.value})
            raise ApiError(
                ErrorCode.RATE_LIMITED,
                f"too many failed logins for this user; retry in {seconds} s",
                headers={"Retry-After": str(seconds)},
            )
        user = await self.storage.get_user_by_name(username)
        if user is None:
            await asyncio.to_thread(auth.burn_password_check, password)
            ok = False
        else:
            ok = await asyncio.to_thread(auth.verify_password, password, user.password_hash)
        if user is None or not ok:
            self.throttle.failed(username)
            log.info("login refused", extra={"code": ErrorCode.UNAUTHORIZED.value})
            raise ApiError(ErrorCode.UNAUTHORIZED, "unknown username or wrong password")
        self.throttle.succeeded(username)
        token = auth.new_user_token()
        expires_at = self.clock() + self.token_ttl
        await self.storage.add_token(auth.secret_hash(token), user.id, expires_at)
        log.info("login", extra={"user_id": pseudonym(user.id)})
        return token, user.id, expires_at

    async def logout(self, token: str) -> None:
        digest = auth.secret_hash(token)
        self.credentials.drop(digest)
        await self.storage.revoke_token(digest)

    async def authenticate(self, authorization: str | None) -> Principal:
        """Resolve an ``Authorization: Bearer ...`` header to a principal."""
        secret = bearer(authorization)
        digest = auth.secret_hash(secret)
        principal = self.credentials.get(digest)
        if principal is not None:
            return principal
        if secret.startswith(auth.AGENT_KEY_PREFIX):
            agent = await self.storage.agent_for_key(digest)
            if agent is not None:
                principal = Principal("agent", agent.id)
        elif secret.startswith(auth.USER_TOKEN_PREFIX):
            user_id = await self.storage.user_for_token(digest, self.clock())
            if user_id is not None:
                principal = Principal("user", user_id)
        if principal is not None:
            self.credentials.put(digest, principal)
            return principal
        raise ApiError(
            ErrorCode.UNAUTHORIZED, "the token or API key is unknown, expired or revoked"
        )

    # --- conversations ----------------------------------------------------------------

    async def create_conversation(
        self,
        principal: Principal,
        *,
        counterpart: str | None,
        conversation_id: str | None,
        title: str,
    ) -> tuple[ConversationRecord, bool]:
        """Create a conversation between the caller and ``counterpart``.

        Returns the record and whether it was created now (``False``: an identical
        earlier request with the same ``id`` already created it).
        """
        if counterpart is None:
            other = "agent_id" if principal.kind == "user" else "user_id"
            raise ApiError(ErrorCode.INVALID_REQUEST, f"`{other}` is required", path=f"$.{other}")
        if principal.kind == "user":
            user_id, agent_id = principal.id, counterpart
            other_principal = Principal("agent", agent_id)
        else:
            user_id, agent_id = counterpart, principal.id
            other_principal = Principal("user", user_id)
        if not await self.storage.principal_exists(other_principal):
            raise ApiError(ErrorCode.NOT_FOUND, f"no such {other_principal.kind}")
        wanted = conversation_id or auth.new_id("conv")
        record = await self.storage.create_conversation(wanted, user_id, agent_id, title)
        if record is not None:
            log.info("conversation created", extra={"conversation_id": pseudonym(wanted)})
            return record, True
        existing = await self.storage.get_conversation(wanted)
        if existing is not None and (existing.user_id, existing.agent_id, existing.title) == (
            user_id,
            agent_id,
            title,
        ):
            return existing, False
        raise ApiError(ErrorCode.CONFLICT, "a different conversation already has this id")

    async def conversation_for(
        self, principal: Principal, conversation_id: str
    ) -> ConversationRecord:
        """The conversation, read fresh, if ``principal`` is one of its two members."""
        record = await self.storage.get_conversation(conversation_id)
        if record is None or not record.has_member(principal):
            # Same answer for "absent" and "not yours": existence is not disclosed.
            raise ApiError(ErrorCode.NOT_FOUND, "no such conversation")
        self.members.put(record.id, record.user_id, record.agent_id)
        return record

    async def authorize(self, principal: Principal, conversation_id: str) -> None:
        """Raise ``not_found`` unless ``principal`` is a member (cached: members never change)."""
        known = self.members.is_member(conversation_id, principal)
        if known is None:
            await self.conversation_for(principal, conversation_id)
        elif not known:
            raise ApiError(ErrorCode.NOT_FOUND, "no such conversation")

    async def list_conversations(self, principal: Principal) -> list[ConversationRecord]:
        return await self.storage.list_conversations(principal)

    # --- envelopes --------------------------------------------------------------------

    async def send(
        self, principal: Principal, data: bytes, *, conversation_id: str | None = None
    ) -> Sent:
        """Validate, authorize and store one envelope; idempotent by envelope id."""
        request = await self.prepare_send(principal, data, conversation_id=conversation_id)
        try:
            outcome = await self.storage.append(request)
        except StorageError as exc:
            raise self.storage_failed(request, exc) from None
        return self.finish_send(request, outcome)

    async def prepare_send(
        self,
        principal: Principal,
        data: bytes,
        *,
        conversation_id: str | None = None,
        known_member_of: set[str] | None = None,
    ) -> AppendRequest:
        """Everything before storage: decode, validate, check sender and membership.

        ``known_member_of`` caches conversations already checked on this connection
        (membership never changes), and is updated.
        """
        result = decode(data)
        if isinstance(result, Rejection):
            self._refused(principal, result.code, len(data))
            raise ApiError.from_rejection(result)
        if isinstance(result, Unsupported):
            self._refused(principal, ErrorCode.UNSUPPORTED_TYPE, len(data))
            raise ApiError(
                ErrorCode.UNSUPPORTED_TYPE,
                "the AppServer relays only envelope kinds it knows",
                path="$.type",
            )
        envelope = result
        if conversation_id is not None and envelope.conversation_id != conversation_id:
            raise ApiError(
                ErrorCode.INVALID_REQUEST,
                "`conversation_id` differs from the conversation in the URL",
                path="$.conversation_id",
            )
        sender = envelope.sender
        allowed = ("agent",) if principal.kind == "agent" else ("user", "runtime")
        if sender.kind not in allowed or sender.id != principal.id:
            self._refused(principal, ErrorCode.SENDER_MISMATCH, len(data))
            raise ApiError(
                ErrorCode.SENDER_MISMATCH,
                "`sender` must name the authenticated caller",
                path="$.sender",
            )
        if sender.kind not in type(envelope).senders:
            self._refused(principal, ErrorCode.DIRECTION_NOT_ALLOWED, len(data))
            raise ApiError(
                ErrorCode.DIRECTION_NOT_ALLOWED,
                f"a `{sender.kind}` may not send `{envelope.type}`",
                path="$.type",
            )
        if known_member_of is None or envelope.conversation_id not in known_member_of:
            await self.authorize(principal, envelope.conversation_id)
            if known_member_of is not None:
                known_member_of.add(envelope.conversation_id)
        return AppendRequest(
            envelope.conversation_id, envelope.id, envelope.type, sender.kind, encode(envelope)
        )

    def finish_send(self, request: AppendRequest, outcome: AppendOutcome) -> Sent:
        """Turn a storage outcome into the caller's answer (or its error)."""
        if outcome.status is AppendStatus.CONFLICT:
            raise ApiError(
                ErrorCode.CONFLICT,
                "this envelope id was already used for a different envelope",
                path="$.id",
            )
        if outcome.status is AppendStatus.NO_CONVERSATION:
            raise ApiError(ErrorCode.NOT_FOUND, "no such conversation")
        duplicate = outcome.status is AppendStatus.DUPLICATE
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "envelope stored",
                extra={
                    "conversation_id": pseudonym(request.conversation_id),
                    "envelope_id": pseudonym(request.envelope_id),  # a sender may embed ids
                    "type": request.type,
                    "seq": outcome.seq,
                    "size": len(request.body),
                    "duplicate": duplicate,
                },
            )
        return Sent(request.conversation_id, request.envelope_id, outcome.seq, duplicate)

    def storage_failed(self, request: AppendRequest, error: BaseException) -> ApiError:
        # By type: a database error's detail can quote the values it was given.
        log.error(
            "append failed",
            extra={
                "conversation_id": pseudonym(request.conversation_id),
                "error": type(error).__name__,
            },
        )
        return ApiError(ErrorCode.UNAVAILABLE, "storage is unavailable; retry the same envelope")

    async def read(
        self,
        principal: Principal,
        conversation_id: str,
        *,
        since: int,
        limit: int = MAX_PAGE,
        wait: float = 0.0,
    ) -> list[StoredEnvelope]:
        """Envelopes after ``since``; with ``wait``, hold the request until one arrives."""
        await self.authorize(principal, conversation_id)
        limit = max(1, min(limit, MAX_PAGE))
        items = await self.storage.read_since(conversation_id, since, limit)
        if items or wait <= 0:
            return items
        event = self.hub.waiter(conversation_id)
        try:
            items = await self.storage.read_since(conversation_id, since, limit)
            if items:
                return items
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=wait)
        finally:
            self.hub.drop_waiter(conversation_id, event)
        return await self.storage.read_since(conversation_id, since, limit)

    def _refused(self, principal: Principal, code: ErrorCode, size: int) -> None:
        log.info(
            "envelope refused",
            extra={
                "principal": principal.kind,
                "principal_id": pseudonym(principal.id),
                "code": code.value,
                "size": size,
            },
        )


def bearer(authorization: str | None) -> str:
    if not authorization:
        raise ApiError(ErrorCode.UNAUTHORIZED, "an `Authorization: Bearer` header is required")
    scheme, _, secret = authorization.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise ApiError(ErrorCode.UNAUTHORIZED, "use `Authorization: Bearer <token>`")
    return secret.strip()
