"""A child process of the stack (a service's instance, or NATS) and how the stack fails
to start or run its children."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


class StackError(RuntimeError):
    """A part of the stack did not start (the message names it and its log)."""


class ServiceRefused(ValueError):
    """A service exited at start refusing a file or setting, and said why in one line
    (exit code 2): that line, for the command to print as its own."""


REFUSAL = "ddz: error: "
"""How a service's one-line refusal begins (``service_runner.main``)."""


class SetupRefused(StackError):
    """The stack cannot start as set up (another suite holds the data dir, a port it
    must listen on is taken): refused before anything starts; the message is one line
    naming what to change."""


@dataclass
class ServiceProcess:
    name: str  # the instance: ``rules``, ``rules-2`` ... (``nats``, ``nats-1`` ...)
    process: subprocess.Popen[bytes]
    address: str
    log_file: Path
    service: str = ""  # the service it is an instance of ("" for NATS)

    def running(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 1500) -> str:
        try:
            text = self.log_file.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return ""
        return text[-chars:].strip()

    def refusal(self) -> str:
        """What it said was wrong when it exited with code 2, refusing its configuration
        (its last ``ddz: error: ...`` line, without that prefix), else ""."""
        if self.process.returncode != 2:
            return ""
        said = [line for line in self.log_tail().splitlines() if line.startswith(REFUSAL)]
        return said[-1].removeprefix(REFUSAL).strip() if said else ""

    def log_lines(self, count: int = 20) -> str:
        """The last ``count`` lines of the log (the file holds every run of the child)."""
        return "\n".join(self.log_tail(chars=400 * count).splitlines()[-count:])
