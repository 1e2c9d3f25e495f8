"""Checks 1 and 2: the record is what was stored (hash chain) and what the recorder
signed (head signature). Everything later trusts these bytes."""

from __future__ import annotations

import hashlib
from typing import NoReturn

from cryptography.exceptions import InvalidSignature
from google.protobuf.message import DecodeError

from ddz.adapters.store import chain
from ddz.audit.checks.context import Audit, CheckFailed
from ddz.audit.checks.results import HASH_CHAIN, INCOMPLETE, SIGNATURE
from ddz.domain.hand import CommandRejected
from ddz.domain.hand.events import HandEnded, HandSettled, SeedRevealed
from ddz.v1.envelope_pb2 import EventEnvelope

HAND_END = SeedRevealed.TYPE
HAND_ENDED = HandEnded.TYPE
HAND_SETTLED = HandSettled.TYPE


# --- 1. the hash chain -------------------------------------------------------------------


def check_hash_chain(audit: Audit) -> None:
    rows, stream_id = audit.rows, audit.stream_id
    expected_prev = chain.GENESIS_HASH
    seen: set[str] = set()
    sha256, fromhex, parse = hashlib.sha256, bytes.fromhex, EventEnvelope.FromString
    saw, keep = seen.add, audit.envelopes.append
    for version, row in enumerate(rows, start=1):
        # One pass, messages built only on failure: this runs for every stored event.
        if (
            row.stream_id != stream_id
            or row.stream_version != version
            or row.event_id in seen
            or row.prev_hash != expected_prev
        ):
            _broken_link(audit, version, expected_prev, seen)
        saw(row.event_id)
        data = row.envelope
        if type(data) is not bytes:  # raw SQL can put text in SQLite's binary column
            raise CheckFailed(HASH_CHAIN, f"event #{version}: the stored envelope is not bytes")
        # chain.chain_hash, inlined
        if sha256(fromhex(expected_prev) + data).hexdigest() != row.hash:
            raise CheckFailed(
                HASH_CHAIN,
                f"event #{version} ({row.type}): its stored bytes do not hash to its "
                "recorded hash (the event was altered after it was stored)",
            )
        expected_prev = row.hash
        try:
            envelope = parse(data)
        except DecodeError:
            raise CheckFailed(
                HASH_CHAIN, f"event #{version}: the stored bytes are not an envelope"
            ) from None
        if (
            envelope.stream_version != version
            or envelope.event_id != row.event_id
            or envelope.stream_id != stream_id
            or envelope.type != row.type
            or envelope.type_version != row.type_version
            or envelope.payload != row.payload
        ):
            raise CheckFailed(
                HASH_CHAIN,
                f"event #{version}: the row's columns differ from its hashed envelope "
                f"(envelope says {envelope.stream_id} #{envelope.stream_version} "
                f"{envelope.type} v{envelope.type_version})",
            )
        keep(envelope)
    audit.ok(HASH_CHAIN, f"{len(rows)} events linked from the genesis hash")


def _broken_link(audit: Audit, version: int, expected_prev: str, seen: set[str]) -> NoReturn:
    row = audit.rows[version - 1]
    if row.stream_id != audit.stream_id:
        raise CheckFailed(HASH_CHAIN, f"event #{version} belongs to stream {row.stream_id!r}")
    if row.stream_version != version:
        raise CheckFailed(
            HASH_CHAIN,
            f"versions are not 1..{len(audit.rows)} in order: found version "
            f"{row.stream_version} where {version} belongs (an event is missing, "
            "duplicated or out of order)",
        )
    if row.event_id in seen:
        raise CheckFailed(HASH_CHAIN, f"event #{version}: event id {row.event_id} appears twice")
    raise CheckFailed(
        HASH_CHAIN,
        f"event #{version}: prev_hash {row.prev_hash[:16]}… is not the hash of event "
        f"#{version - 1} ({expected_prev[:16]}…)",
    )


# --- 2. the head signature (and incomplete hands) -----------------------------------------


def _last_hand_event(audit: Audit) -> int:
    """Index of the last event that is not a refusal (refusals may follow the end)."""
    for index in range(len(audit.rows) - 1, -1, -1):
        if audit.rows[index].type != CommandRejected.TYPE:
            return index
    return -1


def _not_ended(audit: Audit) -> str:
    rows = audit.rows
    over = next((row.stream_version for row in rows if row.type == HAND_ENDED), None)
    if over is None:
        return f"the hand is still in play: {len(rows)} events, no seed revealed yet"
    # A decision published only in part (docs/DECISIONS.md, services) or a tail removed
    # together with its signature: either way a person has to look.
    return (
        f"the hand ended at #{over} but its seed was never revealed nor its head signed "
        f"({len(rows)} events): an operator must look into it"
    )


def _unsigned_settlement(audit: Audit) -> None:
    """A hand that settled has moved money: it must end signed, never merely "incomplete"
    (its end may have been cut off together with its signature)."""
    settled = next((row.stream_version for row in audit.rows if row.type == HAND_SETTLED), None)
    if settled is not None:
        raise CheckFailed(
            SIGNATURE,
            f"the hand was settled at #{settled} but no valid signature covers its end "
            f"({_not_ended(audit)})",
        )


def _not_complete(audit: Audit) -> CheckFailed:
    _unsigned_settlement(audit)
    return CheckFailed(INCOMPLETE, _not_ended(audit))


def check_signature(audit: Audit) -> None:
    rows, keys = audit.rows, audit.keys
    last = _last_hand_event(audit)
    ended = last >= 0 and rows[last].type == HAND_END
    held = [s for s in audit.signatures if keys.holds(s)]
    if not held:
        if not ended:
            raise _not_complete(audit)
        ids = sorted({f"{s.algorithm} {s.key_id}" for s in audit.signatures})
        raise CheckFailed(
            SIGNATURE,
            f"the finished hand has no head signature under a key the auditor holds "
            f"({keys.describe()})" + (f"; signed only under {', '.join(ids)}" if ids else ""),
        )
    for signature in held:
        where = f"the signature of head #{signature.head_version}"
        try:
            keys.verify(signature)
        except InvalidSignature:
            raise CheckFailed(
                SIGNATURE,
                f"{where} does not verify under {signature.algorithm} key id "
                f"{signature.key_id!r} (signed with another key, or the head it names was "
                "altered)",
            ) from None
        if not 1 <= signature.head_version <= len(rows):
            raise CheckFailed(
                SIGNATURE,
                f"{where}: the stream ends at #{len(rows)}; signed events are missing",
            )
        if rows[signature.head_version - 1].hash != signature.head_hash:
            raise CheckFailed(
                SIGNATURE, f"{where}: event #{signature.head_version}'s hash is not the signed one"
            )
    top = max(held, key=lambda s: s.head_version)
    head = top.head_version
    if head < last + 1:
        if not ended:
            _unsigned_settlement(audit)
        raise CheckFailed(
            SIGNATURE,
            f"events #{head + 1}..#{last + 1} after the signed head #{head} are not "
            "covered by any signature",
        )
    if not ended:
        raise _not_complete(audit)
    audit.signed_by = top.key_id
    unsigned = len(rows) - head
    extra = f"; {unsigned} later refusal(s) unsigned" if unsigned else ""
    audit.ok(SIGNATURE, f"head #{head} signed under {top.algorithm} key id {top.key_id!r}{extra}")
