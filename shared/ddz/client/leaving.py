"""What leaving a hand in play costs the player, in this room's terms (RULES.md §10):
said before ``ddz play`` lets a player leave, and on stderr when the input closes. The
figures are ``ddz.domain.settlement``'s, worked out for the room the table sent."""

from __future__ import annotations

from ddz.adapters import codec
from ddz.domain.multipliers import MultiplierBreakdown, initial_factor
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import HandOutcome, RoomSettings, bean_escape, ct_escape_penalty
from ddz.v1 import hand_events_pb2, table_pb2

POINTS = hand_events_pb2.SCORING_POINTS
CT_POINTS = hand_events_pb2.SCORING_CT_POINTS
BEANS = hand_events_pb2.SCORING_BEANS


def escape_cost(room: table_pb2.Room | None, view: table_pb2.PlayerView | None) -> str:
    """One sentence: what an escape from the hand in ``view`` costs in ``room``."""
    if room is None:
        return "leaving now is an escape (§10)"
    scoring = room.rules.scoring
    try:
        settings = codec.room_from_pb(room.settings)
    except ValueError:  # CodecError is one: a room the table described badly
        return "leaving now is an escape (§10)"
    if scoring == CT_POINTS:
        penalty = ct_escape_penalty(_escape(room, settings, None, escapee=0))
        return (
            f"leaving now is an escape: you pay the escape penalty of {penalty} points "
            "(§10.2) besides the hand's result, and the bot plays your seat to the end"
        )
    if scoring == BEANS:
        return _bean_cost(room, settings, view)
    return (
        "leaving now is an escape: no penalty in this room (§10.1), but the bot plays "
        "your seat to the end and you settle as it plays"
    )


def _escape(
    room: table_pb2.Room, settings: RoomSettings, view: table_pb2.PlayerView | None, escapee: int
) -> HandOutcome:
    """An escape now, by ``escapee`` with seat 0 the landlord, before any bomb (§10)."""
    return HandOutcome(
        scoring=Scoring.BEANS,
        room=settings,
        landlord=0,
        base=view.base if view is not None and view.base else 1,
        multiplier=MultiplierBreakdown((initial_factor(settings.initial_multiplier),)),
        winner=None,
        wildcard_room=len(room.rules.wildcard_draws) > 0,
        escapee=escapee,
    )


def _bean_cost(
    room: table_pb2.Room, settings: RoomSettings, view: table_pb2.PlayerView | None
) -> str:
    """§10.3: the escapee pays as if the multiplier were at least the floor (landlord
    20x, farmer 10x by default) times the initial one; X has the role coefficient, and
    in a wildcard room x 0.25 and the hand cap."""
    farmer = bean_escape(_escape(room, settings, view, escapee=1), 1).penalty
    landlord = bean_escape(_escape(room, settings, view, escapee=0), 0).penalty
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
