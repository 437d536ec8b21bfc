"""``lineup miniapp``: a publisher's commands (keygen, pack, sign, verify).

Arguments in, ``publisher`` does the work, a short report out. A refusal exits 1 with
``code: message`` on stderr, the stable code first. Nothing prints a file's contents,
a private key or a whole signature.
"""

from __future__ import annotations

import re
from pathlib import Path

import click

from . import publisher
from .errors import DeliveryError, DeliveryErrorCode
from .release import ARTIFACT_ID_PATTERN, KEY_ID_PATTERN

__all__ = ["miniapp_group"]

_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _refuse(exc: DeliveryError) -> click.exceptions.Exit:
    click.echo(f"{exc.code}: {exc.message}", err=True)
    return click.exceptions.Exit(1)


def _cannot(what: str, exc: OSError | ValueError) -> click.ClickException:
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return click.ClickException(f"cannot {what}: {reason}")


@click.group("miniapp")
def miniapp_group() -> None:
    """Publish signed MiniApps: keys, artifacts, releases and their checks."""


@miniapp_group.command()
@click.argument("name")
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory for NAME.key and NAME.pub.json.",
)
def keygen(name: str, out_dir: Path) -> None:
    """Create a publisher key pair: NAME.key (private, mode 0600) and NAME.pub.json."""
    try:
        key_path, pub_path, public = publisher.keygen(name, out_dir)
    except FileExistsError as exc:
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="NAME") from None
    except OSError as exc:
        raise _cannot("write the key", exc) from None
    click.echo(f"key id       {public.key_id}")
    click.echo(f"private key  {key_path}  (keep it secret; mode 0600)")
    click.echo(f"public key   {pub_path}  (give this to Runtimes that trust you)")


def _artifact_id(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is not None and not re.match(ARTIFACT_ID_PATTERN, value):
        raise click.BadParameter("lower-case letters, digits, `.`, `_` and `-`, at most 128")
    return value


@miniapp_group.command("pack")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="Directory for the artifact and its unsigned release.",
)
@click.option(
    "--artifact-id",
    default=None,
    callback=_artifact_id,
    help="The artifact's id and file name [default: <app_id>-<version>.tar].",
)
def pack_command(directory: Path, out_dir: Path, artifact_id: str | None) -> None:
    """Pack the installed-kind bundle in DIRECTORY into an artifact and its release."""
    try:
        artifact, release = publisher.pack_bundle(directory, artifact_id=artifact_id)
    except DeliveryError as exc:
        raise _refuse(exc) from None
    artifact_path = out_dir / release.artifact_id
    release_path = out_dir / publisher.release_file_name(release.artifact_id)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        if artifact_path.exists() and artifact_path.read_bytes() != artifact:
            raise click.ClickException(
                f"{artifact_path} exists with other bytes; an artifact never changes "
                "(a new artifact needs a new version)"
            )
        artifact_path.write_bytes(artifact)
        publisher.write_release(release, release_path)
    except OSError as exc:
        raise _cannot("write the artifact", exc) from None
    click.echo(f"app      {release.app_id}")
    click.echo(f"version  {release.version}")
    click.echo(f"length   {release.length} bytes")
    click.echo(f"sha256   {release.sha256}")
    click.echo(f"artifact {artifact_path}")
    click.echo(f"release  {release_path}  (unsigned: sign it with `lineup miniapp sign`)")


@miniapp_group.command()
@click.argument("release_path", metavar="RELEASE", type=_FILE)
@click.option("--key", "key_path", required=True, type=_FILE, help="The private key (NAME.key).")
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Where to write the signed release [default: over RELEASE].",
)
def sign(release_path: Path, key_path: Path, out: Path | None) -> None:
    """Sign RELEASE with a publisher's private key."""
    try:
        target, signed = publisher.sign_file(release_path, key_path, out)
    except DeliveryError as exc:
        raise _refuse(exc) from None
    except OSError as exc:
        raise _cannot("sign", exc) from None
    except (ValueError, TypeError):
        # load_private_key: not a PEM key, an encrypted one, or not Ed25519.
        raise click.ClickException(
            "cannot sign: the key is not an unencrypted Ed25519 private key"
        ) from None
    click.echo(f"signed   {signed.app_id} {signed.version}")
    click.echo(f"key id   {signed.key_id}")
    click.echo(f"release  {target}")


def _key_id(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> tuple[str, ...]:
    for value in values:
        if not re.match(KEY_ID_PATTERN, value):
            raise click.BadParameter("a key id is `ed25519:` and 32 hex digits")
    return values


@miniapp_group.command()
@click.argument("artifact_path", metavar="ARTIFACT", type=_FILE)
@click.argument("release_path", metavar="RELEASE", type=_FILE)
@click.option(
    "--trust",
    "trusted",
    multiple=True,
    required=True,
    type=_FILE,
    help="A trusted publisher's public key (NAME.pub.json); repeatable.",
)
@click.option(
    "--revoked-key",
    "revoked",
    multiple=True,
    callback=_key_id,
    help="A revoked key id (ed25519:...); repeatable.",
)
def verify(
    artifact_path: Path, release_path: Path, trusted: tuple[Path, ...], revoked: tuple[str, ...]
) -> None:
    """Check ARTIFACT and its RELEASE exactly as a Runtime will before installing."""
    try:
        result = publisher.verify_files(artifact_path, release_path, trusted, revoked)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--trust") from None
    except OSError as exc:
        raise _cannot("read a file", exc) from None

    click.echo("lineup miniapp verify")
    width = max(len(name) for name in publisher.CHECKS)
    for check in result.checks:
        outcome = (
            click.style("ok", fg="green")
            if check.ok
            else click.style("refused", fg="red") + f" {check.code}"
        )
        click.echo(f"  {check.name:<{width}}  {check.seconds * 1000:7.1f} ms  {outcome}")
    for name in publisher.CHECKS[len(result.checks) :]:
        click.echo(f"  {name:<{width}}  {'':>7}     " + click.style("not run", dim=True))

    refusal = result.refusal
    if refusal is not None or result.release is None or result.key is None:
        message = refusal.message if refusal else "not every check ran"
        click.echo(
            f"{refusal.code if refusal else DeliveryErrorCode.RELEASE_INVALID}: {message}", err=True
        )
        raise click.exceptions.Exit(1)
    release = result.release
    click.echo(
        f"verified {release.app_id} {release.version}: {release.length} bytes, "
        f"sha256 {release.sha256[:16]}…, signed by {result.key.key_id}"
        + (f" ({result.key.name})" if result.key.name else "")
    )
