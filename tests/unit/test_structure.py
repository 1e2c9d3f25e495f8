"""The shape of the code a newcomer reads: no hand-written module over 500 lines, no
import circles of any kind (imports inside functions and under ``TYPE_CHECKING`` count),
no test module importing another, and the package map that opens docs/ARCHITECTURE.md
drawn from the code as it is.

The lists of known exceptions only shrink: once one is gone the test says to strike it
from its list."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import package_map  # noqa: E402

MAX_LINES = 500
HAND_WRITTEN = ("shared/ddz", "services", "tools", "scripts", "tests", "benchmarks")
# Protobuf stubs (tools/gen_protos.py) and data made by older code (tests/fixtures).
GENERATED = ("shared/ddz/v1/", "tests/fixtures/")

# Modules over MAX_LINES left to split, with their lines when listed.
LONG_MODULES: dict[str, int] = {}

# Import circles left (imports inside functions and under TYPE_CHECKING count), each as
# its sorted modules.
CIRCLES: list[tuple[str, ...]] = []


def hand_written_modules() -> dict[str, int]:
    found = {}
    for top in HAND_WRITTEN:
        for path in sorted((ROOT / top).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if not name.startswith(GENERATED):
                found[name] = len(path.read_text(encoding="utf-8").splitlines())
    return found


def test_no_module_is_over_500_lines_but_the_listed_ones() -> None:
    lines = hand_written_modules()
    assert len(lines) > 200, "the walk found the code"
    long = {name: n for name, n in lines.items() if n > MAX_LINES}
    unlisted = sorted(set(long) - set(LONG_MODULES))
    assert unlisted == [], f"split these into modules of one job each: {unlisted}"
    done = sorted(name for name in LONG_MODULES if name not in long)
    assert done == [], f"strike these from LONG_MODULES, they are short now: {done}"


def circles(graph: grimp.ImportGraph) -> list[tuple[str, ...]]:
    """Every strongly connected group of two or more modules (Tarjan)."""
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(tuple(sorted(group)))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in modules:
        if module not in index:
            visit(module)
    return sorted(found)


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return package_map.import_graph()


def test_the_circle_finder_finds_a_circle() -> None:
    made = grimp.ImportGraph()
    for importer, imported in (("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")):
        made.add_import(importer=importer, imported=imported)
    assert circles(made) == [("a", "b", "c")]


def test_imports_inside_functions_and_for_type_checking_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A circle closed by an import only a type checker reads, or one a function makes
    when called, is still a circle: the two modules cannot be read one without the other."""
    package = tmp_path / "loop"
    package.mkdir()
    package.joinpath("__init__.py").write_text("")
    package.joinpath("seat.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from loop.table import Table\n"
    )
    package.joinpath("table.py").write_text("def seat():\n    from loop import seat\n")
    package.joinpath("deck.py").write_text("import loop.table\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    made = package_map.import_graph(("loop",), (tmp_path,))
    assert circles(made) == [("loop.seat", "loop.table")]


def test_no_import_circles_but_the_listed_ones(graph: grimp.ImportGraph) -> None:
    found = circles(graph)
    assert [c for c in found if c not in CIRCLES] == [], "move the shared types down"
    assert [c for c in CIRCLES if c not in found] == [], "strike these from CIRCLES"


def imported_names(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.level:
            names |= {alias.name for alias in node.names}
            if node.module:
                names.add(node.module.split(".")[0])
    return names


def test_no_test_module_imports_another() -> None:
    tests = sorted((ROOT / "tests").rglob("test_*.py"))
    test_names = {path.stem for path in tests}
    assert "test_structure" in test_names
    importing = {
        path.relative_to(ROOT).as_posix(): sorted(imported_names(path) & test_names)
        for path in tests
    }
    importing = {name: found for name, found in importing.items() if found}
    assert importing == {}, "shared helpers go to a *_kit.py module or a conftest.py fixture"


def test_the_package_map_of_the_architecture_document_is_the_code_s() -> None:
    document = package_map.DOCUMENT.read_text(encoding="utf-8")
    drawn = package_map.render(package_map.package_edges(package_map.import_graph()))
    assert package_map.BEGIN in document
    assert package_map.with_picture(document, drawn) == document, (
        "run python tools/package_map.py --write"
    )


# The composition roots: the modules that build or hand on the whole ``Settings`` (each
# says why in its docstring). Every other module takes only the parts it reads
# (``settings.bus``, ``settings.calling``...).
COMPOSITION_ROOTS = (
    "shared/ddz/entrypoints/",  # the CLI commands
    "shared/ddz/adapters/runtime/service_runner.py",  # a service's process: build(settings)
    "shared/ddz/adapters/runtime/stack.py",  # the whole suite on one machine
    "shared/ddz/adapters/runtime/stack_env.py",  # a child's environment, from every part
    "shared/ddz/adapters/runtime/stack_file.py",  # a tool's settings, amended to the stack
    "shared/ddz/loadgen/run.py",  # a crowd's processes, started with the suite's settings
    "shared/ddz/loadgen/population.py",  # a crowd process: its settings from its env
)
SERVICE_FACTORY = "app.py"  # services/<name>/app.py: each service's build(settings)


def takes_whole_settings(tree: ast.Module) -> bool:
    """Whether a module imports ``ddz.config.Settings`` (by name, or as an attribute of
    the package)."""
    # ``from ddz import config``: config.Settings cannot be told apart from the parts.
    whole = {("ddz.config", "Settings"), ("ddz", "config")}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(
            (node.module, alias.name) in whole for alias in node.names
        ):
            return True
        if (
            isinstance(node, ast.Attribute)
            and node.attr == "Settings"
            and ast.unparse(node.value) == "ddz.config"
        ):
            return True
    return False


def is_composition_root(name: str) -> bool:
    if name.startswith("services/") and name.count("/") == 2:
        return name.endswith("/" + SERVICE_FACTORY)
    return name.startswith(COMPOSITION_ROOTS)


def test_only_composition_roots_take_the_whole_settings() -> None:
    takers = []
    for top in ("shared/ddz", "services"):
        for path in sorted((ROOT / top).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if name.startswith(GENERATED) or name == "shared/ddz/config/__init__.py":
                continue
            if takes_whole_settings(ast.parse(path.read_text(encoding="utf-8"))):
                takers.append(name)
    assert len(takers) > 10, "the walk found the entry points"
    others = [name for name in takers if not is_composition_root(name)]
    assert others == [], (
        f"take only the parts of Settings these read (settings.bus, settings.calling...), "
        f"or list them in COMPOSITION_ROOTS with the reason: {others}"
    )
    listed = [root for root in COMPOSITION_ROOTS if root.endswith(".py")]
    unused = [root for root in listed if root not in takers]
    assert unused == [], f"strike these from COMPOSITION_ROOTS, they take parts now: {unused}"
