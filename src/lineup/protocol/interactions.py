"""The four standard interactions (spec 002 §7.3, §8): their tool ids, arguments,
answers and results, and the inventory that advertises them. Pure: no I/O.

An agent starts one with a ``tool.call`` whose ``tool`` is one of ``TOOL_IDS`` and
whose ``arguments`` decode into that tool's argument type; the person's answer is
checked against those arguments by ``check_answer``; the ``tool.result`` carries the
result object documented in docs/protocol.md ("Interactions").
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import msgspec
import re2

from .errors import ErrorCode, Rejection
from .fields import MAX_LABEL_CHARS, Id, Label, ShortText
from .payloads import ApplicationRef, ClientInventory, ToolDescriptor

NOTICE = "interact.notice"
CHOICE = "interact.choice"
CONFIRM = "interact.confirm"
INPUT = "interact.input"
TOOL_IDS = (NOTICE, CHOICE, CONFIRM, INPUT)

Kind = Literal["notice", "choice", "confirm", "input"]
KIND_BY_TOOL: Mapping[str, Kind] = {
    NOTICE: "notice",
    CHOICE: "choice",
    CONFIRM: "confirm",
    INPUT: "input",
}

MIN_EXPIRES_IN_MS = 60_000
MAX_EXPIRES_IN_MS = 86_400_000
DEFAULT_EXPIRES_IN_MS = 900_000
"""Answerable interactions expire; the Runtime stores the absolute ``expires_at``."""

MAX_PROMPT_CHARS = 4096
MAX_OPTIONS = 50
MAX_INPUT_CHARS = 16_384
DEFAULT_INPUT_CHARS = 2_000
MAX_PATTERN_CHARS = 256

Prompt = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PROMPT_CHARS)]
ExpiresIn = Annotated[int, msgspec.Meta(ge=MIN_EXPIRES_IN_MS, le=MAX_EXPIRES_IN_MS)]


class _Args(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    pass


class NoticeArgs(_Args, frozen=True):
    """A read-only card. Answered ``accepted`` once it is stored; takes no expiry."""

    text: Prompt
    title: Label | None = None
    level: Literal["info", "success", "warning", "error"] = "info"
    toast: bool = True


class ChoiceOption(_Args, frozen=True):
    id: Id
    label: ShortText
    description: Label | None = None


class ChoiceArgs(_Args, frozen=True):
    prompt: Prompt
    options: Annotated[list[ChoiceOption], msgspec.Meta(min_length=1, max_length=MAX_OPTIONS)]
    multiple: bool = False
    min_selected: Annotated[int, msgspec.Meta(ge=0, le=MAX_OPTIONS)] | None = None
    max_selected: Annotated[int, msgspec.Meta(ge=1, le=MAX_OPTIONS)] | None = None
    expires_in_ms: ExpiresIn | None = None

    def __post_init__(self) -> None:
        ids = [option.id for option in self.options]
        if len(set(ids)) != len(ids):
            raise ValueError("option ids must be unique")
        if not self.multiple and (self.min_selected is not None or self.max_selected is not None):
            raise ValueError("`min_selected`/`max_selected` need `multiple`")
        low, high = self.bounds
        if low > high:
            raise ValueError("`min_selected` is greater than `max_selected`")
        if low > len(self.options):
            raise ValueError("`min_selected` is greater than the number of options")

    @property
    def bounds(self) -> tuple[int, int]:
        """How many options an answer selects, at least and at most."""
        if not self.multiple:
            return 1, 1
        low = 1 if self.min_selected is None else self.min_selected
        high = len(self.options) if self.max_selected is None else self.max_selected
        return low, high


class ConfirmArgs(_Args, frozen=True):
    prompt: Prompt
    confirm_label: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    cancel_label: Annotated[str, msgspec.Meta(min_length=1, max_length=64)] | None = None
    danger: bool = False
    expires_in_ms: ExpiresIn | None = None


class InputArgs(_Args, frozen=True):
    prompt: Prompt
    placeholder: Label | None = None
    multiline: bool = False
    min_length: Annotated[int, msgspec.Meta(ge=0, le=MAX_INPUT_CHARS)] = 0
    max_length: Annotated[int, msgspec.Meta(ge=1, le=MAX_INPUT_CHARS)] = DEFAULT_INPUT_CHARS
    pattern: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_PATTERN_CHARS)] | None = None
    """An RE2 expression the whole answer must match (linear time: no backreferences)."""
    expires_in_ms: ExpiresIn | None = None

    def __post_init__(self) -> None:
        if self.min_length > self.max_length:
            raise ValueError("`min_length` is greater than `max_length`")
        if self.pattern is not None:
            compile_pattern(self.pattern)  # raises ValueError when RE2 refuses it


Arguments = NoticeArgs | ChoiceArgs | ConfirmArgs | InputArgs
ARGUMENT_TYPES: Mapping[str, type[Arguments]] = {
    NOTICE: NoticeArgs,
    CHOICE: ChoiceArgs,
    CONFIRM: ConfirmArgs,
    INPUT: InputArgs,
}


# --- answers (what the person submits) and results (what the agent gets) ---------------


class ChoiceAnswer(_Args, frozen=True):
    selected: Annotated[list[Id], msgspec.Meta(max_length=MAX_OPTIONS)]


class ConfirmAnswer(_Args, frozen=True):
    confirmed: bool


class InputAnswer(_Args, frozen=True):
    text: Annotated[str, msgspec.Meta(max_length=MAX_INPUT_CHARS)]


class NoticeResult(_Args, frozen=True):
    """``accepted``: the card is stored and shown; nothing is answered."""


ANSWER_TYPES: Mapping[str, type[ChoiceAnswer | ConfirmAnswer | InputAnswer]] = {
    CHOICE: ChoiceAnswer,
    CONFIRM: ConfirmAnswer,
    INPUT: InputAnswer,
}
RESULT_TYPES: Mapping[str, type[msgspec.Struct]] = {
    NOTICE: NoticeResult,
    CHOICE: ChoiceAnswer,
    CONFIRM: ConfirmAnswer,
    INPUT: InputAnswer,
}


@dataclass(frozen=True, slots=True)
class Interaction:
    """A validated interactive ``tool.call``: what the Runtime stores and shows."""

    tool: str
    kind: Kind
    arguments: Arguments

    @property
    def expires_in_ms(self) -> int | None:
        """``None`` for a notice (it is never waited for); otherwise the bounded delay."""
        if isinstance(self.arguments, NoticeArgs):
            return None
        return self.arguments.expires_in_ms or DEFAULT_EXPIRES_IN_MS


def parse_arguments(tool: str, arguments: Mapping[str, Any]) -> Interaction | Rejection:
    """Decode a call's arguments for one of the four tools. Never raises."""
    kind = KIND_BY_TOOL.get(tool)
    if kind is None:
        return Rejection(code=ErrorCode.TOOL_NOT_ADVERTISED, message="not an interactive tool")
    try:
        parsed = msgspec.convert(arguments, ARGUMENT_TYPES[tool])
    except msgspec.ValidationError as exc:
        message, _, path = str(exc).partition(" - at `")
        return Rejection(
            code=ErrorCode.TOOL_INPUT_INVALID,
            message=message.splitlines()[0][:MAX_LABEL_CHARS] if message else "invalid arguments",
            path="$.payload.arguments" + path.rstrip("`")[1:] if path else "$.payload.arguments",
        )
    return Interaction(tool, kind, parsed)


def check_answer(interaction: Interaction, answer: Any) -> dict[str, Any] | Rejection:
    """The result object for a person's answer, or why it is refused (``answer_invalid``).

    The answer is checked against the stored arguments: option ids that exist, how
    many are selected, a boolean for confirm, the length and pattern of an input.
    Messages never repeat the answer.
    """
    tool = interaction.tool
    answer_type = ANSWER_TYPES.get(tool)
    if answer_type is None:
        return _invalid("a notice takes no answer")
    try:
        parsed = msgspec.convert(answer, answer_type)
    except msgspec.ValidationError as exc:
        message = str(exc).split(" - at ")[0].splitlines()[0]
        if "unknown field" in message:  # msgspec quotes the field name: part of the answer
            message = "the answer has a field this interaction does not take"
        return _invalid(message[:200])
    args = interaction.arguments
    if isinstance(parsed, ChoiceAnswer) and isinstance(args, ChoiceArgs):
        known = {option.id for option in args.options}
        if len(set(parsed.selected)) != len(parsed.selected):
            return _invalid("an option is selected twice")
        if any(option_id not in known for option_id in parsed.selected):
            return _invalid("no such option")
        low, high = args.bounds
        if not low <= len(parsed.selected) <= high:
            return _invalid(f"select between {low} and {high} options")
        # Results list options in the order the agent gave them.
        order = {option.id: index for index, option in enumerate(args.options)}
        return {"selected": sorted(parsed.selected, key=order.__getitem__)}
    if isinstance(parsed, ConfirmAnswer):
        return {"confirmed": parsed.confirmed}
    if isinstance(parsed, InputAnswer) and isinstance(args, InputArgs):
        length = len(parsed.text)
        if not args.min_length <= length <= args.max_length:
            return _invalid(f"the answer must be {args.min_length} to {args.max_length} characters")
        if args.pattern is not None and not compile_pattern(args.pattern).fullmatch(parsed.text):
            return _invalid("the answer does not match the requested format")
        return {"text": parsed.text}
    return _invalid("the answer does not fit this interaction")


def _invalid(message: str) -> Rejection:
    return Rejection(code=ErrorCode.ANSWER_INVALID, message=message)


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False
_RE2_OPTIONS.max_mem = 1 << 20


def compile_pattern(pattern: str) -> re2._Regexp[str]:
    """RE2 (linear time, bounded memory), so a hostile pattern cannot stall the Runtime."""
    try:
        return re2.compile(pattern, options=_RE2_OPTIONS)
    except re2.error as exc:
        raise ValueError("`pattern` is not a valid RE2 expression") from exc


# --- the inventory that advertises them -------------------------------------------------


@functools.cache
def _schema_bytes(struct: type[msgspec.Struct]) -> bytes:
    return msgspec.json.encode(msgspec.json.schema(struct))


def _schema(struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The JSON Schema of ``struct``: generated once per process (it takes ~1 ms),
    decoded afresh for each caller, who may keep or change it."""
    schema: dict[str, Any] = msgspec.json.decode(_schema_bytes(struct))
    return schema


def interactive_tools() -> list[ToolDescriptor]:
    return [
        ToolDescriptor(
            id=tool,
            handling="interactive",
            input_schema=_schema(ARGUMENT_TYPES[tool]),
            output_schema=_schema(RESULT_TYPES[tool]),
        )
        for tool in TOOL_IDS
    ]


def inventory(
    extra_tools: list[ToolDescriptor] | None = None,
    *,
    applications: list[ApplicationRef] | None = None,
    revision: str | None = None,
    locale: str | None = None,
) -> ClientInventory:
    """The Runtime's inventory: the interactive tools, then ``extra_tools``, the
    enabled ``applications`` and the person's ``locale``. Without ``revision`` the
    revision is a digest of the content, so it only changes when what is advertised
    changes; the Runtime's registry passes its own monotonic revision (``inv-<n>``)."""
    tools = interactive_tools() + list(extra_tools or [])
    apps = list(applications or [])
    made = ClientInventory(revision="0", applications=apps, tools=tools, locale=locale)
    if revision is None:
        revision = "inv-" + content_digest(made)[:20]
    return msgspec.structs.replace(made, revision=revision)


def content_digest(inventory: ClientInventory) -> str:
    """SHA-256 of what ``inventory`` advertises (everything but its revision)."""
    unrevisioned = msgspec.structs.replace(inventory, revision="0")
    return hashlib.sha256(msgspec.json.encode(unrevisioned, order="deterministic")).hexdigest()
