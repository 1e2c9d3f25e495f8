"""In-process self-play: built-in players drive a hand through its commands.

No services, no I/O: ``play_hand`` is what ``ddz selfplay`` and the benchmark run,
and what the property tests use to generate thousands of hands.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from ddz.domain.hand import (
    Command,
    Event,
    Hand,
    HandState,
    Phase,
    Rejection,
    SeatInfo,
    StartHand,
    view_for,
)
from ddz.domain.players import Player
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings

SEATS = (SeatInfo("bot-0", True), SeatInfo("bot-1", True), SeatInfo("bot-2", True))


class RejectedCommand(RuntimeError):
    """A built-in player sent a command the hand refused: a bug in the player."""

    def __init__(self, command: Command, rejection: Rejection) -> None:
        super().__init__(f"{command!r} rejected: {rejection.code.value}: {rejection.message}")
        self.command = command
        self.rejection = rejection


def hand_seed(run_seed: bytes, index: int) -> bytes:
    """The server seed of hand ``index`` of a self-play run (32 bytes)."""
    return hmac.digest(run_seed, b"selfplay/" + index.to_bytes(8, "big"), "sha256")


def run_seed(text: str) -> bytes:
    return hashlib.sha256(text.encode("utf-8")).digest()


def play_hand(
    rules: RuleSet,
    room: RoomSettings,
    players: Sequence[Player],
    seed: bytes,
    *,
    hand_id: str = "selfplay",
    first_bidder: int | None = None,
    balances: tuple[int, int, int] | None = None,
) -> tuple[list[Event], HandState]:
    """Play one hand to its end: (every event, the final state)."""
    hand = Hand()
    start = StartHand(
        hand_id, rules, room, SEATS, seed, first_bidder=first_bidder, balances=balances
    )
    result = hand.execute(start)
    if isinstance(result, Rejection):
        raise RejectedCommand(start, result)
    while hand.state.phase is not Phase.ENDED:
        seat = hand.state.turn
        command = players[seat].act(view_for(hand.state, seat))
        result = hand.execute(command)
        if isinstance(result, Rejection):
            raise RejectedCommand(command, result)
    return hand.events, hand.state
