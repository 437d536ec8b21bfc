"""Credentials: password hashing, opaque bearer tokens, agent API keys.

Passwords are hashed with scrypt (memory-hard KDF, stdlib). Tokens and API keys
are 256-bit random strings; only their SHA-256 is stored, so a database leak
yields nothing usable. Token prefixes tell the two kinds apart at a glance.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import secrets

USER_TOKEN_PREFIX = "lut_"  # noqa: S105 - a prefix, not a secret
AGENT_KEY_PREFIX = "lak_"

_SCRYPT_N = 2**14
_SCRYPT_R = 8
_SCRYPT_P = 1
_SCRYPT_LEN = 32


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(
        password.encode("utf-8"),
        salt=salt,
        n=_SCRYPT_N,
        r=_SCRYPT_R,
        p=_SCRYPT_P,
        dklen=_SCRYPT_LEN,
    )
    return f"scrypt${_SCRYPT_N}${_SCRYPT_R}${_SCRYPT_P}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    try:
        scheme, n, r, p, salt, digest = stored.split("$")
        if scheme != "scrypt":
            return False
        expected = _unb64(digest)
        actual = hashlib.scrypt(
            password.encode("utf-8"),
            salt=_unb64(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=len(expected),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(actual, expected)


@functools.cache
def _dummy_hash() -> str:
    return hash_password(secrets.token_urlsafe(16))


def burn_password_check(password: str) -> None:
    """Spend the time of a real check, so unknown usernames are not distinguishable."""
    verify_password(password, _dummy_hash())


def new_user_token() -> str:
    return USER_TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_agent_key() -> str:
    return AGENT_KEY_PREFIX + secrets.token_urlsafe(32)


def secret_hash(secret: str) -> str:
    """Storage form of a token or key: hex SHA-256 (they are high-entropy already)."""
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(8)}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
