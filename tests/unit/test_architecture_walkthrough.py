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


# What each step says happens, as (caller, callee): the caller's code reaches the callee,
# directly or through the functions it calls (its class's methods, its module's functions,
# or a function defined once in the code). The doc's step must quote both names, so a step
# rewritten to tell another path, or code that no longer takes the path told, fails here.
STEP_CALLS: dict[int, list[tuple[str, str]]] = {
    1: [("TableServicer.Play", "translate.play_command")],
    2: [("Moves.move", "Floor.hand"), ("Moves.move", "Gate.seat"), ("Moves.move", "decide")],
    3: [("RulesClient.decide", "codec.set_command"), ("RulesClient.decide", "ask")],
    4: [
        ("RulesServicer.Decide", "codec.command_from_request"),
        ("RulesServicer.Decide", "Rules.decide"),
    ],
    5: [
        ("Rules.decide", "HandLog.read"),
        ("Rules.decide", "HandLog.append"),
        ("Rules.decide", "SeedRequired"),
    ],
    6: [
        ("JetStreamHandLog.append", "hand_stream.publish"),
        ("hand_stream.publish", "codec.envelope_and_bytes"),
    ],
    7: [
        ("StoreConsumer", "Record"),
        ("Record", "SqlEventStore.append_streams"),
        ("Record", "SqlEventStore.append"),
    ],
}
STEP = re.compile(r"^(\d+)\. (.*?)(?=^\d+\. |^\S|\Z)", re.M | re.S)
MAX_HOPS = 4


def steps() -> dict[int, str]:
    return {int(number): text for number, text in STEP.findall(walkthrough())}


@cache
def code_index() -> tuple[
    dict[str, list[tuple[ast.AST, str, str | None]]], dict[str, list[ast.AST]]
]:
    """Callers by quoted name ("Class.method", "module.function", "Class"), each with its
    file and class, and every top-level function by name."""
    by_name: dict[str, list[tuple[ast.AST, str, str | None]]] = defaultdict(list)
    functions: dict[str, list[ast.AST]] = defaultdict(list)
    for code_root in CODE_ROOTS:
        for path in code_root.rglob("*.py"):
            if "/v1/" in path.as_posix():
                continue
            tree = ast.parse(path.read_text(), filename=str(path))
            module = path.parent.name if path.stem == "__init__" else path.stem
            for node in tree.body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    functions[node.name].append(node)
                    by_name[f"{module}.{node.name}"].append((node, str(path), None))
                elif isinstance(node, ast.ClassDef):
                    by_name[node.name].append((node, str(path), node.name))
                    for item in node.body:
                        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                            by_name[f"{node.name}.{item.name}"].append((item, str(path), node.name))
    return by_name, functions


def _names_used(node: ast.AST) -> set[str]:
    used = set()
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name):
            used.add(inner.id)
        elif isinstance(inner, ast.Attribute):
            used.add(inner.attr)
    return used


def reaches(caller: str, callee: str) -> bool:
    """Whether the code of ``caller`` names ``callee``'s last part, itself or through the
    functions it calls, at most MAX_HOPS deep."""
    by_name, functions = code_index()
    target = callee.split(".")[-1]
    frontier = list(by_name.get(caller, ()))
    seen: set[int] = set()
    for _ in range(MAX_HOPS):
        following = []
        for node, path, owner in frontier:
            if id(node) in seen:
                continue
            seen.add(id(node))
            used = _names_used(node)
            if target in used:
                return True
            module = Path(path).stem if Path(path).stem != "__init__" else Path(path).parent.name
            for name in used:
                if owner is not None:
                    following += by_name.get(f"{owner}.{name}", [])
                following += by_name.get(f"{module}.{name}", [])
                if len(functions.get(name, ())) == 1:
                    (only,) = functions[name]
                    following += [entry for entry in by_name[f"{_module_of(only)}.{name}"]]
        frontier = following
    return False


@cache
def _modules_by_node() -> dict[int, str]:
    by_name, _ = code_index()
    return {id(node): quoted.split(".")[0] for quoted, entries in by_name.items() if "." in quoted
            for node, _, owner in entries if owner is None}  # fmt: skip


def _module_of(node: ast.AST) -> str:
    return _modules_by_node()[id(node)]


def test_every_step_has_the_calls_it_tells() -> None:
    told = steps()
    assert sorted(told) == sorted(STEP_CALLS), (
        f"the walkthrough's steps are {sorted(told)}; STEP_CALLS says what each one calls"
    )
    problems = []
    for number, calls in STEP_CALLS.items():
        quoted = set(QUOTED.findall(told[number]))
        for caller, callee in calls:
            for name in (caller, callee):
                if not any(q == name or q.startswith(name + "(") for q in quoted):
                    problems.append(f"step {number} no longer quotes `{name}`")
            if not reaches(caller, callee):
                problems.append(f"step {number}: {caller} does not reach {callee} in the code")
    assert not problems, problems


def test_the_recorder_step_tells_one_transaction_for_the_batch() -> None:
    # Step 7 once said the recorder wrote once per stream of a batch; the code stores the
    # whole batch in one transaction and falls back to one stream at a time.
    text = " ".join(steps()[7].split())
    assert "one store transaction" in text and "append_streams" in text, text
    assert "per stream" not in text, text


def test_a_path_the_code_does_not_take_is_caught() -> None:
    assert reaches("Record", "append_streams")
    assert not reaches("RulesServicer.Decide", "append_streams")
    assert not reaches("TableServicer.Play", "no_such_function")
    assert not reaches("NoSuchClass.method", "decide")
