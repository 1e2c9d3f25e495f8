"""Tables and their hands (the operator's calls): open a table, show it, deal its next
hand. A table deals one hand at a time: the next only once the last is over."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import structlog
from ddz.access.seat_gate import Gate
from ddz.application.errors import Kind, Reason, Refusal
from ddz.application.hand_fold import HandFold
from ddz.domain.hand import HandState, SeatInfo
from ddz.domain.ruleset import RuleSet, Scoring, ruleset_for
from ddz.domain.settlement import RoomSettings
from ddz.domain.table import HandAssigned

from .floor import Floor
from .moves import request_id
from .ports import Dealer, DealOrder, Dealt
from .tables import Table

log = structlog.get_logger("ddz.table")


@dataclass(frozen=True, slots=True)
class TableSpec:
    """A table as an operator asks for it; ``rules`` None: the variant's."""

    table_id: str
    variant: str
    rules: RuleSet | None
    room: RoomSettings | None
    seats: Sequence[SeatInfo]


@dataclass(frozen=True, slots=True)
class Shown:
    """A table, and its hand in play ("" when none)."""

    table: Table
    hand_in_play: str


@dataclass(frozen=True, slots=True)
class Started:
    hand_id: str
    table_id: str
    first_bidder: int | None
    dealt: Dealt


DEAL_ATTEMPTS = 3
"""Times the same deal is asked for while its answer is lost (each within the dealer
call's own deadline)."""
DEAL_PAUSE = 0.2
"""Seconds before asking again, times the attempt."""
LOST_ANSWER = frozenset({Kind.UNAVAILABLE, Kind.TIMEOUT})
"""A deal that failed so may have been dealt (the answer was lost)."""
CANCEL_ATTEMPTS = 5
"""Times a deal is called off while that answer is lost too (0.2 ... 0.8 s apart)."""
PREVIOUS_HAND_KEPT = 60.0
"""Seconds a table's previous hand stays in memory once the next is dealt: a person who
dropped as it ended comes back to its stream within this and is served from memory;
later it is read back from the bus. Without it every ended hand stayed among the
feed's last thousand, about 60 KB each, whatever the load."""
FINISH_ATTEMPTS = 8
"""Times a take-over asks for a deal the last active instance never saw answered (0.2,
0.4 ... 1.4 s apart, 5.6 s in all: a NATS node's leader election)."""


class AnswerLost(Exception):
    """Every answer to a deal was lost: it may be dealt, now or later."""

    def __init__(self, refusal: Refusal) -> None:
        super().__init__(refusal.message)
        self.refusal = refusal


class CalledOff(Refusal):
    """The dealer recorded that it never deals the hand: withdrawn, and the caller
    refused as the last lost answer was."""

    def __init__(self, lost: Refusal) -> None:
        super().__init__(lost.kind, lost.reason, lost.message, **lost.metadata)


class Unsettled(Refusal):
    """Neither the deal nor its cancel was answered: not known whether it is dealt."""

    def __init__(self, lost: Refusal) -> None:
        super().__init__(lost.kind, lost.reason, lost.message, **lost.metadata)


class Dealing:
    def __init__(self, floor: Floor, dealer: Dealer, gate: Gate) -> None:
        self.floor = floor
        self.dealer = dealer
        self.gate = gate

    def shown(self, table: Table) -> Shown:
        return Shown(table, self.floor.hand_in_play(table))

    def open_table(self, token: str | None, spec: TableSpec) -> Shown:
        self.gate.operator(token)
        try:
            rules = spec.rules if spec.rules is not None else ruleset_for(spec.variant)
        except ValueError as exc:
            raise Refusal.invalid(str(exc)) from None
        room = spec.room if spec.room is not None else RoomSettings()
        table = self.floor.tables.open(rules, room, list(spec.seats), spec.table_id)
        log.info("table_opened", table_id=table.table_id, rules=table.rules.name)
        return self.shown(table)

    async def opened(self, shown: Shown) -> Shown:
        """``open_table``'s table once its stream has it (an id the bus knows from an
        earlier table is refused, and the table forgotten)."""
        try:
            await self.floor.tables.recorded(shown.table)
        except Refusal:
            self.floor.tables.forget(shown.table)
            raise
        return shown

    def get_table(self, token: str | None, table_id: str) -> Shown:
        table = self.floor.table(table_id)
        self.gate.at_table(token, table)
        return self.shown(table)

    async def start_hand(
        self, token: str | None, table_id: str, client_seeds: Sequence[bytes],
        show_before_deal: Sequence[int],
    ) -> Started:  # fmt: skip
        self.gate.operator(token)
        table = self.floor.table(table_id)
        async with table.lock:  # one deal at a time per table
            return await self.deal(table, client_seeds, show_before_deal)

    async def deal(
        self,
        table: Table,
        client_seeds: Sequence[bytes] = (),
        show_before_deal: Sequence[int] = (),
    ) -> Started:
        """Deal the table's next hand (the caller holds ``table.lock``)."""
        previous = await self.previous_hand(table)
        state = previous.state if previous is not None else None
        first_bidder = table.first_bidder_after(state.first_bidder if state is not None else None)
        assigned = HandAssigned(
            uuid.uuid4().hex, first_bidder, balances_after(table, state), tuple(client_seeds),
            tuple(show_before_deal), request_id(),
        )  # fmt: skip
        hand_id = assigned.hand_id
        # Known as this table's before its first event can arrive (turn deadlines), and
        # on the table's stream before the dealer deals it (a restart knows it, and can
        # ask for the same deal again; and the dealer deals under the rules, room, seats
        # and balances recorded there, never under the order's: ``order`` names the
        # hand, the table and the seeds).
        self.floor.tables.add_hand(table, assigned)
        try:
            await self.floor.tables.recorded(table)
        except BaseException:  # not known on the stream: a restart drops it unless dealt
            self.floor.tables.drop_hand(table, hand_id, record=False)
            raise
        order = order_for(table, assigned)
        try:
            dealt = await self._deal(order)
        except AnswerLost as lost:  # dealt or not? The dealer's cancel says which.
            dealt = await self._settle(table, order, lost.refusal)
        except Exception as exc:  # refused: withdrawn
            self.floor.tables.drop_hand(table, hand_id, withdrawn_because(exc))
            raise
        except BaseException:  # cut short (the service stops): a restart asks again
            self.floor.tables.drop_hand(table, hand_id, record=False)
            raise
        table.balances = assigned.balances
        await self.floor.learn(hand_id, dealt.events)
        if previous is not None:
            asyncio.get_running_loop().call_later(
                PREVIOUS_HAND_KEPT, self.floor.hands.forget, previous.hand_id
            )
        log.info("hand_started", table_id=table.table_id, hand_id=hand_id,
                 first_bidder=first_bidder)  # fmt: skip
        return Started(hand_id, table.table_id, first_bidder, dealt)

    async def finish(self, table: Table, assigned: HandAssigned) -> None:
        """Ask again for the deal of the table's last hand, which its stream assigned
        but the bus does not hold: the instance that asked for it died (or stepped
        down) before the answer. The very request again (``HandAssigned`` recorded it),
        which the dealer answers as a retry of the first: the hand is dealt once,
        whether the first request is lost, landed meanwhile, or lands later. Withdrawn
        only when the dealer refuses it, or never answers, and the bus still lacks it."""
        hand_id = assigned.hand_id
        order = order_for(table, assigned)
        async with table.lock:  # a StartHand for the table waits for this deal
            try:
                # Asked before (by the instance that died): "dealt before" is that
                # request being dealt right now, its seed kept and its events not yet
                # out, and is asked for again like a lost answer.
                try:
                    dealt = await self._deal(order, attempts=FINISH_ATTEMPTS, asked_before=True)
                except AnswerLost as lost:
                    dealt = await self._settle(table, order, lost.refusal, FINISH_ATTEMPTS)
            except CalledOff:
                return  # withdrawn by _settle
            except Refusal as refusal:
                if await self.floor.hands.load(hand_id) is not None:
                    return  # on the bus after all (its feed brings it)
                why = withdrawn_because(refusal, FINISH_ATTEMPTS)
                self.floor.tables.drop_hand(table, hand_id, why)
                return
            except Unsettled:
                return  # dropped in memory: the next take-over asks again
            await self.floor.learn(hand_id, dealt.events)
            log.info("hand_deal_finished", table_id=table.table_id, hand_id=hand_id)

    async def _settle(
        self, table: Table, order: DealOrder, lost: Refusal, attempts: int = DEAL_ATTEMPTS
    ) -> Dealt:
        """The deal's answers were all lost, so the dealer may still deal it (a stalled
        dealer publishing late): ask it to call the deal off. Withdrawn (``CalledOff``)
        only once the dealer answers that it never deals it; the hand as dealt when it
        answers "dealt". No answer to that either: forgotten here without a
        ``hand_withdrawn`` (``Unsettled``), so the table's next holder asks again."""
        try:
            dealt = await self._cancel(order)
        except BaseException as exc:
            self.floor.tables.drop_hand(table, order.hand_id, record=False)
            if not isinstance(exc, Refusal):
                raise
            log.error("hand_deal_unsettled", table_id=table.table_id, hand_id=order.hand_id,
                      why=exc.message)  # fmt: skip
            raise Unsettled(lost) from None
        if dealt is None:
            why = f"{withdrawn_because(lost, attempts)}; the dealer called it off"
            self.floor.tables.drop_hand(table, order.hand_id, why)
            raise CalledOff(lost)
        log.info("hand_dealt_after_all", table_id=table.table_id, hand_id=order.hand_id)
        return dealt

    async def _cancel(self, order: DealOrder) -> Dealt | None:
        """``dealer.cancel``, asked again while its answer is lost (a repeat answers
        as the first did)."""
        for attempt in range(1, CANCEL_ATTEMPTS + 1):
            try:
                return await self.dealer.cancel(order)
            except Refusal as refusal:
                if refusal.kind not in LOST_ANSWER or attempt == CANCEL_ATTEMPTS:
                    raise
                log.warning("cancel_answer_lost", hand_id=order.hand_id, attempt=attempt,
                            why=refusal.message)  # fmt: skip
                await asyncio.sleep(DEAL_PAUSE * attempt)
        raise AssertionError("unreachable")  # the last attempt returned or raised

    async def _deal(
        self, order: DealOrder, *, attempts: int = DEAL_ATTEMPTS, asked_before: bool = False
    ) -> Dealt:
        """``dealer.deal``, asked again with the same order when its answer was lost
        (the dealer or NATS went away, or answered too late): the dealer answers a
        repeated request as it answered the first, so a hand it did deal is not dropped
        here while it plays on the bus."""
        lost = asked_before
        for attempt in range(1, attempts + 1):
            try:
                return await self.dealer.deal(order)
            except Refusal as refusal:
                # After a lost answer, "dealt before" is our own first attempt still
                # finishing (the hand id is new: nobody else has it): ask once more.
                again = refusal.kind in LOST_ANSWER or (lost and refusal.kind is Kind.EXISTS)
                if not again:
                    raise
                if attempt == attempts:  # it may be dealt yet
                    raise AnswerLost(refusal) from None
                lost = True
                log.warning("deal_answer_lost", hand_id=order.hand_id, attempt=attempt,
                            why=refusal.message)  # fmt: skip
                await asyncio.sleep(DEAL_PAUSE * attempt)
        raise AssertionError("unreachable")  # the last attempt returned or raised

    async def previous_hand(self, table: Table) -> HandFold | None:
        """The table's last hand, which must be over before the next is dealt."""
        fold = await self.floor.last_hand(table)
        if table.last_hand_id is not None and (fold is None or not fold.over):
            raise Refusal.precondition(
                Reason.WRONG_PHASE,
                f"hand {table.last_hand_id} is still in play at table {table.table_id}",
            )
        return fold

    async def hand_over(self, table: Table) -> bool:
        """Whether the table's last hand is over (True when it has none)."""
        if table.last_hand_id is None:
            return True
        fold = await self.floor.last_hand(table)
        return fold is not None and fold.over


def order_for(table: Table, assigned: HandAssigned) -> DealOrder:
    """The deal of an assigned hand, as the table asks the dealer for it (the same
    order each time it is asked: the request id is the assignment's)."""
    return DealOrder(
        assigned.hand_id, table.table_id, table.rules, table.room, table.seats,
        assigned.first_bidder, assigned.balances, assigned.client_seeds,
        assigned.show_before_deal, assigned.deal_request_id or request_id(),
    )  # fmt: skip


def withdrawn_because(exc: Exception, attempts: int = DEAL_ATTEMPTS) -> str:
    """Why a hand the table gave up dealing is withdrawn (``hand_withdrawn``)."""
    if isinstance(exc, Refusal):
        if exc.kind in LOST_ANSWER:
            return f"the dealer's answer was lost {attempts} times: {exc.message}"
        return f"the dealer refused it: {exc.message}"
    return f"not dealt: {exc}"


def balances_after(table: Table, previous: HandState | None) -> tuple[int, int, int] | None:
    """Bean balances at the next hand's start (§10.3 limits): the table's balances for
    its first hand, then the last hand's balances plus its ledger."""
    if table.rules.scoring is not Scoring.BEANS or table.balances is None:
        return None
    if previous is None or previous.balances is None or previous.ledger is None:
        return table.balances
    after = [max(0, b + d) for b, d in zip(previous.balances, previous.ledger.deltas, strict=True)]
    return (after[0], after[1], after[2])
