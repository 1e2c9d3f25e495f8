"""The parent's side and the child's side of the script's processes: a child speaks one
line at a time on stdout (``MARK`` first) and reads ``go`` or EOF on stdin; the CPU each
process spends over the measured span."""

from __future__ import annotations

import asyncio
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ddz.entrypoints.bench_cmd import cpu_seconds  # user + system, all threads, /proc

# The script each child runs: the entry point, with ``--role``.
SCRIPT = Path(__file__).resolve().parents[1] / "bench_bus_floor.py"
MARK = "@floor"  # starts a protocol line of a child (anything else it prints is passed on)
READY_TIMEOUT = 30.0
RUN_TIMEOUT = 120.0


# -- CPU accounting ---------------------------------------------------------------------


@dataclass
class Child:
    """A role of this script in its own process; speaks one line at a time."""

    name: str
    process: subprocess.Popen[str]
    lines: queue.Queue[str]

    @classmethod
    def spawn(cls, name: str, role: str, **options: object) -> Child:
        """This script with ``--role role --option value...``."""
        command = [sys.executable, str(SCRIPT), "--role", role]
        for option, value in options.items():
            command += [f"--{option.replace('_', '-')}", str(value)]
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )
        lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=cls._read, args=(process, lines), daemon=True).start()
        return cls(name, process, lines)

    @staticmethod
    def _read(process: subprocess.Popen[str], lines: queue.Queue[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(MARK):
                lines.put(line[len(MARK) :].strip())
            else:  # a log line of a library: not ours to interpret
                sys.stderr.write(line)
        lines.put("")  # EOF: the child is gone

    @property
    def pid(self) -> int:
        return self.process.pid

    def expect(self, word: str, timeout: float) -> list[str]:
        """Wait for the child's line starting with ``word``; its other words."""
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            raise SystemExit(
                f"bench_bus_floor: {self.name} said nothing for {timeout:g}s"
            ) from None
        parts = line.split()
        if not parts or parts[0] != word:
            code = self.process.poll()
            raise SystemExit(f"bench_bus_floor: {self.name}: {line!r} (exit code {code})")
        return parts[1:]

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def stop(self) -> None:
        """Close its stdin (the signal to disconnect and exit) and wait for it."""
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@dataclass
class Measured:
    """CPU seconds of each process over the measured span, and the span's wall time."""

    cpu: dict[str, float]
    wall: float


def measure(
    processes: dict[str, int], start: Callable[[], object], wait_done: Callable[[], object]
) -> Measured:
    before = {name: cpu_seconds(pid) for name, pid in processes.items()}
    started = time.perf_counter()
    start()
    wait_done()
    wall = time.perf_counter() - started
    after = {name: cpu_seconds(pid) for name, pid in processes.items()}
    return Measured({name: after[name] - before[name] for name in processes}, wall)


# -- child side: line protocol on stdin/stdout -----------------------------------------


def say(*words: object) -> None:
    print(MARK, *words, flush=True)


async def next_line() -> str:
    """The next line of stdin ("" at EOF), read in a thread that blocks without CPU."""
    return await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)


async def until_eof() -> None:
    while await next_line():
        pass
