"""``scripts/dev.py`` installs the project only when something it is built from changed:
run against a virtualenv whose ``python`` and ``ddz`` only write down how they were
called, so what the script does is seen without installing anything."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "dev.py"


def load_dev(venv: Path) -> object:
    os.environ["DDZ_VENV"] = str(venv)
    try:
        spec = importlib.util.spec_from_file_location("dev_script", SCRIPT)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        del os.environ["DDZ_VENV"]


def fake_venv(tmp_path: Path) -> tuple[Path, Path]:
    venv, calls = tmp_path / "venv", tmp_path / "calls.log"
    (venv / "bin").mkdir(parents=True)
    for name in ("python", "ddz"):
        tool = venv / "bin" / name
        tool.write_text(f'#!/bin/sh\necho "{name} $*" >> {calls}\n')
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    return venv, calls


def run_dev(venv: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DDZ_VENV": str(venv)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), "run"], env=env, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip


def test_a_run_with_nothing_changed_installs_nothing_and_says_how_to_run_ddz(
    tmp_path: Path,
) -> None:
    venv, calls = fake_venv(tmp_path)
    dev = load_dev(venv)
    (venv / ".ddz-install.json").write_text(
        json.dumps({"hash": dev.install_hash(), "extras": []})  # type: ignore[attr-defined]
    )
    done = run_dev(venv)
    assert calls.read_text().splitlines() == ["ddz demo"], "no pip, straight to the demo"
    assert "up to date" in done.stdout
    assert f"{venv}/bin/ddz up" in done.stdout and "source " in done.stdout


def test_a_run_after_a_change_installs_again_and_records_it(tmp_path: Path) -> None:
    venv, calls = fake_venv(tmp_path)
    (venv / ".ddz-install.json").write_text(json.dumps({"hash": "an older one", "extras": []}))
    run_dev(venv)
    assert calls.read_text().splitlines() == ["python -m pip install --quiet -e .", "ddz demo"]
    recorded = json.loads((venv / ".ddz-install.json").read_text())
    dev = load_dev(venv)
    assert recorded["hash"] == dev.install_hash()  # type: ignore[attr-defined]
    calls.unlink()
    run_dev(venv)  # and the next run skips it
    assert calls.read_text().splitlines() == ["ddz demo"]
