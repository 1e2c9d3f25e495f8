"""What a hand's stream records: its events and the commands the rules refused.

``CommandRejected`` is recorded in a hand's stream for audits ("my play was refused")
but is not a domain event: the hand's state never folds it, so ``hand_events``
filters it out before ``replay``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeAlias

from .commands import Bid, Disconnect, Escape, Pass, Play, Reconnect, Resume, ShowCards, TimeOut
from .events import Event
from .rejection import RejectReason

SeatCommand: TypeAlias = (
    Bid | ShowCards | Play | Pass | Disconnect | Reconnect | Escape | TimeOut | Resume
)
"""A command one seat sends to the rules service (``StartHand`` is the dealer's)."""


@dataclass(frozen=True, slots=True)
class CommandRejected:
    """A command the rules refused, with the domain's reason (RULES.md via decide).

    Lives in the hand's stream for audits ("my play was refused") but changes
    nothing: ``evolve`` does not know it, so callers replay ``hand_events(...)``.
    """

    TYPE = "command_rejected"
    VERSION = 1
    HIDDEN = False

    command: SeatCommand
    reason: RejectReason
    message: str
    request_id: str = ""

    @property
    def seat(self) -> int:
        return self.command.seat


Recorded: TypeAlias = Event | CommandRejected
"""Anything recorded in a hand's stream."""


def hand_events(recorded: Iterable[Recorded]) -> list[Event]:
    """The domain events of a stream, without rejections (what ``replay`` folds)."""
    return [event for event in recorded if not isinstance(event, CommandRejected)]
