"""Build step for the compiled rules engine (everything else is in pyproject.toml).

The rules engine's hot modules (``ddz.compiled.COMPILED_MODULES``) are compiled with
mypyc, mypy's compiler for typed Python, when the machine has a C compiler. The
extensions are optional: where none can be built the same modules run as plain Python,
slower. ``DDZ_PURE_PYTHON=1`` skips compiling.
"""

from __future__ import annotations

import ast
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from setuptools import setup

ROOT = Path(__file__).resolve().parent


def _listed(name: str) -> Any:
    """A literal assigned in shared/ddz/compiled.py (read, not imported: the package is
    not installed yet)."""
    source = (ROOT / "shared/ddz/compiled.py").read_text()
    return next(
        ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == name
    )


METADATA_ONLY = frozenset({"egg_info", "dist_info", "sdist"})
"""setup.py commands that build nothing: pip runs two of them (the build's requirements,
the project's metadata) before the one that builds, and mypyc's analysis of the modules
(seconds) would be done for each."""


def builds_nothing(args: list[str]) -> bool:
    """setup.py was asked for metadata only: its command (the first argument that is not
    an option; what follows may be an option's value, as in ``dist_info --output-dir
    DIR``) builds nothing, or there is none and it was asked for ``--name``/``--version``."""
    command = next((arg for arg in args if not arg.startswith("-")), None)
    if command is None:
        return bool({"--name", "--version"} & set(args))
    return command in METADATA_ONLY


def compiled_modules() -> list[Any]:
    if os.environ.get("DDZ_PURE_PYTHON", "") not in ("", "0") or builds_nothing(sys.argv[1:]):
        return []
    groups = [
        (["shared/" + name.replace(".", "/") + ".py" for name in names], group)
        for group, names in _listed("COMPILED_GROUPS").items()
    ]

    from mypyc.build import mypycify

    # A cache of its own each time: mypyc regenerates a group's C only when its cache
    # says the group changed, and the cache of another build (or of the lint run's
    # mypy, which shares .mypy_cache) can leave one group's header out of step with
    # the other group that calls into it: a library that does not compile beside
    # shims that do.
    cache = tempfile.mkdtemp(prefix="ddz-mypyc-cache-")
    atexit.register(shutil.rmtree, cache, ignore_errors=True)
    os.environ["MYPY_CACHE_DIR"] = cache
    paths = [path for group_paths, _group in groups for path in group_paths]
    extensions = mypycify(paths, opt_level="3", separate=groups)
    for extension in extensions:
        extension.optional = True  # no C compiler: the modules stay plain Python
    return extensions


# The groups' libraries compile in parallel (one compiler process per extension).
setup(ext_modules=compiled_modules(), options={"build_ext": {"parallel": os.cpu_count() or 1}})
