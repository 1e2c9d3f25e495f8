"""Every module of a service is on one side of the line the import contracts draw: a
use-case module (checked to import no gRPC) or one of the service's adapters."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
NO_GRPC = next(
    contract
    for contract in PYPROJECT["tool"]["importlinter"]["contracts"]
    if "ddz.application" in contract.get("source_modules", ())
)
ADAPTERS = set(PYPROJECT["tool"]["ddz"]["layers"]["adapters"])


def service_modules() -> list[str]:
    return sorted(
        f"services.{path.parent.name}.{path.stem}" for path in (ROOT / "services").glob("*/*.py")
    )


def test_every_service_module_is_a_use_case_or_an_adapter() -> None:
    unplaced = [
        module
        for module in service_modules()
        if module.rsplit(".", 1)[1] not in ADAPTERS
        and not any(fnmatch.fnmatchcase(module, p) for p in NO_GRPC["source_modules"])
    ]
    assert unplaced == [], (
        "list each in the no-gRPC contract of pyproject.toml, or (if it talks to the "
        f"outside world) in [tool.ddz.layers] adapters: {unplaced}"
    )


def test_the_contract_names_only_modules_that_exist() -> None:
    modules = set(service_modules())
    named = [p for p in NO_GRPC["source_modules"] if p.startswith("services.")]
    missing = [p for p in named if not any(fnmatch.fnmatchcase(m, p) for m in modules)]
    assert missing == []


def test_every_service_has_use_cases_behind_its_servicer() -> None:
    for folder in sorted(p for p in (ROOT / "services").iterdir() if (p / "app.py").exists()):
        assert (folder / "handlers.py").exists(), folder.name
        assert (folder / "servicer.py").exists(), folder.name
