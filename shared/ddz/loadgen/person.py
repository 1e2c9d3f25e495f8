"""One simulated person, as an outside client: their own player token, TLS to the
public ``TableService`` (``ddz.client.session.Session``, as ``ddz play`` uses it), a
room, and hand after hand at human pace (``behaviour``) until the crowd stops; then the
hand in play is finished and they leave the table between hands.

A hand is followed on the seat's ``WatchHand`` stream while a task of the person thinks
and moves on each turn that reaches them, so the stream is read all the while. A drop
closes the person's connection (the session's channels) and opens a new one after
their time away: ``JoinRoom`` with the player token gives the seat back and the stream
is read on from the last position seen. An escape is ``LeaveRoom`` in the middle of a
hand; the person joins the room again after their time away.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from typing import Any, Literal

import grpc

from ddz.access.tokens import player_token
from ddz.adapters.rpc.grpc_client import error_reason
from ddz.application.errors import Refusal
from ddz.client.session import Session, Unreachable
from ddz.config.calling import CallSettings
from ddz.config.security import KeySettings
from ddz.domain.cards import CardNotationError, format_counts, parse_ranks
from ddz.loadgen.behaviour import Behaviour, HandPlan
from ddz.loadgen.tally import Tally
from ddz.v1 import hand_events_pb2, rules_pb2, table_pb2

PHASE_BIDDING = rules_pb2.HAND_PHASE_BIDDING
PHASE_ENDED = rules_pb2.HAND_PHASE_ENDED
PASS_BID = hand_events_pb2.BID_ACTION_PASS
MOVE_EVENTS = frozenset({"bid_made", "cards_shown", "play_made", "passed", "auto_play_ended"})
"""Events a person's own move makes first (``auto_play_ended``: their Resume)."""
HINT_MARGIN = 1.5
"""Seconds of the clock by which a hint must have come, or the person plays on their own."""
AGAIN_PAUSE = 2.0
"""Seconds before joining again after a refused or failed JoinRoom (the join rate
limit allows one a second)."""

HandEnd = Literal["next", "escaped", "rejoin"]


@dataclass
class Turn:
    """A turn that reached the person: from an update that puts their clock running
    until their move shows, the turn times out or the clock stops; what became of it.
    (A move that keeps the clock running, showing cards or ending auto-play, is
    followed by a turn anew.)"""

    position: int
    view: table_pb2.PlayerView
    letting_go: bool = False
    outcome: str = ""

    @property
    def seconds_left(self) -> float:
        deadline = self.view.turn_deadline
        return float(deadline.seconds + deadline.nanos / 1e9 - time.time())


@dataclass
class SentMove:
    position: int  # the stream position the turn was told at
    sent: float  # perf_counter


def reason_of(error: BaseException) -> str:
    """A refusal's reason name (``NOT_YOUR_TURN``), else the status code's name."""
    if isinstance(error, Refusal):
        return error.reason.name if error.reason.value else error.kind.name
    if isinstance(error, grpc.aio.AioRpcError):
        return error_reason(error) or error.code().name
    if isinstance(error, Unreachable):
        return "UNREACHABLE"
    return type(error).__name__


class Person:
    def __init__(
        self, settings: CallSettings, keys: KeySettings, player_id: str,
        rooms: list[table_pb2.Room], first_room: int,
        behaviour: Behaviour, tally: Tally, stopping: asyncio.Event,
    ) -> None:  # fmt: skip
        self.settings = settings
        self.player_id = player_id
        self.rooms = rooms
        self.room = rooms[first_room % len(rooms)]
        self.behaviour = behaviour
        self.tally = tally
        self.stopping = stopping
        self.token = player_token(keys, player_id)
        self.session: Session | None = None
        self.seated = False
        self.hand_id = ""  # the hand followed, and the last position seen of it
        self.position = 0
        self.back_at = ""  # the hand a drop's rejoin found at the seat
        self.turn: Turn | None = None
        self.sent: SentMove | None = None
        self._acting: asyncio.Task[None] | None = None

    # -- a life at the tables ----------------------------------------------------------

    async def live(self) -> None:
        self.tally.people += 1
        try:
            hand_id = await self._sit()
            while hand_id:
                end = await self._hand(hand_id, self.behaviour.plan_hand())
                if end == "escaped":
                    await asyncio.sleep(self.behaviour.away())
                    hand_id = await self._sit()
                elif end == "rejoin":
                    hand_id = self.back_at
                elif self.stopping.is_set():
                    break
                else:
                    hand_id = await self._next(hand_id)
        except asyncio.CancelledError:
            self.tally.count("cut_off")  # the crowd's drain ran out mid-hand
            raise
        finally:
            self._close_turn("stopped")
            await self._leave_table()
            self.tally.people -= 1

    def _connect(self) -> Session:
        if self.session is None:
            self.session = Session(
                self.settings, self.settings.network.address("table"), self.token
            )
        return self.session

    async def _disconnect(self) -> None:
        self._set_seated(False)
        session, self.session = self.session, None
        if session is not None:
            await session.close()

    def _set_seated(self, seated: bool) -> None:
        if seated != self.seated:
            self.tally.seated += 1 if seated else -1
            self.seated = seated

    async def _sit(self) -> str:
        """Join the room (a new table, or back to the seat held): the hand in play there,
        or "" when the crowd stopped first."""
        while not self.stopping.is_set():
            session = self._connect()
            try:
                joined = await session.join(self.room)
            except (grpc.aio.AioRpcError, Unreachable) as exc:
                reason = reason_of(exc)
                self.tally.refused(reason)
                if reason == "BALANCE_TOO_LOW":  # lost too much for a bean room
                    self.room = next(r for r in self.rooms if not r.settings.min_balance)
                await asyncio.sleep(AGAIN_PAUSE)
                continue
            self.tally.count("rejoins" if joined.rejoined else "joins")
            self._set_seated(True)
            if joined.hand_id != self.hand_id:  # back at the same hand: read on from there
                self.position = 0
            self.tally.hand_started(joined.hand_id)
            return str(joined.hand_id)
        return ""

    async def _next(self, hand_id: str) -> str:
        """A look at the result, then ready for the next hand; a table that closed (a
        player left, or was late) sends the person to the room for another."""
        await asyncio.sleep(self.behaviour.think())
        if self.stopping.is_set():
            return ""
        session = self._connect()
        try:
            next_id = await session.next_hand(hand_id)
        except (grpc.aio.AioRpcError, Unreachable) as exc:
            self.tally.refused(reason_of(exc))
            self._set_seated(False)
            return await self._sit()
        self.position = 0
        self.tally.hand_started(next_id)
        return next_id

    async def _leave_table(self) -> None:
        """Leave between hands (no escape), and close the connection."""
        session = self.session
        if session is not None and self.seated:
            with contextlib.suppress(grpc.aio.AioRpcError):
                await session.leave()
                self.tally.count("leaves")
        await self._disconnect()

    # -- one hand ----------------------------------------------------------------------

    async def _hand(self, hand_id: str, plan: HandPlan) -> HandEnd:
        """Follow the hand to its end, moving on each turn; a drop comes back to the same
        seat (``rejoin``: another hand by then, ``back_at``) and an escape leaves."""
        turns = 0
        while True:
            try:
                end, turns = await self._follow(hand_id, plan, turns)
            finally:
                await self._stop_acting()
            if end == "drop":
                self.tally.count("drops")
                await self._disconnect()
                await asyncio.sleep(self.behaviour.away())
                back = await self._sit()
                if back != hand_id:  # the hand ended meanwhile, or the table closed
                    self.back_at = back
                    return "rejoin"
                plan = HandPlan()  # one mishap a hand
                continue
            if end == "escape":
                await self._escape()
                return "escaped"
            return "next"

    async def _escape(self) -> None:
        session = self._connect()
        try:
            await session.leave()
            self.tally.count("escapes")
        except grpc.aio.AioRpcError as exc:
            self.tally.refused(reason_of(exc))
        await self._disconnect()

    async def _follow(
        self, hand_id: str, plan: HandPlan, turns: int
    ) -> tuple[Literal["end", "drop", "escape"], int]:
        session = self._connect()
        if hand_id != self.hand_id:
            self.hand_id, self.position = hand_id, 0
        opened = time.time()
        settled = False
        self.turn = None
        updates = session.follow(hand_id, self.position)
        try:
            async for update in updates:
                self.position = int(update.position)
                kind = update.event.type if update.HasField("event") else ""
                settled = settled or kind == "hand_settled"
                self._saw_event(kind)
                view = update.view
                if view.phase == PHASE_ENDED:
                    self.tally.hand_ended(hand_id, settled)
                    self._close_turn("ended")  # another's escape ended it on this turn
                    return "end", turns
                if not on_clock(view):
                    self._close_turn("missed")  # off the clock and nothing became of it
                    continue
                if self.turn is not None and not self.turn.outcome:
                    self.turn.view = view  # the same turn (its clock may have started again)
                    continue
                turns += 1
                self.tally.count("told")
                started = view.server_time.seconds + view.server_time.nanos / 1e9
                if started >= opened:
                    self.tally.turn_told(started)
                self.turn = Turn(self.position, view)
                if turns in (plan.drop_at, plan.escape_at):
                    self._close_turn("away")
                    return ("drop" if turns == plan.drop_at else "escape"), turns
                await self._stop_acting()
                self._acting = asyncio.create_task(self._act(hand_id, self.turn))
        except (Refusal, grpc.aio.AioRpcError, Unreachable) as exc:
            self.tally.refused(reason_of(exc))  # the stream could not be had again
            self._close_turn("away")
            return "drop", turns
        finally:
            await updates.aclose()  # type: ignore[attr-defined]
        self._close_turn("ended")
        return "end", turns  # the stream ended: the hand ended while the person was away

    def _saw_event(self, kind: str) -> None:
        sent = self.sent
        if sent is not None and kind in MOVE_EVENTS and self.position > sent.position:
            # The stream may show the move before its call answers: the turn is done.
            self.tally.move_shown(sent.sent)
            self.sent = None
            self._close_turn("resumed" if kind == "auto_play_ended" else "moved")
        if kind == "turn_timed_out" and self.turn is not None:
            self.sent = None
            self._close_turn("let_go" if self.turn.letting_go else "missed")

    def _close_turn(self, outcome: str) -> None:
        turn = self.turn
        if turn is not None and not turn.outcome:
            turn.outcome = outcome
            self.tally.count(outcome)

    async def _stop_acting(self) -> None:
        task, self._acting = self._acting, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- a turn ------------------------------------------------------------------------

    async def _act(self, hand_id: str, turn: Turn) -> None:
        view = turn.view
        if view.seat in view.auto_play:  # back from auto-play at once, then a turn anew
            if await self._send(hand_id, turn, "resume", None):
                self._close_turn_of(turn, "resumed")
            return
        if self.behaviour.lets_time_out():
            turn.letting_go = True
            return
        await asyncio.sleep(self.behaviour.think(turn.seconds_left))
        if turn.outcome:
            return
        ways = ("hint", "own") if self.behaviour.takes_hint() else ("own", "hint")
        for way in ways:  # the other way when the first is refused
            hint = None
            if way == "hint":
                hint = await self._hint(hand_id, patience=turn.seconds_left - HINT_MARGIN)
                if hint is None:
                    continue
            if turn.outcome or await self._send(hand_id, turn, way, hint):
                self._close_turn_of(turn, "moved")
                return
        self._close_turn_of(turn, "missed")

    def _close_turn_of(self, turn: Turn, outcome: str) -> None:
        if turn is self.turn:
            self._close_turn(outcome)

    async def _hint(self, hand_id: str, patience: float) -> table_pb2.SuggestedMove | None:
        """The hint, or None when it is refused or has not come within ``patience``
        seconds (the person plays on their own before the clock runs out)."""
        session = self._connect()
        try:
            move = await asyncio.wait_for(session.hint(hand_id), max(0.1, patience))
        except grpc.aio.AioRpcError as exc:
            self.tally.refused(reason_of(exc))
            return None
        except TimeoutError:
            self.tally.count("hints_too_late")
            return None
        self.tally.count("hints")
        return move

    async def _send(
        self, hand_id: str, turn: Turn, how: str, hint: table_pb2.SuggestedMove | None
    ) -> bool:
        """Send the move; True when it was accepted."""
        session = self._connect()
        table, seat = session.table, session.seat
        self.sent = SentMove(turn.position, time.perf_counter())
        try:
            if how == "resume":
                await table.Resume(table_pb2.ResumeRequest(hand_id=hand_id, seat=seat))
            elif hint is not None:
                await _send_hint(table, hand_id, seat, hint)
            else:
                await self._own_move(table, hand_id, seat, turn.view)
        except grpc.aio.AioRpcError as exc:
            self.sent = None
            self.tally.refused(reason_of(exc))
            return False
        return True

    async def _own_move(self, table: Any, hand_id: str, seat: int,
                        view: table_pb2.PlayerView) -> None:  # fmt: skip
        """A legal move of the person's own: a bid among the legal ones; in play a pass
        when there is a trick to beat, else every card of their lowest rank."""
        if view.phase == PHASE_BIDDING:
            legal = list(view.legal_bids) or [hand_events_pb2.BidCommand(action=PASS_BID)]
            bid = legal[self.behaviour.choose(len(legal))]
            await table.Bid(table_pb2.BidRequest(hand_id=hand_id, seat=seat, action=bid.action,
                                                 score=bid.score))  # fmt: skip
        elif view.can_pass:
            await table.Pass(table_pb2.PassRequest(hand_id=hand_id, seat=seat))
        else:
            cards = lowest_rank(view.cards_text)
            await table.Play(table_pb2.PlayRequest(hand_id=hand_id, seat=seat, cards=cards))


async def _send_hint(table: Any, hand_id: str, seat: int, hint: table_pb2.SuggestedMove) -> None:
    which = hint.WhichOneof("move")
    if which == "bid":
        await table.Bid(table_pb2.BidRequest(hand_id=hand_id, seat=seat, action=hint.bid.action,
                                             score=hint.bid.score))  # fmt: skip
    elif which == "show_cards":
        await table.ShowCards(table_pb2.ShowCardsRequest(hand_id=hand_id, seat=seat))
    elif which == "play":
        request = table_pb2.PlayRequest(hand_id=hand_id, seat=seat, cards=hint.play.cards)
        if hint.play.HasField("declared"):
            request.declared.CopyFrom(hint.play.declared)
        await table.Play(request)
    else:
        await table.Pass(table_pb2.PassRequest(hand_id=hand_id, seat=seat))


def on_clock(view: table_pb2.PlayerView) -> bool:
    """The view puts the seat's clock running: its turn, a deadline, and every seat
    still holding cards (a play that empties a hand is followed by the hand's end, and
    the view between the two still names the next seat)."""
    return view.my_turn and view.HasField("turn_deadline") and 0 not in view.card_counts


def lowest_rank(cards_text: str) -> str:
    """Every card of the lowest rank of a hand in rank notation: a single, a pair or a
    trio, each of which leads legally (§3); of four, one (a bomb may be over a limit, §7)."""
    try:
        counts = parse_ranks(cards_text)
    except (CardNotationError, ValueError):
        return cards_text[:1]
    for rank, count in enumerate(counts):
        if count:
            played = count if count < 4 else 1
            return format_counts(tuple(played if r == rank else 0 for r in range(len(counts))))
    return cards_text[:1]
