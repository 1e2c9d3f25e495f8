"""Whose eyes an account of a hand is written for: which seats' cards it may show.

The operator's terminal (``ddz audit``, the default ``EVERY_SEAT``) shows every seat's
cards, of a hand in play too: the operator holds the store. The desk shows no card of a
hand in play (``DESK``), and one seat's view (``Sight(seat, ...)``) shows that seat's
cards and what the table showed everyone: the bottom once the landlord takes it, shown
cards, plays, the cards left at the end. ``ddz.audit.account.transcript`` and
``ddz.audit.account.snapshot`` ask ``shows`` before they write a card.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Sight:
    seat: int | None = None  # one seat's view; None: every seat
    hide_in_play: bool = False  # no seat's cards while the hand has not ended

    def shows(self, seat: int, ended: bool) -> bool:
        """Whether the cards ``seat`` holds may be shown (``ended``: the hand is over)."""
        if self.hide_in_play and not ended:
            return False
        return self.seat is None or self.seat == seat

    def shows_all(self, ended: bool) -> bool:
        """Whether every seat's cards may be shown (the deal as dealt, the bottom)."""
        return self.seat is None and (ended or not self.hide_in_play)


EVERY_SEAT = Sight()
"""The operator's: every card (``ddz audit``)."""

DESK = Sight(hide_in_play=True)
"""The desk's: every card of an ended hand, none of a hand in play."""
