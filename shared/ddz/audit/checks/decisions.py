"""Checks 6 to 8: every decision followed the rules, and the multiplier and the ledger
are what the rules make of the replayed hand."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ddz.audit.checks import describe
from ddz.audit.checks.context import Audit, CheckFailed
from ddz.audit.checks.replay import settlement_outcome, start_command
from ddz.audit.checks.results import DECISIONS, MULTIPLIER, SETTLEMENT
from ddz.domain.cards import card_counts
from ddz.domain.hand import (
    Bid,
    Command,
    CommandRejected,
    Disconnect,
    Escape,
    Event,
    HandState,
    Pass,
    Play,
    Reconnect,
    Recorded,
    Rejection,
    Resume,
    SeedRequired,
    ShowCards,
    TimeOut,
    decide,
    evolve,
)
from ddz.domain.hand.events import (
    AutoPlayEnd,
    AutoPlayEnded,
    BidMade,
    CardsShown,
    HandSettled,
    HandStarted,
    MoveBy,
    Passed,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    PlayMade,
    TurnTimedOut,
)
from ddz.domain.multipliers import MultiplierBreakdown
from ddz.domain.settlement import SettlementError, settle

# --- 6. every decision ---------------------------------------------------------------------


def _show(event: CardsShown) -> Command | None:
    # a show before the deal is part of the start, not a command of its own
    return None if event.when == "before_deal" else ShowCards(event.seat, event.cards_held)


# The command whose decision starts with an event of each type. Events of other types
# (a deal, a draw, the landlord, the end ...) only ever follow a command's first event.
def _by_bot(event: BidMade | PlayMade | Passed) -> bool:
    return event.acted_by is not None and event.acted_by is not MoveBy.PLAYER


_COMMAND_FOR: dict[type, Callable[[Any], Command | None]] = {
    BidMade: lambda e: Bid(e.seat, e.action, e.score, _by_bot(e)),
    PlayMade: lambda e: Play(e.seat, card_counts(e.cards), e.reading, _by_bot(e)),
    Passed: lambda e: Pass(e.seat, _by_bot(e)),
    CardsShown: _show,
    # an Escape outside bean rooms too (the same event, reason LEFT)
    PlayerDisconnected: lambda e: Disconnect(e.seat, e.reason),
    PlayerReconnected: lambda e: Reconnect(e.seat),
    PlayerEscaped: lambda e: Escape(e.seat),
    TurnTimedOut: lambda e: TimeOut(e.seat, e.deadline_ms, e.turn_seconds, e.auto_play_after),
    # ended by the seat's own move: part of that move's decision, after its first event
    AutoPlayEnded: lambda e: Resume(e.seat) if e.reason is AutoPlayEnd.RESUMED else None,
}
_MOVES = (BidMade, PlayMade, Passed)


def _as_recorded(expected: Event, actual: Recorded) -> Event:
    """A move recorded before ``acted_by`` existed is compared without it: the rules
    make it now, the record of then could not say it (old hands audit as before)."""
    if (
        isinstance(expected, _MOVES)
        and expected.acted_by is not None
        and type(actual) is type(expected)
        and actual.acted_by is None
    ):
        return replace(expected, acted_by=None)
    return expected


# Decoded events recur from hand to hand as the very same objects (the decode cache of
# ``checks``), so their commands are made once: keyed by the event's identity, with the
# event kept alive beside it so that the identity cannot be reused.
_COMMANDS: dict[int, tuple[Recorded, Command | None]] = {}
_COMMANDS_MAX = 8192  # emptied when full, as the decode cache (``run._DECODED_MAX``)


def _command_for(event: Recorded) -> Command | None:
    known = _COMMANDS.get(id(event))
    if known is not None and known[0] is event:
        return known[1]
    make = _COMMAND_FOR.get(type(event))
    command = None if make is None else make(event)
    if len(_COMMANDS) >= _COMMANDS_MAX:
        _COMMANDS.clear()
    _COMMANDS[id(event)] = (event, command)
    return command


# Fields the multiplier and settlement checks judge on their own (a forged ledger must
# be named by the settlement check, not here): compared only for what decides them.
_JUDGED_LATER: dict[type, Callable[[Any, Any], bool]] = {
    HandSettled: lambda expected, recorded: isinstance(recorded, HandSettled),
    PlayerEscaped: lambda expected, recorded: (
        isinstance(recorded, PlayerEscaped) and recorded.seat == expected.seat
    ),
}


def _decide(
    state: HandState, command: Command, seed: bytes, version: int
) -> list[Event] | Rejection:
    try:
        return decide(state, command, seed)
    except _RULES_FAIL as exc:
        raise _cannot_decide(version, exc) from None


def _cannot_decide(version: int, exc: Exception) -> CheckFailed:
    return CheckFailed(DECISIONS, f"event #{version}: the rules cannot decide it: {exc}")


def _check_refusal(state: HandState, rejected: CommandRejected, seed: bytes, version: int) -> None:
    result = _decide(state, rejected.command, seed, version)
    if isinstance(result, Rejection) and result.code is rejected.reason:
        return
    text = f"event #{version}: seat {rejected.seat}'s {describe.command(rejected.command)}"
    if not isinstance(result, Rejection):
        raise CheckFailed(
            DECISIONS,
            f"{text} was refused ({rejected.reason.value}), but the rules accept it here: "
            f"{describe.events(result)}",
        )
    raise CheckFailed(
        DECISIONS,
        f"{text} was refused as {rejected.reason.value}; the rules refuse it as "
        f"{result.code.value} ({result.message})",
    )


def check_decisions(audit: Audit) -> None:
    started = audit.started
    assert started is not None
    decoded, seed = audit.decoded, audit.seed
    state = HandState()
    index = accepted = refused = 0
    total = len(decoded)
    # The loop runs for every stored event: names bound once, messages built only on
    # failure, the command of a recurring event taken from its cache (_command_for).
    events = [audited.event for audited in decoded]
    known_command, fold = _COMMANDS.get, evolve
    while index < total:
        event = events[index]
        if isinstance(event, CommandRejected):
            _check_refusal(state, event, seed, decoded[index].version)
            refused += 1
            index += 1
            continue
        if isinstance(event, HandStarted) and index == 0 and audit.start_decision is not None:
            _check_start(audit, event, index)
            result: list[Event] | Rejection = audit.start_decision  # made by the deal check
        else:
            if isinstance(event, HandStarted):
                _check_start(audit, event, index)
                command: Command | None = start_command(event, seed)
            else:
                known = known_command(id(event))
                command = known[1] if known is not None and known[0] is event else None
                if command is None:
                    command = _command_for(event)
            if command is None:
                raise CheckFailed(
                    DECISIONS,
                    f"event #{decoded[index].version}: {event.TYPE} does not start any "
                    "decision (no command makes it here)",
                )
            try:  # _decide, inlined: the event's version is looked up only on failure
                result = decide(state, command, seed)
            except _RULES_FAIL as exc:
                raise _cannot_decide(decoded[index].version, exc) from None
        if isinstance(result, Rejection):
            raise CheckFailed(
                DECISIONS,
                f"event #{decoded[index].version}: {describe.recorded(event, state)} was "
                f"accepted, but the rules refuse it: {result.code.value} ({result.message})",
            )
        for expected in result:
            if index >= total:
                raise CheckFailed(
                    DECISIONS,
                    f"event #{total + 1}: the record stops inside a decision; the rules make "
                    f"{describe.event(expected, state)} next",
                )
            actual = events[index]
            if expected != actual:
                expected = _as_recorded(expected, actual)
            if expected != actual:
                judged_later = _JUDGED_LATER.get(type(expected))
                if judged_later is None or not judged_later(expected, actual):
                    raise CheckFailed(
                        DECISIONS,
                        f"event #{decoded[index].version}: recorded "
                        f"{describe.recorded(actual, state)}; the rules make "
                        f"{describe.event(expected, state)}",
                    )
                # the settlement and the escape are folded as recorded
                if isinstance(actual, HandSettled):
                    audit.before_settled, audit.settled = state, actual
                elif isinstance(actual, PlayerEscaped):
                    assert isinstance(expected, PlayerEscaped)
                    audit.escaped, audit.expected_escape = actual, expected
                assert not isinstance(actual, CommandRejected)  # judged_later said so
                expected = actual
            elif type(expected) in _KEPT:
                if isinstance(expected, HandSettled):
                    audit.before_settled, audit.settled = state, expected
                else:
                    assert isinstance(expected, PlayerEscaped)
                    audit.escaped, audit.expected_escape = expected, expected
            # Fold what the rules made (equal to the record): its cards are the very
            # objects of the hand, so the fold takes its fast path.
            state = fold(state, expected)
            index += 1
        accepted += 1
    if audit.settled is None:
        raise CheckFailed(DECISIONS, "the hand revealed its seed but was never settled")
    audit.ok(
        DECISIONS,
        f"{accepted} decisions replayed to the same events, {refused} refusal(s) confirmed",
    )


_RULES_FAIL = (SeedRequired, SettlementError, ValueError, TypeError, AssertionError)
_KEPT = frozenset({HandSettled, PlayerEscaped})  # what the multiplier and settlement read


def _check_start(audit: Audit, event: HandStarted, index: int) -> None:
    if index or f"hand-{event.hand_id}" != audit.stream_id:
        raise CheckFailed(
            DECISIONS,
            f"event #{audit.decoded[index].version} starts hand {event.hand_id!r} in stream "
            f"{audit.stream_id}",
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


def check_multiplier(audit: Audit) -> None:
    state, settled = audit.before_settled, audit.settled
    assert state is not None and settled is not None
    replayed = state.multiplier
    if settled.multiplier != replayed:
        raise CheckFailed(
            MULTIPLIER,
            f"the recorded breakdown ×{settled.multiplier.total} is not the replayed "
            f"×{replayed.total}: {_first_difference(settled.multiplier, replayed)}",
        )
    if settled.ledger.multiplier != replayed.total:
        raise CheckFailed(
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
            raise CheckFailed(
                MULTIPLIER,
                f"the escape multiplier ×{recorded.total} is not the replayed ×{expected.total} "
                f"(every bomb still held counted): {_first_difference(recorded, expected)}",
            )
    audit.ok(
        MULTIPLIER,
        f"×{replayed.total} from {len(replayed.factors)} factor(s), as replayed",
    )


# --- 8. the settlement ---------------------------------------------------------------------


def check_settlement(audit: Audit) -> None:
    state, settled = audit.before_settled, audit.settled
    assert state is not None and settled is not None
    try:
        outcome = settlement_outcome(state, audit.escaped)
        ledger = settle(outcome)
    except ValueError as exc:  # SettlementError is one
        raise CheckFailed(
            SETTLEMENT, f"the hand cannot be settled from its events: {exc}"
        ) from None
    if (settled.landlord, settled.base) != (outcome.landlord, outcome.base):
        raise CheckFailed(
            SETTLEMENT,
            f"settled with landlord seat {settled.landlord} at base {settled.base}; the hand "
            f"had seat {outcome.landlord} at base {outcome.base}",
        )
    if settled.ledger != ledger:
        raise CheckFailed(SETTLEMENT, describe.ledger_difference(settled.ledger, ledger))
    audit.ok(
        SETTLEMENT,
        f"deltas {list(ledger.deltas)}, system {ledger.system}: recomputed from scratch",
    )
