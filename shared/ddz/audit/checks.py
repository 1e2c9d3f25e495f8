"""``audit_hand``: check one hand's stored events, in order, stopping at the first failure.

Pure: it takes the stored rows and the stream's head signatures (read by the caller)
and the operator's key, and reads nothing else -- no clock, no randomness, no current
defaults. The hand is replayed under the rule set and engine version recorded in its
``HandStarted``; a hand made by an engine version this build does not know is refused.

1. ``hash_chain``: versions 1..n in order, each row's columns are its envelope's, each
   ``prev_hash`` is the previous row's ``hash``, each ``hash`` recomputed over the exact
   stored envelope bytes, no event id twice.
2. ``signature``: a head signature under the operator's key id verifies (HMAC) and pins
   the last event of the hand; only refusals recorded after the end may follow it.
   (``incomplete`` stops here for a hand that has not ended: its seed is still secret.)
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

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

import ddz
from ddz.adapters import codec
from ddz.adapters.codec import CodecError, CommandRejected, Recorded
from ddz.adapters.store import chain
from ddz.adapters.store.recorder import StreamSignature
from ddz.audit import describe
from ddz.audit.replay import settlement_outcome
from ddz.audit.report import (
    COMMITMENT,
    DEAL,
    DECISIONS,
    ENGINE_VERSION,
    HASH_CHAIN,
    INCOMPLETE,
    MULTIPLIER,
    SETTLEMENT,
    SIGNATURE,
    AuditedEvent,
    AuditReport,
    CheckResult,
)
from ddz.domain.cards import Rank, card_counts
from ddz.domain.hand import (
    Bid,
    Command,
    Disconnect,
    Escape,
    Event,
    HandState,
    Pass,
    Play,
    Reconnect,
    Rejection,
    SeatInfo,
    SeedRequired,
    ShowCards,
    StartHand,
    decide,
    evolve,
)
from ddz.domain.hand.events import (
    BidMade,
    CardsDealt,
    CardsShown,
    HandSettled,
    HandStarted,
    Passed,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    PlayMade,
    Redealt,
    SeedRevealed,
    WildcardDrawn,
)
from ddz.domain.multipliers import MultiplierBreakdown
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import SettlementError, settle
from ddz.domain.shuffle import ALGORITHM, SEED_BYTES, commitment, deal, draw_wildcard
from ddz.domain.shuffle import master_seed as mix_seeds
from ddz.domain.shuffle import round_seed as round_key
from ddz.v1 import envelope_pb2

REPLAYABLE_ENGINE_VERSIONS = frozenset({ddz.ENGINE_VERSION})
"""Engine versions whose hands this build replays exactly. A build that changes how a
hand plays bumps ``ddz.ENGINE_VERSION``; it keeps an old version here only while it
still replays those hands identically (else audit them with the old build)."""

REPLAYABLE_ALGORITHMS = frozenset({ALGORITHM})

HAND_END = SeedRevealed.TYPE


class StoredRow(Protocol):
    """What the audit reads of a stored event (``ddz.adapters.store.StoredEvent``)."""

    @property
    def event_id(self) -> str: ...
    @property
    def stream_id(self) -> str: ...
    @property
    def stream_version(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def type_version(self) -> int: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def envelope(self) -> bytes: ...
    @property
    def prev_hash(self) -> str: ...
    @property
    def hash(self) -> str: ...


class _Failed(Exception):
    """One check failed: ``detail`` says where and why."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(detail)
        self.check = check
        self.detail = detail


@dataclass
class _Audit:
    """The audit of one stream as it goes: what each check found for the next one."""

    rows: Sequence[StoredRow]
    key: bytes
    signatures: Sequence[StreamSignature]
    key_id: str
    stream_id: str = ""
    passed: list[CheckResult] = field(default_factory=list)
    envelopes: list[envelope_pb2.EventEnvelope] = field(default_factory=list)
    decoded: list[AuditedEvent] = field(default_factory=list)
    started: HandStarted | None = None
    seed: bytes = b""
    master: bytes = b""
    # found by the decisions check for the multiplier and settlement checks
    before_settled: HandState | None = None
    settled: HandSettled | None = None
    escaped: PlayerEscaped | None = None
    expected_escape: PlayerEscaped | None = None

    def ok(self, name: str, detail: str) -> None:
        self.passed.append(CheckResult(name, True, detail))


def audit_hand(
    events: Sequence[StoredRow],
    key: bytes,
    signatures: Sequence[StreamSignature] = (),
    *,
    key_id: str = "k1",
) -> AuditReport:
    """Audit one hand's stream: ``events`` as stored (in version order, as
    ``Recorder.read_stream`` gives them), the stream's head ``signatures`` and the
    operator's HMAC ``key`` (with its ``key_id``). Never raises for a bad record: every
    problem is a failed check in the report."""
    if not events:
        raise ValueError("no events to audit")
    audit = _Audit(events, key, signatures, key_id, stream_id=events[0].stream_id)
    failure: CheckResult | None = None
    try:
        for step in _STEPS:
            step(audit)
    except _Failed as failed:
        failure = CheckResult(failed.check, False, failed.detail)
    checks = (*audit.passed, failure) if failure else tuple(audit.passed)
    if failure is not None and not audit.decoded:
        audit.decoded = _decode_what_reads(events)  # for the transcript and --at only
    return AuditReport(
        stream_id=audit.stream_id,
        event_count=len(events),
        checks=checks,
        events=tuple(audit.decoded),
        key_id=key_id,
    )


# --- 1. the hash chain -------------------------------------------------------------------


def _hash_chain(audit: _Audit) -> None:
    expected_prev = chain.GENESIS_HASH
    seen: set[str] = set()
    for index, row in enumerate(audit.rows):
        version = index + 1
        where = f"event #{version}"
        if row.stream_id != audit.stream_id:
            raise _Failed(HASH_CHAIN, f"{where} belongs to stream {row.stream_id!r}")
        if row.stream_version != version:
            raise _Failed(
                HASH_CHAIN,
                f"versions are not 1..{len(audit.rows)} in order: found version "
                f"{row.stream_version} where {version} belongs (an event is missing, "
                "duplicated or out of order)",
            )
        if row.event_id in seen:
            raise _Failed(HASH_CHAIN, f"{where}: event id {row.event_id} appears twice")
        seen.add(row.event_id)
        if row.prev_hash != expected_prev:
            raise _Failed(
                HASH_CHAIN,
                f"{where}: prev_hash {row.prev_hash[:16]}… is not the hash of event "
                f"#{version - 1} ({expected_prev[:16]}…)",
            )
        if chain.chain_hash(row.prev_hash, row.envelope) != row.hash:
            raise _Failed(
                HASH_CHAIN,
                f"{where} ({row.type}): its stored bytes do not hash to its recorded hash "
                "(the event was altered after it was stored)",
            )
        expected_prev = row.hash
        try:
            envelope = codec.parse_envelope(row.envelope)
        except CodecError:
            raise _Failed(HASH_CHAIN, f"{where}: the stored bytes are not an envelope") from None
        if (
            envelope.stream_id != row.stream_id
            or envelope.stream_version != row.stream_version
            or envelope.event_id != row.event_id
            or envelope.type != row.type
            or envelope.type_version != row.type_version
            or envelope.payload != row.payload
        ):
            raise _Failed(
                HASH_CHAIN,
                f"{where}: the row's columns differ from its hashed envelope "
                f"(envelope says {envelope.stream_id} #{envelope.stream_version} "
                f"{envelope.type} v{envelope.type_version})",
            )
        audit.envelopes.append(envelope)
    audit.ok(HASH_CHAIN, f"{len(audit.rows)} events linked from the genesis hash")


# --- 2. the head signature (and incomplete hands) -----------------------------------------


def _last_hand_event(audit: _Audit) -> int:
    """Index of the last event that is not a refusal (refusals may follow the end)."""
    for index in range(len(audit.rows) - 1, -1, -1):
        if audit.rows[index].type != CommandRejected.TYPE:
            return index
    return -1


def _signature(audit: _Audit) -> None:
    rows = audit.rows
    last = _last_hand_event(audit)
    ended = last >= 0 and rows[last].type == HAND_END
    mine = [s for s in audit.signatures if s.key_id == audit.key_id]
    if not mine:
        if not ended:
            others = f" ({len(audit.signatures)} under other key ids)" if audit.signatures else ""
            raise _Failed(
                INCOMPLETE,
                f"the hand has not ended: no seed revealed after {len(rows)} events, "
                f"nothing to re-derive the deal from yet{others}",
            )
        ids = sorted({s.key_id for s in audit.signatures})
        raise _Failed(
            SIGNATURE,
            f"the finished hand has no head signature under key id {audit.key_id!r}"
            + (f" (signed only under {', '.join(ids)})" if ids else ""),
        )
    for signature in mine:
        where = f"the signature of head #{signature.head_version}"
        if not chain.verify_head(
            audit.key, audit.stream_id, signature.head_version, signature.head_hash,
            signature.signature,
        ):  # fmt: skip
            raise _Failed(
                SIGNATURE,
                f"{where} does not verify under key id {audit.key_id!r} (signed with "
                "another key, or the head it names was altered)",
            )
        if not 1 <= signature.head_version <= len(rows):
            raise _Failed(
                SIGNATURE,
                f"{where}: the stream ends at #{len(rows)}; signed events are missing",
            )
        if rows[signature.head_version - 1].hash != signature.head_hash:
            raise _Failed(
                SIGNATURE, f"{where}: event #{signature.head_version}'s hash is not the signed one"
            )
    head = max(s.head_version for s in mine)
    if head < last + 1:
        raise _Failed(
            SIGNATURE,
            f"events #{head + 1}..#{last + 1} after the signed head #{head} are not "
            "covered by any signature",
        )
    if not ended:
        raise _Failed(
            INCOMPLETE, f"the hand has not ended: no seed revealed after {len(rows)} events"
        )
    unsigned = len(rows) - head
    extra = f"; {unsigned} later refusal(s) unsigned" if unsigned else ""
    audit.ok(SIGNATURE, f"head #{head} signed under key id {audit.key_id!r}{extra}")


# --- 3. decodable, and made by an engine this build replays --------------------------------


def _engine_version(audit: _Audit) -> None:
    for row, envelope in zip(audit.rows, audit.envelopes, strict=True):
        try:
            event = codec.decode_event(envelope.type, envelope.type_version, envelope.payload)
        except CodecError as exc:
            raise _Failed(
                ENGINE_VERSION, f"event #{row.stream_version} cannot be read by this build: {exc}"
            ) from None
        audit.decoded.append(AuditedEvent(row.stream_version, row.event_id, event, envelope))
    first = audit.decoded[0].event
    if not isinstance(first, HandStarted):
        raise _Failed(ENGINE_VERSION, f"the first event is {first.TYPE}, not hand_started")
    if first.engine_version not in REPLAYABLE_ENGINE_VERSIONS:
        raise _Failed(
            ENGINE_VERSION,
            f"the hand was played under engine version {first.engine_version!r}; this build "
            f"replays only {', '.join(sorted(REPLAYABLE_ENGINE_VERSIONS))}: audit it with a "
            f"build of engine version {first.engine_version!r}",
        )
    if first.algorithm not in REPLAYABLE_ALGORITHMS:
        raise _Failed(
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
    out: list[AuditedEvent] = []
    for row in rows:
        try:
            envelope = codec.parse_envelope(row.envelope)
            event = codec.decode_event(envelope.type, envelope.type_version, envelope.payload)
        except CodecError:
            break
        out.append(AuditedEvent(row.stream_version, row.event_id, event, envelope))
    return out


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
    return AuditedEvent(audited.version, audited.event_id, event, audited.envelope)


# --- 4. the commitment --------------------------------------------------------------------


def _commitment(audit: _Audit) -> None:
    started = audit.started
    assert started is not None
    revealed = [a for a in audit.decoded if isinstance(a.event, SeedRevealed)]
    if not revealed:  # pragma: no cover - the signature step stops hands without one
        raise _Failed(COMMITMENT, "no seed was revealed")
    first = revealed[0]
    assert isinstance(first.event, SeedRevealed)
    try:
        seed = bytes.fromhex(first.event.seed)
    except ValueError:
        raise _Failed(COMMITMENT, f"event #{first.version}: the revealed seed is not hex") from None
    if len(seed) != SEED_BYTES:
        raise _Failed(
            COMMITMENT,
            f"event #{first.version}: the revealed seed has {len(seed)} bytes, not {SEED_BYTES}",
        )
    if commitment(seed) != started.commitment:
        raise _Failed(
            COMMITMENT,
            f"event #{first.version}: sha256 of the revealed seed is {commitment(seed)[:16]}…, "
            f"but the hand committed to {started.commitment[:16]}… before the deal",
        )
    audit.seed = seed
    audit.master = mix_seeds(seed, [bytes.fromhex(c) for c in started.client_seeds])
    audit.ok(COMMITMENT, f"sha256(seed) = {started.commitment[:16]}… as committed at #1")


# --- 5. the deal ---------------------------------------------------------------------------


def _deal(audit: _Audit) -> None:
    started = audit.started
    assert started is not None
    rules = started.rules
    round_no = -1
    redealt: int | None = None
    drawn: list[Rank] = []
    rounds = draws = 0
    for audited in audit.decoded:
        event, where = audited.event, f"event #{audited.version}"
        if isinstance(event, Redealt):
            if event.round != round_no + 1:
                raise _Failed(
                    DEAL, f"{where}: re-deal of round {event.round} after round {round_no}"
                )
            key_commitment = commitment(round_key(audit.master, event.round))
            if event.commitment != key_commitment:
                raise _Failed(
                    DEAL,
                    f"{where}: round {event.round}'s commitment {event.commitment[:16]}… is not "
                    f"sha256 of its key from the seed ({key_commitment[:16]}…)",
                )
            redealt = event.round
        elif isinstance(event, CardsDealt):
            expected_round = round_no + 1
            if event.round != expected_round or (expected_round > 0 and redealt != event.round):
                raise _Failed(DEAL, f"{where}: deal of round {event.round} out of order")
            round_no, drawn = event.round, []
            _check_round(audit, event, where)
            rounds += 1
        elif isinstance(event, WildcardDrawn):
            if round_no < 0:
                raise _Failed(DEAL, f"{where}: a wildcard drawn before any deal")
            draws_of = rules.wildcard_draws
            if not 0 <= event.index < len(draws_of) or draws_of[event.index] != event.when:
                raise _Failed(
                    DEAL, f"{where}: the rule set has no wildcard draw {event.index} {event.when}"
                )
            rank = draw_wildcard(audit.master, round_no, event.index, drawn)
            if rank != event.rank:
                raise _Failed(
                    DEAL,
                    f"{where}: wildcard draw {event.index} of round {round_no} is "
                    f"{rank.symbol} from the seed, recorded {event.rank.symbol}",
                )
            drawn.append(event.rank)
            draws += 1
    if rounds == 0:
        raise _Failed(DEAL, "no cards were dealt")
    audit.ok(
        DEAL,
        f"{rounds} deal round(s) and {draws} wildcard draw(s) re-derived from the seed",
    )


def _check_round(audit: _Audit, event: CardsDealt, where: str) -> None:
    started = audit.started
    assert started is not None
    derived = deal(started.rules, audit.master, event.round)
    if tuple(event.hands) != derived.hands:
        seat = next(s for s in range(3) if event.hands[s] != derived.hands[s])
        raise _Failed(
            DEAL,
            f"{where}: seat {seat}'s cards in round {event.round} are not what the seed deals "
            f"(recorded {describe.ranks(event.hands[seat])}, "
            f"from the seed {describe.ranks(derived.hands[seat])})",
        )
    if tuple(event.bottom) != derived.bottom:
        raise _Failed(DEAL, f"{where}: the bottom cards of round {event.round} are not the seed's")
    golden = (derived.golden_card, derived.golden_position)
    if (event.golden_card, event.golden_position) != golden:
        raise _Failed(DEAL, f"{where}: the golden card of round {event.round} is not the seed's")
    receiver = derived.first_bidder_drawn if derived.golden_card is not None else None
    first = derived.first_bidder_drawn if started.first_bidder is None else started.first_bidder
    if event.golden_receiver != receiver or event.first_bidder != first:
        raise _Failed(
            DEAL,
            f"{where}: round {event.round}'s first bidder is seat {event.first_bidder}, "
            f"the seed and the table say seat {first}",
        )


# --- 6. every decision ---------------------------------------------------------------------


def _command_for(event: Recorded, started: HandStarted, seed: bytes) -> Command | None:
    """The command whose decision starts with ``event`` (None: no command starts so)."""
    match event:
        case HandStarted():
            return StartHand(
                event.hand_id,
                started.rules,
                event.room,
                # three seats or decide refuses the start: the record is then wrong
                cast("tuple[SeatInfo, SeatInfo, SeatInfo]", tuple(event.seats)),
                seed,
                first_bidder=event.first_bidder,
                client_seeds=tuple(bytes.fromhex(c) for c in event.client_seeds),
                balances=event.balances,
                show_before_deal=frozenset(event.show_before_deal),
            )
        case BidMade():
            return Bid(event.seat, event.action, event.score)
        case PlayMade():
            return Play(event.seat, card_counts(event.cards), event.reading)
        case Passed():
            return Pass(event.seat)
        case CardsShown() if event.when != "before_deal":
            return ShowCards(event.seat, event.cards_held)
        case PlayerDisconnected():
            return Disconnect(event.seat)  # an Escape outside bean rooms decides the same
        case PlayerReconnected():
            return Reconnect(event.seat)
        case PlayerEscaped():
            return Escape(event.seat)
    return None


def _same(expected: Event, recorded: Recorded) -> bool:
    """Equal, except what the multiplier and settlement checks judge on their own."""
    if isinstance(expected, HandSettled):
        return isinstance(recorded, HandSettled)
    if isinstance(expected, PlayerEscaped):
        return isinstance(recorded, PlayerEscaped) and recorded.seat == expected.seat
    return expected == recorded


def _decide(state: HandState, command: Command, seed: bytes, where: str) -> list[Event] | Rejection:
    try:
        return decide(state, command, seed)
    except (SeedRequired, SettlementError, ValueError, TypeError, AssertionError) as exc:
        raise _Failed(DECISIONS, f"{where}: the rules cannot decide it: {exc}") from None


def _decisions(audit: _Audit) -> None:
    started = audit.started
    assert started is not None
    decoded, seed = audit.decoded, audit.seed
    state = HandState()
    index = accepted = refused = 0
    while index < len(decoded):
        audited = decoded[index]
        event, where = audited.event, f"event #{audited.version}"
        if isinstance(event, CommandRejected):
            text = describe.command(event.command)
            result = _decide(state, event.command, seed, where)
            if not isinstance(result, Rejection):
                raise _Failed(
                    DECISIONS,
                    f"{where}: seat {event.seat}'s {text} was refused ({event.reason.value}), "
                    f"but the rules accept it here: {describe.events(result)}",
                )
            if result.code is not event.reason:
                raise _Failed(
                    DECISIONS,
                    f"{where}: seat {event.seat}'s {text} was refused as {event.reason.value}; "
                    f"the rules refuse it as {result.code.value} ({result.message})",
                )
            refused += 1
            index += 1
            continue
        command = _command_for(event, started, seed)
        if command is None:
            raise _Failed(
                DECISIONS,
                f"{where}: {event.TYPE} does not start any decision (no command makes it)",
            )
        result = _decide(state, command, seed, where)
        if isinstance(result, Rejection):
            raise _Failed(
                DECISIONS,
                f"{where}: {describe.event(event, state)} was accepted, but the rules refuse "
                f"it: {result.code.value} ({result.message})",
            )
        recorded = decoded[index : index + len(result)]
        for offset, expected in enumerate(result):
            at = f"event #{audited.version + offset}"
            if offset >= len(recorded):
                raise _Failed(
                    DECISIONS,
                    f"{at}: the record stops inside a decision; the rules make "
                    f"{describe.event(expected, state)} next",
                )
            actual = recorded[offset].event
            if not _same(expected, actual):
                raise _Failed(
                    DECISIONS,
                    f"{at}: recorded {describe.recorded(actual, state)}; the rules make "
                    f"{describe.event(expected, state)}",
                )
        for offset, expected in enumerate(result):
            # Fold what the rules made (equal to the record but for the fields the next
            # checks judge): its cards are the very objects of the hand, so the fold
            # takes its fast path. The settlement and escape are folded as recorded.
            actual_event = recorded[offset].event
            if isinstance(actual_event, HandSettled):
                audit.before_settled, audit.settled = state, actual_event
                expected = actual_event
            elif isinstance(actual_event, PlayerEscaped):
                assert isinstance(expected, PlayerEscaped)
                audit.escaped, audit.expected_escape = actual_event, expected
                expected = actual_event
            state = evolve(state, expected)
        accepted += 1
        index += len(result)
    if audit.settled is None:
        raise _Failed(DECISIONS, "the hand revealed its seed but was never settled")
    audit.ok(
        DECISIONS,
        f"{accepted} decisions replayed to the same events, {refused} refusal(s) confirmed",
    )


# --- 7. the multiplier ---------------------------------------------------------------------


def _first_difference(recorded: MultiplierBreakdown, replayed: MultiplierBreakdown) -> str:
    for index, (a, b) in enumerate(zip(recorded.factors, replayed.factors, strict=False)):
        if a != b:
            return (
                f"factor {index + 1}: recorded {describe.factor(a)}, replayed {describe.factor(b)}"
            )
    if len(recorded.factors) != len(replayed.factors):
        return f"{len(recorded.factors)} factors recorded, {len(replayed.factors)} replayed"
    return "equal"  # pragma: no cover


def _multiplier(audit: _Audit) -> None:
    state, settled = audit.before_settled, audit.settled
    assert state is not None and settled is not None
    replayed = state.multiplier
    if settled.multiplier != replayed:
        raise _Failed(
            MULTIPLIER,
            f"the recorded breakdown ×{settled.multiplier.total} is not the replayed "
            f"×{replayed.total}: {_first_difference(settled.multiplier, replayed)}",
        )
    if settled.ledger.multiplier != replayed.total:
        raise _Failed(
            MULTIPLIER,
            f"the ledger says ×{settled.ledger.multiplier}, the breakdown multiplies to "
            f"×{replayed.total}",
        )
    if audit.escaped is not None:
        assert audit.expected_escape is not None
        recorded, expected = (
            audit.escaped.escape_multiplier,
            audit.expected_escape.escape_multiplier,
        )
        if recorded != expected:
            raise _Failed(
                MULTIPLIER,
                f"the escape multiplier ×{recorded.total} is not the replayed ×{expected.total} "
                f"(every bomb still held counted): {_first_difference(recorded, expected)}",
            )
    audit.ok(
        MULTIPLIER,
        f"×{replayed.total} from {len(replayed.factors)} factor(s), as replayed",
    )


# --- 8. the settlement ---------------------------------------------------------------------


def _settlement(audit: _Audit) -> None:
    state, settled = audit.before_settled, audit.settled
    assert state is not None and settled is not None
    try:
        outcome = settlement_outcome(state, audit.escaped)
        ledger = settle(outcome)
    except ValueError as exc:  # SettlementError is one
        raise _Failed(SETTLEMENT, f"the hand cannot be settled from its events: {exc}") from None
    if (settled.landlord, settled.base) != (outcome.landlord, outcome.base):
        raise _Failed(
            SETTLEMENT,
            f"settled with landlord seat {settled.landlord} at base {settled.base}; the hand "
            f"had seat {outcome.landlord} at base {outcome.base}",
        )
    if settled.ledger != ledger:
        raise _Failed(SETTLEMENT, describe.ledger_difference(settled.ledger, ledger))
    audit.ok(
        SETTLEMENT,
        f"deltas {list(ledger.deltas)}, system {ledger.system}: recomputed from scratch",
    )


_STEPS = (
    _hash_chain,
    _signature,
    _engine_version,
    _commitment,
    _deal,
    _decisions,
    _multiplier,
    _settlement,
)
