#!/usr/bin/env python3
"""Set up a virtual environment and run the project: the README's two commands.

    python3 scripts/dev.py run     # set up, then the main job (ddz demo)
    python3 scripts/dev.py test    # set up with test extras, then every check and the tests

Only the standard library is used here, so it works on a machine with nothing but Python.
The install is skipped when nothing it is built from changed since the last one (a hash
of pyproject.toml, setup.py and the compiled rules engine's sources, kept in
``.venv/.ddz-install.json``); the rest of the code runs from the work tree as it is.
Extra arguments after ``test`` go to pytest (e.g. ``-k settle``, or ``-n 0`` for one
test at a time).
"""

from __future__ import annotations

import ast
import hashlib
import json
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


STAMP = VENV / ".ddz-install.json"
"""What the last install was made from (``install_hash``) and with which extras."""


def install_hash() -> str:
    """A hash of everything the editable install is built from: the package metadata
    (pyproject.toml, setup.py), the compiled rules engine's sources, the Python and
    whether compiling is off. The rest of the code is imported from the work tree."""
    compiled = ROOT / "shared/ddz/compiled.py"
    names: list[str] = []
    for node in ast.parse(compiled.read_text()).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "COMPILED_GROUPS":
            names = [name for group in ast.literal_eval(node.value).values() for name in group]
    sources = [ROOT / "pyproject.toml", ROOT / "setup.py", compiled]
    sources += [ROOT / "shared" / (name.replace(".", "/") + ".py") for name in names]
    digest = hashlib.sha256(sys.version.encode())
    digest.update(os.environ.get("DDZ_PURE_PYTHON", "").encode())
    for source in sources:
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    return digest.hexdigest()


def setup(extras: str) -> bool:
    """Install the project (with ``extras``) into the virtual environment, unless the last
    install was made from the same sources with these extras or more. True when it
    installed."""
    if not PY.exists():
        print(f"+ creating virtual environment {VENV}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
        sh(PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    wanted = set(filter(None, extras.split(",")))
    current = install_hash()
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        stamp = {}
    if (
        stamp.get("hash") == current
        and wanted <= set(stamp.get("extras", ()))
        and (BIN / "ddz").exists()
    ):
        print(
            f"+ {VENV.name} is up to date (nothing the install is built from changed)", flush=True
        )
        return False
    STAMP.unlink(missing_ok=True)  # a failed install below leaves no stamp behind
    target = f".[{extras}]" if extras else "."
    sh(PY, "-m", "pip", "install", "--quiet", "-e", target)
    return True


def stamp(extras: str) -> None:
    """Record that the install of ``extras`` is complete (``setup`` skips it next time)."""
    STAMP.write_text(
        json.dumps({"hash": install_hash(), "extras": sorted(filter(None, extras.split(",")))})
    )


def how_to_run_ddz() -> None:
    ddz = BIN / "ddz"
    shown = ddz.relative_to(ROOT) if ddz.is_relative_to(ROOT) else ddz
    activate = (
        (BIN / "activate").relative_to(ROOT) if BIN.is_relative_to(ROOT) else BIN / "activate"
    )
    print(
        f"\nddz is installed in {VENV}; it is not on your PATH. Run it as\n"
        f"  {shown} up          # the suite, until Ctrl-C (then: {shown} play)\n"
        f"  {shown} --help\n"
        f"or first `source {activate}`, then plain `ddz ...`.",
        flush=True,
    )


def run(args: list[str]) -> None:
    if setup(""):
        stamp("")
    sh(BIN / "ddz", "demo", *args)
    how_to_run_ddz()


TEST_WORKERS = "4"
"""pytest-xdist workers for the tests: more than the CI machine's 2 cores, since the tests
spend most of their time waiting on services, sockets and subprocesses (measured in
docs/BENCHMARKS.md); ``DDZ_TEST_WORKERS`` overrides it."""


def pytest_runs(args: list[str]) -> list[list[str | Path]]:
    """The tests in parallel, each module whole on one worker (its shared fixtures start
    once), then the ``alone`` tests (tests/conftest.py) one at a time by themselves, so
    that no worker sits idle while an ``alone`` test waits for a long one to end; each
    run names its 30 slowest at the end. Modules are handed out in the order
    tests/conftest.py sorts them (``early`` ones first), not by their count of tests.
    A ``-m`` of the caller's, or no workers (``DDZ_TEST_WORKERS=0``), makes it one run
    as asked. (Not ``--dist loadgroup``: pytest-xdist 3.8 marks a group by rewriting a
    test's id, which pytest 9 no longer lets it do.)"""
    workers = os.environ.get("DDZ_TEST_WORKERS", TEST_WORKERS)
    pytest: list[str | Path] = [BIN / "pytest", "-q", "--durations=30"]
    parallel = ["-n", workers, "--dist", "loadfile", "--no-loadscope-reorder"]
    if workers == "0" or "-m" in args:
        return [[*pytest, *parallel, *args]]
    return [
        [*pytest, *parallel, "-m", "not slow and not alone", *args],
        [*pytest, "-m", "not slow and alone", *args],
    ]


NO_TESTS = 5
"""pytest's exit code when it collected no test."""


def run_tests(args: list[str]) -> None:
    """Every run of ``pytest_runs``; the first failure's exit code, else 0 when some run
    tested something and pytest's "no tests" when none did."""
    codes = []
    for command in pytest_runs(args):
        print("+", " ".join(str(a) for a in command), flush=True)
        codes.append(subprocess.run([str(a) for a in command], cwd=ROOT).returncode)
    failed = [code for code in codes if code not in (0, NO_TESTS)]
    if failed:
        sys.exit(failed[0])
    if all(code == NO_TESTS for code in codes):
        sys.exit(NO_TESTS)


def test(args: list[str]) -> None:
    extras = "dev,peers"
    if setup(extras):
        # DouZero is a test-only peer for the benchmark and a differential test; its
        # package metadata pins torch, which its move generator does not need.
        sh(PY, "-m", "pip", "install", "--quiet", "--no-deps", "douzero==1.1.0")
        stamp(extras)
    sh(PY, "tools/gen_protos.py", "--check")
    sh(BIN / "ruff", "check", ".")
    sh(BIN / "mypy", "shared/ddz", "services", "scripts/dev.py")
    sh(BIN / "lint-imports")  # the layering contracts of pyproject.toml
    run_tests(args)


def main() -> None:
    commands = {"run": run, "test": test}
    if len(sys.argv) < 2 or sys.argv[1] not in commands:
        print(f"usage: python3 scripts/dev.py {{{'|'.join(commands)}}} [args...]", file=sys.stderr)
        sys.exit(2)
    commands[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
