"""The dispute desk's hand index (``ddz.adapters.service_db.hand_index``) kept by the
recorder's real ``Record`` use case on the real store (SQLite, and PostgreSQL when
``DDZ_TEST_DATABASE_URL`` is set): self-played hands and their tables' events go in,
the desk's filters find them, and the projection rebuilt from the store is the same."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import pytest
from ddz.adapters.codec import envelope_for
from ddz.adapters.service_db import index_fold, upgrade_service_db
from ddz.adapters.service_db.hand_index import HandFilter, HandIndex, rebuild_hand_index
from ddz.adapters.store import SqlEventStore
from ddz.domain.hand.commands import SeatInfo
from ddz.domain.hand.events import HandStarted, PlayerDisconnected
from ddz.domain.players import GreedyPlayer
from ddz.domain.ruleset import CLASSIC, LAIZI, RuleSet
from ddz.domain.selfplay import play_hand
from ddz.domain.settlement import RoomSettings
from ddz.v1 import envelope_pb2, hand_events_pb2, table_events_pb2
from google.protobuf.message import Message
from signing_kit import KEYRING, sealed
from sqlalchemy.engine import Connection

from services.recorder.use_cases.handlers import Record, Verdict

T0 = dt.datetime(2026, 12, 3, 19, 0, tzinfo=dt.UTC)  # "yesterday evening"


def hand(hand_id: str, seed: int, players: tuple[str, str, str], at: dt.datetime,
         *, rules: RuleSet = CLASSIC, disconnect: bool = False) -> list[bytes]:  # fmt: skip
    """A self-played hand's envelopes, its events a second apart from ``at``; its seats
    renamed to ``players`` (and one disconnected after the deal when asked)."""
    bots = [GreedyPlayer(random.Random(seat)) for seat in range(3)]
    played, _ = play_hand(rules, RoomSettings(), bots, bytes([seed]) * 32, hand_id=hand_id)
    events = list(played)
    first = events[0]
    assert isinstance(first, HandStarted)
    seats = tuple(SeatInfo(name, False) for name in players)
    events[0] = HandStarted(
        first.hand_id, first.rules, first.room, seats, first.first_bidder, first.commitment,
        first.client_seeds, first.algorithm, first.engine_version, first.balances,
        first.show_before_deal,
    )  # fmt: skip
    if disconnect:
        events.insert(2, PlayerDisconnected(seat=1, escapee=True))
    return [
        sealed(envelope_for(f"hand-{hand_id}", version, event, "cause", "corr", "test",
                            event_id=f"{hand_id}-{version}",
                            occurred_at=at + dt.timedelta(seconds=version)))
        for version, event in enumerate(events, start=1)
    ]  # fmt: skip


def table(table_id: str, room: str, hands: list[str]) -> list[bytes]:
    payloads = [("table_opened", table_events_pb2.TableOpened(table_id=table_id, room_id=room))]
    payloads += [("hand_assigned", table_events_pb2.HandAssigned(hand_id=h)) for h in hands]
    return [
        sealed(envelope_pb2.EventEnvelope(
            event_id=f"{table_id}-{version}", stream_id=f"table-{table_id}",
            stream_version=version, type=kind, type_version=1,
            payload=message.SerializeToString(),
        ))
        for version, (kind, message) in enumerate(payloads, start=1)
    ]  # fmt: skip


@pytest.fixture
def index(store: SqlEventStore) -> HandIndex:
    upgrade_service_db(store.engine)
    return HandIndex(store.engine)


async def record(store: SqlEventStore, index: HandIndex, *batches: list[bytes]) -> None:
    keep = Record(store, keyring=KEYRING, on_stored=index.apply_many)
    for batch in batches:
        outcomes = await keep(batch)
        assert {o.verdict for o in outcomes} == {Verdict.STORED}


async def test_the_desk_finds_hands_by_player_table_room_time_and_outcome(
    store: SqlEventStore, index: HandIndex
) -> None:
    evening = [
        hand("h1", 1, ("ann", "bob", "cy"), T0),
        hand("h2", 2, ("ann", "dee", "eve"), T0 + dt.timedelta(hours=1), disconnect=True),
        hand("h3", 3, ("fay", "gus", "hal"), T0 + dt.timedelta(days=1), rules=LAIZI),
    ]
    # the table's events arrive before some hands and after others (two streams)
    await record(store, index, evening[0], table("t7", "bean-100", ["h1", "h2"]), evening[1])
    await record(store, index, evening[2], table("t9", "ct-5", ["h3"]))

    def found(**wanted: object) -> list[str]:
        return [h.hand_id for h in index.find(HandFilter(**wanted))]  # type: ignore[arg-type]

    assert found() == ["h3", "h2", "h1"]  # newest first
    assert found(player="ann") == ["h2", "h1"]
    assert found(player="nobody") == []
    assert found(table_id="t7") == ["h2", "h1"]
    assert found(room="ct-5") == ["h3"]
    assert found(variant="laizi") == ["h3"]
    evening_from, evening_to = T0.timestamp(), (T0 + dt.timedelta(hours=3)).timestamp()
    assert found(player="ann", since=evening_from, until=evening_to) == ["h2", "h1"]
    assert found(since=(T0 + dt.timedelta(minutes=30)).timestamp(), until=evening_to) == ["h2"]
    assert found(bot_for_person=True) == ["h2"]
    summary = index.get("h2")
    assert summary is not None
    assert (summary.table_id, summary.room, summary.variant) == ("t7", "bean-100", "classic")
    assert [s.player_id for s in summary.seats] == ["ann", "dee", "eve"]
    assert summary.outcome in {"landlord", "farmers"} and summary.ended_at is not None
    assert all(s.delta is not None for s in summary.seats)
    assert sum(s.delta or 0 for s in summary.seats) == 0  # a classic room: no rake
    assert summary.started_at == pytest.approx((T0 + dt.timedelta(hours=1, seconds=1)).timestamp())
    outcome = summary.outcome
    assert "h2" in found(outcome=outcome)
    # paging: a cursor from the last row of a page
    first = index.find(HandFilter(), limit=2)
    last = first[-1]
    assert last.started_at is not None
    rest = index.find(HandFilter(), limit=2, before=(last.started_at, last.hand_id))
    assert [h.hand_id for h in first + rest] == ["h3", "h2", "h1"]


async def test_audit_states_and_a_rebuild_from_the_store(
    store: SqlEventStore, index: HandIndex
) -> None:
    await record(store, index, hand("h1", 1, ("ann", "bob", "cy"), T0),
                 hand("h2", 2, ("ann", "dee", "eve"), T0 + dt.timedelta(minutes=5)),
                 table("t7", "bean-100", ["h1", "h2"]))  # fmt: skip
    assert index.pending_audits() == ["h1", "h2"]  # ended, not audited yet
    index.set_audit("h1", "failed", "hash_chain check failed: event #3")
    index.set_audit("h2", "clean", "clean")
    assert index.pending_audits() == []
    assert [h.hand_id for h in index.find(HandFilter(failed_audit=True))] == ["h1"]
    before = {h.hand_id: h for h in index.find(HandFilter())}
    index.log_access("sam", "support", "/hands/h1")
    assert rebuild_hand_index(store, index) == 3  # two hands and a table
    index.optimize()  # planner statistics, as the recorder's writer refreshes them
    after = {h.hand_id: h for h in index.find(HandFilter())}
    assert after.keys() == before.keys()
    for hand_id, summary in after.items():
        # the same summary, to be audited again (a rebuild trusts no earlier verdict)
        assert summary.audit == ""
        old = before[hand_id]
        assert (summary.table_id, summary.room, summary.outcome, summary.seats, summary.events,
                summary.started_at) == (old.table_id, old.room, old.outcome, old.seats,
                                        old.events, old.started_at)  # fmt: skip
    # the access log is no projection: a rebuild keeps it
    assert [(a.staff, a.what) for a in index.access()] == [("sam", "/hands/h1")]


def table_stream(table_id: str, at: dt.datetime, *events: tuple[str, Message],
                 start: int = 1) -> list[bytes]:  # fmt: skip
    """A table's events from version ``start``, a second apart from ``at``."""
    return [
        sealed(envelope_for_table(table_id, version, kind, message,
                                  at + dt.timedelta(seconds=version)))
        for version, (kind, message) in enumerate(events, start=start)
    ]  # fmt: skip


def envelope_for_table(table_id: str, version: int, kind: str, message: Message,
                       at: dt.datetime) -> envelope_pb2.EventEnvelope:  # fmt: skip
    envelope = envelope_pb2.EventEnvelope(
        event_id=f"{table_id}-{version}", stream_id=f"table-{table_id}", stream_version=version,
        type=kind, type_version=1, payload=message.SerializeToString(),
    )  # fmt: skip
    envelope.occurred_at.FromDatetime(at)
    return envelope


def opened(table_id: str, room: str, *seats: tuple[str, bool]) -> tuple[str, Message]:
    return ("table_opened", table_events_pb2.TableOpened(
        table_id=table_id, room_id=room, rules=hand_events_pb2.RuleSet(name="classic"),
        seats=[hand_events_pb2.SeatInfo(player_id=p, is_bot=b) for p, b in seats],
    ))  # fmt: skip


async def test_open_tables_with_or_without_a_hand_and_who_sits_there(
    store: SqlEventStore, index: HandIndex
) -> None:
    people = (("ann", False), ("bot-1", True), ("bob", False))
    await record(
        store, index,
        table_stream("t7", T0, opened("t7", "bean-100", *people),
                     ("hand_assigned", table_events_pb2.HandAssigned(hand_id="h1"))),
        table_stream("t8", T0 + dt.timedelta(minutes=1), opened("t8", "", ("cy", False),
                     ("bot-2", True), ("bot-3", True))),
        table_stream("t9", T0 + dt.timedelta(minutes=2), opened("t9", "bean-100", *people),
                     ("table_closed", table_events_pb2.TableClosed(reason="everyone left"))),
        hand("h1", 1, ("ann", "bot-1", "bob"), T0),
    )  # fmt: skip
    # later, at t7: a second hand, and ann leaves
    await record(store, index, table_stream(
        "t7", T0, ("hand_assigned", table_events_pb2.HandAssigned(hand_id="h2")),
        ("player_left", table_events_pb2.PlayerLeft(seat=0, player_id="ann")), start=3,
    ))  # fmt: skip
    found = index.open_tables()
    assert [t.table_id for t in found] == ["t8", "t7"]  # newest first, t9 closed
    t8, t7 = found
    assert (t8.room, t8.variant, t8.hands, t8.last_hand_id) == ("", "classic", 0, "")
    assert [(s.player_id, s.is_bot, s.left) for s in t8.seats] == [
        ("cy", False, False), ("bot-2", True, False), ("bot-3", True, False)]  # fmt: skip
    assert (t7.room, t7.hands, t7.last_hand_id) == ("bean-100", 2, "h2")
    assert [(s.player_id, s.left) for s in t7.seats] == [
        ("ann", True), ("bot-1", False), ("bob", False)]  # fmt: skip
    assert t7.opened_at == (T0 + dt.timedelta(seconds=1)).timestamp()
    assert [t.table_id for t in index.open_tables(limit=1)] == ["t8"]
    # a projection: rebuilt from the store, the same
    rebuild_hand_index(store, index)
    assert index.open_tables() == found


def test_a_filter_refuses_an_outcome_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="outcome"):
        HandFilter(outcome="maybe")


async def test_a_batch_of_many_streams_is_indexed_at_once_and_a_bad_one_costs_only_itself(
    store: SqlEventStore, index: HandIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recorder hands the index every stream of a fetched batch at once (one
    transaction); a summary whose write fails is the only one missing."""
    hands = [
        hand(f"b{n}", n, ("ann", "bob", "cy"), T0 + dt.timedelta(minutes=n)) for n in (1, 2, 3)
    ]
    tables = table("t5", "bean-100", ["b1", "b3"])  # b2: a hand of no table here
    interleaved = [tables[0]] + [event for events in zip(*hands, strict=False) for event in events]
    rest = [e for events in hands for e in events[min(len(h) for h in hands) :]]
    upsert = index_fold._upsert

    def failing_for_b2(conn: Connection, hand_id: str, change: Any) -> None:
        if hand_id == "b2":
            raise RuntimeError("this summary cannot be written")
        upsert(conn, hand_id, change)

    monkeypatch.setattr(index_fold, "_upsert", failing_for_b2)
    await record(store, index, interleaved + rest + tables[1:])
    monkeypatch.undo()

    assert [h.hand_id for h in index.find(HandFilter(player="ann"))] == ["b3", "b1"]
    for hand_id in ("b1", "b3"):
        summary = index.get(hand_id)
        assert summary is not None and (summary.table_id, summary.room) == ("t5", "bean-100")
        assert summary.events == len(hands[int(hand_id[1]) - 1])
    assert index.get("b2") is None  # its events are stored: a rebuild brings it back
    rebuild_hand_index(store, index)
    assert [h.hand_id for h in index.find(HandFilter(player="ann"))] == ["b3", "b2", "b1"]


async def test_events_counted_over_many_batches_as_a_recorder_fetches_them(
    store: SqlEventStore, index: HandIndex
) -> None:
    """Batches that only add events to hands already indexed (plays and passes, most of
    them) are counted together; the count is every event stored, whatever the batches.
    A hand whose start was never indexed (its summary's write failed) gets a summary
    from its next batch, counting what that batch brought."""
    one = hand("c1", 4, ("ann", "bob", "cy"), T0)
    two = hand("c2", 5, ("dee", "eve", "fay"), T0 + dt.timedelta(minutes=1))
    three = hand("c3", 6, ("gus", "hal", "ivy"), T0 + dt.timedelta(minutes=2))
    batches = [[*one[:3], *two[:3]]] + [
        [*one[i : i + 5], *two[i : i + 5]] for i in range(3, max(len(one), len(two)), 5)
    ]
    await record(store, index, *batches)
    for hand_id, events in (("c1", one), ("c2", two)):
        summary = index.get(hand_id)
        assert summary is not None and summary.events == len(events), hand_id
        assert summary.outcome != "" and summary.seats

    keep = Record(store, keyring=KEYRING)  # its start stored and not indexed
    assert {o.verdict for o in await keep(three[:3])} == {Verdict.STORED}
    await record(store, index, three[3:8])
    late = index.get("c3")
    assert late is not None and late.events == 5
