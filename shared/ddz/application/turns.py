"""A running turn clock as the table's use cases and its views see it (``TurnDeadline``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class TurnDeadline:
    """A running turn clock: the seat on turn, its deadline (Unix seconds, server time)
    and the seconds the turn was given."""

    seat: int
    deadline: float
    seconds: float
