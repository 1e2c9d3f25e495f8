"""Several streams appended together (``EventStore.append_streams``, what the recorder
does with a fetched batch), on every backend of the ``database_url`` fixture: one
transaction for them all in ``SqlEventStore``, all of them or none."""

from __future__ import annotations

import pytest
from ddz.adapters.store import Append, DuplicateEventId, SqlEventStore, VersionConflict
from ddz.v1.envelope_pb2 import EventEnvelope
from signing_kit import KEYRING, sealed
from store_kit import batch, envelope

from services.recorder.use_cases.handlers import Record, Verdict


def test_several_streams_in_one_go_get_their_versions_and_gapless_positions(
    store: SqlEventStore,
) -> None:
    store.append("hand-1", 0, batch("hand-1", 1, 2))
    records = store.append_streams([
        Append("hand-1", 2, batch("hand-1", 3, 2)),
        Append("hand-2", 0, batch("hand-2", 1, 3), ["t1", None, "t3"]),
        Append("table-9", 0, []),
    ])  # fmt: skip
    assert [[(r.stream_id, r.stream_version) for r in stream] for stream in records] == [
        [("hand-1", 3), ("hand-1", 4)],
        [("hand-2", 1), ("hand-2", 2), ("hand-2", 3)],
        [],
    ]
    assert [r.position for r in store.read_all()] == [1, 2, 3, 4, 5, 6, 7]
    assert [r.trace_id for r in store.read_stream("hand-2")] == ["t1", None, "t3"]
    assert store.read_stream("hand-1")[2].prev_hash == store.read_stream("hand-1")[1].hash


@pytest.mark.parametrize("fault", ["conflict", "duplicate"])
def test_one_stream_that_cannot_be_appended_stores_none_of_them(
    store: SqlEventStore, fault: str
) -> None:
    store.append("hand-1", 0, [envelope("hand-1", 1, event_id="taken")])
    bad = (
        Append("hand-1", 0, batch("hand-1", 1, 1))  # hand-1 is at version 1 already
        if fault == "conflict"
        else Append("hand-3", 0, [envelope("hand-3", 1, event_id="taken")])
    )
    with pytest.raises(VersionConflict if fault == "conflict" else DuplicateEventId):
        store.append_streams([Append("hand-2", 0, batch("hand-2", 1, 2)), bad])
    assert store.read_stream("hand-2") == [] and store.max_position() == 1
    # Nothing of the refused call used a position: numbering stays gapless.
    assert store.append("hand-2", 0, batch("hand-2", 1, 1))[0].position == 2


def test_a_stored_call_appended_again_is_a_no_op(store: SqlEventStore) -> None:
    appends = [
        Append("hand-1", 0, batch("hand-1", 1, 2)),
        Append("hand-2", 0, batch("hand-2", 1, 1)),
    ]
    first = store.append_streams(appends)
    assert store.append_streams(appends) == first
    assert store.max_position() == 3


def signed(stream_id: str, version: int, event_id: str) -> bytes:
    """A table's event of its own, signed by the table's key (what the recorder takes)."""
    return sealed(EventEnvelope(
        event_id=event_id, stream_id=stream_id, stream_version=version, type="table_opened",
        payload=event_id.encode(),
    ))  # fmt: skip


async def test_the_recorder_stores_a_batch_at_once_and_a_bad_stream_costs_only_its_events(
    store: SqlEventStore,
) -> None:
    record = Record(store, keyring=KEYRING)
    first = [signed("table-a", 1, "a1"), signed("table-b", 1, "b1"), signed("table-a", 2, "a2")]
    assert {o.verdict for o in await record(first)} == {Verdict.STORED}
    assert [r.position for r in store.read_all()] == [1, 2, 3]
    # table-b's version 1 is taken by other bytes: the batch's transaction fails, and
    # the streams are then stored one by one around it.
    second = [signed("table-a", 3, "a3"), signed("table-b", 1, "b1-forged"),
              signed("table-c", 1, "c1")]  # fmt: skip
    outcomes = await record(second)
    assert [o.verdict for o in outcomes] == [Verdict.STORED, Verdict.REFUSED, Verdict.STORED]
    assert [e.event_id for e in store.read_stream("table-a")] == ["a1", "a2", "a3"]
    assert [e.event_id for e in store.read_stream("table-b")] == ["b1"]
    assert [e.event_id for e in store.read_stream("table-c")] == ["c1"]
