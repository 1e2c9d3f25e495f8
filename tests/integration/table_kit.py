"""Players at tables, for the tests of the table service (the ``table_suite`` fixture):
a seat's moves and views, its stream watched in the background and played to the end,
what a seat may see (checked against the hand's true state from the bus), and waiting
for the recorder and settlement to catch up. Players reach the table service only
through gRPC with their own tokens, as any client would.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
from cli_kit import run_here
from ddz.adapters import codec
from ddz.adapters.messaging import hand_stream
from ddz.adapters.messaging.hand_stream import hand_stream_id
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.adapters.security.event_signing import event_keyring
from ddz.domain.cards import Card
from ddz.domain.hand import CommandRejected, HandState, Phase, evolve
from ddz.v1 import (
    hand_events_pb2,
    recorder_pb2,
    rules_pb2,
    settlement_pb2,
    table_pb2,
    table_pb2_grpc,
)
from google.protobuf.message import Message
from suite_kit import Suite

ENDED = rules_pb2.HAND_PHASE_ENDED
BIDDING = rules_pb2.HAND_PHASE_BIDDING
PLAYING = rules_pb2.HAND_PHASE_PLAYING
HAND_TIMEOUT = 60.0


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


async def true_states(suite: Suite, hand_id: str) -> dict[int, HandState]:
    """The hand's real state at every stream version, from every event on the bus."""
    read, _cursor = await hand_stream.read(
        suite.bus, hand_id, keyring=event_keyring(suite.settings.keys)
    )
    states: dict[int, HandState] = {0: HandState()}
    state = HandState()
    for item in read:
        if not isinstance(item.event, CommandRejected):
            state = evolve(state, item.event)
        states[item.envelope.stream_version] = state
    return states


# --- what a seat may see ------------------------------------------------------------------


def cards_in(message: Message) -> list[Card]:
    """Every card anywhere in a message, event payloads included."""
    found: list[Card] = []
    if isinstance(message, hand_events_pb2.Card):
        return [codec.card_from_pb(message)]
    if message.DESCRIPTOR.full_name == "ddz.v1.EventEnvelope":
        event = codec.decode_event(message.type, message.type_version, message.payload)
        return cards_in(codec.event_to_pb(event))
    for descriptor, value in message.ListFields():
        if descriptor.message_type is None:
            continue
        items = value if descriptor.is_repeated else [value]
        for item in items:
            found += cards_in(item)
    return found


def secret_cards(state: HandState, seat: int) -> set[Card]:
    """Cards ``seat`` must not see in ``state``: other seats' hands that are not shown,
    the bottom before the landlord takes it (§1); nothing once the hand has ended (§8).
    The golden card is dealt face up (§2); the bottom is shown when taken (§1)."""
    if state.phase is Phase.ENDED:
        return set()
    shown = {s.seat for s in state.shown}
    hidden = {c for s in range(3) if s != seat and s not in shown for c in state.cards[s]}
    if state.landlord is None:
        hidden |= set(state.bottom)
    else:
        hidden -= set(state.bottom)
    if state.golden_card is not None:
        hidden.discard(state.golden_card)
    return hidden


async def check_updates(
    suite: Suite, hand_id: str, seat: int, updates: list[table_pb2.WatchHandResponse]
) -> None:
    """No update holds a hidden card; the view's own cards are the seat's real cards."""
    states = await true_states(suite, hand_id)
    assert [u.position for u in updates] == list(range(1, len(updates) + 1))
    for update in updates:
        state = states[update.position]
        leaked = set(cards_in(update)) & secret_cards(state, seat)
        assert not leaked, f"position {update.position} shows hidden cards {leaked}"
        own = [codec.card_from_pb(c) for c in update.view.cards]
        assert own == list(state.cards[seat])


# --- the recorder and settlement catching up -----------------------------------------------


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
    """``ddz audit HAND_ID`` as an operator runs it, on this suite's store: through its
    entry point in this process (``cli_kit.run_here``; the program itself is run by
    tests/e2e/test_audit_cli.py)."""
    return run_here(["audit", hand_id], suite.env())
