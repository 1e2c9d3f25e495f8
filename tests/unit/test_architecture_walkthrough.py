"""docs/ARCHITECTURE.md "One play, layer by layer" names the functions a move passes
through. A renamed or moved function leaves the walkthrough pointing at nothing; this
test reads every code name and path the section quotes and finds each in the code.

A quoted name is one of:
- a path (``services/table/use_cases/moves.py``): the file exists;
- ``Class.member``: a class of that name defines the member (a method or attribute);
- ``module.name``: a module of that name (``translate``, ``codec``) defines it at top level;
- ``Name``: a class or function of that name is defined somewhere, or a protobuf
  message or field of that name in protos/.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
SECTION = "## One play, layer by layer"
CODE_ROOTS = (ROOT / "shared" / "ddz", ROOT / "services")
PROTOS = ROOT / "protos"
# Paths are written from the repository's root or, for the shared package, from shared/ddz.
PATH_ROOTS = (ROOT, ROOT / "shared" / "ddz")
# A protobuf message, service or enum (group 1) or a field (group 2).
PROTO_NAME = re.compile(
    r"""^\s*(?:message|service|enum)\s+(\w+)
      | ^\s*(?:repeated\s+|optional\s+)?[\w.]+\s+(\w+)\s*=\s*\d+""",
    re.M | re.X,
)
QUOTED = re.compile(r"`([^`]+)`")
# A call as the doc writes it: `decide(state, command, seed)` or `ask("rules", ...)`.
NAME = re.compile(r"^([A-Za-z_][\w.]*)(\(.*\))?$")


@cache
def definitions() -> tuple[dict[str, set[str]], dict[str, set[str]], set[str]]:
    """What the code defines: members by class name, top-level names by module name
    (the file's stem, and a package's folder name), and every class and function name."""
    members: dict[str, set[str]] = defaultdict(set)
    module_names: dict[str, set[str]] = defaultdict(set)
    everything: set[str] = set()
    for code_root in CODE_ROOTS:
        for path in code_root.rglob("*.py"):
            if "/v1/" in path.as_posix():
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            module = path.parent.name if path.stem == "__init__" else path.stem
            for node in tree.body:
                for name in _defined(node):
                    module_names[module].add(name)
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    everything.add(node.name)
                    for item in node.body:
                        members[node.name].update(_defined(item))
                elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    everything.add(node.name)
    for proto in PROTOS.rglob("*.proto"):
        for message, field in PROTO_NAME.findall(proto.read_text()):
            everything.add(message or field)
    return members, module_names, everything


def _defined(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return [node.name]
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, ast.ImportFrom):
        return [alias.asname or alias.name for alias in node.names]
    return []


def walkthrough() -> str:
    text = DOC.read_text()
    start = text.index(SECTION) + len(SECTION)
    end = text.index("\n## ", start)
    return text[start:end]


def quoted_names() -> list[str]:
    return QUOTED.findall(walkthrough())


def missing(quoted: str) -> str | None:
    """Why ``quoted`` names nothing in the code, or None when it does."""
    if "/" in quoted:
        return None if any((root / quoted).exists() for root in PATH_ROOTS) else "no such file"
    match = NAME.match(quoted)
    if match is None:
        return None  # prose in backticks (an error kind such as MALFORMED_CARDS is a name too)
    dotted = match.group(1).split(".")
    members, module_names, everything = definitions()
    if len(dotted) == 1:
        name = dotted[0]
        if name.isupper() or name in everything or any(name in m for m in module_names.values()):
            return None
        return "nothing of that name is defined"
    owner, member = dotted[-2], dotted[-1]
    if member in members.get(owner, ()) or member in module_names.get(owner, ()):
        return None
    return f"neither a class nor a module {owner!r} defines {member!r}"


def test_the_walkthrough_quotes_code_names() -> None:
    names = quoted_names()
    # The section is a walk through the code, not prose: it must keep naming the code.
    assert len(names) >= 25, names


def test_every_name_the_walkthrough_quotes_is_in_the_code() -> None:
    problems = {q: why for q in quoted_names() if (why := missing(q)) is not None}
    assert not problems, f"docs/ARCHITECTURE.md {SECTION!r} names code that is gone: {problems}"


def test_a_renamed_function_is_caught() -> None:
    assert missing("Moves.move") is None
    assert missing("Moves.no_such_method") is not None
    assert missing("translate.no_such_function") is not None
    assert missing("services/table/no_such_module.py") is not None
    assert missing("NoSuchClass") is not None
