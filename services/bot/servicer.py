"""BotService: hints for a seat, and this instance's move statistics."""

from __future__ import annotations

from typing import Any

import grpc
from ddz.adapters.grpc_server import abort
from ddz.adapters.hand_feed import HandFeed, HandFold, read_fold
from ddz.adapters.views import move_to_pb
from ddz.domain.hand import Phase, view_for
from ddz.domain.players import Player
from ddz.v1 import bot_pb2, bot_pb2_grpc

from .autoplay import AutoPlay


class BotServicer(bot_pb2_grpc.BotServiceServicer):
    def __init__(
        self, feed: HandFeed, autoplay: AutoPlay, player: Player, player_kind: str
    ) -> None:
        self.feed = feed
        self.autoplay = autoplay
        self.player = player
        self.player_kind = player_kind

    async def Suggest(
        self, request: bot_pb2.SuggestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.SuggestResponse:
        fold = await self._hand(request.hand_id, context)
        if request.min_version > fold.version:
            remaining = context.time_remaining()
            await fold.wait_for(request.min_version, min(2.0, remaining or 2.0))
        seat = request.seat
        if seat > 2:
            await abort(context, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_SEAT",
                        f"no seat {seat} (seats are 0, 1, 2)")  # fmt: skip
        state = fold.state
        if state.phase not in (Phase.BIDDING, Phase.PLAYING):
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE",
                        f"nothing to suggest: the hand is {state.phase.value}")  # fmt: skip
        if state.turn != seat:
            await abort(context, grpc.StatusCode.FAILED_PRECONDITION, "NOT_YOUR_TURN",
                        f"it is seat {state.turn}'s turn")  # fmt: skip
        # The seat's own view only: the suggestion can use nothing it may not see.
        command = self.player.act(view_for(state, seat))
        return bot_pb2.SuggestResponse(move=move_to_pb(command), version=fold.version)

    async def GetStats(
        self, request: bot_pb2.GetStatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.GetStatsResponse:
        stats = self.autoplay.stats.to_pb(self.autoplay.hands_in_play)
        stats.player = self.player_kind
        return stats

    async def _hand(self, hand_id: str, context: grpc.aio.ServicerContext[Any, Any]) -> HandFold:
        fold = self.feed.get(hand_id) if self.feed.accept(hand_id) else None
        if fold is None:
            try:
                fold = await read_fold(self.feed.bus, hand_id)
            except ValueError:
                fold = None
        if fold is None:
            await abort(context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_HAND",
                        f"no hand {hand_id!r}")  # fmt: skip
        return fold
