"""A stack run through the real CLI (``ddz up`` as a process), its children and waiting
on them: for the end-to-end tests of supervision and of an operator's first hour."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.stack_env import settings_env, with_free_ports
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS

BOUND = 120.0  # seconds any one wait may take on a loaded machine


def wait_until(condition: Callable[[], bool], what: str, timeout: float = BOUND) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"not within {timeout:g}s: {what}")
        time.sleep(0.1)


def processes_of(data_dir: Path) -> list[int]:
    """Our processes that run with ``DDZ_DATA_DIR=data_dir`` or keep files under it."""
    marker = str(data_dir).encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid() or gone(int(entry.name)):
            continue
        try:
            seen = (entry / "environ").read_bytes() + (entry / "cmdline").read_bytes()
        except OSError:
            continue  # not ours, or gone meanwhile
        if b"DDZ_DATA_DIR=" + marker + b"\0" in seen or b"-sd\0" + marker in seen:
            found.append(int(entry.name))
    return found


class Up:
    """A ``ddz up`` process; its stdout and stderr lines are collected as they come."""

    def __init__(
        self,
        data_dir: Path,
        extra_env: Mapping[str, str] | None = None,
        *,
        ready: bool = True,
        args: tuple[str, ...] = ("--nats-port", "0"),
        expected: frozenset[str] = frozenset({*SERVICE_PORTS, "nats"}),
    ) -> None:
        settings = Settings.from_env({"DDZ_DATA_DIR": str(data_dir)})
        self.settings = with_free_ports(settings)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env.update(settings_env(self.settings))
        env.update(extra_env or {})
        self.out: list[str] = []
        self.err: list[str] = []
        self._open = 2  # streams still read
        self._more = threading.Condition()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ddz.entrypoints.cli", "up", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        for stream, lines in ((self.process.stdout, self.out), (self.process.stderr, self.err)):
            threading.Thread(target=self._read, args=(stream, lines), daemon=True).start()
        self.addresses: dict[str, str] = {}
        self.pids: dict[str, int] = {}
        if not ready:
            return
        self.wait_line(r"Ctrl-C stops everything")
        for line in self.out:
            match = CHILD.match(line)
            if match:
                self.addresses[match[1]] = match[2]
                self.pids[match[1]] = int(match[3])
        assert set(self.pids) == expected, self.transcript()
        nats = sorted(url for name, url in self.addresses.items() if name.startswith("nats"))
        self.settings = dataclasses.replace(
            self.settings, bus=dataclasses.replace(self.settings.bus, nats_url=",".join(nats))
        )

    def _read(self, stream: object, lines: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            with self._more:
                lines.append(line.rstrip("\n"))
                self._more.notify_all()
        with self._more:
            self._open -= 1
            self._more.notify_all()

    def transcript(self) -> str:
        with self._more:
            return "stdout:\n" + "\n".join(self.out) + "\nstderr:\n" + "\n".join(self.err)

    def wait_line(self, pattern: str, *, after: int = 0, err: bool = False) -> re.Match[str]:
        """The first stdout (``err``: stderr) line from index ``after`` on that matches."""
        regex = re.compile(pattern)
        lines = self.err if err else self.out
        deadline = time.monotonic() + BOUND
        with self._more:
            while True:
                for line in lines[after:]:
                    match = regex.search(line)
                    if match:
                        return match
                if not self._open or time.monotonic() > deadline:
                    break  # ddz up has exited and said everything, or it took too long
                self._more.wait(0.2)
        pytest.fail(f"no line matching {pattern!r} from ddz up\n{self.transcript()}")

    def ended(self, timeout: float = BOUND) -> int:
        """``ddz up``'s exit code, once it and both its streams have ended."""
        code = self.process.wait(timeout)
        with self._more:
            self._more.wait_for(lambda: not self._open, timeout)
        return code

    def serving(self, name: str) -> bool:
        return (
            health_status(self.addresses[name], timeout=1.0, settings=self.settings.calling)
            == SERVING
        )

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for pid in self.pids.values():
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)


CHILD = re.compile(r"^  ([\w-]+)\s+(\S+)  \(pid (\d+)\)$")


def gone(pid: int) -> bool:
    """True when no process ``pid`` runs (or only its zombie does)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state == "Z"
