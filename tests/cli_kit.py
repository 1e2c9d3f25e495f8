"""The real ``ddz`` command line in a process of its own, told only its data dir: it
finds the rest there (keys, certificates, the store, a running suite's ``stack.json``),
as a user's shell with ``DDZ_DATA_DIR`` set would, and none of the test's own ``DDZ_*``
settings leak in."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def ddz(data_dir: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env["DDZ_DATA_DIR"] = str(data_dir)
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", *args],
        capture_output=True, text=True, timeout=timeout, env=env,
    )  # fmt: skip
