#!/usr/bin/env python3
"""Set up a virtual environment and run the project: the README's two commands.

    python3 scripts/dev.py run     # set up, then the main job (ddz demo)
    python3 scripts/dev.py test    # set up with test extras, then every check and the tests

Only the standard library is used here, so it works on a machine with nothing but Python.
Extra arguments after ``test`` go to pytest (e.g. ``-k settle``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = Path(os.environ.get("DDZ_VENV", ROOT / ".venv"))
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / "python"


def sh(*args: str | Path, env: dict[str, str] | None = None) -> None:
    print("+", " ".join(str(a) for a in args), flush=True)
    result = subprocess.run([str(a) for a in args], cwd=ROOT, env=env)
    if result.returncode != 0:
        sys.exit(result.returncode)


def setup(extras: str) -> None:
    if not PY.exists():
        print(f"+ creating virtual environment {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
        sh(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    target = f".[{extras}]" if extras else "."
    sh(PY, "-m", "pip", "install", "--quiet", "-e", target)


def run(args: list[str]) -> None:
    setup("")
    sh(BIN / "ddz", "demo", *args)


def test(args: list[str]) -> None:
    setup("dev,peers")
    # DouZero is a test-only peer for the benchmark and a differential test; its
    # package metadata pins torch, which its move generator does not need.
    sh(PY, "-m", "pip", "install", "--quiet", "--no-deps", "douzero==1.1.0")
    sh(PY, "tools/gen_protos.py", "--check")
    sh(BIN / "ruff", "check", ".")
    sh(BIN / "mypy", "shared/ddz", "services")
    sh(BIN / "lint-imports")  # the layering contracts of pyproject.toml
    sh(BIN / "pytest", "-q", *args)


def main() -> None:
    commands = {"run": run, "test": test}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(f"usage: python3 scripts/dev.py {{{'|'.join(commands)}}} [args...]", file=sys.stderr)
        sys.exit(2)
    commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
