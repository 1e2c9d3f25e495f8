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
import random
from collections.abc import Callable, Sequence
from typing import Any

import sqlalchemy as sa
from ddz.adapters import codec
from ddz.adapters.store import SqlEventStore, StoredEvent, StreamSignature, chain, create_store
from ddz.adapters.store.keys import Ed25519Signer, Keyring
from ddz.adapters.store.schema import events, stream_signatures
from ddz.application.event_store import HeadSigner
from ddz.audit import AuditReport, audit_hand
from ddz.audit.store.sample import Mischief, SampleKeys, record_hand
from ddz.audit.store.source import load_hand
from ddz.domain.hand import Recorded
from ddz.domain.hand.events import SeedRevealed
from ddz.domain.ruleset import VARIANTS
from ddz.v1 import envelope_pb2
from suite_kit import AUDIT_KEY

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


KEY = AUDIT_KEY.encode()


PRODUCERS = SampleKeys.generate()  # the dealer's and rules service's keys of sample hands


History = list[tuple[object, Recorded]]


def _swap_seed(history: History) -> History:
    i = first_index(history, SeedRevealed)
    history[i] = (history[i][0], SeedRevealed(bytes(range(32)).hex()))
    return history


def _keys(key: bytes | Keyring = KEY) -> Keyring:
    """``key`` (HMAC bytes named k1, or a keyring) and the sample producers' keyring."""
    keys = Keyring.of_hmac(key, "k1") if isinstance(key, bytes) else key
    return keys.with_events(PRODUCERS.keyring)


def _audit(store: SqlEventStore, hand_id: str, key: bytes | Keyring = KEY) -> AuditReport:
    record = load_hand(store, hand_id)
    assert record is not None
    return audit_hand(record.events, _keys(key), record.signatures)


# --- signatures anyone can check: Ed25519 and public keys ------------------------------------


def _signed_store(signer: Ed25519Signer, hands: int, seed: int) -> tuple[SqlEventStore, list[str]]:
    store = create_store("sqlite:///:memory:", upgrade=True)
    rng = random.Random(seed)
    names = sorted(VARIANTS)
    ids = [
        record_hand(store, VARIANTS[names[i % len(names)]], rng, signers=PRODUCERS, key=signer,
                    odds=Mischief(0.05))
        for i in range(hands)
    ]  # fmt: skip
    return store, ids
