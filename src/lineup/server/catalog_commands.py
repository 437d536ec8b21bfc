"""``lineup server catalog ...``: publish and revoke signed MiniApp releases.

The group hangs under ``lineup server``, which passes the AppServer's data directory
as ``ctx.obj``. A running AppServer picks the changes up on its next catalog request.
Failures are ``click.ClickException`` starting with their stable code.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from lineup.delivery.errors import DeliveryError, DeliveryErrorCode
from lineup.delivery.release import MAX_ARTIFACT_BYTES, MAX_RELEASE_BYTES

from .catalog import Catalog, catalog_for

__all__ = ["catalog_group"]

T = TypeVar("T")

_FILE = click.Path(exists=True, dir_okay=False, readable=True, path_type=Path)


def _run(action: Callable[[], T]) -> T:
    try:
        return action()
    except DeliveryError as exc:
        raise click.ClickException(f"{exc.code}: {exc.message}") from None
    except OSError as exc:
        raise click.ClickException(
            f"{DeliveryErrorCode.CATALOG_UNAVAILABLE}: the catalog cannot be read or written "
            f"({type(exc).__name__})"
        ) from None


def _read(path: Path, limit: int, code: str, what: str) -> bytes:
    """A file's bytes, refused (before it is read whole) when larger than ``limit``."""
    with path.open("rb") as source:
        data = source.read(limit + 1)
    if len(data) > limit:
        raise click.ClickException(f"{code}: the {what} is larger than {limit} bytes")
    return data


@click.group("catalog")
def catalog_group() -> None:
    """Publish and revoke signed MiniApp releases (what Runtimes may install)."""


@catalog_group.command("publish")
@click.argument("artifact", type=_FILE)
@click.argument("release", type=_FILE)
@click.pass_obj
def publish(data_dir: Path, artifact: Path, release: Path) -> None:
    """Publish ARTIFACT (a packed bundle) with its signed RELEASE manifest."""
    artifact_bytes = _read(
        artifact, MAX_ARTIFACT_BYTES, DeliveryErrorCode.ARTIFACT_TOO_LARGE, "artifact"
    )
    release_bytes = _read(release, MAX_RELEASE_BYTES, DeliveryErrorCode.RELEASE_INVALID, "release")
    catalog = catalog_for(data_dir)
    published = _run(lambda: catalog.publish(release_bytes, artifact_bytes))
    click.echo(
        f"published {published.app_id}@{published.version} (artifact {published.artifact_id})"
    )


@catalog_group.command("revoke")
@click.argument("app_id")
@click.argument("version")
@click.pass_obj
def revoke(data_dir: Path, app_id: str, version: str) -> None:
    """Revoke VERSION of APP_ID: Runtimes roll back to a verified predecessor."""
    catalog = catalog_for(data_dir)
    new = _run(lambda: catalog.revoke_version(app_id, version))
    published = any(
        (e.release.app_id, e.release.version) == (app_id, version) for e in _run(catalog.entries)
    )
    state = "revoked" if new else "already revoked"
    click.echo(f"{app_id}@{version} {state}" + ("" if published else " (not published here)"))


@catalog_group.command("revoke-key")
@click.argument("key_id")
@click.pass_obj
def revoke_key(data_dir: Path, key_id: str) -> None:
    """Revoke the publisher key KEY_ID: nothing it signed may be installed."""
    catalog = catalog_for(data_dir)
    new = _run(lambda: catalog.revoke_key(key_id))
    click.echo(f"key {key_id} {'revoked' if new else 'already revoked'}")


@catalog_group.command("list")
@click.pass_obj
def list_releases(data_dir: Path) -> None:
    """List published releases and revocations."""
    catalog: Catalog = catalog_for(data_dir)
    entries = _run(catalog.entries)
    versions, keys = _run(catalog.revocations)
    rows = [("APP", "VERSION", "ARTIFACT", "BYTES", "KEY", "STATUS")]
    for entry in entries:
        release = entry.release
        status = (
            "revoked"
            if entry.version_revoked
            else "key revoked"
            if entry.key_revoked
            else "published"
        )
        rows.append(
            (
                release.app_id,
                release.version,
                release.artifact_id,
                str(release.length),
                release.key_id,
                status,
            )
        )
    if len(rows) == 1:
        click.echo("no releases published")
    else:
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        for row in rows:
            click.echo(
                "  ".join(
                    cell.ljust(width) for cell, width in zip(row, widths, strict=True)
                ).rstrip()
            )
    listed = {(e.release.app_id, e.release.version) for e in entries}
    for app_id, version in versions:
        if (app_id, version) not in listed:
            click.echo(f"revoked (not published here): {app_id}@{version}")
    for key_id in keys:
        click.echo(f"revoked key: {key_id}")
