"""Commands and outcomes rebuilt from a recorded hand.

``start_command``: the ``StartHand`` a hand's ``HandStarted`` and revealed seed stand for.
``settlement_outcome``: what settlement is asked (RULES.md §10), from the replayed state
only (who was landlord at what base, who won, the multiplier, the balances recorded at
the start, who escaped); ``settle()`` turns it into the ledger the audit compares.
"""

from __future__ import annotations

from typing import cast

from ddz.domain.hand import HandState, SeatInfo, StartHand
from ddz.domain.hand.events import HandStarted, PlayerEscaped
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import HandOutcome


def start_command(started: HandStarted, seed: bytes) -> StartHand:
    """The start the hand recorded, under its recorded rule set (never the default of
    its variant's name), with the revealed seed."""
    return StartHand(
        started.hand_id,
        started.rules,
        started.room,
        # three seats, or the aggregate refuses the start: the record is then wrong
        cast("tuple[SeatInfo, SeatInfo, SeatInfo]", tuple(started.seats)),
        seed,
        first_bidder=started.first_bidder,
        client_seeds=tuple(bytes.fromhex(c) for c in started.client_seeds),
        balances=started.balances,
        show_before_deal=frozenset(started.show_before_deal),
    )


def settlement_outcome(state: HandState, escaped: PlayerEscaped | None) -> HandOutcome:
    """The outcome of the ended hand ``state`` (folded up to its ``HandEnded``).

    ``escaped``: the bean-room escape that ended the hand, if one did (§10.3); its
    escape multiplier counts every bomb still held. Points hands pass their first
    disconnect as the escapee (§10.2); bean hands penalise leaving, not dropping.
    """
    rules = state.rules
    if escaped is not None:
        # Before a landlord is known, the next seat in play order takes the landlord's
        # share (docs/RULE_DECISIONS.md, §10.3 "Escape").
        landlord = state.landlord if state.landlord is not None else (escaped.seat + 1) % 3
        escapee: int | None = escaped.seat
        escape_multiplier = escaped.escape_multiplier
    else:
        if state.landlord is None:
            raise ValueError("the hand ended without a landlord and without an escape")
        landlord = state.landlord
        escapee = None if rules.scoring is Scoring.BEANS else state.escapee
        escape_multiplier = None
    return HandOutcome(
        scoring=rules.scoring,
        room=state.room,
        landlord=landlord,
        base=state.base,
        multiplier=state.multiplier,
        winner=state.winner,
        wildcard_room=rules.wildcard_count > 0,
        balances=state.balances,
        escapee=escapee,
        escape_multiplier=escape_multiplier,
    )
