"""The stack's nats-server with the configuration ``ddz up`` writes (``nats_auth``):
a stranger is refused, each service's user may do only what its service needs, and
the whole suite still plays with every service on its own user."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import nats
import nats.aio.msg
import nats.errors
import nats.js.errors
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters import codec
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.messaging.server import MSG_ID
from ddz.adapters.messaging.subjects import (
    INTERNAL,
    SUBJECT_ROOT,
    category_filter,
    stream_filter,
    stream_id_for,
    subject_for,
)
from ddz.adapters.runtime.nats_server import NatsServer, start_nats_server
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.security.event_signing import EventSigner, ensure_signer
from ddz.adapters.service_db.balances import BalanceProjection
from ddz.adapters.store import create_store, make_engine
from ddz.config import Settings
from ddz.domain.hand.events import CardsDealt, HandStarted
from ddz.v1 import envelope_pb2
from nats.aio.client import Client
from nats.js.api import ConsumerConfig

from services.settlement.consumer import BusStartedHands

Connect = Callable[..., Awaitable[Client]]
HAND_SETTLED = subject_for(stream_id_for("hand", "forged"), "hand_settled")
VIOLATION = "permissions violation"
WAIT = 10  # bound on waiting for the server's answer (never a timed assertion)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ddz-auth")


@pytest.fixture(scope="module")
def server(data_dir: Path) -> Iterator[NatsServer]:
    config = nats_auth.write_config(data_dir)
    with start_nats_server(data_dir / "jetstream", port=0, config_file=config) as running:
        settings = dataclasses.replace(settings_for(data_dir), nats_url=running.url)
        asyncio.run(nats_auth.provision_stream(settings))
        yield running


def settings_for(data_dir: Path) -> Settings:
    return Settings.from_env({"DDZ_DATA_DIR": str(data_dir)})


class Errors:
    """What nats-py hands its ``error_cb``: a permission violation is reported there,
    never raised by ``publish`` or ``subscribe``."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.arrived = asyncio.Event()

    async def callback(self, exc: Exception) -> None:
        self.seen.append(str(exc))
        self.arrived.set()

    async def violation(self) -> str:
        await asyncio.wait_for(self.arrived.wait(), WAIT)
        return "\n".join(self.seen)


@pytest.fixture
async def connect(server: NatsServer, data_dir: Path) -> AsyncIterator[Connect]:
    opened: list[Client] = []

    async def as_user(name: str, errors: Errors | None = None) -> Client:
        options = connect_options(settings_for(data_dir), name)
        assert options["nkeys_seed"] == str(nats_auth.seed_path(data_dir, name))
        nc = await nats.connect(
            server.url, error_cb=(errors or Errors()).callback, max_reconnect_attempts=0, **options
        )
        opened.append(nc)
        return nc

    yield as_user
    for nc in opened:
        await nc.close()


async def test_a_connection_without_credentials_is_refused(server: NatsServer) -> None:
    errors = Errors()
    with pytest.raises((nats.errors.Error, OSError)) as refused:
        await nats.connect(
            server.url, error_cb=errors.callback, allow_reconnect=False, connect_timeout=WAIT
        )
    seen = "\n".join([str(refused.value), *errors.seen]).lower()
    assert "authorization violation" in seen


async def test_settlement_cannot_forge_a_hand_settled(connect: Connect) -> None:
    errors = Errors()
    settlement = await connect("settlement", errors)
    await settlement.publish(HAND_SETTLED, b'{"forged": true}')
    await settlement.flush(WAIT)
    seen = (await errors.violation()).lower()
    assert VIOLATION in seen and "publish" in seen and HAND_SETTLED.lower() in seen
    tools = await connect(nats_auth.TOOLS)
    with pytest.raises(nats.js.errors.NotFoundError):
        await tools.jetstream().get_last_msg("DDZ", HAND_SETTLED)  # JetStream kept none


async def test_only_the_services_that_see_cards_may_subscribe_to_internal(
    connect: Connect,
) -> None:
    bot_errors = Errors()
    bot = await connect("bot", bot_errors)
    await bot.subscribe("ddz.v1.internal.>")
    await bot.flush(WAIT)  # the server answers SUB before this PING
    settlement_errors = Errors()
    settlement = await connect("settlement", settlement_errors)
    await settlement.subscribe("ddz.v1.internal.>")
    await settlement.flush(WAIT)
    seen = (await settlement_errors.violation()).lower()
    assert VIOLATION in seen and "subscription" in seen
    await bot.flush(WAIT)
    assert bot_errors.seen == []


async def test_settlements_consumer_keeps_its_filter(connect: Connect) -> None:
    errors = Errors()
    js = (await connect("settlement", errors)).jetstream(timeout=2)
    for config in (
        ConsumerConfig(name="settlement", durable_name="settlement", filter_subject="ddz.v1.>"),
        ConsumerConfig(durable_name="settlement", filter_subject="ddz.v1.internal.>"),
    ):
        with pytest.raises((nats.errors.Error, TimeoutError)):
            await js.add_consumer("DDZ", config)
    assert VIOLATION in (await errors.violation()).lower()


async def test_no_user_reads_another_users_replies(connect: Connect) -> None:
    errors = Errors()
    bot = await connect("bot", errors)
    await bot.subscribe("_INBOX.settlement.>")
    await bot.flush(WAIT)
    assert VIOLATION in (await errors.violation()).lower()


async def test_settlement_may_not_make_or_change_the_stream(
    server: NatsServer, data_dir: Path
) -> None:
    options = connect_options(settings_for(data_dir), "settlement")
    bus = await EventBus.connect(server.url, max_reconnect_attempts=0, **options)
    try:
        info = await bus.js.stream_info("DDZ")  # looking is allowed
        assert info.config.name == "DDZ"
        with pytest.raises((nats.errors.Error, TimeoutError)):
            await bus.js.delete_stream("DDZ")
        assert (await bus.js.stream_info("DDZ")).config.name == "DDZ"
    finally:
        await bus.close()


def test_every_service_plays_on_its_own_user(tmp_path: Path) -> None:
    settings = settings_for(tmp_path)
    with Stack(settings, ephemeral_ports=True, nats_port=0) as stack:
        # every service with a NATS user (the console has none: it speaks only gRPC)
        seeds = {
            name: nats_auth.seed_path(tmp_path, name)
            for name in stack.services
            if name in nats_auth.ROLES
        }
        assert set(stack.services) - set(seeds) == {"console"}
        assert all(seed.is_file() and seed.stat().st_mode & 0o077 == 0 for seed in seeds.values())
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env.update(settings_env(stack.settings))
        done = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--hands", "2", "--json"],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        data = json.loads(done.stdout)
        assert data["hands"] == 2 and data["stored_events"] == data["events"] >= 2 * 5
        assert not stack.failed()
        nats_log = (tmp_path / "logs" / "nats-server.log").read_text(errors="replace")
        assert "Violation" not in nats_log, nats_log[-3000:]
        for name in stack.services:
            log = stack.processes[name].log_tail(chars=1_000_000)
            assert VIOLATION not in log.lower(), f"{name}: {log[-2000:]}"


def forgeries(settled: bytes, data_dir: Path, version: int) -> dict[str, bytes]:
    """A genuine ``hand_settled`` again, as someone with a service's NATS credentials and
    no producer's private key could publish it (each a new event id: a new credit), as
    the hand's event ``version``."""
    genuine = codec.parse_envelope(settled)

    def copy(event_id: str) -> envelope_pb2.EventEnvelope:
        forged = envelope_pb2.EventEnvelope()
        forged.CopyFrom(genuine)
        forged.event_id = event_id
        forged.stream_version = version
        return forged

    unsigned = copy("forged-unsigned")
    for name in ("envelope_version", "producer_key_id", "signature"):
        unsigned.ClearField(name)
    claimed = EventSigner("rules", genuine.producer_key_id, Ed25519PrivateKey.generate())
    dealer = ensure_signer(settings_for(data_dir), "dealer")  # a real key, not the rules'
    edited = copy("forged-edited")  # the genuine signature kept under another event id
    edited.ClearField("signature")
    return {
        "unsigned": unsigned.SerializeToString(),
        "bad_signature": claimed.seal(copy("forged-claimed")),
        "not_allowed": dealer.seal(copy("forged-by-dealer")),
        "edited": edited.SerializeToString() + settled[-66:],
    }


def ddz_audit(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(settings_env(settings))
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "audit", *args],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


def test_a_forged_hand_settled_from_a_valid_nats_user_changes_no_balance(tmp_path: Path) -> None:
    """The rules' NATS user may publish ``hand_settled``: its credentials leaked, a forger
    publishes a settled hand again -- unsigned, under a key of its own, signed by the
    dealer's key, or a genuine signature under a new event id. JetStream stores them (the
    credentials are good); settlement credits none, the recorder refuses every one (an
    error line each, kept on the bus), and ``ddz audit`` with public keys only passes the
    genuine hands and names a forged event that was written into the store behind the
    recorder's back."""
    settings = settings_for(tmp_path)
    with Stack(settings, ephemeral_ports=True, nats_port=0) as stack:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env.update(settings_env(stack.settings))
        done = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--hands", "2", "--json"],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        store = create_store(stack.settings.database_url)
        hand = next(s for s in store.stream_ids() if s.startswith("hand-"))
        rows = store.read_stream(hand)
        settled = next(r.envelope for r in rows if r.type == "hand_settled")
        players = {s.player_id for s in codec.decode_envelope(rows[0].envelope)[1].seats}  # type: ignore[attr-defined]
        ledgers = BalanceProjection(make_engine(stack.settings.database_url))
        before = {p: ledgers.balance(p) for p in players}
        forged = forgeries(settled, tmp_path, len(rows) + 1)

        async def publish_as_rules() -> list[int]:
            options = connect_options(stack.settings, "rules")
            bus = await EventBus.connect(
                stack.settings.nats_url, max_reconnect_attempts=0, **options
            )
            try:
                subject = subject_for(hand, "hand_settled")
                acks = [await bus.js.publish(subject, data, headers={MSG_ID: f"{why}-{hand}"})
                        for why, data in forged.items()]  # fmt: skip
                return [ack.seq for ack in acks]
            finally:
                await bus.close()

        seqs = asyncio.run(publish_as_rules())
        assert len(set(seqs)) == len(forged)  # on the bus: the credentials are good

        def refused(name: str) -> int:
            log = stack.processes[name].log_tail(chars=1_000_000)
            return sum(1 for line in log.splitlines() if "event_refused" in line and hand in line)

        assert asyncio.run(eventually_true(lambda: refused("recorder") >= len(forged)))
        assert asyncio.run(eventually_true(lambda: refused("settlement") >= len(forged)))
        assert {p: ledgers.balance(p) for p in players} == before
        assert [r.event_id for r in store.read_stream(hand)] == [r.event_id for r in rows]
        recorder_log = stack.processes["recorder"].log_tail(chars=1_000_000)
        for why in ("unsigned", "bad_signature", "not_allowed"):
            assert why in recorder_log
        assert not stack.failed()

        clean = ddz_audit(stack.settings, "--all", "--public-only")
        assert clean.returncode == 0, clean.stdout + clean.stderr

        # Behind the recorder's back: the unsigned one written into the store itself.
        store.append(hand, len(rows), [forged["unsigned"]])
        caught = ddz_audit(stack.settings, hand.removeprefix("hand-"), "--public-only")
        assert caught.returncode != 0
        assert "producer_signature" in caught.stdout and "not signed" in caught.stdout
        assert f"#{len(rows) + 1}" in caught.stdout
        every = ddz_audit(stack.settings, "--all", "--public-only")
        assert every.returncode != 0 and hand in every.stdout + every.stderr


async def eventually_true(check: Callable[[], bool], timeout: float = 60.0) -> bool:
    """``check()`` once it holds (False if it never did within ``timeout``)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not check():
        if loop.time() > deadline:
            return False
        await asyncio.sleep(0.2)
    return True


# --- stored messages: no user reads the cards by any JetStream path it may not subscribe to --

SECRET = b"every seat's cards: a probe"
PROBE_HAND = stream_id_for("hand", "read-probe")
CARDS = subject_for(PROBE_HAND, CardsDealt.TYPE, internal=True)
STARTED = subject_for(PROBE_HAND, HandStarted.TYPE)
INTERNAL_ALL = f"{SUBJECT_ROOT}.{INTERNAL}.>"
INTERNAL_HANDS = category_filter("hand", internal=True)
INTERNAL_OF_HAND = stream_filter(PROBE_HAND, internal=True)
SPY_DURABLE = "recorder"  # a durable of another service, its filter on every card
CARD_BLIND = [name for name in nats_auth.ROLES if not nats_auth.sees_cards(name)]
MESSAGE_READERS = [name for name, role in nats_auth.ROLES.items() if role.reads_messages]


@dataclasses.dataclass(frozen=True)
class Probe:
    """One JetStream API request that would hand over a stored internal message (or a
    consumer, stream or snapshot that would)."""

    name: str
    subject: str
    body: dict[str, object] | None = None

    def payload(self, seq: int) -> bytes:
        if self.body is None:
            return b""
        return json.dumps(self.body).replace('"$SEQ"', str(seq)).encode()


def _consumer(filter_subject: str, **more: object) -> dict[str, object]:
    config = {"filter_subject": filter_subject, "ack_policy": "none",
              "deliver_policy": "all", **more}  # fmt: skip
    return {"stream_name": "DDZ", "config": config}


def probes(user: str) -> list[Probe]:
    """Every JetStream path to a stored message of ``ddz.v1.internal.>`` (nats-server's
    API: message get, direct get with and without a subject, consumers ephemeral and
    durable, a mirror or source, a republish, a snapshot), as ``user`` may try them."""
    own = (nats_auth.ROLES[user].durables or (user,))[0]
    pinned = nats_auth.ROLES[user].pinned or INTERNAL_HANDS
    return [
        Probe("msg get last", "$JS.API.STREAM.MSG.GET.DDZ", {"last_by_subj": CARDS}),
        Probe("msg get next", "$JS.API.STREAM.MSG.GET.DDZ",
              {"seq": 1, "next_by_subj": INTERNAL_ALL}),
        Probe("msg get seq", "$JS.API.STREAM.MSG.GET.DDZ", {"seq": "$SEQ"}),
        Probe("direct get last", "$JS.API.DIRECT.GET.DDZ", {"last_by_subj": CARDS}),
        Probe("direct get seq", "$JS.API.DIRECT.GET.DDZ", {"seq": "$SEQ"}),
        Probe("direct get next", "$JS.API.DIRECT.GET.DDZ",
              {"seq": 1, "next_by_subj": INTERNAL_OF_HAND}),
        Probe("direct get batch", "$JS.API.DIRECT.GET.DDZ",
              {"seq": 1, "batch": 1000, "next_by_subj": INTERNAL_ALL}),
        Probe("direct get multi last", "$JS.API.DIRECT.GET.DDZ", {"multi_last": [INTERNAL_ALL]}),
        Probe("direct get of the subject", f"$JS.API.DIRECT.GET.DDZ.{CARDS}"),
        Probe("direct get of a wildcard", f"$JS.API.DIRECT.GET.DDZ.{INTERNAL_ALL}"),
        Probe("direct get of everything", f"$JS.API.DIRECT.GET.DDZ.{SUBJECT_ROOT}.>"),
        Probe("direct get of an allowed subject, a body naming another",
              f"$JS.API.DIRECT.GET.DDZ.{STARTED}", {"seq": "$SEQ"}),
        Probe("ephemeral consumer", "$JS.API.CONSUMER.CREATE.DDZ", _consumer(INTERNAL_ALL)),
        Probe("named ephemeral consumer with its filter",
              f"$JS.API.CONSUMER.CREATE.DDZ.spy.{INTERNAL_ALL}", _consumer(INTERNAL_ALL)),
        Probe("its durable, another filter", f"$JS.API.CONSUMER.CREATE.DDZ.{own}",
              _consumer(INTERNAL_ALL, durable_name=own, name=own)),
        Probe("its durable, its pinned filter in the subject, another in the body",
              f"$JS.API.CONSUMER.CREATE.DDZ.{own}.{pinned}",
              _consumer(INTERNAL_ALL, durable_name=own, name=own)),
        Probe("its durable, several filters",
              f"$JS.API.CONSUMER.CREATE.DDZ.{own}.{pinned}",
              {"stream_name": "DDZ", "config": {"durable_name": own, "name": own,
               "filter_subjects": [pinned, INTERNAL_ALL], "ack_policy": "none"}}),
        Probe("its durable, the older form", f"$JS.API.CONSUMER.DURABLE.CREATE.DDZ.{own}",
              _consumer(INTERNAL_ALL, durable_name=own)),
        Probe("another service's durable", f"$JS.API.CONSUMER.MSG.NEXT.DDZ.{SPY_DURABLE}",
              {"batch": 10, "no_wait": True}),
        Probe("a mirror", "$JS.API.STREAM.CREATE.SPY",
              {"name": "SPY", "mirror": {"name": "DDZ", "filter_subject": INTERNAL_ALL}}),
        Probe("a source", "$JS.API.STREAM.CREATE.SPY2",
              {"name": "SPY2", "sources": [{"name": "DDZ", "filter_subject": INTERNAL_ALL}]}),
        Probe("a republish", "$JS.API.STREAM.UPDATE.DDZ",
              {"name": "DDZ", "subjects": ["ddz.v1.>"],
               "republish": {"src": INTERNAL_ALL, "dest": f"_INBOX.{user}.spy.>"}}),
        Probe("a snapshot", "$JS.API.STREAM.SNAPSHOT.DDZ",
              {"deliver_subject": f"_INBOX.{user}.snapshot", "no_consumers": True}),
    ]  # fmt: skip


async def _answers(nc: Client, errors: Errors, probe: Probe, seq: int) -> list[bytes] | None:
    """What the server answers ``probe`` with (its headers and payload, every message that
    comes within a moment), or None when it refused the request (a permissions
    violation: the request never reached JetStream)."""
    inbox = nc.new_inbox()
    got: asyncio.Queue[bytes] = asyncio.Queue()

    async def keep(msg: nats.aio.msg.Msg) -> None:
        await got.put(json.dumps(msg.headers or {}).encode() + b"\n" + msg.data)

    sub = await nc.subscribe(inbox, cb=keep)
    errors.seen.clear()
    errors.arrived.clear()
    await nc.publish(probe.subject, probe.payload(seq), reply=inbox)
    await nc.flush(WAIT)
    first = asyncio.ensure_future(got.get())
    refused = asyncio.ensure_future(errors.arrived.wait())
    done, pending = await asyncio.wait({first, refused}, timeout=WAIT,
                                       return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
    for task in pending:
        task.cancel()
    await sub.unsubscribe()
    if refused in done and VIOLATION in "\n".join(errors.seen).lower():
        return None
    assert first in done, f"{probe.name}: neither an answer nor a refusal"
    return [first.result(), *[got.get_nowait() for _ in range(got.qsize())]]


def _leaks(answers: list[bytes]) -> bool:
    """Whether an answer holds the secret, or says a consumer, stream or snapshot was made."""
    text = b"\n".join(answers)
    if SECRET in text or base64.b64encode(SECRET) in text:
        return True
    for answer in answers:
        body = answer.split(b"\n", 1)[1]
        try:
            reply = json.loads(body)
        except ValueError:
            continue
        if (
            isinstance(reply, dict)
            and "error" not in reply
            and ("config" in reply or "state" in reply)
        ):
            return True  # a consumer or stream that reads the cards exists now
    return False


@pytest.fixture(scope="module")
def stored_cards(server: NatsServer, data_dir: Path) -> int:
    """A hand's ``cards_dealt`` (the secret) and its ``hand_started`` on the stream, as
    the dealer publishes them, and another service's durable over every card; the
    sequence of the secret."""

    async def setup() -> int:
        settings = dataclasses.replace(settings_for(data_dir), nats_url=server.url)
        dealer = await EventBus.connect(server.url, **connect_options(settings, "dealer"))
        provision = await EventBus.connect(
            server.url, nkeys_seed=str(nats_auth.seed_path(data_dir, nats_auth.PROVISION)),
            inbox_prefix=nats_auth.inbox_prefix(nats_auth.PROVISION),
        )  # fmt: skip
        try:
            await dealer.js.publish(STARTED, b"hand_started: public")
            ack = await dealer.js.publish(CARDS, SECRET)
            await provision.js.add_consumer("DDZ", ConsumerConfig(
                durable_name=SPY_DURABLE, filter_subject=INTERNAL_ALL))  # fmt: skip
            return int(ack.seq)
        finally:
            await dealer.close()
            await provision.close()

    return asyncio.run(setup())


@pytest.mark.parametrize("user", CARD_BLIND)
async def test_a_user_that_may_not_see_the_cards_reads_none_by_any_jetstream_path(
    connect: Connect, stored_cards: int, user: str
) -> None:
    assert CARD_BLIND and "settlement" in CARD_BLIND  # the table has such users
    errors = Errors()
    nc = await connect(user, errors)
    for probe in probes(user):
        answers = await _answers(nc, errors, probe, stored_cards)
        assert answers is None or not _leaks(answers), f"{user} read the cards: {probe.name}"


async def test_settlement_still_reads_a_hands_players(
    server: NatsServer, data_dir: Path, stored_cards: int
) -> None:
    """Its one read of a stored message: a hand's ``hand_started``, by a direct get."""
    options = connect_options(settings_for(data_dir), "settlement")
    bus = await EventBus.connect(server.url, max_reconnect_attempts=0, **options)
    try:
        assert await BusStartedHands(bus).last_started(PROBE_HAND) == b"hand_started: public"
        assert await BusStartedHands(bus).last_started(stream_id_for("hand", "none")) is None
    finally:
        await bus.close()


@pytest.mark.parametrize("user", MESSAGE_READERS)
async def test_a_user_that_sees_the_cards_reads_them(
    connect: Connect, stored_cards: int, user: str
) -> None:
    """The same probe, by a user allowed every card, reads it: the probe can fail.
    Every user allowed a message get sees the cards (``nats_auth.permissions``)."""
    assert nats_auth.sees_cards(user)
    errors = Errors()
    nc = await connect(user, errors)
    msg_get = probes(user)[0]
    answers = await _answers(nc, errors, msg_get, stored_cards)
    assert answers is not None and _leaks(answers), f"{user}: {answers}"
