"""Stopping ``ddz bench crowd`` from outside, as an operator or a CI job's timeout does:
SIGTERM stops it as Ctrl-C does, the suite it started and its people's processes with
it; and its people's processes leave by themselves when it is killed with SIGKILL
(nobody is left to tell them), instead of spinning on a pipe whose other end is gone.
Real processes through the real CLI, with a suite the command starts for itself."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from cli_kit import command_env
from supervision_kit import gone, processes_of, wait_until

SEED = "5"
BOUND = 180.0  # seconds to start a suite and seat the first people on a loaded machine


class Crowd:
    """A ``ddz bench crowd`` process whose stderr lines are collected as they come."""

    def __init__(self, data_dir: Path) -> None:
        args = ["--people", "6", "--minutes", "30", "--ramp", "2", "--drain", "5"]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ddz.entrypoints.cli", "bench", "crowd", *args,
             "--seed", SEED, "--json"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=command_env(data_dir),
        )  # fmt: skip
        self.err: list[str] = []
        assert self.process.stderr is not None
        self._reader = threading.Thread(target=self._read, args=(self.process.stderr,))
        self._reader.start()

    def _read(self, stream: object) -> None:
        for line in stream:  # type: ignore[attr-defined]
            self.err.append(line)

    def said(self) -> str:
        return f"seed {SEED}; stderr: {''.join(self.err)[-3000:]}"

    def playing(self) -> bool:
        return any("people playing" in line for line in self.err)

    def people_processes(self) -> list[int]:
        """The crowd's own processes: children of the command, not of its suite."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        found = []
        for pid in map(int, children.read_text().split()):
            with contextlib.suppress(OSError):
                if b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes():
                    found.append(pid)
        return found

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=30)
        self._reader.join(timeout=30)


@contextlib.contextmanager
def crowd_of(data_dir: Path) -> Iterator[Crowd]:
    crowd = Crowd(data_dir)
    try:
        wait_until(crowd.playing, f"people playing; {crowd.said()}", timeout=BOUND)
        yield crowd
    finally:
        crowd.close()
        for pid in processes_of(data_dir):  # whatever a failed test left behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def test_sigterm_stops_the_crowd_and_the_suite_it_started(tmp_path: Path) -> None:
    data_dir = tmp_path / "ddz"
    with crowd_of(data_dir) as crowd:
        people = crowd.people_processes()
        assert people, crowd.said()
        crowd.process.send_signal(signal.SIGTERM)
        assert crowd.process.wait(timeout=BOUND) == 143, crowd.said()
        # Nothing of the run is left: its suite (services, nats-server) nor its people.
        wait_until(lambda: not processes_of(data_dir), f"nothing left; {crowd.said()}")
        assert all(gone(pid) for pid in people), crowd.said()
        assert "Traceback" not in "".join(crowd.err), crowd.said()


def test_the_crowds_people_leave_when_the_command_is_killed(tmp_path: Path) -> None:
    data_dir = tmp_path / "ddz"
    with crowd_of(data_dir) as crowd:
        people = crowd.people_processes()
        assert people, crowd.said()
        crowd.process.kill()
        crowd.process.wait(timeout=30)
        wait_until(lambda: all(gone(pid) for pid in people), f"the people gone; {crowd.said()}")
        crowd.close()  # reads their stderr to its end: it closed with them
        assert "Traceback" not in "".join(crowd.err), crowd.said()
