"""Settlement's use cases with fake ports (no database, no NATS): a settled hand is
applied once whatever the redeliveries, its players come from its start (the bus, else
the store), what can never be applied is terminated and what cannot be applied yet is
retried; queries refuse bad input with the reasons of the public contract."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from ddz.adapters.codec import envelope_for, parse_envelope
from ddz.adapters.messaging.delivery import Delivery, Reject
from ddz.adapters.messaging.subjects import subject_for
from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.balances import Balance, SettledHand
from ddz.domain.hand.events import Event, HandSettled, HandStarted
from ddz.domain.players import GreedyPlayer
from ddz.domain.ruleset import CLASSIC
from ddz.domain.selfplay import play_hand
from ddz.domain.settlement import RoomSettings
from signing_kit import DEALER, KEYRING, sealed, tampered

from services.settlement.adapters.consumer import SettlementConsumer
from services.settlement.use_cases.handlers import DEFAULT_PAGE, MAX_PAGE, ApplySettled, Queries

STREAM = "hand-h1"
SUBJECT = subject_for(STREAM, "hand_settled")


def events() -> list[Event]:
    players = [GreedyPlayer(random.Random(seat)) for seat in range(3)]
    played, _ = play_hand(CLASSIC, RoomSettings(), players, bytes([3]) * 32, hand_id="h1")
    return played


EVENTS = events()
STARTED = next(e for e in EVENTS if isinstance(e, HandStarted))
SETTLED = next(e for e in EVENTS if isinstance(e, HandSettled))
PLAYERS = tuple(seat.player_id for seat in STARTED.seats)


def envelope(event: Event, event_id: str) -> bytes:
    version = EVENTS.index(event) + 1
    return sealed(envelope_for(STREAM, version, event, "cause", "corr", "test", event_id=event_id))


STARTED_BYTES = envelope(STARTED, "e-started")
SETTLED_BYTES = envelope(SETTLED, "e-settled")


class FakeLedgers:
    """The balances projection in memory, idempotent on the event id like the real one."""

    def __init__(self) -> None:
        self.processed: set[str] = set()
        self.balances: dict[str, int] = {}
        self.hands: list[SettledHand] = []
        self.limits: list[int] = []

    def apply_settled(
        self,
        event_id: str,
        hand_id: str,
        players: Sequence[str],
        settled: HandSettled,
        payload: bytes,
    ) -> bool:
        if event_id in self.processed:
            return False
        self.processed.add(event_id)
        deltas = tuple(settled.ledger.deltas)
        for player, delta in zip(players, deltas, strict=True):
            self.balances[player] = self.balances.get(player, 0) + delta
        self.hands.append(SettledHand(len(self.hands) + 1, hand_id, event_id, settled.landlord,
                                      settled.base, payload, tuple(players), deltas))  # fmt: skip
        return True

    def balance(self, player_id: str) -> Balance:
        hands = sum(player_id in hand.players for hand in self.hands)
        return Balance(player_id, self.balances.get(player_id, 0), hands)

    def settled_hand(self, hand_id: str) -> SettledHand | None:
        return next((hand for hand in self.hands if hand.hand_id == hand_id), None)

    def player_hands(self, player_id: str, limit: int) -> list[SettledHand]:
        self.limits.append(limit)
        return [hand for hand in reversed(self.hands) if player_id in hand.players][:limit]


class FakeStarted:
    def __init__(self, **by_stream: bytes) -> None:
        self.by_stream = by_stream

    async def last_started(self, stream_id: str) -> bytes | None:
        return self.by_stream.get(stream_id.replace("-", "_"))


@dataclass
class Row:
    envelope: bytes


class FakeStreams:
    def __init__(self, **by_stream: list[bytes]) -> None:
        self.by_stream = by_stream
        self.reads: list[str] = []

    def read_stream(self, stream_id: str, after_version: int = 0) -> list[Row]:
        self.reads.append(stream_id)
        return [Row(data) for data in self.by_stream.get(stream_id.replace("-", "_"), [])]


def on_bus() -> tuple[ApplySettled, FakeLedgers]:
    ledgers = FakeLedgers()
    return ApplySettled(
        ledgers, FakeStarted(hand_h1=STARTED_BYTES), FakeStreams(), KEYRING
    ), ledgers  # type: ignore[arg-type]


def delivery(data: bytes) -> Delivery:
    return Delivery(SUBJECT, data, {}, stream_seq=1, num_delivered=1)


async def test_a_settled_hand_is_applied_once_whatever_the_redeliveries() -> None:
    apply, ledgers = on_bus()
    assert await apply(SETTLED_BYTES, SUBJECT) is True
    assert await apply(SETTLED_BYTES, SUBJECT) is False  # a redelivery: nothing changes
    assert apply.applied == 1
    assert ledgers.balances == dict(zip(PLAYERS, SETTLED.ledger.deltas, strict=True))
    assert sum(ledgers.balances.values()) == sum(SETTLED.ledger.deltas)
    [hand] = ledgers.hands
    assert (hand.hand_id, hand.event_id, hand.players) == ("h1", "e-settled", PLAYERS)


async def test_the_players_come_from_the_store_when_the_bus_no_longer_has_the_start() -> None:
    ledgers = FakeLedgers()
    streams = FakeStreams(hand_h1=[STARTED_BYTES])
    apply = ApplySettled(ledgers, FakeStarted(), streams, KEYRING)  # type: ignore[arg-type]
    assert await apply(SETTLED_BYTES, SUBJECT)
    assert streams.reads == [STREAM]
    assert ledgers.hands[0].players == PLAYERS


async def test_a_hand_whose_start_is_nowhere_yet_is_retried_not_dropped() -> None:
    ledgers = FakeLedgers()
    apply = ApplySettled(ledgers, FakeStarted(), FakeStreams(), KEYRING)  # type: ignore[arg-type]
    with pytest.raises(Refusal) as caught:
        await apply(SETTLED_BYTES, SUBJECT)
    assert caught.value.kind is Kind.PRECONDITION and "not found yet" in caught.value.message
    consumer = SettlementConsumer(None, apply)  # type: ignore[arg-type]  # no bus needed
    with pytest.raises(Refusal):  # not Reject: the bus delivers it again later
        await consumer.handle(delivery(SETTLED_BYTES))
    assert ledgers.hands == []


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (STARTED_BYTES, f"hand_started on {SUBJECT}: expected hand_settled"),
        (b"\xff not an envelope", "not an EventEnvelope"),
        # Forgeries: unsigned, signed by a producer that may not settle, tampered with.
        (envelope_for(STREAM, 99, SETTLED, "c", "c", "rules"), "is not signed by its producer"),
        (DEALER.seal(parse_envelope(SETTLED_BYTES)), "signed by 'dealer', which may not sign it"),
        (
            tampered(SETTLED_BYTES),
            "does not verify",
        ),
    ],
)
async def test_what_can_never_be_applied_is_terminated(data: bytes, why: str) -> None:
    apply, ledgers = on_bus()
    with pytest.raises(Refusal) as caught:
        await apply(data, SUBJECT)
    assert caught.value.kind is Kind.INVALID
    consumer = SettlementConsumer(None, apply)  # type: ignore[arg-type]
    with pytest.raises(Reject, match=why):
        await consumer.handle(delivery(data))
    assert ledgers.hands == [] and apply.applied == 0


async def test_a_stream_that_does_not_start_with_hand_started_is_terminated() -> None:
    ledgers = FakeLedgers()
    started = FakeStarted(hand_h1=SETTLED_BYTES)  # the wrong event where the start should be
    apply = ApplySettled(ledgers, started, FakeStreams(), KEYRING)  # type: ignore[arg-type]
    consumer = SettlementConsumer(None, apply)  # type: ignore[arg-type]
    with pytest.raises(Reject, match="the first event is hand_settled, not hand_started"):
        await consumer.handle(delivery(SETTLED_BYTES))


async def test_queries_answer_from_the_projection() -> None:
    apply, ledgers = on_bus()
    await apply(SETTLED_BYTES, SUBJECT)
    queries = Queries(ledgers)
    player = PLAYERS[0]
    balance = await queries.balance(player)
    assert (balance.balance, balance.hands) == (SETTLED.ledger.deltas[0], 1)
    assert (await queries.ledger("h1")).event_id == "e-settled"
    assert [hand.hand_id for hand in await queries.ledgers_of(player, 0)] == ["h1"]
    await queries.ledgers_of(player, 10**6)
    assert ledgers.limits == [DEFAULT_PAGE, MAX_PAGE]


async def test_queries_refuse_an_empty_player_and_an_unknown_hand() -> None:
    queries = Queries(FakeLedgers())
    for call in (queries.balance(""), queries.ledgers_of("", 10)):
        with pytest.raises(Refusal) as caught:
            await call
        refusal = caught.value
        assert (refusal.kind, refusal.reason, refusal.message) == (
            Kind.INVALID, Reason.INVALID_ARGUMENT, "player_id is empty",
        )  # fmt: skip
    with pytest.raises(Refusal) as caught:
        await queries.ledger("h404")
    assert (caught.value.kind, caught.value.reason) == (Kind.NOT_FOUND, Reason.UNKNOWN_HAND)
    assert caught.value.message == "no settled hand 'h404'"


@pytest.mark.parametrize("player_id", ["carol\n", "car ol", "x" * 65])
async def test_queries_refuse_a_player_id_that_is_none(player_id: str) -> None:
    queries = Queries(FakeLedgers())
    for call in (queries.balance(player_id), queries.ledgers_of(player_id, 10)):
        with pytest.raises(Refusal) as caught:
            await call
        assert caught.value.kind is Kind.INVALID
        assert caught.value.message == "player_id must be 1-64 letters, digits, '_' or '-'"
    with pytest.raises(Refusal) as caught:
        await queries.ledger("h404\n")
    assert (caught.value.kind, caught.value.reason) == (Kind.INVALID, Reason.UNKNOWN_HAND)
