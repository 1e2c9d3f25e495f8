"""The compiled rules engine: which build is running, and stale builds (setup.py)."""

from __future__ import annotations

import importlib.machinery
import os
from pathlib import Path

from ddz.compiled import COMPILED_MODULES, build_of, engine_build

SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]


def test_every_listed_module_is_reported_once() -> None:
    build = engine_build()
    reported = build.compiled + build.interpreted + build.stale
    assert sorted(reported) == sorted(COMPILED_MODULES)


def test_a_module_loaded_from_source_is_interpreted(tmp_path: Path) -> None:
    (tmp_path / "wild.py").write_text("")
    assert build_of(tmp_path / "wild.py") == "interpreted"


def built_before_its_source(folder: Path) -> Path:
    """A module's source and its extension, the extension older."""
    source, extension = folder / "wild.py", folder / f"wild{SUFFIX}"
    source.write_text("")
    extension.write_bytes(b"")
    os.utime(extension, (1_000_000, 1_000_000))
    os.utime(source, (2_000_000, 2_000_000))
    return extension


def test_an_extension_older_than_its_source_is_stale(tmp_path: Path) -> None:
    extension = built_before_its_source(tmp_path)
    assert build_of(extension) == "stale"
    os.utime(extension, (3_000_000, 3_000_000))
    assert build_of(extension) == "compiled"


def test_the_library_build_time_decides(tmp_path: Path) -> None:
    # A rebuild may leave a module's shim untouched and rebuild only the shared library.
    extension = built_before_its_source(tmp_path)
    assert build_of(extension, built=3_000_000) == "compiled"
    assert build_of(extension, built=1_500_000) == "stale"
