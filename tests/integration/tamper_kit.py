"""Ways to alter a stored hand, for the audit's tampering tests.

Two kinds of tamperer:

- one with write access to the database but not the operator's key: rows are copied
  into a store with raw SQL ``INSERT`` (the store's code has no way to write them, and
  its triggers refuse UPDATE and DELETE), keeping or breaking the stored hashes as the
  tampering does;
- an insider with the key, who rewrites history consistently: the altered envelopes
  are appended through the store (which re-chains them) and the new head is signed.
  Holding the producers' keys too (``forge(..., seal=keys.seal)``), they sign every
  event again, and only the checks of the hand's content can catch that one; without
  them (``seal=None``) the altered events keep signatures that no longer verify, and
  ``producer_signature`` catches it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from ddz.adapters import codec
from ddz.adapters.store import SqlEventStore, StoredEvent, StreamSignature, chain
from ddz.adapters.store.contract import HeadSigner
from ddz.adapters.store.schema import events, stream_signatures
from ddz.domain.hand import Recorded
from ddz.v1 import envelope_pb2

Rows = list[dict[str, Any]]


def rows_of(stored: Sequence[StoredEvent]) -> Rows:
    return [dataclasses.asdict(event) for event in stored]


def insert_raw(store: SqlEventStore, rows: Rows, signatures: Sequence[StreamSignature]) -> None:
    """Write rows and signatures exactly as given (positions renumbered after the store's
    last): what someone with the database's password can do."""
    with store.engine.begin() as conn:
        top = conn.execute(sa.select(sa.func.max(events.c.position))).scalar() or 0
        if rows:
            conn.execute(
                sa.insert(events),
                [{**row, "position": top + i + 1} for i, row in enumerate(rows)],
            )
        for signature in signatures:
            conn.execute(sa.insert(stream_signatures), dataclasses.asdict(signature))


def flip_payload_byte(row: dict[str, Any], index: int) -> dict[str, Any]:
    """The row with one byte of its event's payload changed, in the envelope (the bytes
    the hash covers) and in the payload column alike; the stored hash is kept. An empty
    payload (e.g. ``Passed`` by seat 0: proto3 writes no default field) has no byte:
    then it gains one."""
    payload: bytes = row["payload"]
    changed = bytearray(payload or b"\x00")
    if payload:
        changed[index % len(changed)] ^= 0x01
    envelope = envelope_pb2.EventEnvelope.FromString(row["envelope"])
    envelope.payload = bytes(changed)
    return {**row, "payload": bytes(changed), "envelope": envelope.SerializeToString()}


def signed_by(
    key: bytes, stream_id: str, head: dict[str, Any], key_id: str = "k1"
) -> StreamSignature:
    version, head_hash = head["stream_version"], head["hash"]
    return StreamSignature(
        stream_id, version, head_hash, chain.sign_head(key, stream_id, version, head_hash), key_id
    )


# --- the insider: rewrite, re-chain, re-sign -------------------------------------------------


def decoded(stored: Sequence[StoredEvent]) -> list[tuple[envelope_pb2.EventEnvelope, Recorded]]:
    return [codec.decode_envelope(event.envelope) for event in stored]


def envelope_with(
    envelope: envelope_pb2.EventEnvelope, event: Recorded
) -> envelope_pb2.EventEnvelope:
    type_, type_version, payload = codec.encode_event(event)
    new = envelope_pb2.EventEnvelope()
    new.CopyFrom(envelope)
    new.type, new.type_version, new.payload = type_, type_version, payload
    return new


def forge(
    store: SqlEventStore,
    stream_id: str,
    history: Sequence[tuple[envelope_pb2.EventEnvelope, Recorded]],
    key: HeadSigner | bytes,
    key_id: str = "k1",
    *,
    seal: Callable[[envelope_pb2.EventEnvelope], bytes] | None,
) -> None:
    """Append ``history`` as the stream (versions renumbered 1..n, event ids kept unless
    repeated) through the store, which re-chains it, and sign the head with ``key``.
    ``seal``: how the forger signs each event again with the producers' keys they hold
    (``SampleKeys.seal``: each by the producer that signed it); None: they hold none, and
    each event keeps the signature it had."""
    envelopes = []
    seen: set[str] = set()
    for version, (envelope, event) in enumerate(history, start=1):
        new = envelope_with(envelope, event)
        new.stream_version = version
        if new.event_id in seen:
            new.event_id = codec.new_event_id()
        seen.add(new.event_id)
        envelopes.append(new.SerializeToString() if seal is None else seal(new))
    store.append(stream_id, 0, envelopes)
    store.sign_head(stream_id, key, key_id)


Edit = Callable[
    [list[tuple[envelope_pb2.EventEnvelope, Recorded]]],
    list[tuple[envelope_pb2.EventEnvelope, Recorded]],
]


def first_index(history: Sequence[tuple[Any, Recorded]], kind: type, start: int = 0) -> int:
    return next(i for i in range(start, len(history)) if isinstance(history[i][1], kind))
