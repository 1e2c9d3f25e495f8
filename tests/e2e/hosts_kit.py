"""Services on separate hosts: network namespaces of this machine, each a "host" with an
address of its own on a bridge, its own data dir, its own NATS node and its own service
instances, so that nothing can rely on loopback: every service listens on its host's
address (``DDZ_HOST``), dials the others at theirs (``DDZ_<NAME>_ADDR``) and NATS at the
nodes' (``DDZ_NATS_URL``), and the NATS nodes route to each other across the bridge.

    with Hosts(tag, seed) as hosts:     # namespaces <tag>-sw (the bridge), <tag>-h1 ...
        hosts.run(1, ["nats-server", ...])
        hosts.cut(2); hosts.join(2)    # link down / up on host 2's cable

Needs root and ``ip netns``; ``netns_unavailable()`` says why not. Everything (processes,
links, namespaces) is removed on exit, also after a failure: every process left in a
host's namespace is killed before the namespace goes. The names carry ``tag``
(``new_tag()``: ``ddz<pid>x<random>``), so two runs at once do not meet, and a run
killed before it could clean up (SIGKILL) is swept by the next one (``sweep``: the
namespaces of a pid that no longer runs). The test's own process stays in the root namespace and
reaches the hosts only through the processes it starts in them, and the shared files
(data dirs, the SQLite store) on disk.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

BRIDGE = "br0"


def netns_unavailable() -> str | None:
    """Why namespaces cannot be used here (None: they can)."""
    if os.geteuid() != 0:
        return "needs root (ip netns add)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip"
    name = f"ddzprobe-{uuid.uuid4().hex[:8]}"
    made = subprocess.run(["ip", "netns", "add", name], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", name], capture_output=True)
    return None


_TAGGED = re.compile(r"^ddz(\d+)x[0-9a-f]+-(sw|h\d+)$")


def new_tag() -> str:
    """A tag no other run uses, naming this process (``sweep`` knows whose it was)."""
    return f"ddz{os.getpid()}x{uuid.uuid4().hex[:4]}"


def sweep() -> list[str]:
    """Remove the namespaces (and kill the processes in them) of earlier runs whose
    process no longer runs: a run killed outright leaves nothing behind for long."""
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
    swept = []
    for line in listed.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        found = _TAGGED.match(name)
        if found is None or _alive(int(found.group(1))):
            continue
        remove_namespace(name)
        swept.append(name)
    return swept


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_namespace(name: str) -> None:
    """Kill whatever still runs in namespace ``name``, then delete it (its links go
    with it). A namespace is only freed once no process holds it."""
    pids = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True)
    for pid in pids.stdout.split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    subprocess.run(["ip", "netns", "del", name], capture_output=True)


def ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


@dataclass
class Hosts:
    """``count`` hosts ``<tag>-h1`` ... on subnet ``10.<a>.<b>.0/24`` (from the seed),
    host *i* at ``10.<a>.<b>.<10+i>``, each cabled to the bridge in ``<tag>-sw``."""

    tag: str
    count: int
    subnet: str  # "10.a.b"
    processes: list[tuple[int, subprocess.Popen[bytes]]] = field(default_factory=list)
    made: list[str] = field(default_factory=list)

    @property
    def switch(self) -> str:
        return f"{self.tag}-sw"

    def ns(self, host: int) -> str:
        return f"{self.tag}-h{host}"

    def address(self, host: int) -> str:
        return f"{self.subnet}.{10 + host}"

    def __enter__(self) -> Hosts:
        sweep()
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build(self) -> None:
        ip("netns", "add", self.switch)
        self.made.append(self.switch)
        ip("-n", self.switch, "link", "add", BRIDGE, "type", "bridge")
        ip("-n", self.switch, "link", "set", BRIDGE, "up")
        ip("-n", self.switch, "link", "set", "lo", "up")
        for host in range(1, self.count + 1):
            ns = self.ns(host)
            ip("netns", "add", ns)
            self.made.append(ns)
            # Made in the switch's namespace, its far end moved into the host's: no
            # name is ever taken in the machine's own namespace.
            ip("-n", self.switch, "link", "add", f"port{host}", "type", "veth",
               "peer", "name", "eth0", "netns", ns)  # fmt: skip
            ip("-n", self.switch, "link", "set", f"port{host}", "master", BRIDGE)
            ip("-n", self.switch, "link", "set", f"port{host}", "up")
            ip("-n", ns, "addr", "add", f"{self.address(host)}/24", "dev", "eth0")
            ip("-n", ns, "link", "set", "eth0", "up")
            ip("-n", ns, "link", "set", "lo", "up")

    def cut(self, host: int) -> None:
        """Host ``host`` off the network: its cable's link down (at the switch)."""
        ip("-n", self.switch, "link", "set", f"port{host}", "down")

    def join(self, host: int) -> None:
        ip("-n", self.switch, "link", "set", f"port{host}", "up")

    def run(
        self, host: int, command: Sequence[str], env: Mapping[str, str], log: Path
    ) -> subprocess.Popen[bytes]:
        """``command`` on ``host`` (in the background, its output to ``log``)."""
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("ab") as out:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.ns(host), *command],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                env=dict(env), start_new_session=True,
            )  # fmt: skip
        self.processes.append((host, process))
        return process

    def call(
        self, host: int, command: Sequence[str], env: Mapping[str, str], timeout: float
    ) -> subprocess.CompletedProcess[str]:
        """``command`` on ``host``, waited for (its output kept)."""
        return subprocess.run(
            ["ip", "netns", "exec", self.ns(host), *command],
            capture_output=True, text=True, env=dict(env), timeout=timeout,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def close(self, grace: float = 3.0) -> None:
        """Stop every process started here (SIGTERM, SIGKILL after ``grace`` s: how the
        services stop is not what the hosts test looks at, and each second counts), then
        remove the namespaces with whatever still runs in them."""
        for _host, process in self.processes:
            if process.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for _host, process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.processes.clear()
        for ns in reversed(self.made):  # and whatever still runs there (not ours: killed)
            remove_namespace(ns)
        self.made.clear()
