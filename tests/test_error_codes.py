"""One error vocabulary: every code LineUp sends is a member of a registered enum.

``lineup.codes`` registers the enums. The walk below reads every module of
``src/lineup`` and fails, naming file and line, wherever a code is written as a bare
string (or an f-string) instead of an enum member or a variable:

- where a code goes: keyword arguments, parameters, dataclass fields, dict keys,
  attributes and variables named ``code``, ``*_code``, ``code_*`` or ``refusal``,
  and receipts' ``outcome`` (which may also be a success word, ``OUTCOME_WORDS``);
  positional arguments are matched to the parameter or field they fill (exception
  classes such as ``CapabilityRefused(code)``, ``channel.ChannelError(code, ...)``);
  comparisons and ``match`` cases on those names; the ``return`` of a function that
  also returns an enum member (``busy_or_final``);
- and any string equal to a registered code, wherever it stands (dict keys of
  message tables, ``Literal`` types, constants), except the words listed in
  ``HOMONYMS``, which the code base also uses for something else (a status, an audit
  detail). Docstrings, the enums' own bodies and log fields (``extra=``) are not
  codes that are sent, and are left out.
"""

from __future__ import annotations

import ast
import collections
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from lineup.codes import CODE_ENUMS, SENT_CODE_ENUMS, SHARED_CODES, code_values
from lineup.protocol import ErrorCode
from lineup.protocol.fields import ERROR_CODE_PATTERN

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "src"
PACKAGE = SOURCE / "lineup"
DOCS = ROOT / "docs"

NOT_CODE_NAMES = frozenset({"status_code"})
"""Names that look like a code's but are not one (an HTTP status)."""

NOT_CODE_PARAMETERS = frozenset({("audit", "outcome")})
"""(function, parameter) pairs whose name misleads: an audit row's ``outcome`` is a
word of the audit log (``opened``, ``refused``), never sent (its ``code`` is
checked)."""

OUTCOME_WORDS = frozenset({"accepted", "ok", "rolled_back", "unavailable"})
"""What an ``outcome`` may be besides a code: a receipt's success (``accepted``, the
App centre's ``ok``), or what a revocation did to an app (``rolled_back``,
``unavailable``: a status, the code is its ``reason``)."""

CODE_GRAMMAR = re.compile(ERROR_CODE_PATTERN)

HOMONYMS = {
    "expired": "a call's or interaction's status",
    "cancelled": "a call's status and the progress state",
    "revoked": "an audit detail and the catalog's list of revoked releases",
    "unavailable": "a surface's status and a revocation's outcome",
    "conflict": "the storage's append status",
    "app_disabled": "the reason an app sub-session closed (``app_session.closed``, a label)",
}
"""Codes that are also ordinary words of the code base: only their use where a code
goes is checked."""


def is_code_name(name: str) -> bool:
    if name in NOT_CODE_NAMES:
        return False
    return name in ("code", "refusal") or name.endswith("_code") or name.startswith("code_")


def is_outcome_name(name: str) -> bool:
    return name == "outcome"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    where: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.where}: {self.text}"


@dataclass
class Module:
    name: str
    path: str
    tree: ast.Module
    functions: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)
    """Name -> for each definition of it here, the positions of its code parameters
    (``outcome`` ones negative: ``-1 - position``)."""
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    """Local name -> (module, name in it), ``None`` for the module itself."""


# --- reading the package ------------------------------------------------------------------


def _positions(names: list[str], owner: str = "") -> tuple[int, ...]:
    found: list[int] = []
    for index, name in enumerate(names):
        if (owner, name) in NOT_CODE_PARAMETERS:
            continue
        if is_code_name(name):
            found.append(index)
        elif is_outcome_name(name):
            found.append(-1 - index)
    return tuple(found)


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    names = [a.arg for a in [*node.args.posonlyargs, *node.args.args]]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    return names[1:] if method and not static and names else names


def _fields(cls: ast.ClassDef) -> list[str]:
    """The annotated names of a class body, in order (a dataclass's or Struct's fields)."""
    return [
        item.target.id
        for item in cls.body
        if isinstance(item, ast.AnnAssign)
        and isinstance(item.target, ast.Name)
        and "ClassVar" not in ast.unparse(item.annotation)
    ]


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(SOURCE).with_suffix("").parts).removesuffix(".__init__")


def _resolve(module: str, level: int, target: str | None, is_package: bool) -> str:
    if level == 0:
        return target or ""
    parts = module.split(".")
    base = parts if is_package else parts[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, target] if target else base)


def read_module(name: str, path: str, text: str, *, is_package: bool = False) -> Module:
    module = Module(name, path, ast.parse(text))

    def visit(body: list[ast.stmt], in_class: bool) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                module.classes[node.name] = node
                visit(node.body, True)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                positions = _positions(_parameters(node, in_class), node.name)
                if node.name != "__init__":
                    module.functions.setdefault(node.name, []).append(positions)
                visit(node.body, False)  # nested helpers (``answer`` in a method)

    visit(module.tree.body, False)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(name, node.level, node.module, is_package)
            for alias in node.names:
                local = alias.asname or alias.name
                module.imports[local] = (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    module.imports[alias.asname] = (alias.name, None)
    return module


class Package:
    def __init__(self, modules: list[Module]) -> None:
        self.modules = {m.name: m for m in modules}

    def class_positions(self, module: Module, cls: ast.ClassDef) -> tuple[int, ...]:
        """Code positions of a class's constructor: its ``__init__``, else its fields
        after those of its bases (a dataclass, a Struct), else its base's."""
        for item in cls.body:
            if isinstance(item, ast.FunctionDef) and item.name == "__init__":
                return _positions(_parameters(item, True))
        own = _fields(cls)
        base = next(
            (found for b in cls.bases if (found := self.find_class(module, b)) is not None), None
        )
        if not own:
            return () if base is None else self.class_positions(*base)
        inherited = [] if base is None else self.field_names(*base)
        return _positions([*inherited, *own])

    def field_names(self, module: Module, cls: ast.ClassDef) -> list[str]:
        """A dataclass's or Struct's fields in constructor order (its bases' first)."""
        for base in cls.bases:
            found = self.find_class(module, base)
            if found is not None:
                return [*self.field_names(*found), *_fields(cls)]
        return _fields(cls)

    def find_class(self, module: Module, node: ast.expr) -> tuple[Module, ast.ClassDef] | None:
        target = self.lookup(module, node)
        if target is None:
            return None
        owner, name = target
        cls = owner.classes.get(name)
        return None if cls is None else (owner, cls)

    def lookup(self, module: Module, node: ast.expr, depth: int = 0) -> tuple[Module, str] | None:
        """The module that defines what ``node`` names (``Name``, ``mod.Name``); the
        name ``""`` when ``node`` names a module."""
        if depth > 8:  # re-exports that go round
            return None
        if isinstance(node, ast.Name):
            if node.id in module.classes or node.id in module.functions:
                return module, node.id
            imported = module.imports.get(node.id)
            if imported is None:
                return None
            source_name, attribute = imported
            if attribute is None:
                source = self.modules.get(source_name)
                return None if source is None else (source, "")
            submodule = self.modules.get(f"{source_name}.{attribute}")
            if submodule is not None:
                return submodule, ""
            source = self.modules.get(source_name)
            if source is None or source is module:
                return None
            return self.lookup(source, ast.Name(attribute), depth + 1)
        if isinstance(node, ast.Attribute):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                return (module, node.attr) if node.attr in module.functions else None
            owner = self.lookup(module, node.value, depth + 1)
            if owner is not None and owner[1] == "":
                return self.lookup(owner[0], ast.Name(node.attr), depth + 1)
        return None

    def call_positions(self, module: Module, func: ast.expr) -> tuple[int, ...]:
        target = self.lookup(module, func)
        if target is not None and target[1]:
            owner, name = target
            if name in owner.classes:
                return self.class_positions(owner, owner.classes[name])
            definitions = set(owner.functions.get(name, ()))
            return definitions.pop() if len(definitions) == 1 else ()
        if isinstance(func, ast.Attribute):  # a method of some object: only when unambiguous
            definitions = {p for m in self.modules.values() for p in m.functions.get(func.attr, ())}
            if len(definitions) == 1:
                return definitions.pop()
        return ()


# --- the walk --------------------------------------------------------------------------------


def _literals(node: ast.expr | None, *, containers: bool = False) -> list[ast.expr]:
    """The bare strings ``node`` may evaluate to; with ``containers``, also the items
    of a tuple, list or set (what ``code in (...)`` compares with)."""
    if node is None:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node]
    if isinstance(node, ast.JoinedStr):
        return [node]
    if isinstance(node, ast.IfExp):
        return _literals(node.body) + _literals(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [found for value in node.values for found in _literals(value)]
    if containers and isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [found for item in node.elts for found in _literals(item)]
    return []


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value if isinstance(node.slice.value, str) else None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return node.args[0].value
    return None


def _enum_names() -> frozenset[str]:
    return frozenset(enum.__name__ for enum in CODE_ENUMS)


def _is_member(node: ast.expr | None, enums: frozenset[str]) -> bool:
    """``ErrorCode.X``, ``ErrorCode.X.value``, ``str(ErrorCode.X)``."""
    if node is None:
        return False
    if isinstance(node, ast.Attribute) and node.attr == "value":
        node = node.value
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
        node = node.args[0]
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in enums
    )


def _is_enum_class(node: ast.ClassDef) -> bool:
    return any(ast.unparse(base).endswith(("Enum", "StrEnum")) for base in node.bases)


def walk(package: Package, module: Module, codes: frozenset[str]) -> list[Finding]:
    enums = _enum_names()
    found: list[Finding] = []
    exempt: set[int] = set()  # docstrings, enum bodies, log fields

    def report(
        node: ast.expr | None, where: str, *, outcome: bool = False, containers: bool = False
    ) -> None:
        for literal in _literals(node, containers=containers):
            if outcome and not (
                isinstance(literal, ast.Constant)
                and CODE_GRAMMAR.match(literal.value)
                and literal.value not in OUTCOME_WORDS
            ):
                continue  # a success word, or text for a person (a CLI's table)
            exempt.add(id(literal))
            found.append(Finding(module.path, literal.lineno, where, ast.unparse(literal)))

    def named(name: str | None, value: ast.expr | None, where: str) -> None:
        if name is None:
            return
        if is_code_name(name):
            report(value, where)
        elif is_outcome_name(name):
            report(value, where, outcome=True)

    for node in ast.walk(module.tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                exempt.add(id(first.value))
            if isinstance(node, ast.ClassDef) and _is_enum_class(node):
                exempt.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.keyword) and node.arg == "extra":
            exempt.update(id(n) for n in ast.walk(node.value))

    for node in ast.walk(module.tree):
        if id(node) in exempt:
            continue
        if isinstance(node, ast.Call):
            for keyword in node.keywords:
                if id(keyword.value) not in exempt:
                    named(keyword.arg, keyword.value, f"{keyword.arg}=")
            for position in package.call_positions(module, node.func):
                index = position if position >= 0 else -1 - position
                if index < len(node.args) and not isinstance(node.args[index], ast.Starred):
                    where = f"{ast.unparse(node.func)}(argument {index + 1})"
                    report(node.args[index], where, outcome=position < 0)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    named(key.value, value, f'"{key.value}":')
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                else:
                    pairs = [(target, node.value)]
                for each, value in pairs:
                    named(_name_of(each), value, "assignment")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            for side in sides:
                if (name := _name_of(side)) is not None and is_code_name(name):
                    for other in sides:
                        report(other, "comparison", containers=True)
        elif isinstance(node, ast.Match):
            name = _name_of(node.subject)
            if name is not None and is_code_name(name):
                for case in node.cases:
                    for pattern in ast.walk(case.pattern):
                        if isinstance(pattern, ast.MatchValue):
                            report(pattern.value, "match case")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            returns = [
                r.value for r in ast.walk(node) if isinstance(r, ast.Return) and r.value is not None
            ]
            annotated = node.returns is not None and any(
                name in ast.unparse(node.returns) for name in enums
            )
            members = (_is_member(n, enums) for value in returns for n in ast.walk(value))
            if annotated or any(members):
                for value in returns:
                    report(value, f"return of {node.name}")

    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value in codes
            and node.value not in HOMONYMS
            and id(node) not in exempt
        ):
            found.append(Finding(module.path, node.lineno, "a code's value", repr(node.value)))
    return sorted(set(found), key=lambda f: (f.path, f.line, f.text))


def read_package() -> Package:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        modules.append(
            read_module(
                _module_name(path),
                str(path.relative_to(ROOT)),
                path.read_text(encoding="utf-8"),
                is_package=path.name == "__init__.py",
            )
        )
    return Package(modules)


def walk_snippet(text: str) -> list[Finding]:
    """The walk over one made-up module (for the checks of the walk itself)."""
    module = read_module("lineup.snippet", "snippet.py", text)
    return walk(Package([module]), module, code_values())


# --- the tests ---------------------------------------------------------------------------------


def test_no_code_is_a_bare_string() -> None:
    package = read_package()
    codes = code_values()
    findings = [f for m in package.modules.values() for f in walk(package, m, codes)]
    assert not findings, "bare codes (use the enum member):\n" + "\n".join(map(str, findings))


@pytest.mark.parametrize(
    "snippet",
    [
        'raise CapabilityRefused("confirmation_required")',
        'outcome = NativeOutcome(code="provider_failed")',
        'frame = {"code": "mount_not_found", "message": "no such mount"}',
        'code = "revoked" if gone else ErrorCode.CAPABILITY_NOT_DECLARED',
        'self.code = f"app_{kind}"',
        'if exc.code == "app_version_conflict":\n    pass',
        'receipt = Receipt(outcome="surface_unavailable")',
        'WORDS = {"app_not_found": "This app is not installed."}',
        'NOT_DECLARED = "capability_not_declared"',
        'reason: Literal["app_closed", "app_failed"] = "app_closed"',
        "def why(call):\n"
        "    if call.done:\n"
        "        return ErrorCode.CALL_ALREADY_FINAL.value\n"
        '    return "still_busy"',
        "class Refused(Exception):\n"
        "    def __init__(self, code: str) -> None:\n"
        "        self.code = code\n"
        'raise Refused("some_new_code")',
        "@dataclass\n"
        "class Error:\n"
        "    code: str\n"
        "    message: str\n"
        'error = Error("some_new_code", "words")',
        'def refuse(frame, code, message):\n    return frame\nrefuse(frame, "some_new_code", "no")',
        'match error.code:\n    case "some_new_code":\n        pass',
        "class Refused(Exception):\n"
        "    def __init__(self, code: str) -> None:\n"
        "        self.code = code\n"
        "class Late(Refused):\n"
        "    pass\n"
        'raise Late("some_new_code")',
    ],
)
def test_the_walk_finds_a_bare_code(snippet: str) -> None:
    assert walk_snippet(snippet), snippet


def test_the_walk_follows_imports_to_the_class_that_takes_a_code() -> None:
    errors = read_module(
        "lineup.errors_here",
        "errors_here.py",
        "class Refused(Exception):\n    def __init__(self, why: str, code: str) -> None: ...",
    )
    direct = read_module(
        "lineup.direct", "direct.py", 'from .errors_here import Refused\nRefused("x", "new_code")'
    )
    dotted = read_module(
        "lineup.dotted",
        "dotted.py",
        'from lineup import errors_here\nerrors_here.Refused("x", "new_code")',
    )
    package = Package([errors, direct, dotted])
    for module in (direct, dotted):
        (finding,) = walk(package, module, code_values())
        assert (finding.line, finding.text) == (2, "'new_code'"), module.name


@pytest.mark.parametrize(
    "snippet",
    [
        "raise CapabilityRefused(ErrorCode.CONFIRMATION_REQUIRED)",
        "outcome = NativeOutcome(code=ErrorCode.PROVIDER_FAILED.value)",
        'frame = {"code": code, "message": "no such mount"}',
        'receipt = Receipt(outcome="accepted")',
        'log.info("refused", extra={"code": "commit_failed"})',
        'status = "expired"',
        'def encode(x):\n    """Return ``"app_not_found"`` when missing."""\n    return x',
        'class Code(StrEnum):\n    APP_NOT_FOUND = "app_not_found"',
    ],
)
def test_the_walk_lets_members_variables_and_other_words_be(snippet: str) -> None:
    assert walk_snippet(snippet) == [], snippet


def test_each_enum_holds_each_value_once() -> None:
    for enum in CODE_ENUMS:
        assert len(enum.__members__) == len(enum), f"{enum.__name__} has an alias"


def test_a_value_in_two_enums_is_shared_on_purpose() -> None:
    holders: dict[str, list[object]] = collections.defaultdict(list)
    for enum in CODE_ENUMS:
        for member in enum:
            holders[member.value].append(member)
    shared = {value: tuple(members) for value, members in holders.items() if len(members) > 1}
    assert shared == SHARED_CODES


def test_the_registry_holds_every_code_enum_of_the_package() -> None:
    """A new ``*Code`` enum anywhere in ``src/lineup`` must be registered."""
    registered = {enum.__name__ for enum in CODE_ENUMS}
    defined = {
        node.name
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and _is_enum_class(node) and node.name.endswith("Code")
    }
    assert defined == registered


PAGES = {
    "ErrorCode": "protocol.md",
    "ManifestErrorCode": "miniapps.md",
    "BundleErrorCode": "miniapps.md",
    "DeliveryErrorCode": "delivery.md",
    "SurfaceRejectionCode": "runtime.md",
}
"""The page of docs/ that documents each sent enum's codes."""


@pytest.mark.parametrize("enum", SENT_CODE_ENUMS, ids=lambda e: e.__name__)
def test_every_sent_code_is_documented(enum: type[ErrorCode]) -> None:
    page = (DOCS / PAGES[enum.__name__]).read_text(encoding="utf-8")
    missing = [member.value for member in enum if f"`{member.value}`" not in page]
    assert not missing, f"docs/{PAGES[enum.__name__]} does not document {missing}"
