"""Bots play hands through the running services, as any client would (gRPC only).

``ddz simulate``, ``ddz demo``, ``ddz bench e2e`` and the end-to-end tests share this:

    async with Driver(settings) as driver:
        results = await driver.play("classic", hands=20, tables=4, on_hand=progress)
        stored = await driver.stored_events(results)      # read back from the recorder
        totals = await driver.settlement(results)         # ledgers from settlement

Each table is opened at the table service with three bot seats; its hands are dealt
one after another (``StartHand``: the golden card decides the first bidder, then the
first bidder rotates, §2) and the bot service plays them. The driver follows each
hand on seat 0's stream (``WatchHand``) until the hand is over.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

import grpc

from ddz.adapters.grpc_client import make_channel
from ddz.adapters.hand_stream import hand_stream_id
from ddz.adapters.tokens import bearer_channel, operator_token
from ddz.config import Settings
from ddz.v1 import (
    recorder_pb2,
    recorder_pb2_grpc,
    rules_pb2,
    settlement_pb2,
    settlement_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)

SIDE_LANDLORD = 1  # ddz.v1.Side.SIDE_LANDLORD
READ_BACK_TIMEOUT = 30.0
"""Longest wait for the recorder and settlement to catch up with the last hand."""


@dataclass(frozen=True, slots=True)
class HandResult:
    hand_id: str
    table_id: str
    variant: str
    events: int  # the hand's stream version at its end: every event, internal included
    landlord: int | None
    landlord_won: bool
    deltas: tuple[int, ...]
    system: int
    seconds: float


@dataclass
class SettlementTotals:
    """What settlement recorded for the hands: per player id, and the system's take."""

    hands: int = 0
    system: int = 0
    players: dict[str, int] = field(default_factory=dict)


class Driver:
    def __init__(self, settings: Settings, *, watch_timeout: float = 120.0) -> None:
        self.settings = settings
        self.watch_timeout = watch_timeout
        self.run_id = uuid.uuid4().hex[:8]
        self._channels: dict[str, grpc.aio.Channel] = {}

    def _channel(self, service: str) -> grpc.aio.Channel:
        if service not in self._channels:
            if service == "table":  # opening bot tables is the operator's
                token = operator_token(self.settings, "driver")
                self._channels[service] = bearer_channel(self.settings, token, service)
            else:
                self._channels[service] = make_channel(self.settings, service)
        return self._channels[service]

    @property
    def table(self) -> table_pb2_grpc.TableServiceStub:
        return table_pb2_grpc.TableServiceStub(self._channel("table"))  # type: ignore[no-untyped-call]

    async def play(
        self,
        variant: str,
        hands: int,
        tables: int = 1,
        on_hand: Callable[[HandResult], None] | None = None,
    ) -> list[HandResult]:
        """Play ``hands`` hands of ``variant`` on ``tables`` tables at once."""
        tables = max(1, min(tables, hands))
        shares = [hands // tables + (i < hands % tables) for i in range(tables)]
        results: list[HandResult] = []

        async def run_table(index: int, count: int) -> None:
            table_id = await self.open_table(variant, f"{self.run_id}-{variant}-{index}")
            for _ in range(count):
                result = await self.play_hand(table_id, variant)
                results.append(result)
                if on_hand is not None:
                    on_hand(result)

        await asyncio.gather(*(run_table(i, n) for i, n in enumerate(shares)))
        return results

    async def open_table(self, variant: str, name: str) -> str:
        seats = [table_pb2.SeatSpec(player_id=f"bot-{name}-{s}", is_bot=True) for s in range(3)]
        opened = await self.table.OpenTable(
            table_pb2.OpenTableRequest(variant=variant, seats=seats)
        )
        table_id: str = opened.table.table_id
        return table_id

    async def play_hand(self, table_id: str, variant: str) -> HandResult:
        started = time.perf_counter()
        dealt = await self.table.StartHand(table_pb2.StartHandRequest(table_id=table_id))
        last: table_pb2.WatchHandResponse | None = None
        stream = self.table.WatchHand(
            table_pb2.WatchHandRequest(hand_id=dealt.hand_id, seat=0, events_only=True),
            timeout=self.watch_timeout,
        )
        async for update in stream:
            last = update
        if last is None or last.view.phase != rules_pb2.HAND_PHASE_ENDED:
            raise RuntimeError(f"hand {dealt.hand_id}: the stream ended before the hand did")
        view = last.view
        landlord = view.landlord if view.HasField("landlord") else None
        return HandResult(
            hand_id=dealt.hand_id,
            table_id=table_id,
            variant=variant,
            events=last.position,
            landlord=landlord,
            landlord_won=view.winner == SIDE_LANDLORD,
            deltas=tuple(view.ledger.deltas),
            system=view.ledger.system,
            seconds=time.perf_counter() - started,
        )

    async def stored_events(self, results: list[HandResult]) -> int:
        """How many events of these hands the recorder has stored, waiting (up to
        ``READ_BACK_TIMEOUT``) for it to catch up with each hand's last event."""
        stub = recorder_pb2_grpc.RecorderServiceStub(self._channel("recorder"))  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + READ_BACK_TIMEOUT
        total = 0
        for result in results:
            stream_id = hand_stream_id(result.hand_id)
            while True:
                try:
                    request = recorder_pb2.ReadStreamRequest(stream_id=stream_id)
                    count = len((await stub.ReadStream(request)).events)
                except grpc.aio.AioRpcError as exc:
                    if exc.code() is not grpc.StatusCode.NOT_FOUND:
                        raise
                    count = 0
                if count >= result.events or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.05)
            total += count
        return total

    async def read_hand(self, hand_id: str) -> list[recorder_pb2.StoredEvent]:  # type: ignore[name-defined]
        """The hand's stored events, in order, from the recorder."""
        stub = recorder_pb2_grpc.RecorderServiceStub(self._channel("recorder"))  # type: ignore[no-untyped-call]
        read = await stub.ReadStream(
            recorder_pb2.ReadStreamRequest(stream_id=hand_stream_id(hand_id))
        )
        return list(read.events)

    async def settlement(self, results: list[HandResult]) -> SettlementTotals:
        """The ledgers settlement recorded for these hands, summed per player."""
        stub = settlement_pb2_grpc.SettlementServiceStub(self._channel("settlement"))  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + READ_BACK_TIMEOUT
        totals = SettlementTotals()
        for result in results:
            while True:
                try:
                    answer = await stub.GetLedger(
                        settlement_pb2.GetLedgerRequest(hand_id=result.hand_id)
                    )
                    break
                except grpc.aio.AioRpcError as exc:
                    if exc.code() is not grpc.StatusCode.NOT_FOUND or time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.05)
            hand = answer.hand
            totals.hands += 1
            totals.system += hand.ledger.system
            for player, delta in zip(hand.players, hand.ledger.deltas, strict=True):
                totals.players[player] = totals.players.get(player, 0) + delta
        return totals

    async def close(self) -> None:
        for channel in self._channels.values():
            await channel.close()
        self._channels.clear()

    async def __aenter__(self) -> Driver:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
