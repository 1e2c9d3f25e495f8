"""What leaving a hand in play costs the player, in this room's terms (RULES.md §10):
said before ``ddz play`` lets a player leave, and on stderr when the input closes."""

from __future__ import annotations

import math
from fractions import Fraction

from ddz.v1 import hand_events_pb2, table_pb2

POINTS = hand_events_pb2.SCORING_POINTS
CT_POINTS = hand_events_pb2.SCORING_CT_POINTS
BEANS = hand_events_pb2.SCORING_BEANS


def escape_cost(room: table_pb2.Room | None, view: table_pb2.PlayerView | None) -> str:
    """One sentence: what an escape from the hand in ``view`` costs in ``room``."""
    if room is None:
        return "leaving now is an escape (§10)"
    settings = room.settings
    scoring = room.rules.scoring
    if scoring == CT_POINTS:
        penalty = settings.escape_penalty * max(1, settings.initial_multiplier)
        return (
            f"leaving now is an escape: you pay the escape penalty of {penalty} points "
            "(§10.2) besides the hand's result, and the bot plays your seat to the end"
        )
    if scoring == BEANS:
        return _bean_cost(room, view)
    return (
        "leaving now is an escape: no penalty in this room (§10.1), but the bot plays "
        "your seat to the end and you settle as it plays"
    )


def _bean_cost(room: table_pb2.Room, view: table_pb2.PlayerView | None) -> str:
    """§10.3: the escapee pays as if the multiplier were at least the floor (landlord
    20x, farmer 10x by default) times the initial one; X has the role coefficient, and
    in a wildcard room x 0.25 and the hand cap."""
    settings = room.settings
    rule = settings.bean_escape
    base = view.base if view is not None and view.base else 1
    initial = max(1, settings.initial_multiplier)
    wildcard = len(room.rules.wildcard_draws) > 0
    wc = settings.wildcard_coefficient
    coefficient = Fraction(wc.numerator, wc.denominator or 1) if wc.numerator else Fraction(1, 4)

    def least(floor: int, shares: int) -> int:
        x = Fraction(base * initial * floor * shares)
        if wildcard:
            x = min(x * coefficient, Fraction(settings.hand_cap))
        return math.floor(x * max(1, settings.coefficient))

    farmer = least(rule.farmer_floor or 10, 1)
    landlord = least(rule.landlord_floor or 20, 2)
    landlord_seat = view.landlord if view is not None and view.HasField("landlord") else None
    if landlord_seat is None:
        amount = f"at least {farmer} beans (as a farmer; {landlord} as the landlord)"
    elif view is not None and landlord_seat == view.seat:
        amount = f"at least {landlord} beans"
    else:
        amount = f"at least {farmer} beans"
    fee = f", plus the fee of {settings.fee}" if settings.fee else ""
    return (
        f"leaving now is an escape: the hand ends and you pay {amount}{fee} (§10.3: "
        "more when the bombs held make the multiplier 10 or more)"
    )
