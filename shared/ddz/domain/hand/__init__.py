"""One hand of Dou Dizhu as an event-sourced aggregate (RULES.md §2, §5-§10).

``decide(state, command)`` -> events or a ``Rejection``; ``evolve(state, event)``
folds; ``replay(events)`` rebuilds; ``view_for(state, seat)`` is what one seat sees.
A stream records ``Recorded`` values: its events and the ``CommandRejected`` that
``hand_events`` filters out before ``replay``.
"""

from .aggregate import Hand
from .commands import (
    Bid,
    BidAction,
    Command,
    Disconnect,
    DisconnectReason,
    Escape,
    Pass,
    Play,
    Reconnect,
    Resume,
    SeatInfo,
    ShowCards,
    StartHand,
    TimeOut,
)
from .decide import decide
from .events import EVENT_TYPES, AutoPlayEnd, Event, MoveBy
from .people import unplayed_bombs
from .recorded import CommandRejected, Recorded, SeatCommand, hand_events
from .rejection import Rejection, RejectReason, SeedRequired
from .state import HandState, Phase, evolve, next_first_bidder, replay
from .view import PlayerView, view_for

__all__ = [
    "EVENT_TYPES",
    "AutoPlayEnd",
    "Bid",
    "BidAction",
    "Command",
    "CommandRejected",
    "Disconnect",
    "DisconnectReason",
    "Escape",
    "Event",
    "Hand",
    "HandState",
    "MoveBy",
    "Pass",
    "Phase",
    "Play",
    "PlayerView",
    "Reconnect",
    "Recorded",
    "RejectReason",
    "Rejection",
    "Resume",
    "SeatCommand",
    "SeatInfo",
    "SeedRequired",
    "ShowCards",
    "StartHand",
    "TimeOut",
    "decide",
    "evolve",
    "hand_events",
    "next_first_bidder",
    "replay",
    "unplayed_bombs",
    "view_for",
]
