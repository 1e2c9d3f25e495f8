"""BotService over gRPC: requests to the use cases of ``handlers``, answers back."""

from __future__ import annotations

from typing import Any

import grpc
from ddz.adapters.codec.views import move_to_pb
from ddz.v1 import bot_pb2, bot_pb2_grpc

from .use_cases.handlers import GetStats, Suggest

MAX_WAIT = 2.0
"""Seconds a Suggest waits at most for the hand to reach ``min_version``."""


class BotServicer(bot_pb2_grpc.BotServiceServicer):
    def __init__(self, suggest: Suggest, get_stats: GetStats) -> None:
        self.suggest = suggest
        self.get_stats = get_stats

    async def Suggest(
        self, request: bot_pb2.SuggestRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.SuggestResponse:
        wait = min(MAX_WAIT, context.time_remaining() or MAX_WAIT)
        suggestion = await self.suggest(request.hand_id, request.seat, request.min_version, wait)
        return bot_pb2.SuggestResponse(
            move=move_to_pb(suggestion.command), version=suggestion.version
        )

    async def GetStats(
        self, request: bot_pb2.GetStatsRequest, context: grpc.aio.ServicerContext[Any, Any]
    ) -> bot_pb2.GetStatsResponse:
        stats = self.get_stats()
        answer = stats.moves.to_pb(stats.hands_in_play)
        answer.player = stats.player
        return answer
