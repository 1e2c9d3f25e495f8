"""The dealer's use cases (services/dealer/use_cases/handlers.py) on fake ports: a seed store,
a hand publisher and the tables' records in memory that write down the order things
happen in. No server, no NATS, no database."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.store import make_engine
from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.hand import Event, SeatInfo
from ddz.domain.hand.events import CardsDealt, HandStarted
from ddz.domain.ruleset import CLASSIC, ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import HandAssigned, TableOpened
from ddz.v1 import envelope_pb2
from hand_kit import SEATS, SEED

from services.dealer.adapters.seeds import SeedVault
from services.dealer.use_cases.handlers import Dealer, DealOrder
from services.dealer.use_cases.ports import DealCancelled, SeedExists

PRODUCER = "dealer@test"


class FakeSeeds:
    def __init__(self, journal: list[str]) -> None:
        self.seeds: dict[str, bytes] = {}
        self.cancelled: dict[str, str] = {}  # hand id -> the request id called off
        self.journal = journal
        self.before_put: Callable[[], None] = lambda: None

    def put(self, hand_id: str, seed: bytes) -> None:
        self.before_put()
        if hand_id in self.cancelled:
            raise DealCancelled(hand_id)
        if hand_id in self.seeds:
            raise SeedExists(hand_id)
        self.journal.append(f"seed {hand_id}")
        self.seeds[hand_id] = seed

    def cancel(self, hand_id: str, request_id: str) -> bytes | None:
        if hand_id in self.seeds:
            return self.seeds[hand_id]
        if hand_id not in self.cancelled:
            self.journal.append(f"cancel {hand_id}")
            self.cancelled[hand_id] = request_id
        return None

    def forget(self, hand_id: str) -> None:
        self.journal.append(f"forget {hand_id}")
        del self.seeds[hand_id]

    def get(self, hand_id: str) -> bytes | None:
        if hand_id in self.cancelled:
            raise DealCancelled(hand_id)
        return self.seeds.get(hand_id)


class FakeHands:
    """New hands' streams; a hand with events already is a conflict, unless they are
    these very events of the same request (its earlier attempt: answered as it was)."""

    def __init__(self, journal: list[str]) -> None:
        self.streams: dict[str, list[Event]] = {}
        self.causes: dict[str, str] = {}
        self.journal = journal
        self.ids: list[tuple[str, str, str]] = []
        self.gate: asyncio.Event | None = None  # set: publishing goes on

    async def start(
        self,
        hand_id: str,
        events: Sequence[Event],
        *,
        causation_id: str,
        correlation_id: str,
        producer: str,
    ) -> tuple[int, list[envelope_pb2.EventEnvelope]]:
        if self.gate is not None:
            await self.gate.wait()
        if self.streams.get(hand_id):
            if self.causes.get(hand_id) != causation_id or self.streams[hand_id] != list(events):
                raise Refusal.conflict(f"hand-{hand_id} has events")
        else:
            self.journal.append(f"publish {hand_id}")
            self.ids.append((causation_id, correlation_id, producer))
            self.streams[hand_id] = list(events)
            self.causes[hand_id] = causation_id
        public = [
            envelope_pb2.EventEnvelope(type=e.TYPE, stream_version=v)
            for v, e in enumerate(events, 1)
            if not e.HIDDEN
        ]
        return len(events), public


class FakeTables:
    """What the table service recorded: each table's opening and its hands, in order."""

    def __init__(self) -> None:
        self.openings: dict[str, TableOpened] = {}
        self.hands: dict[str, list[HandAssigned]] = {}

    def add(self, table: TableOpened, *hands: HandAssigned) -> None:
        self.openings[table.table_id] = table
        self.hands.setdefault(table.table_id, []).extend(hands)

    async def opened(self, table_id: str) -> TableOpened | None:
        return self.openings.get(table_id)

    async def last_assigned(self, table_id: str) -> HandAssigned | None:
        hands = self.hands.get(table_id)
        return hands[-1] if hands else None


@pytest.fixture
def journal() -> list[str]:
    return []


@pytest.fixture
def seeds(journal: list[str]) -> FakeSeeds:
    return FakeSeeds(journal)


@pytest.fixture
def hands(journal: list[str]) -> FakeHands:
    return FakeHands(journal)


@pytest.fixture
def tables() -> FakeTables:
    """Table t1 (classic, default room, ``SEATS``) with hand h1 assigned, seat 0 first."""
    tables = FakeTables()
    tables.add(TableOpened("t1", CLASSIC, RoomSettings(), SEATS), HandAssigned("h1", 0))
    return tables


@pytest.fixture
def dealer(seeds: FakeSeeds, hands: FakeHands, tables: FakeTables) -> Dealer:
    return Dealer(seeds, hands, tables, PRODUCER, make_seed=lambda: SEED)


def order(hand_id: str = "h1", table_id: str = "t1") -> DealOrder:
    return DealOrder(hand_id, table_id)


async def refusal_of(call: object) -> Refusal:
    with pytest.raises(Refusal) as caught:
        await call  # type: ignore[misc]
    return caught.value


async def test_a_deal_stores_the_seed_before_it_publishes_the_first_events(
    dealer: Dealer, seeds: FakeSeeds, hands: FakeHands, journal: list[str]
) -> None:
    dealt = await dealer.deal(order(), "req-1")
    assert journal == ["seed h1", "publish h1"]
    assert seeds.seeds == {"h1": SEED}
    assert dealt.commitment == hashlib.sha256(SEED).hexdigest()
    started, cards = hands.streams["h1"][:2]
    assert isinstance(started, HandStarted) and isinstance(cards, CardsDealt)
    assert (started.hand_id, started.commitment, started.first_bidder) == (
        "h1", dealt.commitment, 0
    )  # fmt: skip
    assert dealt.version == len(hands.streams["h1"])
    public = [e.TYPE for e in hands.streams["h1"] if not e.HIDDEN]
    assert [e.type for e in dealt.events] == public  # the hidden deal is not answered
    assert public[0] == "hand_started" and "cards_dealt" not in public
    assert hands.ids == [("req-1", "h1", PRODUCER)]
    assert await dealer.seed("h1") == SEED


async def test_a_reused_hand_id_is_refused_and_nothing_is_published_again(
    dealer: Dealer, hands: FakeHands, journal: list[str]
) -> None:
    await dealer.deal(order(), "req-1")
    first = list(hands.streams["h1"])
    refusal = await refusal_of(dealer.deal(order(), "req-2"))
    assert (refusal.kind, refusal.reason) == (Kind.EXISTS, Reason.VERSION_CONFLICT)
    assert hands.streams["h1"] == first and journal == ["seed h1", "publish h1"]


async def test_a_hand_with_events_but_no_seed_is_refused_and_its_seed_forgotten(
    dealer: Dealer, seeds: FakeSeeds, hands: FakeHands, journal: list[str]
) -> None:
    hands.streams["h1"] = [object()]  # type: ignore[list-item]  # someone else's events
    refusal = await refusal_of(dealer.deal(order(), "req"))
    assert (refusal.kind, refusal.reason) == (Kind.EXISTS, Reason.VERSION_CONFLICT)
    assert journal == ["seed h1", "forget h1"] and seeds.seeds == {}


async def test_a_deal_the_aggregate_refuses_is_invalid_and_stores_nothing(
    dealer: Dealer, tables: FakeTables, journal: list[str]
) -> None:
    tables.add(TableOpened("t2", CLASSIC, RoomSettings(), SEATS), HandAssigned("h2", 5))
    refusal = await refusal_of(dealer.deal(order("h2", "t2"), "req"))
    assert (refusal.kind, refusal.reason) == (Kind.INVALID, Reason.UNKNOWN_SEAT)
    assert journal == []


async def test_the_seed_of_a_hand_never_dealt_is_not_found(dealer: Dealer) -> None:
    refusal = await refusal_of(dealer.seed("never-dealt"))
    assert (refusal.kind, refusal.reason) == (Kind.NOT_FOUND, Reason.UNKNOWN_HAND)


async def test_the_hand_is_dealt_under_what_the_table_recorded(
    dealer: Dealer, tables: FakeTables, hands: FakeHands
) -> None:
    """Rules, room settings, seats, first bidder and balances: the table's records."""
    laizi, room = ruleset_for("laizi"), RoomSettings(initial_multiplier=3, coefficient=100)
    seats = (SeatInfo("ann"), SeatInfo("bea"), SeatInfo("cai", is_bot=True))
    tables.add(
        TableOpened("bean", laizi, room, seats, "laizi", (500, 600, 700)),
        HandAssigned("h9", 2, (400, 600, 800)),
    )
    await dealer.deal(DealOrder("h9", "bean", client_seeds=(b"x",)), "req")
    started = hands.streams["h9"][0]
    assert isinstance(started, HandStarted)
    assert (started.rules, started.room, started.seats) == (laizi, room, seats)
    assert (started.first_bidder, started.balances) == (2, (400, 600, 800))
    assert started.client_seeds == (b"x".hex(),)


@pytest.mark.parametrize(
    ("hand_id", "table_id", "kind", "reason"),
    [
        ("h1", "nowhere", Kind.NOT_FOUND, Reason.UNKNOWN_TABLE),
        ("h7", "t1", Kind.PRECONDITION, Reason.UNKNOWN_HAND),  # never assigned there
        ("h1", "t3", Kind.PRECONDITION, Reason.UNKNOWN_HAND),  # another table's hand
        ("h0", "t1", Kind.PRECONDITION, Reason.UNKNOWN_HAND),  # not the last assigned
    ],
)
async def test_a_hand_the_table_did_not_assign_last_is_refused_and_nothing_stored(
    dealer: Dealer, tables: FakeTables, journal: list[str],
    hand_id: str, table_id: str, kind: Kind, reason: Reason,
) -> None:  # fmt: skip
    tables.add(TableOpened("t3", CLASSIC, RoomSettings(), SEATS))
    tables.hands["t1"].insert(0, HandAssigned("h0"))
    refusal = await refusal_of(dealer.deal(order(hand_id, table_id), "req"))
    assert (refusal.kind, refusal.reason) == (kind, reason)
    assert journal == []


# -- calling a deal off (CancelDeal) ----------------------------------------------------


async def test_a_cancel_before_any_deal_is_recorded_and_every_later_deal_refused(
    dealer: Dealer, seeds: FakeSeeds, hands: FakeHands, journal: list[str]
) -> None:
    assert await dealer.cancel("h1", "t1", "req-1") is None
    assert journal == ["cancel h1"] and seeds.cancelled == {"h1": "req-1"}
    for request_id in ("req-1", "req-2"):  # the stalled request, or any other
        refusal = await refusal_of(dealer.deal(order(), request_id))
        assert (refusal.kind, refusal.reason) == (Kind.PRECONDITION, Reason.UNKNOWN_HAND)
        assert "called off" in refusal.message
    assert await dealer.cancel("h1", "t1", "req-1") is None  # asked again: the same
    assert hands.streams == {} and journal == ["cancel h1"]
    refusal = await refusal_of(dealer.seed("h1"))
    assert (refusal.kind, refusal.reason) == (Kind.NOT_FOUND, Reason.UNKNOWN_HAND)


async def test_a_cancel_landing_between_a_deals_read_and_its_seed_refuses_that_deal(
    dealer: Dealer, seeds: FakeSeeds, hands: FakeHands, journal: list[str]
) -> None:
    """The deal found no seed, then the cancel was recorded: its seed cannot be stored
    (one row per hand), so it is refused and publishes nothing."""
    seeds.before_put = lambda: seeds.cancel("h1", "req-1")
    refusal = await refusal_of(dealer.deal(order(), "req-1"))
    assert (refusal.kind, refusal.reason) == (Kind.PRECONDITION, Reason.UNKNOWN_HAND)
    assert journal == ["cancel h1"] and hands.streams == {} and seeds.seeds == {}


async def test_a_cancel_of_a_dealt_hand_answers_dealt_with_the_hand(
    dealer: Dealer, hands: FakeHands, journal: list[str]
) -> None:
    dealt = await dealer.deal(order(), "req-1")
    again = await dealer.cancel("h1", "t1", "req-1")
    assert again == dealt
    assert journal == ["seed h1", "publish h1"]  # nothing published twice, nothing cancelled


async def test_a_cancel_of_a_deal_under_way_finishes_it_once(
    dealer: Dealer, seeds: FakeSeeds, hands: FakeHands, tables: FakeTables, journal: list[str]
) -> None:
    """The deal stored its seed and stalls before publishing: the cancel cannot call it
    off, so it deals it (the table's recorded order, the same request) and says so; the
    stalled deal then finds its own events and answers alike."""
    tables.hands["t1"] = [HandAssigned("h1", 0, None, (b"s" * 16,), (), "req-1")]
    hands.gate = asyncio.Event()
    stalled = asyncio.ensure_future(dealer.deal(DealOrder("h1", "t1", (b"s" * 16,)), "req-1"))
    while "seed h1" not in journal and not stalled.done():
        await asyncio.sleep(0.01)
    assert not stalled.done(), stalled.result()
    cancelling = asyncio.ensure_future(dealer.cancel("h1", "t1", "req-1"))
    await asyncio.sleep(0.05)
    hands.gate.set()
    dealt = await cancelling
    assert dealt is not None and await stalled == dealt
    assert journal == ["seed h1", "publish h1"] and hands.ids == [("req-1", "h1", PRODUCER)]
    started = hands.streams["h1"][0]
    assert isinstance(started, HandStarted) and started.client_seeds == ((b"s" * 16).hex(),)


def test_the_seed_vault_keeps_a_seed_or_a_cancel_never_both(tmp_path: Path) -> None:
    """``SeedVault`` on SQLite: whichever of seed and cancel is written first wins."""
    engine = make_engine(f"sqlite:///{tmp_path / 'seeds.db'}")
    upgrade_service_db(engine)
    vault = SeedVault(engine)
    assert vault.cancel("called-off", "req-1") is None
    assert vault.cancel("called-off", "req-1") is None
    with pytest.raises(DealCancelled):
        vault.get("called-off")
    with pytest.raises(DealCancelled):
        vault.put("called-off", SEED)
    vault.forget("called-off")  # only a seed is forgotten: the cancel stays
    with pytest.raises(DealCancelled):
        vault.get("called-off")
    vault.put("dealt", SEED)
    assert vault.cancel("dealt", "req-2") == SEED and vault.get("dealt") == SEED
    with pytest.raises(SeedExists):
        vault.put("dealt", SEED)
    engine.dispose()
