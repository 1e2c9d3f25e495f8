"""The services the integration tests talk to, running in this process (``suite_kit``):

- ``suite``: the whole suite, all six services (the core, the bot, and the table
  service with a rooms file), over a SQLite store;
- ``core_suite``: its core, dealer, rules, recorder and settlement, over each of the
  store's backends (the ``database_url`` fixture of tests/conftest.py).

Both run on the test's own ``DDZ`` stream (the ``bus`` fixture) and are stopped after
it. Options, on a test or on a whole module (``pytestmark``), the closest one winning::

    @pytest.mark.suite(turn_timeout=0.3, fill=0.5, max_message_bytes=64 * 1024)

(``suite_kit.suite_settings``' keywords: the turn clock, the rooms' bot fill wait, the
rooms file's text, the request size limit.)

The stack's nats-server as ``ddz up`` configures it (``nats_auth``), for the NATS
permission tests: ``data_dir`` (its users' seeds), ``server`` (the stream provisioned),
``connect`` (a client as one of its users); one server a module (``nats_auth_kit``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import io
import random
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import evidence_kit
import nats
import pytest
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.runtime.nats_server import NatsServer, start_nats_server
from ddz.adapters.store import SqlEventStore, create_store
from ddz.adapters.telemetry.logging import configure_logging
from ddz.audit.store.sample import Mischief, record_hand
from ddz.config import Settings
from ddz.domain.hand import CommandRejected
from ddz.domain.hand.events import (
    Passed,
    PlayerReconnected,
    PlayMade,
)
from ddz.domain.ruleset import VARIANTS
from ddz.domain.settlement import RoomSettings
from evidence_kit import RICH, Operator, _recorder
from nats.aio.client import Client
from nats_auth_kit import Connect, Errors, settings_for
from suite_kit import CORE, EVERY_SERVICE, Suite, running_suite, suite_settings
from tamper_kit import KEY, PRODUCERS, decoded


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "suite(**options): settings of the test's in-process suite (suite_settings)"
    )


def suite_options(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The ``suite`` markers' options, the test's own over its module's."""
    options: dict[str, Any] = {}
    for marker in reversed(list(request.node.iter_markers("suite"))):
        options.update(marker.kwargs)
    return options


@pytest.fixture
async def suite(
    request: pytest.FixtureRequest, bus: EventBus, nats_server: NatsServer, tmp_path: Path
) -> AsyncIterator[Suite]:
    """Every service, the table service's rooms from the suite's rooms file."""
    settings = suite_settings(tmp_path, nats_server.url, **suite_options(request))
    async with running_suite(EVERY_SERVICE, settings, bus) as running:
        yield running


@pytest.fixture
async def core_suite(
    request: pytest.FixtureRequest,
    bus: EventBus,
    nats_server: NatsServer,
    database_url: str,
    tmp_path: Path,
) -> AsyncIterator[Suite]:
    """Dealer, rules, recorder and settlement on ``database_url``."""
    settings = suite_settings(
        tmp_path, nats_server.url, database_url=database_url, **suite_options(request)
    )
    async with running_suite(CORE, settings, bus) as running:
        yield running


# --- finished hands for the audit's tampering tests ---------------------------------------


@pytest.fixture(scope="module")
def originals() -> Iterator[tuple[SqlEventStore, dict[str, list[str]]]]:
    """Finished, signed hands of every variant (recorded in memory as the services record
    them): the material each tampering case starts from."""
    source = create_store("sqlite:///:memory:", upgrade=True)
    rng = random.Random(2024)
    hands: dict[str, list[str]] = {}
    for variant, rules in VARIANTS.items():
        hands[variant] = []
        while len(hands[variant]) < 7:
            hand_id = record_hand(
                source, rules, rng, signers=PRODUCERS, key=KEY, odds=Mischief(refuse=0.1)
            )
            kinds = {type(e) for _, e in decoded(source.read_stream(f"hand-{hand_id}"))}
            if {CommandRejected, Passed, PlayMade} <= kinds:  # material for every case
                hands[variant].append(hand_id)
    yield source, hands
    source.close()


# --- the suite's logs in one file, for the malformed-input tests -----------------------------


@pytest.fixture
def log_file(suite: Suite) -> Iterator[Any]:
    """Every service's log (and the standard library's) as JSON lines in one file, INFO
    and up (one line per refused call, with its reason)."""
    path = suite.settings.telemetry.log_dir / "suite.log"
    configure_logging(
        replace(suite.settings.telemetry, log_level="INFO"), service="suite", log_file=path
    )
    try:
        yield path
    finally:
        configure_logging(suite.settings.telemetry, service="pytest", stream=io.StringIO())


# --- an operator's recorded hands, for the evidence tests ---------------------------------------


@pytest.fixture(scope="module")
def operator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    """An operator's data directory: the store, the recorder's key and keyring, the
    producers' keyring; a ct hand with cap and rake, a laizi hand at coefficient 100,
    a classic hand where seats dropped and came back."""
    data = tmp_path_factory.mktemp("operator")
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data)})
    evidence_kit.PRODUCERS.publish(settings.keys.event_keyring_path)
    recorder = _recorder(settings)
    store = create_store(settings.store.database_url, upgrade=True)
    rng = random.Random(30)
    quiet = Mischief(refuse=0.08, disconnect=0.0)
    hands = {
        "ct": record_hand(
            store, VARIANTS["ct"], rng, signers=evidence_kit.PRODUCERS, key=recorder, odds=quiet,
            room=RoomSettings(rake=Fraction(1, 20), cap=24),
        ),
        "laizi": record_hand(
            store, VARIANTS["laizi"], rng, signers=evidence_kit.PRODUCERS, key=recorder, odds=quiet,
            room=RoomSettings(coefficient=100, fee=5), balances=RICH,
        ),
    }  # fmt: skip
    while "dropped" not in hands:  # a hand where the bot played for a person
        hand_id = record_hand(
            store, VARIANTS["classic"], rng, signers=evidence_kit.PRODUCERS, key=recorder,
            odds=Mischief(refuse=0.05, disconnect=0.08),
        )  # fmt: skip
        events = [e for _, e in decoded(store.read_stream(f"hand-{hand_id}"))]
        if any(isinstance(e, PlayerReconnected) for e in events):
            hands["dropped"] = hand_id
    yield Operator(data, settings, store, hands)
    store.close()


# --- the stack's nats-server with its users, for the NATS permission tests ------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ddz-auth")


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[NatsServer]:
    config = nats_auth.write_config(data_dir)
    with start_nats_server(data_dir / "jetstream", port=0, config_file=config) as running:
        settings = dataclasses.replace(
            settings_for(data_dir),
            bus=dataclasses.replace(settings_for(data_dir).bus, nats_url=running.url),
        )
        asyncio.run(nats_auth.provision_stream(settings.bus))
        yield running


@pytest.fixture
async def connect(server: NatsServer, data_dir: Path) -> AsyncIterator[Connect]:
    opened: list[Client] = []

    async def as_user(name: str, errors: Errors | None = None) -> Client:
        options = connect_options(settings_for(data_dir).bus, name)
        assert options["nkeys_seed"] == str(nats_auth.seed_path(data_dir, name))
        nc = await nats.connect(
            server.url, error_cb=(errors or Errors()).callback, max_reconnect_attempts=0, **options
        )
        opened.append(nc)
        return nc

    yield as_user
    for nc in opened:
        await nc.close()
