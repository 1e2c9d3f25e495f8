"""The services of a test, running in this process: ``Suite`` (what conftest.py's
``core_suite`` and ``table_suite`` fixtures yield) and the settings they start with.

Each service is started exactly as its process starts it (``start_services``: random
loopback ports, each after the services it calls, each dialling the others where they
were bound), over the test's nats-server. Clients reach them only through gRPC, on
channels the suite opens from its settings (``make_channel(settings.calling, name)``) and closes
at the end, as any client would.

Over TLS, as in production: ``suite_settings`` makes the data dir's CA and certificates
(``ensure_certificates``, as ``ddz up`` does), and each stub of an internal service
calls every RPC with the certificate of a caller that has the right to it
(``ddz.access.rights``): the operator's where it may, else the service that makes
that call (the dealer's ``Deal`` as the table, ``GetSeed`` as the rules).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, cast

import grpc
from ddz.access.rights import RIGHTS
from ddz.access.tokens import operator_token, player_token
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.rpc.bearer import bearer_channel
from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.runtime.service_runner import START_ORDER, RunningService, start_services
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.security.certs import ensure_certificates
from ddz.config import Settings
from ddz.config.security import OPERATOR
from ddz.v1 import (
    audit_pb2_grpc,
    bot_pb2_grpc,
    dealer_pb2_grpc,
    recorder_pb2_grpc,
    rules_pb2_grpc,
    settlement_pb2_grpc,
    table_pb2_grpc,
)

T = TypeVar("T")

CORE = ("dealer", "rules", "recorder", "settlement")
"""The services a hand needs without a table: deal, decide, record, settle."""
EVERY_SERVICE = tuple(n for n in START_ORDER if n not in ("console", "play"))  # tests of their own
"""The whole suite: the core, the bot and the table service."""

AUDIT_KEY = "the-test-suite's-audit-key"
"""The operator's key the recorder signs finished hands with (``DDZ_AUDIT_KEY``)."""

ROOMS = """
opening_balance = 10000

[[rooms]]
id = "classic"
variant = "classic"
bot_fill_wait = {fill}

[[rooms]]
id = "ct"
variant = "ct"
rake = "1/20"
cap = 2000
escape_penalty = 10
bot_fill_wait = {fill}

[[rooms]]
id = "laizi"
variant = "laizi"
initial_multiplier = 2
coefficient = 100
fee = 10
min_balance = 1000
bot_fill_wait = {fill}

[[rooms]]
id = "tiandi"
variant = "tiandi"
initial_multiplier = 2
coefficient = 100
fee = 10
min_balance = 1000
bot_fill_wait = {fill}

[[rooms]]
id = "waiting"
variant = "laizi"
coefficient = 100
min_balance = 1000
bot_fill_wait = 3600

[[rooms]]
id = "exact"
variant = "laizi"
min_balance = 10000
bot_fill_wait = 0

[[rooms]]
id = "high"
variant = "laizi"
min_balance = 10001
bot_fill_wait = 0
"""
"""The rooms file of a suite with a table: ``fill`` is the bot fill wait of the rooms
players are matched in; ``waiting`` never fills by itself."""


def suite_settings(
    tmp_path: Path,
    nats_url: str,
    *,
    database_url: str | None = None,
    turn_timeout: float = 30.0,
    fill: float = 0.3,
    rooms: str = ROOMS,
    max_message_bytes: int | None = None,
    reconnect_grace: float = 0.05,
    autoplay_turn_timeout: float = 0.2,
    timeouts_to_autoplay: int | None = None,
) -> Settings:
    """A suite's settings: its own data directory, store (a SQLite file unless
    ``database_url``) and rooms file under ``tmp_path``; long deadlines (the machine may
    be slow); the operator's audit key. A dropped stream is a lost connection after
    ``reconnect_grace`` (short: tests that drop streams mean it); a seat in auto-play
    (its person away) moves after ``autoplay_turn_timeout``."""
    rooms_file = tmp_path / "rooms.toml"
    rooms_file.write_text(rooms.format(fill=fill), encoding="utf-8")
    env = {
        "DDZ_DATA_DIR": str(tmp_path / "data"),
        "DDZ_DATABASE_URL": database_url or f"sqlite:///{tmp_path / 'events.sqlite3'}",
        "DDZ_NATS_URL": nats_url,
        "DDZ_LOG_LEVEL": "WARNING",
        "DDZ_AUDIT_KEY": AUDIT_KEY,
        "DDZ_RPC_TIMEOUT": "30",
        "DDZ_TURN_TIMEOUT": str(turn_timeout),
        "DDZ_RECONNECT_GRACE": str(reconnect_grace),
        "DDZ_ROOMS_FILE": str(rooms_file),
    }
    env["DDZ_AUTOPLAY_TURN_TIMEOUT"] = str(autoplay_turn_timeout)
    if timeouts_to_autoplay is not None:
        env["DDZ_TIMEOUTS_TO_AUTOPLAY"] = str(timeouts_to_autoplay)
    if max_message_bytes is not None:
        env["DDZ_MAX_MESSAGE_BYTES"] = str(max_message_bytes)
    settings = Settings.from_env(env)
    ensure_certificates(settings.data_dir)
    return settings


def caller_of(method: str) -> str:
    """Who a test calls ``method`` (``package.Service/Method``) as: the operator when it
    has the right, else the first service that has (the one that makes that call)."""
    right = RIGHTS[method]
    if right.anyone or OPERATOR in right.callers:
        return OPERATOR
    return sorted(right.callers)[0]


class AsCaller:
    """A stub of an internal service whose each RPC goes out as ``caller_of`` it."""

    def __init__(self, suite: Suite, stub: type, name: str, full_name: str) -> None:
        self._suite, self._stub, self._name, self._full_name = suite, stub, name, full_name

    def __getattr__(self, method: str) -> Any:
        caller = caller_of(f"{self._full_name}/{method}")
        return getattr(self._stub(self._suite.channel(self._name, caller)), method)


@dataclass
class Suite:
    """Services running for one test and the clients the test holds.

    ``settings`` point at where the services are bound (``settings.network.address(name)``);
    ``running`` holds them by name. Stubs: ``dealer``, ``rules``, ``recorder``,
    ``audit`` (the recorder's audit service), ``settlement``, ``bot``; ``table`` is the
    table service as the operator; ``table_as(token)``, ``operator()`` and
    ``player(id)`` are the table service as a client holding that token."""

    settings: Settings
    bus: EventBus
    running: dict[str, RunningService]
    _channels: dict[str, grpc.aio.Channel] = field(default_factory=dict)
    _clients: list[grpc.aio.Channel] = field(default_factory=list)
    _others: list[RunningService] = field(default_factory=list)
    _views: list[Suite] = field(default_factory=list)

    def channel(self, name: str, identity: str = OPERATOR) -> grpc.aio.Channel:
        """One channel per service where it is bound now (restarted: a new channel) and
        per identity it is called as (its certificate)."""
        key = f"{identity}@{self.settings.network.address(name)}"
        if key not in self._channels:
            self._channels[key] = make_channel(self.settings.as_identity(identity).calling, name)
        return self._channels[key]

    def _as_caller(self, stub: type[T], name: str, full_name: str) -> T:
        return cast(T, AsCaller(self, stub, name, full_name))

    @property
    def dealer(self) -> dealer_pb2_grpc.DealerServiceStub:
        return self._as_caller(dealer_pb2_grpc.DealerServiceStub, "dealer",
                               "ddz.v1.DealerService")  # fmt: skip

    @property
    def rules(self) -> rules_pb2_grpc.RulesServiceStub:
        return self._as_caller(rules_pb2_grpc.RulesServiceStub, "rules", "ddz.v1.RulesService")

    @property
    def recorder(self) -> recorder_pb2_grpc.RecorderServiceStub:
        return self._as_caller(recorder_pb2_grpc.RecorderServiceStub, "recorder",
                               "ddz.v1.RecorderService")  # fmt: skip

    @property
    def audit(self) -> audit_pb2_grpc.AuditServiceStub:
        return self._as_caller(audit_pb2_grpc.AuditServiceStub, "recorder",
                               "ddz.v1.AuditService")  # fmt: skip

    @property
    def settlement(self) -> settlement_pb2_grpc.SettlementServiceStub:
        return self._as_caller(settlement_pb2_grpc.SettlementServiceStub, "settlement",
                               "ddz.v1.SettlementService")  # fmt: skip

    @property
    def bot(self) -> bot_pb2_grpc.BotServiceStub:
        return self._as_caller(bot_pb2_grpc.BotServiceStub, "bot", "ddz.v1.BotService")

    @property
    def table(self) -> table_pb2_grpc.TableServiceStub:
        """The table service as the operator (who may act for any seat)."""
        key = f"operator@{self.settings.network.address('table')}"
        if key not in self._channels:
            self._channels[key] = bearer_channel(
                self.settings.calling, operator_token(self.settings.keys)
            )
        return table_pb2_grpc.TableServiceStub(self._channels[key])

    def table_as(self, token: str | None) -> table_pb2_grpc.TableServiceStub:
        """The table service as a client holding ``token`` (None: no token at all)."""
        if token is None:
            channel = make_channel(self.settings.calling, "table")
        else:
            channel = bearer_channel(self.settings.calling, token)
        self._clients.append(channel)
        return table_pb2_grpc.TableServiceStub(channel)

    def operator(self) -> table_pb2_grpc.TableServiceStub:
        return self.table_as(operator_token(self.settings.keys))

    def player(self, player_id: str) -> table_pb2_grpc.TableServiceStub:
        """A player logged in through the operator's login (a player token)."""
        return self.table_as(player_token(self.settings.keys, player_id))

    async def stop(self, name: str, grace: float = 0.1) -> None:
        """Stop ``name`` (as its process is stopped); ``start`` brings it back."""
        await self.running.pop(name).stop(grace)

    async def start(self, name: str) -> None:
        """Start ``name`` (again) on a free port; the suite's clients go there from now."""
        running, self.settings = await start_services((name,), self.settings)
        self.running.update(running)

    async def start_another(self, name: str) -> grpc.aio.Channel:
        """A second instance of ``name`` beside the first (same bus, same store),
        stopped with the suite; a channel to it."""
        running, settings = await start_services((name,), self.settings)
        self._others.append(running[name])
        channel = make_channel(settings.calling, name)
        self._clients.append(channel)
        return channel

    async def another(self, name: str) -> Suite:
        """A second instance of ``name`` beside the first, as ``start_another``; the
        suite's clients of it (``.rules`` of the answer: that instance's stub)."""
        running, settings = await start_services((name,), self.settings)
        self._others.append(running[name])
        view = Suite(settings, self.bus, {})
        self._views.append(view)
        return view

    def env(self) -> dict[str, str]:
        """The environment a ``ddz`` command needs to reach this suite and its store."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env.update(settings_env(self.settings))
        return env

    def spawn(self, name: str, log: Path, **env: str) -> subprocess.Popen[bytes]:
        """The service ``name`` as a process of its own (a session of its own: a test
        kills it with SIGKILL), with this suite's environment and ``env`` on top, its
        output appended to ``log``; the caller stops it."""
        with log.open("ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", f"services.{name}"],
                env={**self.env(), "PYTHONUNBUFFERED": "1", **env}, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip

    async def close(self, grace: float = 0.2) -> None:
        for view in self._views:
            await view.close(grace)
        for channel in [*self._channels.values(), *self._clients]:
            await channel.close()
        for service in [*reversed(self._others), *reversed(self.running.values())]:
            await service.stop(grace)


@asynccontextmanager
async def running_suite(
    names: Sequence[str], settings: Settings, bus: EventBus
) -> AsyncIterator[Suite]:
    """``names`` started in this process with ``settings``; everything closed after."""
    running, settings = await start_services(names, settings)
    suite = Suite(settings, bus, running)
    try:
        yield suite
    finally:
        await suite.close()


# --- waiting for the consumers ------------------------------------------------------------


async def eventually(
    probe: Callable[[], Awaitable[T | None]], timeout: float = 15.0, every: float = 0.05
) -> T:
    """``probe()`` once it returns something truthy (consumers run asynchronously)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        result = await probe()
        if result:
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"still {result!r} after {timeout}s")
        await asyncio.sleep(every)


async def consumers_idle(bus: EventBus, *durables: str) -> bool:
    """True once each durable has nothing pending and nothing unacknowledged."""
    for durable in durables:
        info = await bus.js.consumer_info(bus.stream, durable)
        if info.num_pending or info.num_ack_pending:
            return False
    return True


# --- several instances of one service --------------------------------------------------------


TTL = 2.0  # the leases' time to live in the tests of several instances


async def cut(bus: EventBus) -> None:
    """The instance's connection gone at once, without a goodbye (as a killed process's)."""
    bus.closing = True
    await bus.nc.close()


def instances(suite: Suite, name: str) -> list[Any]:
    """The apps of every instance of ``name`` the suite started, the first one first."""
    return [suite.running[name].service, *(s.service for s in suite._others if s.name == name)]


def when(check: Callable[[], bool]) -> Callable[[], Awaitable[bool]]:
    """``check`` as a probe for ``eventually``."""

    async def probe() -> bool:
        return check()

    return probe
