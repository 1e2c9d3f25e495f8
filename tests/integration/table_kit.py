"""The whole suite in this process for the players' tests (issue 7): recorder,
settlement, dealer, rules, bot and table, each started as its process starts it
(``start_service``, random ports), over a real nats-server, a SQLite store and a rooms
file written for the test. Players reach the table service only through gRPC with their
own tokens, as any client would.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from ddz.adapters import codec, hand_stream
from ddz.adapters.bus import EventBus
from ddz.adapters.grpc_client import error_reason, make_channel
from ddz.adapters.hand_stream import hand_stream_id
from ddz.adapters.nats_server import NatsServer
from ddz.adapters.service_runner import START_ORDER, RunningService, start_services
from ddz.adapters.stack import settings_env
from ddz.adapters.tokens import bearer_channel, operator_token, player_token
from ddz.config import Settings
from ddz.domain.hand import HandState, evolve
from ddz.v1 import (
    recorder_pb2,
    recorder_pb2_grpc,
    rules_pb2,
    settlement_pb2,
    settlement_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
)

AUDIT_KEY = "players-test-audit-key"
ENDED = rules_pb2.HAND_PHASE_ENDED
BIDDING = rules_pb2.HAND_PHASE_BIDDING
PLAYING = rules_pb2.HAND_PHASE_PLAYING
HAND_TIMEOUT = 60.0

ROOMS = """
opening_balance = 10000

[[rooms]]
id = "classic"
variant = "classic"
bot_fill_wait = {fill}

[[rooms]]
id = "ct"
variant = "ct"
rake = "1/20"
cap = 2000
escape_penalty = 10
bot_fill_wait = {fill}

[[rooms]]
id = "laizi"
variant = "laizi"
initial_multiplier = 2
coefficient = 100
fee = 10
min_balance = 1000
bot_fill_wait = {fill}

[[rooms]]
id = "tiandi"
variant = "tiandi"
initial_multiplier = 2
coefficient = 100
fee = 10
min_balance = 1000
bot_fill_wait = {fill}

[[rooms]]
id = "waiting"
variant = "laizi"
coefficient = 100
min_balance = 1000
bot_fill_wait = 3600

[[rooms]]
id = "exact"
variant = "laizi"
min_balance = 10000
bot_fill_wait = 0

[[rooms]]
id = "high"
variant = "laizi"
min_balance = 10001
bot_fill_wait = 0
"""


@dataclass
class Suite:
    settings: Settings
    bus: EventBus
    running: dict[str, RunningService] = field(default_factory=dict)
    channels: list[grpc.aio.Channel] = field(default_factory=list)

    @property
    def table_address(self) -> str:
        return f"127.0.0.1:{self.running['table'].port}"

    def stub(self, token: str | None) -> table_pb2_grpc.TableServiceStub:
        """The table service as a client holding ``token`` (None: no token at all)."""
        if token is None:
            channel = make_channel(self.settings, target=self.table_address)
        else:
            channel = bearer_channel(self.settings, token, target=self.table_address)
        self.channels.append(channel)
        return table_pb2_grpc.TableServiceStub(channel)

    def operator(self) -> table_pb2_grpc.TableServiceStub:
        return self.stub(operator_token(self.settings))

    def player(self, player_id: str) -> table_pb2_grpc.TableServiceStub:
        """A player logged in through the operator's login (a player token)."""
        return self.stub(player_token(self.settings, player_id))

    def _other(self, name: str) -> grpc.aio.Channel:
        channel = make_channel(self.settings, target=f"127.0.0.1:{self.running[name].port}")
        self.channels.append(channel)
        return channel

    @property
    def settlement(self) -> settlement_pb2_grpc.SettlementServiceStub:
        return settlement_pb2_grpc.SettlementServiceStub(self._other("settlement"))

    @property
    def recorder(self) -> recorder_pb2_grpc.RecorderServiceStub:
        return recorder_pb2_grpc.RecorderServiceStub(self._other("recorder"))

    def env(self) -> dict[str, str]:
        """The environment a ``ddz`` command needs to read this suite's store."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env.update(settings_env(self.settings))
        return env


def suite_settings(
    tmp_path: Path, nats_url: str, *, turn_timeout: float = 30.0, fill: float = 0.3
) -> Settings:
    rooms = tmp_path / "rooms.toml"
    rooms.write_text(ROOMS.format(fill=fill), encoding="utf-8")
    return Settings.from_env(
        {
            "DDZ_DATA_DIR": str(tmp_path / "data"),
            "DDZ_DATABASE_URL": f"sqlite:///{tmp_path / 'events.sqlite3'}",
            "DDZ_NATS_URL": nats_url,
            "DDZ_AUDIT_KEY": AUDIT_KEY,
            "DDZ_LOG_LEVEL": "WARNING",
            "DDZ_TURN_TIMEOUT": str(turn_timeout),
            "DDZ_RPC_TIMEOUT": "30",
            "DDZ_ROOMS_FILE": str(rooms),
        }
    )


@contextlib.asynccontextmanager
async def running_suite(
    nats_server: NatsServer, bus: EventBus, tmp_path: Path, **options: Any
) -> AsyncIterator[Suite]:
    settings = suite_settings(tmp_path, nats_server.url, **options)
    running, settings = await start_services(START_ORDER, settings)
    suite = Suite(settings, bus)
    suite.running.update(running)
    running = suite.running
    try:
        yield suite
    finally:
        for channel in suite.channels:
            await channel.close()
        for service in reversed(list(running.values())):
            await service.stop(grace=0.2)


# --- a seat's life -------------------------------------------------------------------------


async def join(stub: table_pb2_grpc.TableServiceStub, room: str, **kw: Any) -> Any:
    return await stub.JoinRoom(table_pb2.JoinRoomRequest(room_id=room, **kw), timeout=60)


async def act(stub: table_pb2_grpc.TableServiceStub, hand_id: str, seat: int, move: Any) -> Any:
    """Send a ``SuggestedMove`` for ``seat`` through the table service."""
    which = move.WhichOneof("move")
    if which == "bid":
        return await stub.Bid(table_pb2.BidRequest(
            hand_id=hand_id, seat=seat, action=move.bid.action, score=move.bid.score))  # fmt: skip
    if which == "play":
        play = table_pb2.PlayRequest(hand_id=hand_id, seat=seat, cards=move.play.cards)
        if move.play.HasField("declared"):
            play.declared.CopyFrom(move.play.declared)
        return await stub.Play(play)
    if which == "pass":
        return await stub.Pass(table_pb2.PassRequest(hand_id=hand_id, seat=seat))
    return await stub.ShowCards(table_pb2.ShowCardsRequest(hand_id=hand_id, seat=seat))


async def hint(stub: table_pb2_grpc.TableServiceStub, hand_id: str, seat: int) -> Any:
    answer = await stub.Hint(table_pb2.HintRequest(hand_id=hand_id, seat=seat))
    return answer.move


async def view_of(stub: table_pb2_grpc.TableServiceStub, hand_id: str, seat: int) -> Any:
    return (await stub.GetView(table_pb2.GetViewRequest(hand_id=hand_id, seat=seat))).view


class Watcher:
    """A seat's stream in the background: every update kept, droppable and resumable
    with the last position seen (as a client that lost its connection does)."""

    def __init__(self, stub: table_pb2_grpc.TableServiceStub, hand_id: str, seat: int) -> None:
        self.stub = stub
        self.hand_id = hand_id
        self.seat = seat
        self.updates: list[table_pb2.WatchHandResponse] = []
        self.segments: list[list[table_pb2.WatchHandResponse]] = []
        self.changed = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.dropped = False

    def start(self, stub: table_pb2_grpc.TableServiceStub | None = None) -> Watcher:
        """Open the stream (again: from the last position seen)."""
        self.stub = stub or self.stub
        after = self.updates[-1].position if self.updates else 0
        segment: list[table_pb2.WatchHandResponse] = []
        self.segments.append(segment)
        self.dropped = False
        self.task = asyncio.create_task(self._run(after, segment))
        self.changed.set()
        return self

    async def _run(self, after: int, segment: list[table_pb2.WatchHandResponse]) -> None:
        call = self.stub.WatchHand(
            table_pb2.WatchHandRequest(hand_id=self.hand_id, seat=self.seat, after_position=after),
            timeout=HAND_TIMEOUT,
        )
        try:
            async for update in call:
                self.updates.append(update)
                segment.append(update)
                self.changed.set()
        finally:
            self.changed.set()

    async def drop(self) -> None:
        """Cut the stream (the client's connection goes)."""
        assert self.task is not None
        self.dropped = True
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.task

    async def until(self, test: Callable[[table_pb2.WatchHandResponse], bool]) -> Any:
        """Wait for an update that passes ``test`` (across drops and resumes)."""
        seen = 0
        while True:
            for update in self.updates[seen:]:
                if test(update):
                    return update
            seen = len(self.updates)
            task = self.task
            if task is not None and task.done() and not self.dropped:
                task.result()  # raise what ended it
                raise AssertionError("the stream ended first")
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), HAND_TIMEOUT)

    async def finished(self) -> list[table_pb2.WatchHandResponse]:
        assert self.task is not None
        await asyncio.wait_for(self.task, HAND_TIMEOUT)
        return self.updates

    @property
    def view(self) -> Any:
        return self.updates[-1].view if self.updates else None


Chooser = Callable[[Any], Awaitable[Any]]


async def drive(
    stub: table_pb2_grpc.TableServiceStub,
    watcher: Watcher,
    *,
    choose: Chooser | None = None,
    outcomes: list[Any] | None = None,
) -> Any:
    """Play the watcher's seat whenever its stream says it is its turn (with the hint,
    or ``choose(view)``) until the hand ends; returns the stream's last view. Answers of the
    moves go to ``outcomes``. A seat the bot plays (disconnected) is left to the bot."""
    seat, hand_id = watcher.seat, watcher.hand_id
    seen = 0
    while True:
        await watcher.until(lambda u, seen=seen: u.position > seen)
        latest = watcher.updates[-1]
        seen = latest.position
        view = latest.view
        if view.phase == ENDED:  # the end's events follow (ledger, seed): wait for them
            return (await watcher.finished())[-1].view
        if not view.my_turn or seat in view.disconnected or watcher.dropped:
            continue
        try:
            move = await (choose(view) if choose else hint(stub, hand_id, seat))
            answer = await act(stub, hand_id, seat, move)
        except grpc.aio.AioRpcError as exc:
            # The bot or the clock moved first: wait for the next update.
            assert error_reason(exc) in ("NOT_YOUR_TURN", "WRONG_PHASE"), exc.details()
            continue
        if outcomes is not None:
            outcomes.append(answer)


def event_of(update: table_pb2.WatchHandResponse) -> Any:
    if not update.HasField("event"):
        return None
    e = update.event
    return codec.decode_event(e.type, e.type_version, e.payload)


def typed(update: table_pb2.WatchHandResponse, name: str) -> bool:
    return update.HasField("event") and update.event.type == name


async def true_states(bus: EventBus, hand_id: str) -> dict[int, HandState]:
    """The hand's real state at every stream version, from every event on the bus."""
    read, _cursor = await hand_stream.read(bus, hand_id)
    states: dict[int, HandState] = {0: HandState()}
    state = HandState()
    for item in read:
        if not isinstance(item.event, codec.CommandRejected):
            state = evolve(state, item.event)
        states[item.envelope.stream_version] = state
    return states


async def stored(suite: Suite, hand_id: str, version: int) -> None:
    """Wait until the recorder has stored the hand up to ``version``."""
    recorder = suite.recorder
    for _ in range(600):
        try:
            read = await recorder.ReadStream(
                recorder_pb2.ReadStreamRequest(stream_id=hand_stream_id(hand_id))
            )
            if len(read.events) >= version:
                return
        except grpc.aio.AioRpcError as exc:
            if exc.code() is not grpc.StatusCode.NOT_FOUND:
                raise
        await asyncio.sleep(0.05)
    raise AssertionError(f"the recorder did not store hand {hand_id} up to {version}")


async def settled_ledger(suite: Suite, hand_id: str) -> Any:
    settlement = suite.settlement
    for _ in range(600):
        try:
            answer = await settlement.GetLedger(settlement_pb2.GetLedgerRequest(hand_id=hand_id))
            return answer.hand
        except grpc.aio.AioRpcError as exc:
            if exc.code() is not grpc.StatusCode.NOT_FOUND:
                raise
        await asyncio.sleep(0.05)
    raise AssertionError(f"settlement never recorded hand {hand_id}")


def ddz_audit(suite: Suite, hand_id: str) -> subprocess.CompletedProcess[str]:
    """``ddz audit HAND_ID`` as an operator runs it, on this suite's store."""
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "audit", hand_id],
        capture_output=True, text=True, timeout=60, env=suite.env(),
    )  # fmt: skip
