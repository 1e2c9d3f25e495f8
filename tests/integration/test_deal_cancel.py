"""A deal whose answers were all lost is dealt exactly once or never: never withdrawn by
the table and then dealt by a dealer that was only stalled.

The dealer is held (in this process: its use case's work parked in a task of its own,
which the gRPC deadline does not cancel, as a dealer process stopped with SIGSTOP would
go on after SIGCONT) while the table's three Deal attempts time out; the table then
calls the deal off (``CancelDeal``, answered by the dealer, which is not held for it);
then the held work goes on. Two places to be held, two outcomes:

- before it stored the hand's seed: the cancel is recorded first, the table withdraws
  the hand, and the held deals, going on, are refused: nothing of the hand reaches the
  bus, ever;
- after it stored the seed, before it published: the cancel cannot call the deal off,
  so it finishes it and answers "dealt"; the table plays the hand, and the held
  publishes find their own events: one ``hand_started``, versions 1..k once.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from ddz.adapters.messaging.hand_stream import read as read_hand
from ddz.adapters.messaging.subjects import stream_filter
from ddz.adapters.messaging.table_stream import JetStreamTableLog, decode, table_stream_id
from ddz.adapters.security.event_signing import event_keyring
from ddz.application.errors import Kind, Refusal
from ddz.domain.hand.events import HandStarted
from ddz.domain.table import HandWithdrawn
from ddz.v1 import table_pb2
from suite_kit import Suite
from table_kit import ENDED, view_of

from services.dealer.use_cases.handlers import Dealer

WAIT = 60.0
HELD = 3  # the table's Deal attempts (services.table.use_cases.dealing.DEAL_ATTEMPTS)


class Hold:
    """The first ``HELD`` calls of a coroutine function, parked until ``release``,
    each in a task that outlives its caller (the RPC that timed out)."""

    def __init__(self, original: Callable[..., Awaitable[Any]]) -> None:
        self.original = original
        self.gate = asyncio.Event()
        self.parked: list[asyncio.Task[Any]] = []

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if len(self.parked) >= HELD:
            return await self.original(*args, **kwargs)

        async def later() -> Any:
            await self.gate.wait()
            return await self.original(*args, **kwargs)

        task = asyncio.ensure_future(later())
        self.parked.append(task)
        return await asyncio.shield(task)

    async def release(self) -> list[BaseException | Any]:
        self.gate.set()
        return list(await asyncio.gather(*self.parked, return_exceptions=True))


def dealer_of(suite: Suite) -> Dealer:
    servicer = suite.running["dealer"].service.servicer
    dealer: Dealer = servicer.dealer
    return dealer


async def open_bot_table(suite: Suite, table_id: str) -> None:
    seats = [table_pb2.SeatSpec(player_id=f"bot-{table_id}-{s}", is_bot=True) for s in range(3)]
    await suite.table.OpenTable(
        table_pb2.OpenTableRequest(table_id=table_id, variant="classic", seats=seats)
    )


async def short_deal_deadline(suite: Suite) -> None:
    """The table service again, its calls' deadline 1 s (each Deal attempt's)."""
    await suite.stop("table")
    suite.settings = dataclasses.replace(
        suite.settings, rpc=dataclasses.replace(suite.settings.rpc, rpc_timeout=1.0)
    )
    await suite.start("table")


async def hand_events(suite: Suite, hand_id: str) -> list[Any]:
    found, _ = await read_hand(suite.bus, hand_id, keyring=event_keyring(suite.settings.keys))
    return found


async def last_table_event(suite: Suite, table_id: str) -> object:
    """The last event of the table's stream, read from the bus."""
    subject = stream_filter(table_stream_id(table_id))
    msg = await suite.bus.js.get_last_msg(suite.bus.stream, subject)
    envelope = event_keyring(suite.settings.keys).open(msg.data or b"")
    return decode(envelope.type, envelope.type_version, envelope.payload)


async def hands_listed(suite: Suite, table_id: str) -> tuple[str, ...]:
    """The table's hands as its stream has them (withdrawn ones left out)."""
    log = JetStreamTableLog(suite.bus, keyring=event_keyring(suite.settings.keys))
    history = await log.read(table_id)
    assert history is not None
    return tuple(history.state.hand_ids)


async def test_a_deal_held_before_its_seed_is_called_off_withdrawn_and_never_dealt(
    suite: Suite,
) -> None:
    await open_bot_table(suite, "t-held-early")
    await short_deal_deadline(suite)
    dealer = dealer_of(suite)
    hold = Hold(dealer.deal)
    dealer.deal = hold  # type: ignore[method-assign]

    with pytest.raises(grpc.aio.AioRpcError) as lost:
        await suite.table.StartHand(
            table_pb2.StartHandRequest(table_id="t-held-early"), timeout=WAIT
        )
    assert lost.value.code() is grpc.StatusCode.DEADLINE_EXCEEDED, lost.value.details()
    assert len(hold.parked) == HELD  # all three attempts reached the dealer and were held
    withdrawn = await last_table_event(suite, "t-held-early")
    deadline = asyncio.get_running_loop().time() + WAIT
    while not isinstance(withdrawn, HandWithdrawn):  # written behind the answer
        assert asyncio.get_running_loop().time() < deadline, withdrawn
        await asyncio.sleep(0.05)
        withdrawn = await last_table_event(suite, "t-held-early")
    assert "called it off" in withdrawn.reason
    assert await hands_listed(suite, "t-held-early") == ()

    # The held dealer goes on: each of its deals is refused, nothing is published.
    outcomes = await hold.release()
    assert all(isinstance(o, Refusal) and o.kind is Kind.PRECONDITION for o in outcomes), outcomes
    assert all("called off" in str(o) for o in outcomes)
    await asyncio.sleep(0.5)
    assert await hand_events(suite, withdrawn.hand_id) == []

    # The table deals on, a new hand.
    started = await suite.table.StartHand(table_pb2.StartHandRequest(table_id="t-held-early"))
    assert started.hand_id != withdrawn.hand_id
    got = await suite.table.GetTable(table_pb2.GetTableRequest(table_id="t-held-early"))
    assert list(got.table.hand_ids) == [started.hand_id]


async def test_a_deal_held_after_its_seed_is_dealt_once_by_the_cancel_and_played(
    suite: Suite,
) -> None:
    await open_bot_table(suite, "t-held-late")
    await short_deal_deadline(suite)
    dealer = dealer_of(suite)
    hold = Hold(dealer.hands.start)
    dealer.hands.start = hold  # type: ignore[method-assign]

    started = await suite.table.StartHand(
        table_pb2.StartHandRequest(table_id="t-held-late"), timeout=WAIT
    )
    assert len(hold.parked) == HELD
    hand_id = started.hand_id
    assert started.commitment and started.version >= 2
    assert await hands_listed(suite, "t-held-late") == (hand_id,)  # not withdrawn

    outcomes = await hold.release()  # the held publishes find their own events
    assert not any(isinstance(o, BaseException) for o in outcomes), outcomes
    found = await hand_events(suite, hand_id)
    assert sum(isinstance(e.event, HandStarted) for e in found) == 1
    assert [e.envelope.stream_version for e in found] == list(range(1, len(found) + 1))
    assert found[0].event.commitment == started.commitment

    deadline = asyncio.get_running_loop().time() + WAIT
    while (await view_of(suite.table, hand_id, 0)).phase != ENDED:  # the bots play it out
        assert asyncio.get_running_loop().time() < deadline, f"hand {hand_id} did not end"
        await asyncio.sleep(0.1)
    got = await suite.table.GetTable(table_pb2.GetTableRequest(table_id="t-held-late"))
    assert list(got.table.hand_ids) == [hand_id]
