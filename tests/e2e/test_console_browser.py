"""The dispute desk in a browser: Debian's Chromium (``/usr/bin/chromium``, driven by
pytest-playwright; nothing is downloaded) against a real stack started as ``ddz up``
starts it, the console included, on free ports.

A support person signs in with a staff token, finds a hand by player and by time,
steps through it with the buttons and the arrow keys, looks at it as one seat saw it
(no other seat's cards), and sees a failed check once the stored bytes of a hand were
changed; a player's token and no token are refused; a name with markup is shown as
text; a hand in play shows no hidden cards; every page has its headings and labels.
Signing out ends the session on the server (a copied cookie opens nothing, a console
killed with SIGKILL included), a sign-in posted from another site is refused, and a
search is in the access log. ``DDZ_DESK_SCREENSHOTS=<dir>`` keeps the screenshots of the
main pages there (the ones in docs/screenshots were taken so)."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import os
import re
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from ddz.adapters.rpc.bearer import bearer_channel
from ddz.adapters.rpc.driver import BotTable, Driver
from ddz.adapters.rpc.grpc_client import ask
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import settings_env
from ddz.adapters.security.tokens import player_token
from ddz.application.errors import Kind, Refusal
from ddz.config import Settings
from ddz.entrypoints.up_cmd import console_url
from ddz.v1 import table_pb2, table_pb2_grpc
from playwright.sync_api import Browser, Dialog, Page, expect, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
SESSION_COOKIE = "__Host-ddz_desk"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]  # fmt: skip
MARKUP_NAME = "<script>alert(1)</script>"


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


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, for this module alone. Playwright's sync API keeps an event loop
    running in this thread while it is open; pytest-playwright's own fixtures keep it open
    for the whole session, and every asyncio test after this module would meet it."""
    assert CHROMIUM.exists(), "apt-get install -y chromium (.ci/run does)"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    # the stack's own CA signed the desk's certificate: the browser does not know it
    context = browser.new_context(ignore_https_errors=True,
                                  viewport={"width": 1280, "height": 900})  # fmt: skip
    try:
        yield context.new_page()
    finally:
        context.close()


IDLE_PERSON = "ida-at-an-idle-table"
DROPPER = "dora-whose-connection-dropped"


async def _play(settings: Settings) -> tuple[list[str], str, str, str, str, str]:
    async with Driver(settings) as driver:
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
    channel = bearer_channel(settings, player_token(settings, DROPPER))
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


def _tamper(database: Path, hand_id: str, version: int) -> None:
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


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    data_dir = tmp_path_factory.mktemp("desk")
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
                asyncio.run, _play(stack.settings)
            ).result()
            tampered = hands[0]
            _tamper(data_dir / "ddz.sqlite3", tampered, 6)
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


def test_no_session_and_a_players_token_are_refused(page: Page, desk: Desk) -> None:
    for path in ("/hands", f"/hands/{desk.hands[0]}", f"/players/{desk.player}", "/live"):
        response = page.goto(f"{desk.url}{path}")
        assert response is not None and response.status == 401, path
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to the dispute desk")
        assert desk.hands[0] not in page.content()
    page.get_by_label("Staff token").fill(desk.token("player", desk.player))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("player's or operator's token")
    assert _session_cookies(page) == []
    page.get_by_label("Staff token").fill("not a token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not a staff token")
    assert _session_cookies(page) == []


def _session_cookies(page: Page) -> list[Any]:
    return [c for c in page.context.cookies() if c["name"] == SESSION_COOKIE]


def test_signing_out_ends_the_session_even_for_a_copied_cookie(
    browser: Browser, page: Page, desk: Desk
) -> None:
    """The cookie names a session the console ends on the server: a copy of it opens
    nothing once its owner signed out, after a console killed with SIGKILL too, while
    another open session survives that kill."""
    sign_in(page, desk, "support", "sam-signs-out")
    (copied,) = _session_cookies(page)
    other = browser.new_context(ignore_https_errors=True).new_page()
    sign_in(other, desk, "auditor", "ada-stays")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to the dispute desk")
    assert _session_cookies(page) == []
    thief = browser.new_context(ignore_https_errors=True)
    try:
        thief.add_cookies([copied])
        stolen = thief.new_page()
        for attempt in ("before", "after the console's SIGKILL"):
            response = stolen.goto(f"{desk.url}/hands")
            assert response is not None and response.status == 401, attempt
            expect(stolen.get_by_role("heading", level=1)).to_have_text(
                "Sign in to the dispute desk"
            )
            if attempt == "before":
                _kill_console(desk, stolen)
    finally:
        thief.close()
    response = other.goto(f"{desk.url}/hands")
    assert response is not None and response.status == 200
    other.context.close()


def _kill_console(desk: Desk, page: Page) -> None:
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


def test_a_sign_in_posted_from_another_site_is_refused(page: Page, desk: Desk) -> None:
    """Login CSRF: a page elsewhere posts the attacker's staff token to the desk's
    sign-in from the victim's browser; the desk refuses it and sets no session."""
    evil = "https://evil.example"
    token = desk.token("staff", "mallory", "--role", "support")
    form = (f'<form id="f" method="post" action="{desk.url}/signin">'
            f'<input name="token" value="{token}"><input name="csrf" value="x"></form>'
            '<script>document.getElementById("f").submit()</script>')  # fmt: skip
    page.route(f"{evil}/**", lambda route: route.fulfill(
        status=200, content_type="text/html", body=form))  # fmt: skip
    with page.expect_response(f"{desk.url}/signin") as answer:
        page.goto(f"{evil}/prize")
    assert answer.value.status == 403
    assert answer.value.request.header_value("origin") == evil
    expect(page.get_by_role("alert")).to_contain_text("sent from another site")
    assert _session_cookies(page) == []
    # a sign-out posted from there leaves a signed-in member signed in
    sign_in(page, desk, "support", "sam-stays-in")
    page.route(f"{evil}/**", lambda route: route.fulfill(status=200, content_type="text/html",
        body=f'<form id="f" method="post" action="{desk.url}/signout"></form>'
             '<script>document.getElementById("f").submit()</script>'))  # fmt: skip
    with page.expect_response(f"{desk.url}/signout") as answer:
        page.goto(f"{evil}/again")
    assert answer.value.status == 403
    response = page.goto(f"{desk.url}/hands")
    assert response is not None and response.status == 200


def test_the_session_cookie_is_http_only_secure_and_strict(page: Page, desk: Desk) -> None:
    sign_in(page, desk)
    (cookie,) = page.context.cookies()
    assert cookie["name"].startswith("__Host-") and cookie["path"] == "/"
    assert cookie["httpOnly"] and cookie["secure"] and cookie["sameSite"] == "Strict"
    assert "." in cookie["value"] and "eyJhbGciOi" not in cookie["value"]  # not the token
    assert 0 < cookie["expires"] - dt.datetime.now(dt.UTC).timestamp() <= 30 * 60 + 5


def test_find_a_hand_by_player_and_by_time_then_step_through_it(page: Page, desk: Desk) -> None:
    sign_in(page, desk)
    page.get_by_label("Player").fill(desk.player)
    page.get_by_role("button", name="Search").click()
    rows = page.locator("table.hands tbody tr")
    expect(rows).to_have_count(len(desk.hands) + 1)  # and the tampered one
    for hand_id in desk.hands:
        expect(page.locator(f'a[href="/hands/{hand_id}"]')).to_have_count(1)
    # by time: the evening it was played, then an evening with nothing
    now = dt.datetime.now(dt.UTC)
    window = {"from": now - dt.timedelta(hours=1), "to": now + dt.timedelta(minutes=5)}
    for field, when in window.items():
        page.get_by_label(f"{field.capitalize()} (UTC)").fill(when.strftime("%Y-%m-%dT%H:%M"))
    page.get_by_role("button", name="Search").click()
    expect(page.locator(f'a[href="/hands/{desk.hands[-1]}"]')).to_have_count(1)
    yesterday = now - dt.timedelta(days=1)
    page.goto(f"{desk.url}/hands?player={desk.player}&from={yesterday:%Y-%m-%dT18:00}"
              f"&to={yesterday:%Y-%m-%dT23:00}")  # fmt: skip
    expect(page.get_by_text("No hand matches")).to_be_visible()

    page.goto(f"{desk.url}/hands?player={desk.player}")
    page.locator(f'a[href="/hands/{desk.hands[-1]}"]').click()
    expect(page.get_by_role("heading", level=1)).to_contain_text(desk.hands[-1])
    expect(page.locator(".verdict")).to_contain_text("clean")
    expect(page.locator(".checks li.pass")).to_have_count(9)
    page.goto(f"{desk.url}/hands/{desk.hands[-1]}?at=1")
    expect(page.locator(".step .where")).to_contain_text("#1 ·")
    page.keyboard.press("ArrowRight")
    expect(page).to_have_url(re.compile(r"at=2"))
    expect(page.locator(".step .where")).to_contain_text("#2 · the deal")
    page.get_by_role("link", name="Next ▶").click()
    expect(page).to_have_url(re.compile(r"at=3"))
    page.keyboard.press("ArrowLeft")
    expect(page).to_have_url(re.compile(r"at=2"))
    expect(page.locator("tr.current")).to_have_count(1)
    # the timeline: UTC times, time since the deal, who acted, the ledger's arithmetic
    first_play = page.locator("table.timeline tr", has_text=" plays ").first
    expect(first_play).to_contain_text(re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}"))
    expect(first_play).to_contain_text(re.compile(r"\+\d+\.\d s"))
    expect(first_play).to_contain_text("bot seat")
    # the result, worked out: headed sections, each a short list, as a bill is read
    result = page.locator("div.result")
    expect(result.locator("h3")).to_have_text(["Multiplier", "Ledger", "Arithmetic"])
    expect(result.locator("section", has_text="Ledger")).to_contain_text("deltas:")
    expect(result.locator("section", has_text="Arithmetic").locator("li").first).to_contain_text(
        "base × multiplier"
    )
    assert result.locator("li", has_text=re.compile(r"^\w+:$")).count() == 0


def test_one_seats_view_shows_no_other_seats_cards(page: Page, desk: Desk) -> None:
    sign_in(page, desk)
    hand_id = desk.hands[-1]
    page.goto(f"{desk.url}/hands/{hand_id}?at=2")
    every = [page.locator("table.cards tbody tr").nth(s).locator(".cards-cell").inner_text()
             for s in range(3)]  # fmt: skip
    assert all(len(cards) == 17 for cards in every) and "hidden" not in every
    page.get_by_role("link", name=re.compile(r"seat 1 \(")).click()
    expect(page).to_have_url(re.compile(r"view=1"))
    cells = page.locator("table.cards tbody tr .cards-cell")
    expect(cells.nth(1)).to_have_text(every[1])
    for other in (0, 2):
        expect(cells.nth(other)).to_have_text("hidden")
    deal = page.locator("table.timeline tr", has_text="the deal of round").first
    expect(deal).to_contain_text(f"seat 1 holds {every[1]}")
    text = page.locator("main").inner_text()
    for other in (0, 2):
        assert every[other] not in text
    # stepping keeps the seat's view
    page.get_by_role("link", name="Next ▶").click()
    expect(page).to_have_url(re.compile(r"at=3&view=1"))


def test_a_hand_whose_stored_bytes_changed_shows_a_failed_check(page: Page, desk: Desk) -> None:
    sign_in(page, desk)
    page.goto(f"{desk.url}/hands/{desk.tampered}")
    expect(page.locator(".verdict")).to_contain_text("hash_chain check failed")
    expect(page.locator(".checks li.fail")).to_contain_text("FAILED")


def test_the_evidence_file_verifies_offline_and_fails_once_changed(
    page: Page, desk: Desk, tmp_path: Path
) -> None:
    sign_in(page, desk)
    page.goto(f"{desk.url}/hands/{desk.hands[-1]}")
    with page.expect_download() as download:
        page.get_by_role("link", name="Evidence file for the player").click()
    assert download.value.suggested_filename == f"hand-{desk.hands[-1]}.ddz-evidence.json"
    evidence = tmp_path / download.value.suggested_filename
    download.value.save_as(evidence)
    keyring = tmp_path / "keyring.json"
    # offline: no data dir, no store, no network; the keyring the operator published
    offline = {k: v for k, v in desk.env.items() if not k.startswith("DDZ_")}
    offline["DDZ_DATA_DIR"] = str(tmp_path / "nothing-here")
    ddz = [sys.executable, "-m", "ddz.entrypoints.cli"]
    subprocess.run([*ddz, "keys", "export", "--out", str(keyring)], env=desk.env, check=True,
                   capture_output=True, timeout=60)  # fmt: skip
    verified = subprocess.run([*ddz, "audit", "--bundle", str(evidence), "--keys", str(keyring)],
                              env=offline, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert verified.returncode == 0, verified.stdout + verified.stderr
    data = bytearray(evidence.read_bytes())
    at = data.index(b'"envelope": "') + 40
    data[at] = ord("A") if data[at] != ord("A") else ord("B")
    evidence.write_bytes(bytes(data))
    changed = subprocess.run([*ddz, "audit", "--bundle", str(evidence), "--keys", str(keyring)],
                             env=offline, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert changed.returncode == 1, changed.stdout + changed.stderr
    # a hand in play has no evidence file yet: the page says why
    response = page.goto(f"{desk.url}/hands/{desk.live}/evidence")
    assert response is not None and response.status == 412
    expect(page.get_by_role("alert")).to_contain_text("still in play")


def test_markup_in_a_name_is_shown_as_text(page: Page, desk: Desk) -> None:
    dialogs: list[str] = []

    def on_dialog(dialog: Dialog) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    sign_in(page, desk)
    # no player id holds markup (ddz.domain.ids): its page is refused, in words
    response = page.goto(f"{desk.url}/players/{quote(MARKUP_NAME, safe='')}")
    assert response is not None and response.status == 400
    expect(page.get_by_role("alert")).to_contain_text("a player id is 1-64 letters")
    page.goto(f"{desk.url}/hands?player={quote(MARKUP_NAME)}")
    expect(page.get_by_label("Player")).to_have_value(MARKUP_NAME)
    expect(page.get_by_text("No hand matches")).to_be_visible()
    assert page.locator("script:not([src])").count() == 0
    assert dialogs == []


def test_a_live_hand_shows_no_hidden_cards(page: Page, desk: Desk) -> None:
    sign_in(page, desk)
    page.get_by_role("link", name="Live tables").click()
    expect(page.locator(f'a[href="/hands/{desk.live}"]')).to_have_count(1)
    # an open table with no hand in progress: its room, rules and who sits there
    idle = page.locator("section.live-table", has_text=desk.idle)
    expect(idle).to_contain_text("opened by an operator")
    expect(idle).to_contain_text("laizi")
    expect(idle.locator(".no-hand")).to_contain_text("No hand in progress")
    expect(idle.locator("table.table-seats tbody tr")).to_have_count(3)
    expect(idle.locator("table.table-seats")).to_contain_text(IDLE_PERSON)
    expect(idle.locator("table.table-seats")).to_contain_text("a bot seat")
    expect(page.locator(f'a[href="/players/{IDLE_PERSON}"]')).to_have_count(1)
    # the table of the hand in play, with its seats, and no card anywhere
    busy = page.locator("section.live-table", has=page.locator(f'a[href="/hands/{desk.live}"]'))
    expect(busy).to_contain_text(desk.person)
    page.locator(f'a[href="/hands/{desk.live}"]').click()
    expect(page.locator(".facts")).to_contain_text("in play")
    cells = page.locator("table.cards tbody tr .cards-cell")
    expect(cells).to_have_count(3)
    for seat in range(3):
        expect(cells.nth(seat)).to_have_text("hidden")
    expect(page.locator("table.timeline")).to_contain_text("cards hidden while the hand is in play")
    # a seat's view of a hand in play hides that seat's cards too: the desk is no table
    page.goto(f"{desk.url}/hands/{desk.live}?view=0")
    expect(page.locator("table.cards tbody tr .cards-cell").nth(0)).to_have_text("hidden")


def test_auditors_read_the_access_log_and_support_cannot(browser: Browser, desk: Desk) -> None:
    support = browser.new_context(ignore_https_errors=True).new_page()
    sign_in(support, desk, "support", "sam-the-support")
    support.goto(f"{desk.url}/hands/{desk.hands[0]}")
    response = support.goto(f"{desk.url}/access")
    assert response is not None and response.status == 403
    auditor = browser.new_context(ignore_https_errors=True).new_page()
    sign_in(auditor, desk, "auditor", "ada")
    auditor.get_by_role("link", name="Access log").click()
    row = auditor.locator("table.access tr", has_text="sam-the-support").first
    expect(row).to_contain_text(f"/hands/{desk.hands[0]}")
    expect(row).to_contain_text("support")


def test_a_search_the_live_tables_and_a_step_are_in_the_access_log(
    browser: Browser, desk: Desk
) -> None:
    support = browser.new_context(ignore_https_errors=True).new_page()
    sign_in(support, desk, "support", "sue-searches")
    support.get_by_label("Player").fill(desk.player)
    support.get_by_role("button", name="Search").click()
    expect(support.locator("table.hands tbody tr").first).to_be_visible()
    support.get_by_role("link", name="Live tables").click()
    support.goto(f"{desk.url}/hands/{desk.hands[0]}?at=3&view=1")
    auditor = browser.new_context(ignore_https_errors=True).new_page()
    sign_in(auditor, desk, "auditor", "ada")
    auditor.goto(f"{desk.url}/access")
    rows = auditor.locator("table.access tbody tr", has_text="sue-searches")
    expect(rows.filter(has_text=f"/hands?player={desk.player}")).to_have_count(1)
    expect(rows.filter(has_text="/live")).to_have_count(1)
    expect(rows.filter(has_text=f"/hands/{desk.hands[0]}?at=3&view=1")).to_have_count(1)
    expect(rows.first).to_contain_text("support")
    expect(rows.first).to_contain_text(re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d"))


def test_the_who_column_stays_readable_at_1280_px(page: Page, desk: Desk) -> None:
    sign_in(page, desk)
    page.goto(f"{desk.url}/hands/{desk.dropped}")
    cell = page.locator("table.timeline td.who", has_text=f"bot for {DROPPER}").first
    expect(cell.locator(".why")).to_contain_text("connection lost at #")
    lines = cell.evaluate(
        "td => Math.round(td.getBoundingClientRect().height / "
        "parseFloat(getComputedStyle(td).lineHeight))")  # fmt: skip
    assert lines <= 4, f"the Who cell wraps into {lines} lines"
    _shoot(page, Path(os.environ.get("DDZ_DESK_SCREENSHOTS", ".")), "hand-bot-for-a-person")


def test_every_page_has_headings_and_labels(page: Page, desk: Desk) -> None:
    shots = Path(os.environ.get("DDZ_DESK_SCREENSHOTS", "."))
    page.goto(f"{desk.url}/signin")
    _accessible(page)
    _shoot(page, shots, "signin")
    sign_in(page, desk, "auditor", "ada")
    pages = {
        "hands": f"{desk.url}/hands",
        "hand": f"{desk.url}/hands/{desk.hands[-1]}?at=14",
        "hand-seat-view": f"{desk.url}/hands/{desk.hands[-1]}?at=14&view=2",
        "failed-audit": f"{desk.url}/hands/{desk.tampered}",
        "player": f"{desk.url}/players/{desk.player}",
        "live": f"{desk.url}/live",
        "access": f"{desk.url}/access",
    }
    for name, url in pages.items():
        response = page.goto(url)
        assert response is not None and response.status == 200, name
        _accessible(page)
        _shoot(page, shots, name)


def _accessible(page: Page) -> None:
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


def _shoot(page: Page, directory: Path, name: str) -> None:
    if not os.environ.get("DDZ_DESK_SCREENSHOTS"):
        return
    directory.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(directory / f"desk-{name}.png"), full_page=True)
