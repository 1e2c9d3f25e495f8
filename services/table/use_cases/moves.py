"""A seat's moves, and the commands the service sends for a seat on its own.

A player's bid, show or play goes to the rules (``Rules`` port); their refusal becomes
the caller's ``Refusal`` through ``REFUSALS``. Whoever moves for a seat is its player,
back: a disconnected seat is reconnected first; a seat in auto-play takes its turns
back (the rules record it). ``resume`` is the player's cancel-auto-play. The service
itself sends a seat's time-out (the turn clock), disconnect (a stream not back within
the grace period), reconnect and escape; those may fail without failing anything (the
hand goes on without them).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from types import MappingProxyType

import structlog
from ddz.access.seat_gate import Gate
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.hand_fold import HandFold
from ddz.application.turns import TurnDeadline
from ddz.domain.hand import (
    Disconnect,
    DisconnectReason,
    Escape,
    Phase,
    PlayerView,
    Reconnect,
    RejectReason,
    Resume,
    SeatCommand,
    TimeOut,
    view_for,
)

from .clock import Timing
from .floor import Floor, check_seat
from .limits import Limited, RateLimits
from .ports import Envelope, Rules
from .tables import Table

log = structlog.get_logger("ddz.table")

IN_PLAY = (Phase.BIDDING, Phase.PLAYING)

_INVALID = Kind.INVALID  # the request is wrong in itself, whatever the hand's state
_NOT_NOW = Kind.PRECONDITION  # the hand's state does not allow it now
REFUSALS: MappingProxyType[RejectReason, tuple[Kind, Reason]] = MappingProxyType({
    RejectReason.NOT_YOUR_TURN: (_NOT_NOW, Reason.NOT_YOUR_TURN),
    RejectReason.CARDS_NOT_IN_HAND: (_NOT_NOW, Reason.CARDS_NOT_IN_HAND),
    RejectReason.NOT_A_COMBINATION: (_INVALID, Reason.NOT_A_COMBINATION),
    RejectReason.DOES_NOT_BEAT: (_NOT_NOW, Reason.DOES_NOT_BEAT),
    RejectReason.LEADER_CANNOT_PASS: (_NOT_NOW, Reason.LEADER_CANNOT_PASS),
    RejectReason.BOMB_LIMIT_REACHED: (_NOT_NOW, Reason.BOMB_LIMIT_REACHED),
    RejectReason.BID_NOT_HIGHER: (_NOT_NOW, Reason.BID_NOT_HIGHER),
    RejectReason.WRONG_PHASE: (_NOT_NOW, Reason.WRONG_PHASE),
    RejectReason.UNKNOWN_SEAT: (_INVALID, Reason.UNKNOWN_SEAT),
    # Reasons the wire enum groups: a bad bid or command, a show not allowed now.
    RejectReason.INVALID_BID: (_INVALID, Reason.INVALID_ARGUMENT),
    RejectReason.INVALID_COMMAND: (_INVALID, Reason.INVALID_ARGUMENT),
    RejectReason.ALREADY_SHOWN: (_NOT_NOW, Reason.WRONG_PHASE),
    RejectReason.NOT_ALLOWED: (_NOT_NOW, Reason.WRONG_PHASE),
})  # fmt: skip
"""The caller's refusal for each refusal of the rules (``DecideResponse.reason``)."""
UNKNOWN_REFUSAL = (_NOT_NOW, Reason.REASON_UNSPECIFIED)
_REJECT_REASONS = {reason.value: reason for reason in RejectReason}


def refusal_of(reason: str, message: str) -> Refusal:
    """The caller's refusal for the rules' ``reason`` (a RejectReason value)."""
    known = _REJECT_REASONS.get(reason)
    kind, name = REFUSALS[known] if known is not None else UNKNOWN_REFUSAL
    return Refusal(kind, name, message or reason)


@dataclass(frozen=True, slots=True)
class Seen:
    """A seat's view at a stream version."""

    view: PlayerView
    version: int
    table_id: str
    clock: TurnDeadline | None = None  # the turn's running clock, if any
    at: float | None = None  # the time the view is as of (Unix s); None: now


@dataclass(frozen=True, slots=True)
class Moved:
    """A move the rules accepted, and the acting seat's view after it."""

    version: int
    events: Sequence[Envelope]
    seen: Seen


class Moves:
    def __init__(
        self, floor: Floor, rules: Rules, gate: Gate, limits: RateLimits | None = None,
        timing: Timing | None = None,
    ) -> None:  # fmt: skip
        self.floor = floor
        self.rules = rules
        self.gate = gate
        self.limits = limits or RateLimits({})
        self.timing = timing

    def seen(self, fold: HandFold, seat: int) -> Seen:
        """The seat's view now, with the turn's clock."""
        clock = self.timing.of(fold) if self.timing is not None else None
        return Seen(view_for(fold.state, seat), fold.version, self.floor.table_id_of(fold.hand_id),
                    clock)  # fmt: skip

    async def seat_call(
        self, token: str | None, hand_id: str, seat: int, *, comes_back: bool = False,
        limited: Limited | None = None,
    ) -> HandFold:  # fmt: skip
        """The hand, once the caller may act for ``seat`` and read its cards. With
        ``comes_back``, a call of the seat's own player ends their disconnect; a
        ``limited`` call spends from the player's bucket of that kind (after the checks:
        a call refused anyway costs the player nothing)."""
        fold = await self.floor.hand(hand_id)
        check_seat(seat)
        caller = self.gate.seat(token, fold, seat)
        if limited is not None:
            self.limits.spend(limited, caller)
        if comes_back and not caller.operator:
            await self.back(hand_id, seat)
        return fold

    async def move(
        self, token: str | None, hand_id: str, command: SeatCommand, budget: float
    ) -> Moved:
        """Send the seat's command; wait up to ``budget`` s for the view to include it."""
        seat = command.seat
        fold = await self.seat_call(token, hand_id, seat, limited="move")
        if seat in fold.state.disconnected and not fold.state.seats[seat].is_bot:
            await self._reconnect(fold, seat)  # also when an operator's tool plays it
        answer = await self.rules.decide(hand_id, command, request_id=request_id())
        await self.floor.learn(hand_id, answer.events)
        if not answer.accepted:
            raise refusal_of(answer.reason, answer.message)
        await fold.wait_for(answer.version, budget)
        return Moved(answer.version, answer.events, self.seen(fold, seat))

    async def resume(self, token: str | None, hand_id: str, seat: int, budget: float) -> Moved:
        """The seat's player ends its auto-play. Theirs alone: an operator's token may
        act for any seat, but not press a player's cancel-auto-play button."""
        fold = await self.seat_call(token, hand_id, seat, limited="move")
        if self.gate.caller(token).operator:
            raise Refusal.denied("only the seat's own player may resume its play")
        if seat in fold.state.disconnected:
            await self._reconnect(fold, seat)
        answer = await self.rules.decide(hand_id, Resume(seat), request_id=request_id())
        await self.floor.learn(hand_id, answer.events)
        if not answer.accepted:
            raise refusal_of(answer.reason, answer.message)
        await fold.wait_for(answer.version, budget)
        return Moved(answer.version, answer.events, self.seen(fold, seat))

    # -- commands the service sends for a seat --------------------------------------------

    async def _send(
        self, hand_id: str, command: SeatCommand, request_id: str = "",
        expected_version: int | None = None,
    ) -> None:  # fmt: skip
        """Send a command of the service's own; a refusal is logged, not raised."""
        kind = type(command).__name__.lower()
        try:
            answer = await self.rules.decide(
                hand_id, command, request_id=request_id or str(uuid.uuid4()),
                expected_version=expected_version,
            )  # fmt: skip
        except Refusal as refusal:
            # CONFLICT on a disconnect with a version: the seat acted at the last moment.
            log.info("command_not_sent", command=kind, hand_id=hand_id, seat=command.seat,
                     kind=refusal.kind.name, reason=refusal.reason.value)  # fmt: skip
            return
        await self.floor.learn(hand_id, answer.events)
        log.info("seat_command", command=kind, hand_id=hand_id, seat=command.seat,
                 accepted=answer.accepted, reason=answer.reason)  # fmt: skip

    async def _reconnect(self, fold: HandFold, seat: int) -> None:
        """A player back from a disconnect takes their seat over from the bot (托管 ends)."""
        await self._send(fold.hand_id, Reconnect(seat), request_id())

    async def time_out(self, hand_id: str, clock: TurnDeadline, expected_version: int) -> None:
        """The turn clock's action: the seat's clock ran out; the bot moves once for it
        (and after enough in a row the seat is in auto-play). No disconnect."""
        after = self.timing.auto_play_after if self.timing is not None else 0
        command = TimeOut(clock.seat, round(clock.deadline * 1000), clock.seconds, after)
        await self._send(hand_id, command, expected_version=expected_version)

    async def escape(self, table: Table, seat: int) -> str:
        """The seat's player left: if a hand is in play it is an escape (§10.3 in bean
        rooms: the hand ends; §10.2: the bot plays on and the first to go pays)."""
        fold = await self.floor.last_hand(table)
        if fold is None or fold.state.phase not in IN_PLAY:
            return ""
        await self._send(fold.hand_id, Escape(seat))
        return fold.hand_id

    async def dropped(self, hand_id: str, seat: int) -> None:
        """The player's last stream on the seat dropped mid-hand and none came back within
        the grace period: the connection is lost; the bot plays on (§10.2)."""
        fold = self.floor.hands.get(hand_id)
        if fold is None or not self.person_in_play(fold, seat):
            return
        if seat not in fold.state.disconnected:
            await self._send(hand_id, Disconnect(seat, DisconnectReason.CONNECTION_LOST))

    async def back(self, hand_id: str, seat: int) -> None:
        """The seat's player is here (a stream, a call): end their disconnect, if any."""
        fold = self.floor.hands.get(hand_id)
        if fold is None or not self.person_in_play(fold, seat):
            return
        if seat in fold.state.disconnected:
            await self._reconnect(fold, seat)

    def person_in_play(self, fold: HandFold, seat: int) -> bool:
        """A person (not a bot) still holds the seat of a hand in play."""
        state = fold.state
        if state.phase not in IN_PLAY or state.seats[seat].is_bot:
            return False
        table = self.floor.tables.table_of(fold.hand_id)
        return table is None or seat not in table.left


def request_id() -> str:
    """The call's request id (bound by the server's interceptor), else a new one."""
    bound = structlog.contextvars.get_contextvars().get("request_id")
    return str(bound) if bound else str(uuid.uuid4())
