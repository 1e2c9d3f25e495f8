"""Every service's folder has the same shape (docs/ARCHITECTURE.md "A service's folder"):
at the top its entry point and its wiring, then ``use_cases/`` (what it does; the
import contracts of pyproject.toml check they import no adapters and no gRPC) and
``adapters/`` (how it reaches the outside world). Every module is in one of them."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SERVICES = ROOT / "services"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))

TOP = {"__init__", "__main__", "app", "servicer"}
"""The modules at the top of every service: its description, ``python -m``, the factory
that builds it whole, and its entry point (a gRPC servicer or a web app)."""
FOLDERS = ("use_cases", "adapters")


def service_folders() -> list[Path]:
    return sorted(p for p in SERVICES.iterdir() if (p / "__init__.py").exists())


def test_every_service_has_the_same_folders() -> None:
    folders = service_folders()
    assert len(folders) == 8, [p.name for p in folders]
    for folder in folders:
        for name in TOP:
            assert (folder / f"{name}.py").exists(), f"services/{folder.name}/{name}.py"
        for sub in FOLDERS:
            assert (folder / sub / "__init__.py").exists(), f"services/{folder.name}/{sub}/"
        assert (folder / "use_cases" / "handlers.py").exists(), folder.name


def test_every_service_module_is_in_its_place() -> None:
    """At the top only the wiring and the entry points (a service serving more than one
    gRPC service has one ``<name>_servicer.py`` for each other); every other module in
    use_cases/ or adapters/, with no deeper folders."""
    misplaced = []
    for folder in service_folders():
        for path in folder.rglob("*.py"):
            parts = path.relative_to(folder).parts
            if len(parts) == 1:
                stem = path.stem
                if stem in TOP or stem.endswith("_servicer"):
                    continue
            elif len(parts) == 2 and parts[0] in FOLDERS:
                continue
            misplaced.append(str(path.relative_to(ROOT)))
    assert misplaced == [], f"move each into use_cases/ or adapters/: {misplaced}"


def test_the_use_case_contract_covers_every_service() -> None:
    contract = next(
        c
        for c in PYPROJECT["tool"]["importlinter"]["contracts"]
        if "services.*.use_cases" in c.get("source_modules", ())
    )
    assert "ddz.application" in contract["source_modules"]
    forbidden = set(contract["forbidden_modules"])
    assert {"ddz.adapters", "services.*.adapters", "grpc"} <= forbidden
    # A use case that needs an adapter gets a port from its app: no import is let through.
    assert "ignore_imports" not in contract
