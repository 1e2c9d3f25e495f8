"""A player waiting in a room's queue (``QueuedTicket``) and its key (``ticket_key``), as
the table's lobby and the queue's bucket (``ddz.adapters.messaging.room_queue``) keep
them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class QueuedTicket:
    """A player waiting in a room's queue, as the bucket keeps them."""

    room_id: str
    player_id: str
    joined: float  # Unix seconds: the bot fill wait counts from here
    balance: int | None  # as checked when they joined (None: the room checks none)

    @property
    def key(self) -> str:
        return ticket_key(self.room_id, self.player_id)


def ticket_key(room_id: str, player_id: str) -> str:
    """Room and player ids are letters, digits, '_' and '-': valid KV key tokens."""
    return f"{room_id}.{player_id}"
