"""Stored messages on the stack's nats-server (``nats_auth``): no user reads the cards by
any JetStream path it may not subscribe to, and the users that may read them do."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import json
from pathlib import Path

import nats.aio.msg
import pytest
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.messaging.subjects import (
    INTERNAL,
    SUBJECT_ROOT,
    category_filter,
    stream_filter,
    stream_id_for,
    subject_for,
)
from ddz.adapters.runtime.nats_server import NatsServer
from ddz.domain.hand.events import CardsDealt, HandStarted
from nats.aio.client import Client
from nats.js.api import ConsumerConfig
from nats_auth_kit import VIOLATION, WAIT, Connect, Errors, settings_for

from services.settlement.adapters.consumer import BusStartedHands

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
        settings = dataclasses.replace(
            settings_for(data_dir),
            bus=dataclasses.replace(settings_for(data_dir).bus, nats_url=server.url),
        )
        dealer = await EventBus.connect(server.url, **connect_options(settings.bus, "dealer"))
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
    options = connect_options(settings_for(data_dir).bus, "settlement")
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
