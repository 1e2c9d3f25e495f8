"""The player's page in a browser: Debian's Chromium (``/usr/bin/chromium``, driven by
pytest-playwright; nothing is downloaded) against a real suite started as ``ddz up``
starts it, the players' web front included, on free ports.

Two people, each in a browser context of their own, sign in with their player tokens,
join the classic room (a bot fills the third seat) and play a whole hand to its result,
each move chosen by clicking cards and buttons (the table's hint says which), and the
hand's evidence file downloaded from the page verifies with ``ddz audit --bundle``. Neither
page ever holds another seat's cards: not in its DOM, not in any gRPC-Web answer it
receives. A reload mid-hand rejoins the same seat without a new sign-in, and a second
tab of the same player gets the same seat, not a second one.
``DDZ_PLAY_SCREENSHOTS=<dir>`` keeps screenshots of the page there (the ones in
docs/screenshots were taken so)."""

from __future__ import annotations

import re
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from ddz.v1 import hand_events_pb2, table_pb2
from play_web_kit import CHROMIUM, CHROMIUM_ARGS, PlaySuite, play_suite, shoot, sign_in
from playwright.sync_api import Browser, BrowserContext, Page, Response, expect, sync_playwright
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ANSWERS = {  # what each TableService method answers with a view or events in it
    "WatchHand": table_pb2.WatchHandResponse, "Play": table_pb2.PlayResponse,
    "Pass": table_pb2.PassResponse, "Bid": table_pb2.BidResponse,
    "ShowCards": table_pb2.ShowCardsResponse, "Resume": table_pb2.ResumeResponse,
    "GetView": table_pb2.GetViewResponse,
}  # fmt: skip
HAND_MOVES = 200  # more moves than any hand has: a hand that does not end fails


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaySuite]:
    # a long turn clock: nobody's turn runs out while the test clicks
    with play_suite(tmp_path_factory.mktemp("play-web"), {"DDZ_TURN_TIMEOUT": "120"}) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """Debian's Chromium, for this module alone (Playwright's sync API holds an event loop
    in this thread while it is open)."""
    assert CHROMIUM.exists(), "apt-get install -y chromium (.ci/run does)"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


class Answers:
    """Every gRPC-Web answer of the TableService a page received, decoded."""

    def __init__(self, page: Page) -> None:
        self.messages: list[tuple[str, object]] = []
        page.on("requestfinished", lambda request: self.keep(request.response()))

    def keep(self, response: Response | None) -> None:
        if response is None or "/ddz.v1.TableService/" not in response.url:
            return
        method = response.url.rsplit("/", 1)[1]
        kind = ANSWERS.get(method)
        if kind is None:
            return
        body = response.body()
        while len(body) >= 5:
            flags, size = struct.unpack(">BI", body[:5])
            frame, body = body[5 : 5 + size], body[5 + size :]
            if not flags & 0x80:  # a message, not the trailers
                self.messages.append((method, kind.FromString(frame)))

    def views_and_events(self) -> tuple[list[table_pb2.PlayerView], list[object]]:
        views, events = [], []
        for _method, message in self.messages:
            outcome = getattr(message, "outcome", None)
            if outcome is not None and message.HasField("outcome"):  # type: ignore[attr-defined]
                views.append(outcome.view)
                events.extend(outcome.events)
            if isinstance(message, table_pb2.WatchHandResponse):
                if message.HasField("view"):
                    views.append(message.view)
                if message.HasField("event"):
                    events.append(message.event)
            if isinstance(message, table_pb2.GetViewResponse):
                views.append(message.view)
        return views, events


def new_player(browser: Browser, suite: PlaySuite, name: str, **size: int) -> BrowserContext:
    viewport = {"width": size.get("width", 1280), "height": size.get("height", 800)}
    # the suite's own CA signed the front's certificate: the browser does not know it
    return browser.new_context(ignore_https_errors=True, viewport=viewport)  # type: ignore[arg-type]


def my_seat(page: Page) -> int:
    mine = page.locator(".seat.me")
    return int(mine.get_attribute("data-testid").removeprefix("seat-"))  # type: ignore[union-attr]


def take_turn(page: Page) -> bool:
    """Make this page's move if it is its turn, by clicking: ask the hint, then click the
    bid button or the cards it names and Play (or Pass). False: not its turn."""
    hint = page.locator("#hint-button")
    if hint.is_disabled() or not page.locator("#result").is_hidden():
        return False
    hint.click()
    said = page.locator("#hint")
    expect(said).to_contain_text("Hint: ")
    text = said.inner_text().removeprefix("Hint: ")
    before = page.locator("#table").get_attribute("data-version")
    click_move(page, text)
    # the move's answer (rendered before the page is no longer busy) moves the hand on;
    # a refusal would say why it did not
    expect(page.locator("#table")).to_have_attribute("data-busy", "0")
    expect(page.locator("#refusal")).to_be_hidden()
    expect(page.locator("#table")).not_to_have_attribute("data-version", before or "")
    return True


def click_move(page: Page, text: str) -> None:
    # Showing one's hand (§6) may be hinted while the bids are offered too: its own button.
    if text.startswith("show"):
        page.get_by_role("button", name="Show cards").click()
        return
    bids = page.locator("#bids button")
    if bids.count():
        words = {"pass": "No bid", "grab": "Grab the landlord"}
        wanted = words.get(text.split(" ")[0], text.split(" (")[0].capitalize())
        bids.filter(has_text=re.compile(f"^{re.escape(wanted)}")).first.click()
        return
    if text.startswith("pass"):
        page.locator("#pass-button").click()
        return
    match = re.match(r"play (\S+)", text)
    assert match, text
    page.locator("#clear-button").click()
    cards = page.locator("[data-testid=my-cards] [data-card]")
    taken: set[int] = set()
    for rank in re.findall(r"10|[3-9TJQKA2BR]", match.group(1)):
        rank = "T" if rank == "10" else rank
        for index in range(cards.count()):
            value = cards.nth(index).get_attribute("data-card") or ""
            joker = {"B": "BJ", "R": "RJ"}.get(rank)
            if index not in taken and (value == joker or (not joker and value[:-1] == rank)):
                cards.nth(index).click()
                taken.add(index)
                break
        else:
            raise AssertionError(f"no card {rank} to click for {text!r}")
    page.locator("#play-button").click()


def no_other_seats_cards(page: Page, answers: Answers, seat: int) -> None:
    shown = page.locator("[data-testid=my-cards] [data-card]").count()
    assert page.locator("[data-card]").count() == shown  # no card elements but mine
    views, events = answers.views_and_events()
    assert views, "the page received views"
    # another seat's cards reach a page only once that seat has shown them (§6)
    showed = {seat} | {
        hand_events_pb2.CardsShown.FromString(event.payload).seat  # type: ignore[attr-defined]
        for event in events
        if event.type == "cards_shown"  # type: ignore[attr-defined]
    }
    for view in views:
        assert view.seat == seat
        assert len(view.cards) == view.card_counts[seat]
        assert {s.seat for s in view.shown} <= showed
    assert all(event.type != "cards_dealt" for event in events)  # type: ignore[attr-defined]


@pytest.mark.parametrize("room", ["classic", "laizi"])
def test_two_people_and_a_bot_play_a_hand_by_clicking(
    browser: Browser, suite: PlaySuite, tmp_path: Path, room: str
) -> None:
    contexts = [new_player(browser, suite, name) for name in ("ann", "ben")]
    try:
        pages = [context.new_page() for context in contexts]
        answers = [Answers(page) for page in pages]
        for page, name in zip(pages, (f"ann-{room}", f"ben-{room}"), strict=True):
            sign_in(page, suite, name)
        if room == "classic":
            shoot(pages[0], "rooms")
        for page in pages:
            page.locator(f"button[data-room={room}]").click()
        for page in pages:
            expect(page.get_by_test_id("hand-id")).not_to_be_empty(timeout=60_000)
            expect(page.locator("[data-testid=my-cards] [data-card]")).to_have_count(17)
        hand_id = pages[0].get_by_test_id("hand-id").inner_text()
        assert pages[1].get_by_test_id("hand-id").inner_text() == hand_id
        seats = [my_seat(page) for page in pages]
        assert len(set(seats)) == 2
        bot = ({0, 1, 2} - set(seats)).pop()
        expect(pages[0].get_by_test_id(f"seat-{bot}")).to_contain_text("(bot)")
        clocked = False
        for _ in range(HAND_MOVES):
            if all(page.get_by_test_id("result").is_visible() for page in pages):
                break
            moved = False
            for page in pages:
                if not clocked and page.get_by_test_id("turn-clock").is_visible():
                    clock = page.get_by_test_id("turn-clock")
                    assert re.fullmatch(r"\d+", clock.inner_text())
                    deadline = clock.get_attribute("data-deadline") or ""
                    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", deadline)
                    shoot(page, f"table-{room}" if room != "classic" else "table")
                    clocked = True
                moved = take_turn(page) or moved
            if not moved:
                pages[0].wait_for_timeout(200)
        for page in pages:
            result = page.get_by_test_id("result")
            expect(result).to_be_visible()
            expect(result).to_contain_text(re.compile("The (landlord|farmers) wins?"))
            expect(result.locator("#arithmetic")).to_contain_text("multiplier", timeout=30_000)
        shoot(pages[0], "result" if room == "classic" else f"result-{room}")
        if room == "laizi":  # the wildcard rank drawn (§5) is named on the table
            expect(pages[0].locator("#wild-line")).to_be_visible()
            expect(pages[0].locator("#wild")).not_to_be_empty()
        assert clocked, "a turn clock was shown"
        evidence = download_evidence(pages[1], tmp_path)
        assert evidence.name == f"hand-{hand_id}.ddz-evidence.json"
        audit = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "audit", "--bundle", str(evidence)],
            env=suite.env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert audit.returncode == 0, audit.stdout + audit.stderr
        for page, answer, seat in zip(pages, answers, seats, strict=True):
            no_other_seats_cards(page, answer, seat)
    finally:
        for context in contexts:
            context.close()


def download_evidence(page: Page, directory: Path) -> Path:
    """Click the hand's evidence link until the file comes (the recorder may still be
    storing the hand's last events: the page then says the hand is not ready)."""
    for _ in range(50):
        try:
            with page.expect_download(timeout=3_000) as downloading:
                page.get_by_role("button", name="Download the evidence file").click()
        except PlaywrightTimeout:
            expect(page.locator("#refusal")).to_be_visible()
            continue
        download = downloading.value
        path = directory / download.suggested_filename
        download.save_as(path)
        return path
    raise AssertionError("the evidence file never came")


def test_a_reload_or_a_lost_network_rejoins_the_same_seat_and_a_second_tab_no_other(
    browser: Browser, suite: PlaySuite
) -> None:
    context = new_player(browser, suite, "cleo")
    try:
        page = context.new_page()
        sign_in(page, suite, "cleo-reloads")
        page.locator("button[data-room=classic]").click()
        hand = page.get_by_test_id("hand-id")
        expect(hand).not_to_be_empty(timeout=60_000)
        hand_id, seat = hand.inner_text(), my_seat(page)
        cards = page.locator("[data-testid=my-cards] [data-card]")
        expect(cards).to_have_count(17)
        held = sorted(cards.nth(i).get_attribute("data-card") or "" for i in range(17))
        # cards are picked by keyboard too: focus, → to the next, Space picks
        cards.first.focus()
        page.keyboard.press("ArrowRight")
        page.keyboard.press("Space")
        expect(cards.nth(1)).to_have_attribute("aria-pressed", "true")
        expect(cards.first).to_have_attribute("aria-pressed", "false")
        page.reload()  # no sign-in asked: the token lasts
        expect(page.get_by_test_id("hand-id")).to_have_text(hand_id, timeout=30_000)
        assert my_seat(page) == seat
        expect(page.locator("#notice")).to_contain_text("back at your seat")
        expect(cards).not_to_have_count(0)
        again = sorted(cards.nth(i).get_attribute("data-card") or "" for i in range(cards.count()))
        assert set(again) <= set(held)  # the same hand (cards only leave it)
        second = context.new_page()  # the same player in a second tab: the same seat
        second.goto(suite.url)
        expect(second.get_by_test_id("hand-id")).to_have_text(hand_id, timeout=30_000)
        assert my_seat(second) == seat
        seats = second.locator("[data-testid^=seat-]")
        names = [seats.nth(i).locator(".name").inner_text() for i in range(seats.count())]
        assert sum(name.startswith("cleo-reloads") for name in names) == 1
        # the network goes away and comes back: the page follows the same seat again
        second.close()
        context.set_offline(True)
        expect(page.locator("#notice")).to_contain_text("Connection lost", timeout=30_000)
        context.set_offline(False)
        expect(page.locator("#notice")).to_contain_text("Connected again", timeout=30_000)
        expect(page.get_by_test_id("hand-id")).to_have_text(hand_id)
    finally:
        context.close()
