"""A person at a terminal, for the end-to-end tests of ``ddz play``: the real command in
a pseudo-terminal (Python's ``pty``), lines typed, the screen read back without escape
codes; and the environment that points such a command at a running stack.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import termios
import time
from pathlib import Path

from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import settings_env

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
CLEAR = "\x1b[2J"


def env_for(stack: Stack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(settings_env(stack.settings))
    env.update(TERM="xterm", NO_COLOR="1", COLUMNS="150", LINES="50")
    return env


class Terminal:
    """A program in a pseudo-terminal: type lines, read the screen (the text since the
    program last cleared it, without escape codes)."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path | None = None) -> None:
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 150, 0, 0))
        self.process = subprocess.Popen(
            args, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True,
            cwd=cwd,
        )  # fmt: skip
        os.close(slave)
        self.output = ""

    def pump(self, seconds: float = 0.05) -> None:
        deadline = time.monotonic() + seconds
        while True:
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # the program has gone
                    return
                if not data:
                    return
                self.output += data.decode("utf-8", "replace")
            elif time.monotonic() >= deadline:
                return

    @property
    def screen(self) -> str:
        return ANSI.sub("", self.output.split(CLEAR)[-1]).replace("\r", "")

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump()
            found = re.search(pattern, self.screen)
            if found:
                return found
            if self.process.poll() is not None:
                self.pump()
                break
        raise AssertionError(f"no {pattern!r} on the screen:\n{self.screen[-3000:]}")

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\n")

    def close(self) -> int:
        try:
            return self.process.wait(20)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            os.close(self.master)
