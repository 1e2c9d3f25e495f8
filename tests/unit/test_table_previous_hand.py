"""How long the table keeps a table's ended hand in memory: its previous hand a while
after the next is dealt (people who dropped as it ended come back to its stream), its
last hand until the next; after that, a reader has the hand read back from the bus.
The table's use cases with fake ports (``table_fakes``): no server, no bus."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator

import pytest
from ddz.domain.hand import Phase, SeatInfo
from table_fakes import FakeBot, FakeDealer, FakeHands, FakeRules, FakeSettlement, FakeTokens

from services.table.use_cases import dealing
from services.table.use_cases.dealing import TableSpec
from services.table.use_cases.handlers import TableHandlers
from services.table.use_cases.rooms import Rooms
from services.table.use_cases.tables import Tables

PEOPLE = (SeatInfo("alice"), SeatInfo("bob"), SeatInfo("bot-t-2", is_bot=True))


@pytest.fixture
async def handlers_and_hands() -> AsyncIterator[tuple[TableHandlers, FakeHands]]:
    hands = FakeHands()
    handlers = TableHandlers(
        tables=Tables(), hands=hands, rooms=Rooms((), opening_balance=100),
        dealer=FakeDealer(hands), rules=FakeRules(), bot=FakeBot(),
        settlement=FakeSettlement(), tokens=FakeTokens(), ready_wait=30.0,
    )  # fmt: skip
    yield handlers, hands
    await handlers.close()


def end(hands: FakeHands, hand_id: str) -> None:
    fold = hands.folds[hand_id]
    fold.state = dataclasses.replace(fold.state, phase=Phase.ENDED, seed=b"s" * 32)
    assert fold.over


async def test_a_tables_previous_hand_leaves_memory_a_while_after_the_next_is_dealt(
    handlers_and_hands: tuple[TableHandlers, FakeHands], monkeypatch: pytest.MonkeyPatch
) -> None:
    handlers, hands = handlers_and_hands
    monkeypatch.setattr(dealing, "PREVIOUS_HAND_KEPT", 0.05)
    handlers.dealing.open_table("op", TableSpec("t9", "classic", None, None, PEOPLE))
    first = await handlers.dealing.start_hand("op", "t9", (), ())
    end(hands, first.hand_id)
    second = await handlers.dealing.start_hand("op", "t9", (), ())
    assert first.hand_id in hands.folds  # at once: still served from memory
    await asyncio.sleep(0.2)
    assert first.hand_id not in hands.folds
    assert second.hand_id in hands.folds  # the hand in play stays, of course
    end(hands, second.hand_id)
    await asyncio.sleep(0.2)
    assert second.hand_id in hands.folds  # the table's last hand: until the next
