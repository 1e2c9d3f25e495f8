"""The picture of the packages and the direction of their imports that opens
docs/ARCHITECTURE.md, made from the code itself (grimp, import-linter's import graph).

    python tools/package_map.py           # print it
    python tools/package_map.py --write   # put it into docs/ARCHITECTURE.md
    python tools/package_map.py --check   # exit 1 when the document's picture is stale

A node is a package (or top-level module) of ``ddz`` (the adapters drawn by their
packages, one concern each), or the services together; an arrow says that some module
of one imports some module of the other (imports inside functions and under
``TYPE_CHECKING`` count: a type needed from above is a dependency too). Nodes are listed
from the top (imported by none of ours) down, so every arrow points down the list.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "ARCHITECTURE.md"
BEGIN = "<!-- package-map: made by tools/package_map.py --write; checked by tests -->"
END = "<!-- /package-map -->"
SERVICES = "services.*"
GENERATED = "ddz.v1"  # protobuf stubs (tools/gen_protos.py)


def import_graph(
    packages: tuple[str, ...] = ("ddz", "services"),
    paths: tuple[Path, ...] = (ROOT / "shared", ROOT),
) -> grimp.ImportGraph:
    """Every import between the modules of ``packages`` (found under ``paths``): at module
    level, inside functions and under ``TYPE_CHECKING`` alike."""
    for path in paths:
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))
    return grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)


# Packages drawn by their subpackages, so the picture shows where each concern lives
# and the direction between the concerns (docs/DECISIONS.md "Code layout").
SPLIT = ("ddz.adapters",)


def node_of(module: str) -> str:
    """The node a module belongs to: ``ddz.<first part>``, ``ddz.adapters.<concern>``
    or the services."""
    parts = module.split(".")
    if parts[0] == "services":
        return SERVICES
    if ".".join(parts[:2]) in SPLIT and len(parts) > 2:
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def package_edges(graph: grimp.ImportGraph) -> dict[str, set[str]]:
    """Each node and the nodes it imports (not itself)."""
    edges: dict[str, set[str]] = {}
    for module in graph.modules:
        if module in ("ddz", "services", *SPLIT):
            continue
        source = node_of(module)
        edges.setdefault(source, set())
        for imported in graph.find_modules_directly_imported_by(module):
            target = node_of(imported)
            if target != source and imported not in ("ddz", "services", *SPLIT):
                edges[source].add(target)
    return edges


def top_down(edges: dict[str, set[str]]) -> list[str]:
    """The nodes, each before every node it imports (ties by name); a node in a circle
    of packages, if any, is listed where the circle is first entered."""
    depth: dict[str, int] = {}

    def height(node: str, seen: frozenset[str]) -> int:
        if node not in depth:
            below = [height(n, seen | {node}) for n in edges.get(node, ()) if n not in seen]
            depth[node] = 1 + max(below, default=0)
        return depth[node]

    for node in edges:
        height(node, frozenset())
    return sorted(edges, key=lambda n: (-depth[n], n))


def short(node: str) -> str:
    return node.removeprefix("ddz.")


def render(edges: dict[str, set[str]]) -> str:
    order = top_down(edges)
    width = max(len(short(n)) for n in order)
    lines = [
        "```text",
        "imports ->  (each package imports only packages listed below it; ddz. omitted)",
        "",
    ]
    for node in order:
        targets = sorted(edges[node], key=order.index)
        arrow = ", ".join(short(t) for t in targets) if targets else "(nothing of ours)"
        lines.append(f"{short(node):<{width}}  -> {arrow}")
    lines.append("```")
    return "\n".join(lines)


def picture() -> str:
    return render(package_edges(import_graph()))


def with_picture(document: str, drawn: str) -> str:
    """``document`` with the picture between the markers (inserted after the title when
    there are none yet)."""
    block = f"{BEGIN}\n{drawn}\n{END}"
    if BEGIN in document and END in document:
        head, _, rest = document.partition(BEGIN)
        _, _, tail = rest.partition(END)
        return head + block + tail
    title, _, body = document.partition("\n")
    return f"{title}\n\n{block}\n{body}"


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="update docs/ARCHITECTURE.md")
    mode.add_argument("--check", action="store_true", help="exit 1 if the document is stale")
    args = parser.parse_args(list(argv) if argv is not None else None)
    drawn = picture()
    if not (args.write or args.check):
        print(drawn)
        return 0
    current = DOCUMENT.read_text(encoding="utf-8")
    wanted = with_picture(current, drawn)
    if args.check:
        if wanted != current:
            print("docs/ARCHITECTURE.md: the package map is stale; run "
                  "python tools/package_map.py --write", file=sys.stderr)  # fmt: skip
            return 1
        return 0
    DOCUMENT.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
