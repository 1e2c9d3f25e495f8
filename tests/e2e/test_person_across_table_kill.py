"""A person at the table while the table service is killed with SIGKILL and started
again mid-hand, every service a real process (``Stack``):

- at a terminal (``ddz play`` in a pseudo-terminal), playing by the hints: the screen
  carries on after the restart, the seat token still acts, the hand ends with its
  settlement;
- a scripted client (``ddz.client.Session``, the code behind ``ddz play``) that stays
  away after the restart: its stream resumes from the last position it saw (every
  update once, none missed: the same positions as a replay from the start), its seat
  token still reads its seat, and its turn clock, resumed from the hand's last event,
  times her turns out (then auto-play): the bot finishes the hand, no disconnect.

The stalled-hand watchdog is set out of reach, so the seat goes to the bot by the table's
own turn clock.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Iterator

import pytest
from ddz.access.tokens import player_token
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.stack import Stack
from ddz.client.session import Session
from ddz.config import Settings
from ddz.v1 import rules_pb2, table_pb2
from terminal_kit import Terminal, env_for

ROOMS = """
opening_balance = 10000

[[rooms]]
id = "classic"
name = "Classic"
variant = "classic"
bot_fill_wait = 0.5
"""
TURN_TIMEOUT = 8.0
"""Long enough for a restart within a person's turn; short enough to wait out."""
PROMPT = r"→ (your bid|your turn|the hand is over)"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("ddz-person-kill")
    rooms = data_dir / "rooms.toml"
    rooms.write_text(ROOMS, encoding="utf-8")
    settings = Settings.from_env({
        "DDZ_DATA_DIR": str(data_dir), "DDZ_ROOMS_FILE": str(rooms),
        "DDZ_TURN_TIMEOUT": str(TURN_TIMEOUT), "DDZ_STALL_MARGIN": "3600",
    })  # fmt: skip
    with Stack(settings, ephemeral_ports=True, nats_port=0) as running:
        yield running


def kill_and_restart_table(stack: Stack) -> None:
    """``kill -9`` the table service, start it again half a second later at its
    address, and wait until it answers."""
    child = stack.processes["table"]
    os.kill(child.process.pid, signal.SIGKILL)
    child.process.wait()
    time.sleep(0.5)
    stack.restart("table")
    deadline = time.monotonic() + 60
    while (
        health_status(stack.settings.network.address("table"), 0.5, settings=stack.settings.calling)
        != SERVING
    ):
        assert time.monotonic() < deadline, stack.processes["table"].log_lines()
        time.sleep(0.05)


def test_a_person_at_a_terminal_plays_on_through_a_table_restart(stack: Stack) -> None:
    term = Terminal(
        [sys.executable, "-m", "ddz.entrypoints.cli", "play", "--room", "classic",
         "--name", "kim"],
        env_for(stack),
    )  # fmt: skip
    try:
        term.wait_for(r"your hand: [0-9TJQKA2BR ]+ \(17 cards\)")
        restarted = False
        moves_after = 0
        for _ in range(200):
            prompt = term.wait_for(PROMPT).group(1)
            if prompt == "the hand is over":
                break
            term.output = term.output[-20000:]
            term.type("?")
            typed = term.wait_for(r'hint: type "([^"]+)"').group(1)
            term.output = ""
            term.type(typed)
            term.wait_for(r"→ ")
            if not restarted:
                kill_and_restart_table(stack)  # mid-hand: her first move is in
                restarted = True
            else:
                moves_after += 1
        else:
            raise AssertionError("the hand did not end")
        assert restarted and moves_after > 0  # her seat token acted after the restart
        settled = term.wait_for(r"Settlement: the (landlord|farmers) wins?")
        assert settled, term.screen
        term.type("q")
        assert term.close() == 0
    finally:
        if term.process.poll() is None:
            term.process.kill()


async def _stays_away(stack: Stack) -> None:
    settings = stack.settings
    session = Session(
        settings.calling, settings.network.address("table"), player_token(settings.keys, "lou")
    )
    try:
        rooms = await session.rooms()
        room = next(r for r in rooms.rooms if r.room_id == "classic")
        joined = await session.join(room)
        hand_id, seat = joined.hand_id, session.seat
        seen: list[int] = []
        restarted = False
        last: table_pb2.WatchHandResponse | None = None
        async for update in session.follow(hand_id, 0):
            seen.append(int(update.position))
            last = update
            if not restarted and update.view.my_turn:
                # her turn: the service dies; she never acts again
                await asyncio.to_thread(kill_and_restart_table, stack)
                restarted = True
                view = await session.view(hand_id)  # the same seat token reads her seat
                assert view.seat == seat and view.my_turn
            if update.view.phase == rules_pb2.HAND_PHASE_ENDED:
                break
        assert restarted and last is not None
        assert last.view.phase == rules_pb2.HAND_PHASE_ENDED
        # the turn clock gave her turns to the bot: timed out, then auto-play (no escape)
        assert seat in last.view.auto_play and seat not in last.view.disconnected
        assert seen == sorted(set(seen)), "an update came twice or out of order"
        replay = []
        async for update in session.watch(hand_id, 0):
            replay.append(int(update.position))
            if update.view.phase == rules_pb2.HAND_PHASE_ENDED:
                break
        assert seen == replay, "the resumed stream missed an update"
    finally:
        await session.close()


def test_a_scripted_person_who_stays_away_resumes_and_the_clock_plays_her_seat(
    stack: Stack,
) -> None:
    asyncio.run(asyncio.wait_for(_stays_away(stack), timeout=240))
