"""``audit_hand``: check one hand's stored events, in order, stopping at the first failure.

Pure: it takes the stored rows and the stream's head signatures (read by the caller)
and the operator's key, and reads nothing else -- no clock, no randomness, no current
defaults. The hand is replayed under the rule set and engine version recorded in its
``HandStarted``; a hand made by an engine version this build does not know is refused.

1. ``hash_chain``: versions 1..n in order, each row's columns are its envelope's, each
   ``prev_hash`` is the previous row's ``hash``, each ``hash`` recomputed over the exact
   stored envelope bytes, no event id twice.
   ``producer_signature``: every event is signed by a producer allowed to sign it, under
   a key of the event keyring (``ddz.adapters.security.event_signing``); keys holding no event
   keyring fail it (nothing proves who made the events).
2. ``signature``: the head signatures under keys the auditor holds (Ed25519 public
   keys; the HMAC key of older hands) verify and pin the last event of the hand; only
   refusals recorded after the end may follow it. (``incomplete`` stops here for a
   hand that has not ended: its seed is still secret; a hand already settled must be
   signed, so it fails here instead.)
3. ``engine_version``: every event decodes; ``HandStarted`` first, made by an engine
   version and shuffle algorithm this build replays.
4. ``commitment``: the revealed seed hashes to ``HandStarted.commitment``.
5. ``deal``: every deal round, golden card, re-deal commitment and wildcard draw is
   re-derived from the seed by ``ddz-shuffle-v1`` and compared.
6. ``decisions``: the hand is rebuilt event by event; each accepted command is rebuilt
   from its first event and ``decide`` on the state before it must make exactly the
   recorded events (legality, the reading taken, turn order, bomb limits ...); each
   ``CommandRejected`` must be refused by ``decide`` with the recorded reason.
7. ``multiplier``: the breakdown the replay computes equals the recorded one.
8. ``settlement``: ``settle()`` on the replayed outcome equals the recorded ledger.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

import ddz
from ddz.adapters import codec
from ddz.adapters.codec import CodecError
from ddz.adapters.store.keys import Keyring
from ddz.application.event_store import StreamSignature
from ddz.audit.account.report import AuditReport
from ddz.audit.checks.context import Audit, CheckFailed, StoredRow
from ddz.audit.checks.decisions import (
    check_decisions,
    check_multiplier,
    check_settlement,
)
from ddz.audit.checks.fairness import check_commitment, check_deal
from ddz.audit.checks.integrity import check_hash_chain, check_signature
from ddz.audit.checks.provenance import check_producer_signatures
from ddz.audit.checks.results import (
    COMMITMENT,
    DEAL,
    DECISIONS,
    ENGINE_VERSION,
    HASH_CHAIN,
    MULTIPLIER,
    PRODUCER_SIGNATURE,
    SETTLEMENT,
    SIGNATURE,
    AuditedEvent,
    CheckResult,
)
from ddz.domain.hand import Recorded
from ddz.domain.hand.events import HandStarted
from ddz.domain.ruleset import RuleSet
from ddz.domain.shuffle import ALGORITHM

__all__ = ["REPLAYABLE_ENGINE_VERSIONS", "StoredRow", "audit_hand", "audited_report"]

REPLAYABLE_ENGINE_VERSIONS = frozenset({ddz.ENGINE_VERSION})
"""Engine versions whose hands this build replays exactly. A build that changes how a
hand plays bumps ``ddz.ENGINE_VERSION``; it keeps an old version here only while it
still replays those hands identically (else audit them with the old build)."""

REPLAYABLE_ALGORITHMS = frozenset({ALGORITHM})


def audit_hand(
    events: Sequence[StoredRow],
    keys: Keyring | bytes,
    signatures: Sequence[StreamSignature] = (),
    *,
    key_id: str = "k1",
    verified_through: tuple[int, str] | None = None,
) -> AuditReport:
    """Audit one hand's stream: ``events`` as stored (in version order, as
    ``EventStore.read_stream`` gives them), the stream's head ``signatures`` and the
    ``keys`` to verify them with: a ``Keyring`` (with the producers' event keyring, else
    ``producer_signature`` fails), or the bytes of the operator's HMAC key named
    ``key_id`` (hands signed before Ed25519; no event keyring). Never raises for a bad
    record: every problem is a failed check in the report (a check that crashes on one
    fails it too).

    ``verified_through``: ``(version, hash)`` of a head the caller itself stored after
    verifying every producer signature up to it (the recorder, of a chain it wrote from
    its first event, ``ddz.audit.checks.provenance``); the signatures of the events it pins are
    then not verified again. Every other check runs in full."""
    if not events:
        raise ValueError("no events to audit")
    keyring = Keyring.of_hmac(keys, key_id) if isinstance(keys, bytes) else keys
    audit = Audit(
        events, keyring, signatures, stream_id=events[0].stream_id,
        verified_through=verified_through,
    )  # fmt: skip
    failure: CheckResult | None = None
    step_name = HASH_CHAIN
    try:
        for step, name in _STEPS:
            step_name = name
            step(audit)
    except CheckFailed as failed:
        failure = CheckResult(failed.check, False, failed.detail)
    except Exception as exc:  # a record no check foresaw: this hand fails, no other
        why = f"{type(exc).__name__}: {str(exc)[:200]}"
        failure = CheckResult(step_name, False, f"the check could not run on this record ({why})")
    checks = (*audit.passed, failure) if failure else tuple(audit.passed)
    if failure is not None and not audit.decoded:
        try:  # for the transcript and --at only
            audit.decoded = _decode_what_reads(events)
        except Exception:
            audit.decoded = []
    return AuditReport(
        stream_id=audit.stream_id,
        event_count=len(events),
        checks=checks,
        events=tuple(audit.decoded),
        key_id=audit.signed_by,
        rows=events,
    )


# --- 3. decodable, and made by an engine this build replays --------------------------------


# Events that recur from hand to hand with the very same payload (a pass, a bid, a single
# card): decoded once per process. Events are immutable values, so sharing one decoded
# instance is safe. Events unique to their hand are not kept: its start, deal, bottom,
# end and settlement, shown cards, re-deals (a new commitment), and refusals (each
# carries its request id); keeping them would only push the recurring ones out.
_DECODED: dict[tuple[str, int, bytes], Recorded] = {}
_RECURRING = frozenset(
    {"passed", "bid_made", "play_made", "player_disconnected", "player_reconnected",
     "wildcard_drawn"}
)  # fmt: skip
_DECODED_MAX = 8192
"""Emptied when full. The common events (passes, bids, low singles and pairs) are back
within a hand; a crowd's plays add about six new ones a hand, so a bound of 50,000 took
a recorder auditing every hand over an hour to reach, its memory growing all the while,
for no audit measurably faster."""


def _decode(type_: str, type_version: int, payload: bytes) -> Recorded:
    key = (type_, type_version, payload)
    event = _DECODED.get(key)
    if event is None:
        event = codec.decode_event(type_, type_version, payload)
        if type_ in _RECURRING:
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()
            _DECODED[key] = event
    return event


def check_engine_version(audit: Audit) -> None:
    # The row's type, version and payload: the hash chain found them equal to the
    # envelope's (read from the row, they are not copied out of the message again).
    decoded, known, new = audit.decoded, _DECODED.get, tuple.__new__  # AuditedEvent(...)
    for row, envelope in zip(audit.rows, audit.envelopes, strict=True):
        key = (row.type, row.type_version, row.payload)
        event = known(key)  # _decode's hit, inlined: most events recur
        if event is None:
            try:
                event = _decode(*key)
            except CodecError as exc:
                raise CheckFailed(
                    ENGINE_VERSION,
                    f"event #{row.stream_version} cannot be read by this build: {exc}",
                ) from None
        decoded.append(new(AuditedEvent, (row.stream_version, row.event_id, event, envelope)))
    first = audit.decoded[0].event
    if not isinstance(first, HandStarted):
        raise CheckFailed(ENGINE_VERSION, f"the first event is {first.TYPE}, not hand_started")
    if first.engine_version not in REPLAYABLE_ENGINE_VERSIONS:
        raise CheckFailed(
            ENGINE_VERSION,
            f"the hand was played under engine version {first.engine_version!r}; this build "
            f"replays only {', '.join(sorted(REPLAYABLE_ENGINE_VERSIONS))}: audit it with a "
            f"build of engine version {first.engine_version!r}",
        )
    if first.algorithm not in REPLAYABLE_ALGORITHMS:
        raise CheckFailed(
            ENGINE_VERSION,
            f"the deal used shuffle algorithm {first.algorithm!r}; this build knows "
            f"{', '.join(sorted(REPLAYABLE_ALGORITHMS))}",
        )
    audit.started = _interned(first)
    audit.decoded[0] = _with_event(audit.decoded[0], audit.started)
    audit.ok(
        ENGINE_VERSION,
        f"engine {first.engine_version}, {first.algorithm}, rule set {first.rules.name!r} as "
        "recorded",
    )


def _decode_what_reads(rows: Sequence[StoredRow]) -> list[AuditedEvent]:
    """The events of a record that failed before decoding, up to the first that
    does not decode: so its transcript and ``--at`` still show what it claims."""
    return _readable((row.stream_version, row.envelope) for row in rows)


def _readable(rows: Iterable[tuple[int, bytes]]) -> list[AuditedEvent]:
    out: list[AuditedEvent] = []
    for version, stored in rows:
        try:
            envelope = codec.parse_envelope(stored)
            event = codec.decode_event(envelope.type, envelope.type_version, envelope.payload)
        except CodecError:
            break
        out.append(AuditedEvent(version, envelope.event_id, event, envelope))
    return out


class _Traced(NamedTuple):
    """What the transcript reads of a stored event the desk was sent: its trace id."""

    stream_version: int
    trace_id: str | None


def audited_report(
    stream_id: str,
    envelopes: Sequence[bytes],
    checks: Sequence[CheckResult],
    key_id: str = "",
    trace_ids: Sequence[str | None] = (),
) -> AuditReport:
    """The report of a hand whose audit ran elsewhere: its stored envelopes (in stream
    order) and the checks the audit gave them. The desk reads both from the recorder
    (``ReadStream``, ``AuditHand``) and writes the account and ``state_at`` of them
    with this package's code, as ``ddz audit`` does: the events up to the first that
    does not decode (a record that failed its audit may not)."""
    return AuditReport(
        stream_id=stream_id,
        event_count=len(envelopes),
        checks=tuple(checks),
        events=tuple(_readable(enumerate(envelopes, start=1))),
        key_id=key_id,
        rows=[_Traced(version, t) for version, t in enumerate(trace_ids, start=1) if t],
    )


_RULE_SETS: dict[RuleSet, RuleSet] = {}


def _interned(started: HandStarted) -> HandStarted:
    """The same RuleSet object for equal recorded rule sets: the engine's caches are
    keyed by rule set, and a look-up by identity skips comparing every field."""
    rules = _RULE_SETS.setdefault(started.rules, started.rules)
    if rules is started.rules:
        return started
    return HandStarted(
        started.hand_id, rules, started.room, started.seats, started.first_bidder,
        started.commitment, started.client_seeds, started.algorithm, started.engine_version,
        started.balances, started.show_before_deal,
    )  # fmt: skip


def _with_event(audited: AuditedEvent, event: Recorded) -> AuditedEvent:
    return audited._replace(event=event)


_STEPS = (
    (check_hash_chain, HASH_CHAIN),
    (check_producer_signatures, PRODUCER_SIGNATURE),
    (check_signature, SIGNATURE),
    (check_engine_version, ENGINE_VERSION),
    (check_commitment, COMMITMENT),
    (check_deal, DEAL),
    (check_decisions, DECISIONS),
    (check_multiplier, MULTIPLIER),
    (check_settlement, SETTLEMENT),
)
