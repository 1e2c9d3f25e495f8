"""The dispute desk's browser tests' stack and helpers (tests/e2e/test_console_browser.py):
a real stack started as ``ddz up`` starts it, with bot hands played, a hand tampered with,
a hand in play, an idle table and a hand the bot finished for a person whose connection
dropped; signing in, the session cookie, a console killed with SIGKILL, the page checks
and the screenshots."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ddz.access.tokens import player_token
from ddz.adapters.rpc.bearer import bearer_channel
from ddz.adapters.rpc.grpc_client import ask
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import settings_env
from ddz.application.errors import Kind, Refusal
from ddz.config import Settings
from ddz.entrypoints.up_cmd import console_url
from ddz.loadgen.driver import BotTable, Driver
from ddz.v1 import table_pb2, table_pb2_grpc
from playwright.sync_api import Page, expect

SESSION_COOKIE = "__Host-ddz_desk"


@dataclass
class Desk:
    stack: Stack
    url: str
    env: dict[str, str]
    hands: list[str]  # finished classic hands of the bot table, oldest first
    player: str  # a player of those hands
    tampered: str  # a finished hand whose stored bytes were changed
    live: str  # a hand in play: a person's turn, a long turn clock
    person: str
    idle: str  # an open table with no hand dealt yet
    dropped: str  # a finished hand whose person's connection was lost: the bot played on

    def token(self, kind: str, name: str, *role: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "token", kind, name, *role],
            env=self.env, capture_output=True, text=True, timeout=60, check=True,
        )  # fmt: skip
        return done.stdout.strip()


IDLE_PERSON = "ida-at-an-idle-table"
DROPPER = "dora-whose-connection-dropped"


async def play(settings: Settings) -> tuple[list[str], str, str, str, str, str]:
    async with Driver(settings.calling, settings.keys) as driver:
        results = await driver.play("classic", hands=3, tables=1)
        hands = [r.hand_id for r in results]
        # a person's table: bots bid around them, then the hand waits for their turn
        person = "pat-the-person"
        seats = [table_pb2.SeatSpec(player_id=person, is_bot=False)] + [
            table_pb2.SeatSpec(player_id=f"bot-live-{s}", is_bot=True) for s in (1, 2)
        ]
        opened = await ask("table", driver.table.OpenTable,
                           table_pb2.OpenTableRequest(variant="classic", seats=seats))  # fmt: skip
        live = await driver.deal(BotTable("classic", "live", opened.table.table_id))
        # a table open with no hand dealt yet: the live tables show who sits there
        seats = [table_pb2.SeatSpec(player_id=IDLE_PERSON, is_bot=False)] + [
            table_pb2.SeatSpec(player_id=f"bot-idle-{s}", is_bot=True) for s in (1, 2)
        ]
        idle = await ask("table", driver.table.OpenTable,
                         table_pb2.OpenTableRequest(variant="laizi", seats=seats))  # fmt: skip
        read = await driver.read_hand(hands[-1])
        assert read
        dropped = await _drop_a_person(settings, driver)
    player = next(p for p in _players(read) if p)
    return hands, player, live, person, idle.table.table_id, dropped


async def _drop_a_person(settings: Settings, driver: Driver) -> str:
    """A hand whose person watched their seat, then lost the connection: once the
    reconnect grace is over the bot plays for them to the end ("bot for dora: connection
    lost at #N", the timeline's longest Who)."""
    seats = [table_pb2.SeatSpec(player_id=DROPPER, is_bot=False)] + [
        table_pb2.SeatSpec(player_id=f"bot-drop-{s}", is_bot=True) for s in (1, 2)
    ]
    opened = await ask("table", driver.table.OpenTable,
                       table_pb2.OpenTableRequest(variant="classic", seats=seats))  # fmt: skip
    hand_id = await driver.deal(BotTable("classic", "dropped", opened.table.table_id))
    channel = bearer_channel(settings.calling, player_token(settings.keys, DROPPER))
    try:
        stub = table_pb2_grpc.TableServiceStub(channel)  # type: ignore[no-untyped-call]
        stream = stub.WatchHand(table_pb2.WatchHandRequest(hand_id=hand_id, seat=0))
        await stream.read()  # the person is at the seat
        stream.cancel()  # and gone
    finally:
        await channel.close()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if "hand_settled" in _types(await driver.read_hand(hand_id)):
                return hand_id
        except Refusal as refusal:  # not recorded yet
            if refusal.kind is not Kind.NOT_FOUND:
                raise
        await asyncio.sleep(0.5)
    raise AssertionError(f"the bot did not finish hand {hand_id} for {DROPPER}")


def _types(stored: list[Any]) -> list[str]:
    from ddz.adapters import codec

    return [codec.parse_envelope(item.envelope).type for item in stored]


def _players(stored: list[Any]) -> list[str]:
    from ddz.adapters import codec

    first = codec.parse_envelope(stored[0].envelope)
    started = codec.decode_event(first.type, first.type_version, first.payload)
    return [seat.player_id for seat in started.seats]  # type: ignore[attr-defined]


def tamper(database: Path, hand_id: str, version: int) -> None:
    """What someone with the database file can do: drop the store's guards and flip a
    byte of one stored event of the hand."""
    conn = sqlite3.connect(database, timeout=120, isolation_level=None)
    try:
        # The recorder writes meanwhile. In WAL mode a read that turns into a write fails at
        # once (no busy wait) when a commit landed after the read began: take the write lock
        # first, waiting for it, and read inside it.
        conn.execute("BEGIN IMMEDIATE")
        triggers = conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")
        for (name,) in triggers.fetchall():
            conn.execute(f'DROP TRIGGER "{name}"')
        (envelope,) = conn.execute(
            "SELECT envelope FROM events WHERE stream_id = ? AND stream_version = ?",
            (f"hand-{hand_id}", version),
        ).fetchone()
        changed = bytearray(envelope)
        changed[-70] ^= 0x01  # inside the payload, before the signature
        conn.execute(
            "UPDATE events SET envelope = ? WHERE stream_id = ? AND stream_version = ?",
            (bytes(changed), f"hand-{hand_id}", version),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


@contextlib.contextmanager
def running_desk(data_dir: Path) -> Iterator[Desk]:
    """A real stack in ``data_dir`` with the desk's hands played (``Desk``), stopped after."""
    # a long turn clock: the person's hand stays in play while the tests look at it
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data_dir), "DDZ_TURN_TIMEOUT": "600",
                                  "DDZ_RECONNECT_GRACE": "1"})  # fmt: skip
    stack = Stack(settings, ephemeral_ports=True, nats_port=0)
    # Playwright's sync API runs an event loop in this thread: the stack's own asyncio
    # (starting NATS users, the driver) runs in a thread of its own.
    with ThreadPoolExecutor(1) as worker:
        worker.submit(stack.start).result()
        try:
            hands, player, live, person, idle, dropped = worker.submit(
                asyncio.run, play(stack.settings)
            ).result()
            tampered = hands[0]
            tamper(data_dir / "ddz.sqlite3", tampered, 6)
            env = {**os.environ, **settings_env(stack.settings)}
            yield Desk(stack, console_url(stack.settings), env, hands[1:], player, tampered,
                       live, person, idle, dropped)  # fmt: skip
        finally:
            worker.submit(stack.stop).result()


def sign_in(page: Page, desk: Desk, role: str = "support", name: str = "sam") -> None:
    page.goto(f"{desk.url}/signin")
    page.get_by_label("Staff token").fill(desk.token("staff", name, "--role", role))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Find hands")


def session_cookies(page: Page) -> list[Any]:
    return [c for c in page.context.cookies() if c["name"] == SESSION_COOKIE]


def kill_console(desk: Desk, page: Page) -> None:
    """SIGKILL the console and start it again, as its supervisor would; back when it
    answers."""
    (console,) = desk.stack.instances("console")
    desk.stack.restart(console.name)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if page.request.get(f"{desk.url}/signin").ok:
                return
        except Exception:
            pass
        time.sleep(0.3)
    raise AssertionError("the console did not come back after SIGKILL")


def accessible(page: Page) -> None:
    """The smoke check: a language, one h1, headings in order, every field labelled,
    every table captioned with header cells, every link named."""
    assert page.locator("html").get_attribute("lang") == "en"
    assert page.locator("h1").count() == 1
    levels = [int(tag[1]) for tag in page.locator("h1, h2, h3").evaluate_all(
        "els => els.map(e => e.tagName.toLowerCase())")]  # fmt: skip
    assert all(b - a <= 1 for a, b in itertools.pairwise(levels)), levels
    for field in page.locator("input:not([type=hidden]), select, textarea").all():
        field_id = field.get_attribute("id")
        assert field_id and page.locator(f'label[for="{field_id}"]').count() == 1, field_id
    for table in page.locator("table").all():
        assert table.locator("caption").count() == 1 and table.locator("th").count() > 0
    for link in page.locator("a").all():
        assert link.inner_text().strip() or link.get_attribute("aria-label"), link
    assert page.locator("main#main").count() == 1


def shoot(page: Page, directory: Path, name: str) -> None:
    if not os.environ.get("DDZ_DESK_SCREENSHOTS"):
        return
    directory.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(directory / f"desk-{name}.png"), full_page=True)
