"""The bot service's use cases besides playing: a hint for a seat, and this instance's
move statistics (``BotService.Suggest``, ``GetStats``)."""

from __future__ import annotations

from dataclasses import dataclass

from ddz.application.errors import Reason, Refusal
from ddz.domain.hand import Command, Phase, view_for
from ddz.domain.players import Player

from .autoplay import AutoPlay
from .ports import HandLookup
from .stats import MoveStats

SEATS = 3


@dataclass(frozen=True, slots=True)
class Suggestion:
    command: Command
    version: int  # the hand's stream version the suggestion was made on


@dataclass(frozen=True, slots=True)
class Stats:
    moves: MoveStats
    hands_in_play: int
    player: str  # the player kind playing this instance's seats


class Suggest:
    def __init__(self, hands: HandLookup, player: Player) -> None:
        self.hands = hands
        self.player = player

    async def __call__(self, hand_id: str, seat: int, min_version: int, wait: float) -> Suggestion:
        """The move ``player`` would make for ``seat``, once the hand has reached
        ``min_version`` (waiting up to ``wait`` seconds for it)."""
        fold = await self.hands(hand_id)
        if fold is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no hand {hand_id!r}")
        if min_version > fold.version:
            await fold.wait_for(min_version, wait)
        if not 0 <= seat < SEATS:
            raise Refusal.invalid(f"no seat {seat} (seats are 0, 1, 2)", reason=Reason.UNKNOWN_SEAT)
        state = fold.state
        if state.phase not in (Phase.BIDDING, Phase.PLAYING):
            raise Refusal.precondition(
                Reason.WRONG_PHASE, f"nothing to suggest: the hand is {state.phase.value}"
            )
        if state.turn != seat:
            raise Refusal.precondition(Reason.NOT_YOUR_TURN, f"it is seat {state.turn}'s turn")
        # The seat's own view only: the suggestion can use nothing it may not see.
        return Suggestion(self.player.act(view_for(state, seat)), fold.version)


class GetStats:
    def __init__(self, autoplay: AutoPlay, player_kind: str) -> None:
        self.autoplay = autoplay
        self.player_kind = player_kind

    def __call__(self) -> Stats:
        return Stats(self.autoplay.stats, self.autoplay.hands_in_play, self.player_kind)
