"""The Runtime's side of the catalog: fetch the AppServer's catalog and download an
artifact into memory.

Only an HTTPS catalog is production-capable. Plain HTTP is accepted for a catalog on
a loopback address (development) and reported as such; anything else is refused with
``catalog_insecure`` before a request is made. A download is read into memory and cut
off as soon as it exceeds the length its release states, so a hostile server cannot
make the Runtime hold more than one bundle's worth of bytes; the caller checks length,
SHA-256 and signature before anything is written.
"""

from __future__ import annotations

import ipaddress
import logging
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlsplit

import httpx
import msgspec

from .errors import DeliveryError, DeliveryErrorCode
from .release import MAX_ARTIFACT_BYTES, Release, decode_release

__all__ = ["CatalogClient", "CatalogDocument", "catalog_security"]

log = logging.getLogger("lineup.delivery")

MAX_CATALOG_BYTES = 4 * 1024 * 1024
_warned: set[str] = set()

Security = Literal["production", "development"]


def catalog_security(url: str) -> Security:
    """``production`` for HTTPS, ``development`` for plain HTTP on loopback; raises
    ``catalog_insecure`` otherwise."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return "production"
    if parts.scheme == "http" and parts.hostname:
        host = parts.hostname
        if host == "localhost" or host.endswith(".localhost"):
            return "development"
        try:
            if ipaddress.ip_address(host).is_loopback:
                return "development"
        except ValueError:
            pass
    raise DeliveryError(
        DeliveryErrorCode.CATALOG_INSECURE,
        "a catalog must be HTTPS (plain HTTP only on a loopback address, for development)",
    )


class _Document(msgspec.Struct):
    revision: str
    apps: list[dict[str, msgspec.Raw | list[msgspec.Raw] | str]] = []
    revoked: dict[str, list[msgspec.Raw]] = {}


@dataclass(slots=True)
class CatalogDocument:
    """A fetched catalog: its releases by app id (releases that fail to decode are
    skipped and counted), and its revocations."""

    revision: str
    security: Security
    releases: dict[str, list[Release]] = field(default_factory=dict)
    revoked_versions: set[tuple[str, str]] = field(default_factory=set)
    revoked_keys: set[str] = field(default_factory=set)
    skipped: int = 0

    def find(self, app_id: str, version: str) -> Release | None:
        for release in self.releases.get(app_id, []):
            if release.version == version:
                return release
        return None


def parse_catalog(body: bytes, security: Security) -> CatalogDocument:
    try:
        raw = msgspec.json.decode(body, type=_Document)
    except msgspec.DecodeError:
        raise DeliveryError(
            DeliveryErrorCode.CATALOG_UNAVAILABLE, "the catalog is not a catalog document"
        ) from None
    document = CatalogDocument(raw.revision[:64], security)
    for app in raw.apps:
        entries = app.get("releases")
        for entry in entries if isinstance(entries, list) else []:
            try:
                release = decode_release(bytes(entry))
            except DeliveryError:
                document.skipped += 1
                continue
            if release.app_id == app.get("app_id"):
                document.releases.setdefault(release.app_id, []).append(release)
            else:
                document.skipped += 1
    for item in raw.revoked.get("versions", []):
        try:
            pair = msgspec.json.decode(item, type=dict[str, str])
            document.revoked_versions.add((pair["app_id"], pair["version"]))
        except (msgspec.DecodeError, KeyError):
            document.skipped += 1
    for item in raw.revoked.get("keys", []):
        try:
            document.revoked_keys.add(msgspec.json.decode(item, type=str))
        except msgspec.DecodeError:
            document.skipped += 1
    return document


class CatalogClient:
    """Fetch from the catalog at ``base_url`` (the AppServer) with a bearer token."""

    def __init__(self, base_url: str, token: str, *, timeout: float = 30.0) -> None:
        self.security = catalog_security(base_url)
        self._base_url = base_url.rstrip("/")
        self._token = token
        self._timeout = timeout
        if self.security == "development" and self._base_url not in _warned:
            # Once per catalog and process. INFO, not WARNING: plain HTTP is refused
            # everywhere but loopback, so this is always a development setup (the
            # demo's): not worth a line in its terminal by default.
            _warned.add(self._base_url)
            log.info("catalog over plain HTTP on loopback: development only")

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self._base_url,
            timeout=self._timeout,
            # identity: the bytes counted against the limit are the bytes held
            headers={"authorization": f"Bearer {self._token}", "accept-encoding": "identity"},
            follow_redirects=False,
        )

    async def fetch(self) -> CatalogDocument:
        async with self._client() as http:
            body = await self._get(http, "/v1/catalog", MAX_CATALOG_BYTES, exact=None)
        return parse_catalog(body, self.security)

    async def download(self, release: Release) -> bytes:
        """The artifact's bytes, never more than ``release.length`` (up to the bundle
        limit) held; the caller verifies them."""
        limit = min(release.length, MAX_ARTIFACT_BYTES)
        async with self._client() as http:
            return await self._get(
                http, f"/v1/artifacts/{release.artifact_id}", limit, exact=release.length
            )

    async def _get(
        self, http: httpx.AsyncClient, path: str, limit: int, *, exact: int | None
    ) -> bytes:
        chunks: list[bytes] = []
        size = 0
        try:
            async with http.stream("GET", path) as response:
                if response.status_code != 200:
                    raise DeliveryError(
                        DeliveryErrorCode.CATALOG_UNAVAILABLE,
                        f"the catalog answered HTTP {response.status_code}",
                    )
                async for chunk in response.aiter_raw():
                    size += len(chunk)
                    if size > limit:
                        code = (
                            DeliveryErrorCode.LENGTH_MISMATCH
                            if exact is not None
                            else DeliveryErrorCode.CATALOG_UNAVAILABLE
                        )
                        raise DeliveryError(code, f"the download exceeds {limit} bytes")
                    chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise DeliveryError(
                DeliveryErrorCode.CATALOG_UNAVAILABLE, f"the download failed ({type(exc).__name__})"
            ) from None
        return b"".join(chunks)
