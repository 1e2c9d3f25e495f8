"""Bots play hands through the running services, as any client would (gRPC only).

``ddz simulate``, ``ddz demo``, ``ddz bench e2e`` and the end-to-end tests share this:

    async with Driver(settings.calling, settings.keys) as driver:
        results = await driver.play("classic", hands=20, tables=4, on_hand=progress)
        stored = await driver.stored_events(results)      # read back from the recorder
        totals = await driver.settlement(results)         # ledgers from settlement

Each table is opened at the table service with three bot seats; its hands are dealt
one after another (``StartHand``: the golden card decides the first bidder, then the
first bidder rotates, §2) and the bot service plays them. The driver follows each
hand on seat 0's stream (``WatchHand``) until the hand is over.

A service that restarts is ridden through: the channels wait for it and retry what is
safe (``grpc_client.REPEATS``); a cut stream is resumed from its last position
(``grpc_client.resumed``); a deal whose answer was lost is looked up on the table
(``GetTable``'s hand ids) rather than dealt again; a table the table service does not
know (its tables are streams it folds back on start, but a table older than the bus's
retention is gone) is opened again. Reading back waits for the
recorder and settlement up to ``READ_BACK_TIMEOUT`` (a restart included). Whatever
cannot be ridden through is a ``Refusal`` saying which service failed.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import grpc

from ddz.access.tokens import operator_token
from ddz.adapters.messaging.hand_stream import hand_stream_id
from ddz.adapters.rpc.bearer import bearer_channel
from ddz.adapters.rpc.grpc_client import ask, make_channel, resumed
from ddz.application.errors import Kind, Reason, Refusal
from ddz.config.calling import CallSettings
from ddz.config.security import KeySettings
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
READ_BACK_TIMEOUT = 60.0
"""Longest wait for the recorder and settlement to catch up with the last hand: a NATS
node cut off and back costs the cluster elections of its stream and consumer leaders
(seen to take 30 s on loopback hosts), during which nothing new is delivered."""
PATIENCE = 30.0
"""Longest wait for a service that went away (a restart) to answer again: each call's
deadline, and the wait of a cut stream."""
LOST_ANSWER = frozenset({Kind.UNAVAILABLE, Kind.TIMEOUT})
"""A call that failed so may or may not have been applied (the answer was lost)."""


@dataclass
class BotTable:
    """One of the driver's tables: what it was opened as, and the hands it dealt."""

    variant: str
    name: str
    table_id: str = ""
    hand_ids: set[str] = field(default_factory=set)


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
    def __init__(
        self,
        settings: CallSettings,
        keys: KeySettings,
        *,
        watch_timeout: float = 120.0,
        patience: float = PATIENCE,
    ) -> None:
        self.settings = settings
        self.keys = keys
        self.watch_timeout = watch_timeout
        self.patience = max(patience, settings.rpc.rpc_timeout)
        self.run_id = uuid.uuid4().hex[:8]
        self._channels: dict[str, grpc.aio.Channel] = {}

    def _channel(self, service: str) -> grpc.aio.Channel:
        if service not in self._channels:
            if service == "table":  # opening bot tables is the operator's
                token = operator_token(self.keys, "driver")
                self._channels[service] = bearer_channel(self.settings, token, service)
            else:
                self._channels[service] = make_channel(self.settings, service)
        return self._channels[service]

    def _patient(self, method: Callable[..., Any]) -> Callable[[Any], Any]:
        """``method`` with ``patience`` as its deadline: it waits for a restarting
        service (the channel sends it when the service is back)."""
        return lambda request: method(request, timeout=self.patience)

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
            table = BotTable(variant, f"{self.run_id}-{variant}-{index}")
            table.table_id = await self.open_table(variant, table.name)
            for _ in range(count):
                result = await self.play_hand(table, variant)
                results.append(result)
                if on_hand is not None:
                    on_hand(result)

        await asyncio.gather(*(run_table(i, n) for i, n in enumerate(shares)))
        return results

    async def open_table(self, variant: str, name: str) -> str:
        seats = [table_pb2.SeatSpec(player_id=f"bot-{name}-{s}", is_bot=True) for s in range(3)]
        opened = await ask(
            "table", self._patient(self.table.OpenTable),
            table_pb2.OpenTableRequest(variant=variant, seats=seats),
        )  # fmt: skip
        table_id: str = opened.table.table_id
        return table_id

    async def deal(self, table: BotTable) -> str:
        """The id of the table's next hand. ``StartHand`` is never sent twice: when its
        answer is lost, the table's hand ids say whether it dealt; a table the service
        no longer knows is opened again."""
        while True:
            try:
                dealt = await ask(
                    "table", self._patient(self.table.StartHand),
                    table_pb2.StartHandRequest(table_id=table.table_id),
                )  # fmt: skip
                hand_id: str = dealt.hand_id
                break
            except Refusal as refusal:
                if refusal.kind in LOST_ANSWER:
                    found = await self._dealt_meanwhile(table)
                    if found is not None:
                        hand_id = found
                        break
                elif refusal.reason is not Reason.UNKNOWN_TABLE:
                    raise
                else:  # the table service restarted: it forgot its tables
                    table.table_id = await self.open_table(table.variant, table.name)
        table.hand_ids.add(hand_id)
        return hand_id

    async def _dealt_meanwhile(self, table: BotTable) -> str | None:
        """The hand a lost ``StartHand`` dealt: the table's last, when the driver has not
        seen it (None: it dealt none, or it forgot the table, which ``deal`` finds out
        on its next call). Only the last: an earlier id the driver never saw is a hand
        the table assigned but the dealer never dealt (a deal that failed), which a
        table read back after a restart still lists."""
        try:
            shown = await ask(
                "table", self._patient(self.table.GetTable),
                table_pb2.GetTableRequest(table_id=table.table_id),
            )  # fmt: skip
        except Refusal as refusal:
            if refusal.reason is Reason.UNKNOWN_TABLE:
                return None
            raise
        last = shown.table.hand_ids[-1] if shown.table.hand_ids else None
        return str(last) if last is not None and last not in table.hand_ids else None

    async def play_hand(self, table: BotTable, variant: str) -> HandResult:
        started = time.perf_counter()
        hand_id = await self.deal(table)
        last = await self.watch(hand_id)
        view = last.view
        landlord = view.landlord if view.HasField("landlord") else None
        return HandResult(
            hand_id=hand_id,
            table_id=table.table_id,
            variant=variant,
            events=last.position,
            landlord=landlord,
            landlord_won=view.winner == SIDE_LANDLORD,
            deltas=tuple(view.ledger.deltas),
            system=view.ledger.system,
            seconds=time.perf_counter() - started,
        )

    async def watch(self, hand_id: str) -> table_pb2.WatchHandResponse:
        """The last update of seat 0's stream of the hand (its end), resumed after cuts."""
        deadline = time.monotonic() + self.watch_timeout

        def open_stream(after: int) -> AsyncIterator[table_pb2.WatchHandResponse]:
            request = table_pb2.WatchHandRequest(
                hand_id=hand_id, seat=0, events_only=True, after_position=after
            )
            stream: AsyncIterator[table_pb2.WatchHandResponse] = self.table.WatchHand(
                request, timeout=max(0.1, deadline - time.monotonic())
            )
            return stream

        last: table_pb2.WatchHandResponse | None = None
        updates = resumed(
            "table", self._channel("table"), open_stream, lambda u: int(u.position),
            patience=self.patience,
        )  # fmt: skip
        async for update in updates:
            last = update
        if last is None or last.view.phase != rules_pb2.HAND_PHASE_ENDED:
            raise Refusal(
                Kind.INTERNAL, Reason.REASON_UNSPECIFIED,
                f"table: the stream of hand {hand_id} ended before the hand did",
            )  # fmt: skip
        return last

    async def stored_events(self, results: list[HandResult]) -> int:
        """How many events of these hands the recorder has stored, waiting (up to
        ``READ_BACK_TIMEOUT``) for it to catch up with each hand's last event."""
        stub = recorder_pb2_grpc.RecorderServiceStub(self._channel("recorder"))  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + READ_BACK_TIMEOUT
        total = 0
        for result in results:
            request = recorder_pb2.ReadStreamRequest(stream_id=hand_stream_id(result.hand_id))
            while True:
                try:
                    count = len((await ask("recorder", _until(stub.ReadStream, deadline),
                                           request)).events)  # fmt: skip
                except Refusal as refusal:
                    if refusal.kind is not Kind.NOT_FOUND:
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
        read = await ask(
            "recorder", stub.ReadStream,
            recorder_pb2.ReadStreamRequest(stream_id=hand_stream_id(hand_id)),
        )  # fmt: skip
        return list(read.events)

    async def settlement(self, results: list[HandResult]) -> SettlementTotals:
        """The ledgers settlement recorded for these hands, summed per player."""
        stub = settlement_pb2_grpc.SettlementServiceStub(self._channel("settlement"))  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + READ_BACK_TIMEOUT
        totals = SettlementTotals()
        for result in results:
            request = settlement_pb2.GetLedgerRequest(hand_id=result.hand_id)
            while True:
                try:
                    answer = await ask("settlement", _until(stub.GetLedger, deadline), request)
                    break
                except Refusal as refusal:
                    if refusal.kind is not Kind.NOT_FOUND or time.monotonic() > deadline:
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


def _until(method: Callable[..., Any], deadline: float) -> Callable[[Any], Any]:
    """``method`` with the time left until ``deadline`` as its deadline: a read-back
    waits for a restarting service as long as it waits for one catching up."""
    return lambda request: method(request, timeout=max(0.1, deadline - time.monotonic()))
