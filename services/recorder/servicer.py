"""RecorderService: reads from the event store (the consumer does the writing)."""

from __future__ import annotations

import asyncio
from typing import Any, TypeAlias

import grpc
from ddz.adapters.grpc_server import abort
from ddz.adapters.store import EventStore, StoredEvent
from ddz.v1 import recorder_pb2, recorder_pb2_grpc

Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]

DEFAULT_PAGE = 1000
MAX_PAGE = 10_000
# A page stops growing at this many envelope bytes, so a response stays well under
# the gRPC message limit whatever the events hold.
PAGE_BYTES = 512 * 1024


class RecorderServicer(recorder_pb2_grpc.RecorderServiceServicer):
    def __init__(self, store: EventStore) -> None:
        self.store = store

    async def ReadStream(
        self, request: recorder_pb2.ReadStreamRequest, context: Context
    ) -> recorder_pb2.ReadStreamResponse:
        events = await asyncio.to_thread(
            self.store.read_stream, request.stream_id, request.after_version
        )
        if not events and request.after_version == 0:
            await abort(
                context, grpc.StatusCode.NOT_FOUND, "UNKNOWN_STREAM",
                f"no events in stream {request.stream_id!r}",
            )  # fmt: skip
        return recorder_pb2.ReadStreamResponse(events=[e.to_proto() for e in events])

    async def ReadAll(
        self, request: recorder_pb2.ReadAllRequest, context: Context
    ) -> recorder_pb2.ReadAllResponse:
        limit = min(request.limit or DEFAULT_PAGE, MAX_PAGE)
        events, max_position = await asyncio.to_thread(self._page, request.after_position, limit)
        return recorder_pb2.ReadAllResponse(
            events=[e.to_proto() for e in events], max_position=max_position
        )

    def _page(self, after: int, limit: int) -> tuple[list[StoredEvent], int]:
        max_position = self.store.max_position()
        events = self.store.read_all(after, limit)
        size = 0
        for index, event in enumerate(events):
            size += len(event.envelope)
            if size > PAGE_BYTES and index > 0:
                return events[:index], max_position
        return events, max_position
