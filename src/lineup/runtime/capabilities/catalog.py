"""The capabilities a LineUp host can provide, with their risk and schemas.

A capability is declared in the inventory only while a host that provides it is
attached and the person has not revoked it (``gateway``); declaring it never
grants it: every call is decided by the gateway, most with the person's consent.

Risks (spec 000 §5.2), least restrictive first: ``display_only`` runs without a
dialog; ``user_confirmation`` needs the person's consent, which may be remembered
for the rest of the Runtime's session per requester; ``system_permission`` and
``restricted`` are never remembered and need an extra step (the browser's own file
chooser for ``device.pick_file``; a typed confirmation phrase for ``restricted``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lineup.formats.schemas import CompiledSchemas
from lineup.protocol.payloads import CapabilityDescriptor

__all__ = ["CATALOG", "MAX_ARTIFACT_BYTES", "MAX_CLIPBOARD_CHARS", "Capability", "find"]

MAX_CLIPBOARD_CHARS = 65_536
MAX_ARTIFACT_BYTES = 5 * 1024 * 1024
"""An artifact (saved or picked file) at most."""
MAX_URL_CHARS = 2048


@dataclass(frozen=True, slots=True)
class Capability:
    """One capability: its descriptor (as the inventory shows it), its compiled
    schemas, and where it runs: ``runtime`` (in the Runtime, right after the
    decision) or ``shell`` (in the person's browser, which reports the outcome)."""

    descriptor: CapabilityDescriptor
    schemas: CompiledSchemas
    runs_in: str

    @property
    def name(self) -> str:
        return self.descriptor.name

    @property
    def risk(self) -> str:
        return self.descriptor.risk


def _capability(
    name: str, risk: str, runs_in: str, input_schema: dict[str, Any], output_schema: dict[str, Any]
) -> Capability:
    descriptor = CapabilityDescriptor(
        name=name,
        version="1.0",
        risk=risk,  # type: ignore[arg-type]
        input_schema=input_schema,
        output_schema=output_schema,
    )
    return Capability(descriptor, CompiledSchemas(input_schema, output_schema), runs_in)


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "additionalProperties": False,
        "required": required,
        "properties": properties,
    }


_ARTIFACT = _object(
    {
        "artifact_id": {"type": "string"},
        "name": {"type": "string"},
        "media_type": {"type": "string"},
        "size": {"type": "integer", "minimum": 0},
    },
    ["artifact_id", "name", "media_type", "size"],
)

_NAME = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": "^[^/\\\\\\u0000]+$"}
_MEDIA = {"type": "string", "maxLength": 127, "pattern": "^[a-z0-9.+-]+/[a-z0-9.+-]+$"}

CATALOG: dict[str, Capability] = {
    c.name: c
    for c in (
        _capability(
            "app.open_url",
            "user_confirmation",
            "shell",
            _object(
                {"url": {"type": "string", "maxLength": MAX_URL_CHARS, "pattern": "^https?://"}},
                ["url"],
            ),
            _object({"opened": {"type": "boolean"}}, ["opened"]),
        ),
        _capability(
            "clipboard.write",
            "user_confirmation",
            "shell",
            _object({"text": {"type": "string", "maxLength": MAX_CLIPBOARD_CHARS}}, ["text"]),
            _object({"written": {"type": "boolean"}}, ["written"]),
        ),
        _capability(
            "device.pick_file",
            "system_permission",
            "shell",
            _object(
                {
                    "accept": {
                        "type": "array",
                        "maxItems": 16,
                        "items": {"type": "string", "maxLength": 64, "pattern": "^[.a-z0-9/*+-]+$"},
                    }
                },
                [],
            ),
            _ARTIFACT,
        ),
        _capability(
            "artifact.save",
            "user_confirmation",
            "runtime",
            {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "media_type"],
                "properties": {
                    "name": _NAME,
                    "media_type": _MEDIA,
                    "text": {"type": "string", "maxLength": 1_000_000},
                    "base64": {"type": "string", "maxLength": 1_400_000},
                },
                "oneOf": [{"required": ["text"]}, {"required": ["base64"]}],
            },
            _ARTIFACT,
        ),
        _capability(
            "notification.show",
            "display_only",
            "shell",
            _object(
                {
                    "title": {"type": "string", "minLength": 1, "maxLength": 120},
                    "body": {"type": "string", "maxLength": 1000},
                },
                ["title"],
            ),
            _object({"shown": {"type": "boolean"}}, ["shown"]),
        ),
    )
}
"""Every capability this LineUp version knows, by name."""


def find(name: str) -> Capability | None:
    return CATALOG.get(name)
