"""Whether the rules engine's hot modules run compiled, and whether the build is current.

``setup.py`` compiles the modules listed here with mypyc when the machine has a C
compiler (its list is read from this file); elsewhere they run as plain Python, the same
code, slower. A compiled module is an extension file beside its source, and Python
imports it in preference to the source, so one built from an older source would
silently run old rules: ``engine_build`` finds such stale builds by comparing times.

setup.py reads ``COMPILED_GROUPS`` from this file's text: keep it a literal.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from dataclasses import dataclass
from pathlib import Path

# Each group's modules share one library of compiled code (``<group>__mypyc``); each
# module's own extension is a small shim that loads it, rebuilt only when its interface
# changes, so the library's time is the build's time. Two groups, the rules engine and
# the bot's planning, so that their libraries compile side by side, one a core.
COMPILED_GROUPS = {
    "ddz_rules": (
        "ddz.domain.lookup",
        "ddz.domain.natural",
        "ddz.domain.compare",
        "ddz.domain.move",
        "ddz.domain.wild_kickers",
        "ddz.domain.wild_mixed",
        "ddz.domain.wild",
        "ddz.domain.natural_moves",
        "ddz.domain.kicked_moves",
        "ddz.domain.moves",
    ),
    # What a bot's decision (and a person's hint) spends its time in: planning hands.
    "ddz_bot": (
        "ddz.bot.parts",
        "ddz.bot.plan",
        "ddz.bot.threats",
        "ddz.bot.situation",
        "ddz.bot.policy",
        "ddz.bot.bidding",
        "ddz.bot.endgame",
    ),
}
COMPILED_MODULES = tuple(name for names in COMPILED_GROUPS.values() for name in names)


@dataclass(frozen=True)
class EngineBuild:
    compiled: tuple[str, ...]  # loaded from an extension built from the current source
    interpreted: tuple[str, ...]  # loaded from source
    stale: tuple[str, ...]  # loaded from an extension older than its source

    @property
    def fully_compiled(self) -> bool:
        return not self.interpreted and not self.stale

    def describe(self) -> str:
        if self.stale:
            return (
                f"rules engine compiled from an older source ({', '.join(self.stale)}): "
                "rebuild it with `pip install -e .` (or `python3 scripts/dev.py test`)"
            )
        if self.interpreted:
            return "rules engine interpreted (not compiled: no C compiler at install?)"
        return "rules engine compiled (mypyc)"


def engine_build() -> EngineBuild:
    found: dict[str, list[str]] = {"compiled": [], "interpreted": [], "stale": []}
    for group, names in COMPILED_GROUPS.items():
        library = importlib.util.find_spec(f"{group}__mypyc")
        built = Path(library.origin).stat().st_mtime if library and library.origin else None
        for name in names:
            found[build_of(loaded_from(name), built)].append(name)
    return EngineBuild(tuple(found["compiled"]), tuple(found["interpreted"]), tuple(found["stale"]))


def loaded_from(name: str) -> Path:
    """The file module ``name`` was loaded from, in its package's folder (a module of a
    group that calls into another group's library names a folder of its own making in
    its ``__file__``: only the file's name is taken from there)."""
    package = importlib.import_module(name.rpartition(".")[0])
    return Path(package.__path__[0]) / Path(importlib.import_module(name).__file__ or "").name


def build_of(path: Path, built: float | None = None) -> str:
    """``compiled``, ``interpreted`` or ``stale`` for the file a module was loaded from;
    ``built``: when the compiled library was built (else the file's own time)."""
    if not path.name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return "interpreted"
    source = path.with_name(path.name.split(".", 1)[0] + ".py")
    built = path.stat().st_mtime if built is None else built
    if source.exists() and source.stat().st_mtime > built:
        return "stale"
    return "compiled"
