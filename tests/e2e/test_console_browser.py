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

import datetime as dt
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from desk_kit import (
    DROPPER,
    IDLE_PERSON,
    Desk,
    accessible,
    kill_console,
    running_desk,
    session_cookies,
    shoot,
    sign_in,
)
from playwright.sync_api import Browser, Dialog, Page, expect, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]  # fmt: skip
MARKUP_NAME = "<script>alert(1)</script>"


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


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Desk]:
    with running_desk(tmp_path_factory.mktemp("desk")) as started:
        yield started


def test_no_session_and_a_players_token_are_refused(page: Page, desk: Desk) -> None:
    for path in ("/hands", f"/hands/{desk.hands[0]}", f"/players/{desk.player}", "/live"):
        response = page.goto(f"{desk.url}{path}")
        assert response is not None and response.status == 401, path
        expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to the dispute desk")
        assert desk.hands[0] not in page.content()
    page.get_by_label("Staff token").fill(desk.token("player", desk.player))
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("player's or operator's token")
    assert session_cookies(page) == []
    page.get_by_label("Staff token").fill("not a token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not a staff token")
    assert session_cookies(page) == []


def test_signing_out_ends_the_session_even_for_a_copied_cookie(
    browser: Browser, page: Page, desk: Desk
) -> None:
    """The cookie names a session the console ends on the server: a copy of it opens
    nothing once its owner signed out, after a console killed with SIGKILL too, while
    another open session survives that kill."""
    sign_in(page, desk, "support", "sam-signs-out")
    (copied,) = session_cookies(page)
    other = browser.new_context(ignore_https_errors=True).new_page()
    sign_in(other, desk, "auditor", "ada-stays")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to the dispute desk")
    assert session_cookies(page) == []
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
                kill_console(desk, stolen)
    finally:
        thief.close()
    response = other.goto(f"{desk.url}/hands")
    assert response is not None and response.status == 200
    other.context.close()


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
    assert session_cookies(page) == []
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
    # The cards left at the end are shown to every seat (ddz.audit.account.sight): a seat that
    # never played holds its whole deal there, so that one line is left out of the check.
    text = "\n".join(
        line
        for line in page.locator("main").inner_text().splitlines()
        if not line.strip().startswith("cards left:")
    )
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
    shoot(page, Path(os.environ.get("DDZ_DESK_SCREENSHOTS", ".")), "hand-bot-for-a-person")


def test_every_page_has_headings_and_labels(page: Page, desk: Desk) -> None:
    shots = Path(os.environ.get("DDZ_DESK_SCREENSHOTS", "."))
    page.goto(f"{desk.url}/signin")
    accessible(page)
    shoot(page, shots, "signin")
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
        accessible(page)
        shoot(page, shots, name)
