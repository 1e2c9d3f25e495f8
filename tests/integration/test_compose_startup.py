"""Compose's start order, run for real without Docker: the ``init`` service's command
on a fresh data dir, the NATS services' own command lines on the users it wrote (the
single ``nats``, and the three nodes of the ``cluster`` profile), then ``provision``'s;
after that a service connects as its user and finds the stream, with one replica or
three, and a connection without credentials is refused (docker-compose.yml,
deploy/compose-cluster.env, deploy/prepare.py). Container paths and host names are
mapped onto the test's directories and free loopback ports; nothing else is changed."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nats
import nats.errors
import pytest
import sqlalchemy
import yaml
from ddz.adapters.messaging.nats_auth import connect_options, inbox_prefix
from ddz.adapters.messaging.subjects import STREAM_NAME
from ddz.adapters.runtime.nats_server import find_nats_server, free_port
from ddz.config import Settings
from ddz.config.network import SERVICE_PORTS

ROOT = Path(__file__).resolve().parents[2]
SERVICES = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
PREPARE = ROOT / "deploy" / "prepare.py"
CLUSTER_ENV = dict(
    line.split("=", 1)
    for line in (ROOT / "deploy" / "compose-cluster.env").read_text().splitlines()
    if line.strip() and not line.startswith("#")
)
CLIENT_PORT, ROUTE_PORT = 4222, 6222  # as the containers listen
LOCAL = "127.0.0.1"


def prepare(service: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The one-shot compose service's entrypoint and command, on this machine."""
    entrypoint, command = SERVICES[service]["entrypoint"], SERVICES[service]["command"]
    assert entrypoint == ["python", "/app/deploy/prepare.py"]
    return subprocess.run(
        [sys.executable, str(PREPARE), *command], env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip


def run_step(service: str, env: dict[str, str]) -> None:
    done = prepare(service, env)
    assert done.returncode == 0, done.stdout + done.stderr
    steps = SERVICES[service]["command"]
    assert done.stdout.splitlines()[-len(steps) :] == [f"ddz: prepare {s}: done" for s in steps]


def run_until_done(service: str, env: dict[str, str], attempts: int = 40) -> None:
    """As compose's ``restart: on-failure`` does: again until it succeeds (a cluster
    answers JetStream requests once it has elected its leader)."""
    for _ in range(attempts):
        done = prepare(service, env)
        if done.returncode == 0:
            return
        assert done.returncode == 1, done.stderr  # one clear line, not a usage error
        time.sleep(0.25)
    pytest.fail(f"{service} did not succeed: {done.stderr}")


class Nodes:
    """NATS services of the compose file started from their own command lines: each
    ``<name>:<port>`` a command names is mapped to a free port on loopback."""

    def __init__(self, tmp_path: Path, data_dir: Path, names: list[str]) -> None:
        self.tmp_path, self.data_dir, self.names = tmp_path, data_dir, names
        self.addresses = {
            f"{name}:{port}": f"{LOCAL}:{free_port(LOCAL)}"
            for name in names
            for port in (CLIENT_PORT, ROUTE_PORT)
        }
        self.processes: list[subprocess.Popen[bytes]] = []

    def url(self, server: str) -> str:
        """A URL of ``DDZ_NATS_URL`` as the compose network names it, mapped."""
        scheme, _, address = server.partition("://")
        return f"{scheme}://{self.addresses[address]}"

    def command(self, name: str) -> list[str]:
        mapped = {"/ddz": str(self.data_dir), "/data": str(self.tmp_path / name)}
        own = {f"0.0.0.0:{ROUTE_PORT}": self.addresses[f"{name}:{ROUTE_PORT}"]}
        command: list[str] = []
        for arg in SERVICES[name]["command"]:
            for inside, outside in mapped.items():
                if arg.startswith(inside + "/"):
                    arg = outside + arg[len(inside) :]
            for address, local in {**self.addresses, **own}.items():
                arg = arg.replace(address, local)
            command.append(arg)
        command[command.index("-m") + 1] = str(free_port(LOCAL))
        client = self.addresses[f"{name}:{CLIENT_PORT}"].rsplit(":", 1)[1]
        return [*command, "-a", LOCAL, "-p", client]

    def start(self) -> None:
        logs = []
        for name in self.names:
            log = self.tmp_path / f"{name}.log"
            command = [str(find_nats_server()), *self.command(name), "-l", str(log)]
            quiet = subprocess.DEVNULL
            self.processes.append(
                subprocess.Popen(command, stdin=quiet, stdout=quiet, stderr=quiet)
            )
            logs.append(log)
        deadline = time.monotonic() + 30
        for process, log in zip(self.processes, logs, strict=True):
            while not (log.exists() and "Server is ready" in log.read_text()):
                assert process.poll() is None, log.read_text() if log.exists() else "no log"
                assert time.monotonic() < deadline, f"{log.name}: nats-server did not start"
                time.sleep(0.05)

    def stop(self) -> None:
        for process in self.processes:
            process.terminate()
        for process in self.processes:
            process.wait(timeout=10)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def env(tmp_path: Path, data_dir: Path) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    return {
        **base,
        "DDZ_DATA_DIR": str(data_dir),
        "DDZ_DATABASE_URL": f"sqlite:///{tmp_path / 'ddz.sqlite3'}",
    }


@pytest.fixture
def started(tmp_path: Path, data_dir: Path, env: dict[str, str]) -> Iterator[Any]:
    """``init`` has run; ``start(names)`` starts those NATS services of the file."""
    run_step("init", env)
    running: list[Nodes] = []

    def start(names: list[str]) -> Nodes:
        nodes = Nodes(tmp_path, data_dir, names)
        running.append(nodes)
        nodes.start()
        return nodes

    try:
        yield start
    finally:
        for nodes in running:
            nodes.stop()


async def connects_as_rules(settings: Settings) -> int:
    """Connect as the rules service's user and read the stream's replicas."""
    options: dict[str, Any] = connect_options(settings.bus, "rules")
    assert options["inbox_prefix"] == inbox_prefix("rules")  # its own user, from init's seed
    rules = await nats.connect(list(settings.bus.nats_servers), allow_reconnect=False, **options)
    try:
        info = await rules.jetstream().stream_info(STREAM_NAME)
        assert info.config.max_age == settings.bus.stream_max_age  # the default retention
        replicas: int = info.config.num_replicas
        return replicas
    finally:
        await rules.close()


async def test_init_nats_and_provision_as_compose_runs_them(
    started: Any, data_dir: Path, env: dict[str, str]
) -> None:
    # init made every service's certificate, the keys and the tables
    for name in SERVICE_PORTS:
        assert (data_dir / "tls" / f"{name}.crt").is_file()
    assert (data_dir / "keys" / "audit-signing.key").is_file()
    assert (data_dir / "keys" / "login.jwks.json").is_file()
    engine = sqlalchemy.create_engine(env["DDZ_DATABASE_URL"])
    try:
        assert "events" in sqlalchemy.inspect(engine).get_table_names()
    finally:
        engine.dispose()

    nodes = started(["nats"])
    default = re.sub(
        r"\$\{\w+:-([^}]*)\}", r"\1", SERVICES["provision"]["environment"]["DDZ_NATS_URL"]
    )
    url = nodes.url(default)  # compose's ${DDZ_COMPOSE_NATS_URL:-nats://nats:4222}
    run_step("provision", {**env, "DDZ_NATS_URL": url})
    assert await connects_as_rules(Settings.from_env({**env, "DDZ_NATS_URL": url})) == 1
    with pytest.raises((nats.errors.Error, OSError)):  # no credentials: no connection
        await nats.connect(url, allow_reconnect=False, max_reconnect_attempts=0,
                           connect_timeout=2)  # fmt: skip

    # a second `docker compose up` runs init again: every key, seed and certificate kept
    kept = {p: p.read_bytes() for p in data_dir.rglob("*") if p.is_file() and p.suffix != ".conf"}
    run_step("init", env)
    assert {p: p.read_bytes() for p in kept} == kept


async def test_the_cluster_profile_makes_a_stream_of_three_replicas(
    started: Any, env: dict[str, str]
) -> None:
    names = [n for n, s in SERVICES.items() if "cluster" in s.get("profiles", [])]
    assert names == ["nats-1", "nats-2", "nats-3"]
    nodes = started(names)
    urls = ",".join(nodes.url(u) for u in CLUSTER_ENV["DDZ_COMPOSE_NATS_URL"].split(","))
    cluster = {**env, "DDZ_NATS_URL": urls,
               "DDZ_STREAM_REPLICAS": CLUSTER_ENV["DDZ_COMPOSE_STREAM_REPLICAS"]}  # fmt: skip
    run_until_done("provision", cluster)
    assert await connects_as_rules(Settings.from_env(cluster)) == 3
