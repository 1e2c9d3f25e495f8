"""The recorder's use cases on a fake ``EventStore`` (in memory, no database, no NATS):
what becomes of each arrived event (stored, a redelivery, a gap to retry, an event that
can never be stored), reading streams and pages back, and auditing a recorded hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from ddz.adapters.store import (
    DuplicateEventId,
    EventStore,
    InvalidEnvelope,
    StoredEvent,
    StreamSignature,
    UnknownStream,
    VersionConflict,
    chain,
)
from ddz.adapters.store.keys import Keyring
from ddz.adapters.telemetry import metrics
from ddz.application.errors import Kind, Reason, Refusal
from ddz.audit import Verdict as AuditVerdict
from ddz.v1 import envelope_pb2
from signing_kit import KEYRING, RULES, hand_envelopes, sealed

from services.recorder.adapters.audits import Audits
from services.recorder.use_cases.handlers import (
    DEFAULT_PAGE,
    PAGE_BYTES,
    Outcome,
    Reads,
    Record,
    Verdict,
)

KEY = b"k" * 32
KEY_ID = "test-key"


class FakeStore(EventStore):
    """The ``EventStore`` contract in memory: version checks, identical redeliveries as
    no-ops, the hash chain and head signatures; ``down`` makes every write fail as a
    database that cannot be reached."""

    def __init__(self) -> None:
        self.events: list[StoredEvent] = []
        self.signatures: list[StreamSignature] = []
        self.down = False
        self.appends = 0

    def append(
        self,
        stream_id: str,
        expected_version: int,
        envelopes: Sequence[bytes],
        trace_ids: Sequence[str | None] | None = None,
    ) -> list[StoredEvent]:
        traces = dict(zip(envelopes, trace_ids or [None] * len(envelopes), strict=True))
        self.appends += 1
        if self.down:
            raise ConnectionError("database unreachable")
        stream = self.read_stream(stream_id)
        by_id = {event.event_id: event for event in self.events}
        records: list[StoredEvent] = []
        fresh: list[envelope_pb2.EventEnvelope] = []
        for offset, data in enumerate(envelopes):
            envelope = envelope_pb2.EventEnvelope.FromString(data)
            if (envelope.stream_id, envelope.stream_version) != (
                stream_id, expected_version + offset + 1,
            ):  # fmt: skip
                raise InvalidEnvelope(f"{envelope.event_id} is not at its place")
            known = by_id.get(envelope.event_id)
            if known is not None:
                if known.envelope != data:
                    raise DuplicateEventId(envelope.event_id)
                if not fresh:
                    records.append(known)
                    continue
            fresh.append(envelope)
        skipped = len(records)
        if fresh and len(stream) != expected_version + skipped:
            raise VersionConflict(stream_id, expected_version + skipped, len(stream))
        prev = stream[-1].hash if stream else chain.GENESIS_HASH
        for envelope in fresh:
            data = envelope.SerializeToString()
            record = StoredEvent(
                len(self.events) + 1, envelope.event_id, stream_id, envelope.stream_version,
                envelope.type, envelope.type_version, None, envelope.causation_id,
                envelope.correlation_id, envelope.producer, envelope.payload, data, prev,
                chain.chain_hash(prev, data), traces.get(data),
            )  # fmt: skip
            prev = record.hash
            self.events.append(record)
            records.append(record)
        return records

    def read_stream(self, stream_id: str, after_version: int = 0) -> list[StoredEvent]:
        return [
            e for e in self.events if e.stream_id == stream_id and e.stream_version > after_version
        ]

    def read_all(self, after_position: int = 0, limit: int = 1000) -> list[StoredEvent]:
        return [e for e in self.events if e.position > after_position][:limit]

    def max_position(self) -> int:
        return len(self.events)

    def stream_version(self, stream_id: str) -> int:
        return len(self.read_stream(stream_id))

    def stream_ids(self) -> list[str]:
        return list(dict.fromkeys(e.stream_id for e in self.events))

    def sign_head(self, stream_id: str, key: bytes, key_id: str) -> StreamSignature:
        stream = self.read_stream(stream_id)
        if not stream:
            raise UnknownStream(stream_id)
        head = stream[-1]
        signature = StreamSignature(
            stream_id, head.stream_version, head.hash,
            chain.sign_head(key, stream_id, head.stream_version, head.hash), key_id,
        )  # fmt: skip
        self.signatures.append(signature)
        return signature

    def read_signatures(self, stream_id: str) -> list[StreamSignature]:
        return [s for s in self.signatures if s.stream_id == stream_id]

    def close(self) -> None:
        pass


def one(stream_id: str, version: int, event_id: str) -> bytes:
    """A small envelope of its own (its payload is its id)."""
    envelope = envelope_pb2.EventEnvelope(
        event_id=event_id, stream_id=stream_id, stream_version=version, type="table_opened",
        payload=event_id.encode(),
    )  # fmt: skip
    return sealed(envelope)


def verdicts(outcomes: list[Outcome]) -> list[Verdict]:
    return [outcome.verdict for outcome in outcomes]


# -- storing what arrived ------------------------------------------------------------


async def test_a_batch_is_stored_with_one_write_per_stream() -> None:
    store = FakeStore()
    record = Record(store, keyring=KEYRING)
    arrived = [one("table-a", 1, "a1"), one("table-b", 1, "b1"), one("table-a", 2, "a2")]
    assert verdicts(await record(arrived)) == [Verdict.STORED] * 3
    assert store.appends == 2  # table-a's two events in one transaction
    assert [e.event_id for e in store.read_stream("table-a")] == ["a1", "a2"]
    assert record.stored == 3


async def test_a_redelivered_identical_event_is_done_not_refused() -> None:
    store = FakeStore()
    record = Record(store, keyring=KEYRING)
    batch = [one("table-a", 1, "a1"), one("table-a", 2, "a2")]
    await record(batch)
    again = await record([batch[1], batch[0], one("table-a", 3, "a3")])
    assert verdicts(again) == [Verdict.STORED] * 3
    assert [e.event_id for e in store.read_stream("table-a")] == ["a1", "a2", "a3"]


async def test_a_gap_is_retried_while_what_can_be_stored_is() -> None:
    store = FakeStore()
    record = Record(store, keyring=KEYRING)
    outcomes = await record([one("table-a", 1, "a1"), one("table-a", 3, "a3")])
    assert verdicts(outcomes) == [Verdict.STORED, Verdict.RETRY]
    gap = outcomes[1]
    assert (gap.stream_id, gap.version) == ("table-a", 3) and gap.why.startswith("gap")
    assert verdicts(await record([one("table-a", 2, "a2")])) == [Verdict.STORED]
    assert verdicts(await record([one("table-a", 3, "a3")])) == [Verdict.STORED]  # the retry


@pytest.mark.parametrize(
    ("arrival", "why"),
    [
        (one("table-a", 1, "other"), "version"),  # its version taken by another event
        (one("table-b", 1, "a1"), "a1"),  # its id taken by other bytes
        (b"\xff\xff not an envelope", "not an EventEnvelope"),
        (
            envelope_pb2.EventEnvelope(stream_id="table-c", stream_version=1).SerializeToString(),
            "unsigned",
        ),  # made before producers signed, or forged without a key
        (
            RULES.seal(
                envelope_pb2.EventEnvelope(
                    stream_id="table-c", stream_version=1, type="table_opened"
                )
            ),
            "not_allowed",
        ),  # a rules key on a table's event
    ],
)
async def test_an_event_that_can_never_be_stored_is_refused(arrival: bytes, why: str) -> None:
    store = FakeStore()
    record = Record(store, keyring=KEYRING)
    await record([one("table-a", 1, "a1")])
    [outcome] = await record([arrival])
    assert outcome.verdict is Verdict.REFUSED and why in outcome.why
    assert [e.event_id for e in store.events] == ["a1"]


async def test_an_unreachable_database_means_retry_later_for_every_event() -> None:
    store = FakeStore()
    store.down = True
    record = Record(store, keyring=KEYRING)
    outcomes = await record([one("table-a", 1, "a1"), one("table-a", 2, "a2")])
    assert verdicts(outcomes) == [Verdict.RETRY, Verdict.RETRY]
    assert "database unreachable" in outcomes[0].why
    store.down = False
    assert verdicts(await record([one("table-a", 1, "a1")])) == [Verdict.STORED]


async def test_a_hands_head_is_signed_once_its_last_event_is_stored() -> None:
    store = FakeStore()
    signed: list[str] = []

    def sign(stream_id: str) -> None:
        signed.append(stream_id)
        store.sign_head(stream_id, KEY, KEY_ID)

    record = Record(store, keyring=KEYRING, sign_head=sign)
    envelopes = hand_envelopes()
    await record(envelopes[:-1])
    assert signed == []
    await record(envelopes[-1:])
    assert signed == ["hand-h1"]
    [signature] = store.read_signatures("hand-h1")
    assert signature.head_version == len(envelopes)


async def test_a_failed_signature_does_not_undo_the_store() -> None:
    def broken(stream_id: str) -> None:
        raise RuntimeError("no key")

    store = FakeStore()
    outcomes = await Record(store, keyring=KEYRING, sign_head=broken)(hand_envelopes())
    assert set(verdicts(outcomes)) == {Verdict.STORED}


# -- reading back --------------------------------------------------------------------


async def test_reading_an_unknown_stream_is_refused_as_unknown_stream() -> None:
    reads = Reads(FakeStore())
    with pytest.raises(Refusal) as caught:
        await reads.stream("hand-nope", 0)
    refusal = caught.value
    assert (refusal.kind, refusal.reason) == (Kind.NOT_FOUND, Reason.UNKNOWN_STREAM)
    assert refusal.message == "no events in stream 'hand-nope'"


async def test_reading_a_stream_after_its_head_is_empty_not_refused() -> None:
    store = FakeStore()
    await Record(store, keyring=KEYRING)([one("table-a", 1, "a1"), one("table-a", 2, "a2")])
    reads = Reads(store)
    assert [e.event_id for e in await reads.stream("table-a", 1)] == ["a2"]
    assert await reads.stream("table-a", 2) == []


async def test_pages_stop_at_the_byte_limit_but_never_come_back_empty() -> None:
    store = FakeStore()
    big = (PAGE_BYTES // 2) + 1
    arrivals = [
        sealed(envelope_pb2.EventEnvelope(
            event_id=f"a{v}", stream_id="table-a", stream_version=v, type="t",
            payload=b"x" * big,
        ))
        for v in (1, 2, 3)
    ]  # fmt: skip
    await Record(store, keyring=KEYRING)(arrivals)
    reads = Reads(store)
    events, max_position = await reads.page(0, 0)
    assert ([e.event_id for e in events], max_position) == (["a1"], 3)
    events, _ = await reads.page(1, 0)
    assert [e.event_id for e in events] == ["a2"]


async def test_a_page_holds_a_default_number_of_events_when_no_limit_is_asked() -> None:
    store = FakeStore()
    await Record(store, keyring=KEYRING)(
        [one("table-a", v, f"a{v}") for v in range(1, DEFAULT_PAGE + 6)]
    )
    events, max_position = await Reads(store).page(0, 0)
    assert (len(events), max_position) == (DEFAULT_PAGE, DEFAULT_PAGE + 5)
    events, _ = await Reads(store).page(0, 3)
    assert [e.position for e in events] == [1, 2, 3]


# -- audits --------------------------------------------------------------------------


async def test_a_recorded_hand_audits_clean() -> None:
    store = FakeStore()

    def sign(stream_id: str) -> None:
        store.sign_head(stream_id, KEY, KEY_ID)

    record = Record(store, keyring=KEYRING, sign_head=sign)
    await record(hand_envelopes())
    keys = Keyring.of_hmac(KEY, KEY_ID).with_events(KEYRING)  # and the producers' keys
    clean = metrics.REGISTRY.get_sample_value("ddz_hands_audited_total", {"verdict": "clean"})
    report = await Audits(store, "sqlite://", keys).hand("h1")
    assert report.verdict is AuditVerdict.CLEAN, report.message
    assert report.event_count == len(store.events)
    # ddz_hands_audited_total{verdict}: what DdzAuditFailures watches, counted per verdict.
    assert (
        metrics.REGISTRY.get_sample_value("ddz_hands_audited_total", {"verdict": "clean"})
        == (clean or 0) + 1
    )


@pytest.mark.parametrize("hand_id", ["h404", ""])
async def test_auditing_an_unknown_hand_is_refused_as_unknown_hand(hand_id: str) -> None:
    with pytest.raises(Refusal) as caught:
        await Audits(FakeStore(), "sqlite://", KEY, KEY_ID).hand(hand_id)
    assert (caught.value.kind, caught.value.reason) == (Kind.NOT_FOUND, Reason.UNKNOWN_HAND)
    assert caught.value.message == f"no hand {hand_id!r} in the event store"


@pytest.mark.parametrize("hand_id", ["h404\n", "h 404", "h/404"])
async def test_auditing_a_hand_id_that_is_none_is_invalid(hand_id: str) -> None:
    with pytest.raises(Refusal) as caught:
        await Audits(FakeStore(), "sqlite://", KEY, KEY_ID).hand(hand_id)
    assert (caught.value.kind, caught.value.reason) == (Kind.INVALID, Reason.UNKNOWN_HAND)
    assert "a hand id is 1-200 letters" in caught.value.message


@pytest.mark.parametrize("stream_id", ["hand-h1\n", "hand-", "h1"])
async def test_reading_a_stream_id_that_is_none_is_invalid(stream_id: str) -> None:
    with pytest.raises(Refusal) as caught:
        await Reads(FakeStore()).stream(stream_id, 0)
    assert (caught.value.kind, caught.value.reason) == (Kind.INVALID, Reason.UNKNOWN_STREAM)
