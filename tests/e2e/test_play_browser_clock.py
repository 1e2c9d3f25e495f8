"""The turn clock in the player's page (Chromium against a real suite, short turns): the
clock counts down to the deadline the table sends; a turn left alone is played by the
bot and the page says so; two in a row put the seat in auto-play, shown with a Resume
button that gives the seat back. The page at a phone's size (390x844) too, signed in
as a guest (this suite lets guests play: ``DDZ_PLAY_GUESTS``).
``DDZ_PLAY_SCREENSHOTS=<dir>`` keeps its screenshots there."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

import pytest
from play_web_kit import CHROMIUM, CHROMIUM_ARGS, PlaySuite, play_suite, shoot
from playwright.sync_api import Browser, expect, sync_playwright

TURN_SECONDS = 6


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlaySuite]:
    env = {"DDZ_TURN_TIMEOUT": str(TURN_SECONDS), "DDZ_TIMEOUTS_TO_AUTOPLAY": "2",
           "DDZ_AUTOPLAY_TURN_TIMEOUT": "2", "DDZ_PLAY_GUESTS": "1"}  # fmt: skip
    with play_suite(tmp_path_factory.mktemp("play-clock"), env) as running:
        yield running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def test_a_turn_left_alone_is_the_bots_then_auto_play_until_resume(
    browser: Browser, suite: PlaySuite
) -> None:
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 390, "height": 844})
    try:
        page = context.new_page()
        page.goto(suite.url)  # this suite lets guests play: no token needed
        page.get_by_role("button", name="Play as a guest").click()
        expect(page.get_by_text(re.compile(r"Signed in as guest-[0-9a-f]{8}"))).to_be_visible()
        shoot(page, "phone-rooms")
        page.locator("button[data-room=classic]").click()
        expect(page.get_by_test_id("hand-id")).not_to_be_empty(timeout=60_000)
        clock = page.get_by_test_id("turn-clock")
        mine = page.locator(".seat.me")
        # the person's first turn: the clock counts down from the room's seconds
        expect(mine).to_have_class("seat me turn", timeout=30_000)
        expect(clock).to_be_visible()
        first = int(clock.inner_text())
        assert 0 < first <= TURN_SECONDS
        deadline = dt.datetime.fromisoformat(clock.get_attribute("data-deadline") or "")
        assert deadline.tzinfo is not None
        expect(clock).not_to_have_text(str(first), timeout=3_000)
        assert int(clock.inner_text()) < first
        shoot(page, "phone-table")
        # left alone: the bot moves for the seat, and the page says so
        timed_out = page.get_by_text("Time ran out: the bot played for you")
        expect(timed_out).to_be_visible(timeout=(TURN_SECONDS + 10) * 1000)
        # a second turn left alone: auto-play, with a Resume button
        banner = page.get_by_test_id("autoplay")
        expect(banner).to_be_visible(timeout=(TURN_SECONDS * 3 + 20) * 1000)
        expect(mine).to_contain_text("auto-play")
        shoot(page, "phone-autoplay")
        context.set_default_timeout(10_000)
        page.set_viewport_size({"width": 1280, "height": 800})
        shoot(page, "autoplay")
        page.get_by_role("button", name="Resume").click()
        expect(banner).to_be_hidden()
        expect(page.locator("#refusal")).to_be_hidden()
    finally:
        context.close()
