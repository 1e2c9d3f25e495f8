"""Plays the seats the bot is responsible for: bot seats, disconnected seats, and a
person's turn that timed out (once; in auto-play, each turn whose short clock ran out).
Every move says it is the bot's (``by_bot``): the rules record why it moved (MoveBy).

Follows every hand through a ``HandFeed`` (a durable consumer of all hand events,
internal included, so it knows each seat's cards). Whenever the seat to act is one of
its seats, it decides from that seat's ``view_for(state, seat)`` only -- never the
full state -- and sends the move to the rules (the ``Rules`` port) with the hand's
stream version as ``expected_version``.

Races are expected and harmless: a move sent on a stale version is refused as a
CONFLICT (VERSION_CONFLICT) and is decided again once the feed has caught up; the
rules never apply it twice. One task per hand acts at a time; moves of one hand never overlap.

Instances: with ``DDZ_BOT_PARTITIONS`` above 1 the hands are shared among the bot
instances by partition leases (``partitions.Partitions``); ``owns`` says whether this
instance plays a hand now, and is asked again right before each move. (The older
static split, ``build(partition=i, partitions=n)``, plays the hands whose id hashes
to ``i`` on a durable consumer of its own.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable
from typing import Any

import structlog
from ddz.application.errors import Kind, Refusal
from ddz.application.hand_fold import HandFold, deal_complete
from ddz.application.streams import partition_of
from ddz.application.tasks import cancel_and_wait
from ddz.domain.hand import Bid, Command, HandState, Pass, Phase, Play, PlayerView, view_for
from ddz.domain.players import Player, play_of
from ddz.v1 import rules_pb2

from .batcher import DecideBatcher
from .ports import BotMetrics, Hands, Move, NoMetrics, Rules
from .stats import MoveStats

log = structlog.get_logger("ddz.bot")

RETRY_DELAYS = (0.05, 0.2, 0.5, 1.0)
"""Pauses before sending a move again after a transport error (unavailable, timeout)."""
RETRIED = frozenset({Kind.UNAVAILABLE, Kind.TIMEOUT})
"""Refusals that say "not now" rather than "no": the move is sent again."""
RECHECK_AFTER = 1.0
"""After a version conflict, look again this much later if the feed brought nothing."""


def seat_to_act(state: HandState) -> int | None:
    """The seat the bot plays now: the seat on turn if it is a bot seat, disconnected,
    or its person's turn has timed out."""
    if state.phase not in (Phase.BIDDING, Phase.PLAYING) or not 0 <= state.turn < len(state.seats):
        return None
    if not deal_complete(state):
        return None
    seat = state.turn
    timed_out = state.timed_out
    if (
        state.seats[seat].is_bot
        or seat in state.disconnected
        or (timed_out is not None and timed_out.seat == seat)
    ):
        return seat
    return None


def by_bot(command: Command) -> Command:
    """The move as the bot's own (the rules record who moved and why)."""
    if isinstance(command, Bid | Play | Pass):
        return dataclasses.replace(command, by_bot=True)
    return command


def fallback_move(view: PlayerView) -> Command:
    """A move the rules always accept: pass when allowed, else the first legal play."""
    if view.phase is Phase.BIDDING:
        return by_bot(Bid.pass_(view.seat))
    if view.can_pass:
        return Pass(view.seat, by_bot=True)
    return by_bot(play_of(view.seat, view.legal_moves()[0]))


def in_partition(hand_id: str, partition: int, partitions: int) -> bool:
    return partitions <= 1 or partition_of(hand_id, partitions) == partition


class AutoPlay:
    def __init__(
        self,
        rules: Rules,
        player: Player,
        owns: Callable[[str], bool] = lambda _hand: True,
        *,
        metrics: BotMetrics | None = None,
    ) -> None:
        self.moves = DecideBatcher(rules)
        self.metrics = metrics or NoMetrics()
        self.player = player
        self.owns = owns  # this instance plays the hand now (its partition's lease)
        self.stats = MoveStats()
        self.feed: Hands | None = None
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._dirty: set[str] = set()
        self._rechecks: set[asyncio.Task[None]] = set()
        self._stuck: dict[str, int] = {}  # hand -> state version its moves were refused at

    def attach(self, feed: Hands) -> None:
        self.feed = feed

    # -- the feed's callback -------------------------------------------------------------

    def on_change(self, fold: HandFold, applied: list[Any]) -> None:
        if seat_to_act(fold.state) is not None:
            self.kick(fold.hand_id)
        elif fold.over:
            self._stuck.pop(fold.hand_id, None)

    def kick(self, hand_id: str) -> None:
        """Make sure the hand's task looks at it (again)."""
        if not self.owns(hand_id):
            return
        task = self._tasks.get(hand_id)
        if task is not None:
            self._dirty.add(hand_id)
            return
        self._tasks[hand_id] = asyncio.create_task(self._run(hand_id), name=f"bot:{hand_id}")

    # -- acting --------------------------------------------------------------------------

    async def _run(self, hand_id: str) -> None:
        try:
            while True:
                self._dirty.discard(hand_id)
                fold = self.feed.get(hand_id) if self.feed is not None else None
                seat = None if fold is None else seat_to_act(fold.state)
                if fold is None or seat is None or not self.owns(hand_id):
                    return  # (a hand whose partition went elsewhere: stop at once)
                if self._stuck.get(hand_id) == fold.state.version:
                    return  # refused twice here: wait for the hand to move on
                before = fold.version
                await self._act(fold, seat)
                if fold.version == before and hand_id not in self._dirty:
                    return  # the feed will bring what happened, and kick again
        except Exception:
            log.exception("autoplay_failed", hand_id=hand_id)
        finally:
            del self._tasks[hand_id]

    async def _act(self, fold: HandFold, seat: int) -> None:
        view = view_for(fold.state, seat)
        command = by_bot(self.player.act(view))
        answer = await self._decide(fold, seat, command)
        if answer is not None and not answer.accepted:
            log.warning("bot_move_refused", hand_id=fold.hand_id, seat=seat,
                        reason=answer.reason, move=repr(command))  # fmt: skip
            fallback = fallback_move(view)
            if fallback != command and seat_to_act(fold.state) == seat:
                answer = await self._decide(fold, seat, fallback)
            if answer is not None and not answer.accepted:
                # Never loop on refusals (each one is recorded): a bug to look at.
                log.error("bot_stuck", hand_id=fold.hand_id, seat=seat, reason=answer.reason)
                self._stuck[fold.hand_id] = fold.state.version

    async def _decide(
        self, fold: HandFold, seat: int, command: Command
    ) -> rules_pb2.DecideResponse | None:
        """The move's answer, its events learned. Meanwhile the hand's events from the
        bus are held, so that those of the move itself (most of what comes) are folded
        once, from the answer, and never verified: the answer comes from the rules
        service over its authenticated channel, as a learned event always has."""
        if self.feed is None:
            return await self._send(fold, seat, command)
        self.feed.hold(fold.hand_id)
        try:
            return await self._send(fold, seat, command)
        finally:
            await self.feed.release(fold.hand_id)

    async def _send(
        self, fold: HandFold, seat: int, command: Command
    ) -> rules_pb2.DecideResponse | None:
        move = Move(fold.hand_id, seat, command, fold.version, str(uuid.uuid4()))
        for delay in (*RETRY_DELAYS, None):
            started = time.perf_counter()
            try:
                answer = await self.moves.decide(move)
            except Refusal as refusal:
                if refusal.kind is Kind.CONFLICT:
                    self.stats.conflicts += 1
                    self._recheck_later(fold.hand_id, fold.version)
                    return None
                self.stats.errors += 1
                if refusal.kind in RETRIED:
                    if delay is not None:
                        await asyncio.sleep(delay)
                        continue
                    self._recheck_later(fold.hand_id, fold.version)
                    return None
                log.error(
                    "bot_move_failed", hand_id=fold.hand_id, seat=seat, kind=refusal.kind.name,
                    reason=refusal.reason.value, details=refusal.message,
                )  # fmt: skip
                return None
            took = time.perf_counter() - started
            self.stats.record_latency(took)
            self.metrics.decision_took(took)
            if answer.accepted:
                self.stats.accepted += 1
            else:
                self.stats.refused += 1
            await self._learn(fold, answer)
            return answer
        return None  # pragma: no cover - the loop always returns

    async def _learn(self, fold: HandFold, answer: rules_pb2.DecideResponse) -> None:
        """Fold the answer's events now rather than wait for the consumer to bring them
        (the consumer's copies are then duplicates, ignored): the next bot seat can
        act at once. Hidden events are not in the answer; a gap waits for the feed."""
        if self.feed is not None:
            await self.feed.learn(fold.hand_id, answer.events)

    def _recheck_later(self, hand_id: str, version: int) -> None:
        async def recheck() -> None:
            await asyncio.sleep(RECHECK_AFTER)
            if self.feed is None:
                return
            fold = self.feed.get(hand_id)
            if fold is not None and fold.version == version:
                await self.feed.load(hand_id)  # nothing came: read the hand from the bus
            self.kick(hand_id)

        task = asyncio.create_task(recheck())
        self._rechecks.add(task)
        task.add_done_callback(self._rechecks.discard)

    @property
    def hands_in_play(self) -> int:
        if self.feed is None:
            return 0
        return sum(1 for fold in self.feed.hands.values() if not fold.over)

    async def close(self) -> None:
        with contextlib.suppress(Exception):  # logged where they ended
            await cancel_and_wait([*self._tasks.values(), *self._rechecks])
        await self.moves.close()
