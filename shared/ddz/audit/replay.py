"""What settlement is asked, rebuilt from a replayed hand (RULES.md §10).

The audit recomputes the ledger from scratch: the outcome below comes only from the
replayed state (who was landlord at what base, who won, the multiplier, the balances
recorded at the start, who escaped), and ``settle()`` turns it into a ledger.
"""

from __future__ import annotations

from ddz.domain.hand import HandState
from ddz.domain.hand.events import PlayerEscaped
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import HandOutcome


def settlement_outcome(state: HandState, escaped: PlayerEscaped | None) -> HandOutcome:
    """The outcome of the ended hand ``state`` (folded up to its ``HandEnded``).

    ``escaped``: the bean-room escape that ended the hand, if one did (§10.3); its
    escape multiplier counts every bomb still held. Points hands pass their first
    disconnect as the escapee (§10.2); bean hands penalise leaving, not dropping.
    """
    rules = state.rules
    if escaped is not None:
        # Before a landlord is known, the next seat in play order takes the landlord's
        # share (the hand aggregate's Decision, docs/DECISIONS.md).
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
