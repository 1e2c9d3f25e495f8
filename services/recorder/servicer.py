"""RecorderService over gRPC: reads from the event store (``handlers.Reads``); the
consumer does the writing."""

from __future__ import annotations

from typing import Any, TypeAlias

import grpc
from ddz.v1 import recorder_pb2, recorder_pb2_grpc

from .use_cases.handlers import Reads

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]


class RecorderServicer(recorder_pb2_grpc.RecorderServiceServicer):
    def __init__(self, reads: Reads) -> None:
        self.reads = reads

    async def ReadStream(
        self, request: recorder_pb2.ReadStreamRequest, context: Context
    ) -> recorder_pb2.ReadStreamResponse:
        events = await self.reads.stream(request.stream_id, request.after_version)
        return recorder_pb2.ReadStreamResponse(events=[e.to_proto() for e in events])

    async def ReadAll(
        self, request: recorder_pb2.ReadAllRequest, context: Context
    ) -> recorder_pb2.ReadAllResponse:
        events, max_position = await self.reads.page(request.after_position, request.limit)
        return recorder_pb2.ReadAllResponse(
            events=[e.to_proto() for e in events], max_position=max_position
        )
