"""The desk's words for a hand (``services.console.use_cases.present``): the result, worked out,
in headed sections as a bill is read, and a short Who for the timeline's column."""

from __future__ import annotations

import random

from ddz.adapters.store import create_store
from ddz.adapters.store.keys import Keyring
from ddz.audit import audit_hand
from ddz.audit.account.marks import BOT_SEAT, Actor
from ddz.audit.account.timeline import Entry
from ddz.audit.store.sample import SampleKeys, record_hand
from ddz.audit.store.source import load_hand
from ddz.domain.ruleset import CLASSIC

from services.console.servicer import templates
from services.console.use_cases.present import Section, sections, who


def _settled_details() -> tuple[str, ...]:
    producers = SampleKeys.generate()
    store = create_store("sqlite:///:memory:", upgrade=True)
    try:
        hand_id = record_hand(store, CLASSIC, random.Random(7), signers=producers, key=b"k" * 32)
        record = load_hand(store, hand_id)
        assert record is not None
        keys = Keyring.of_hmac(b"k" * 32, "k1").with_events(producers.keyring)
        report = audit_hand(record.events, keys, record.signatures)
    finally:
        store.close()
    return next(e for e in report.timeline().entries if e.type == "hand_settled").details


def test_the_result_is_headed_sections_not_numbered_lines() -> None:
    parts = sections(_settled_details())
    assert [p.heading for p in parts] == ["Multiplier", "Ledger", "Arithmetic"]
    assert all(p.lines and not any(line.endswith(":") for line in p.lines) for p in parts)
    assert parts[0].lines[0].startswith("initial ×1")
    assert any(line.startswith("deltas:") for line in parts[1].lines)
    assert parts[2].lines[0].startswith("base × multiplier:")
    assert sections(["lone line", "head:", "  one"]) == [
        Section("", ["lone line"]), Section("Head", ["one"])]  # fmt: skip


def test_the_hand_page_shows_the_result_as_sections() -> None:
    html = (
        templates()
        .from_string(
            "{% for part in sections(details) %}<h3>{{ part.heading }}</h3>"
            "{% for l in part.lines %}<li>{{ l }}</li>{% endfor %}{% endfor %}"
        )
        .render(details=_settled_details())
    )
    assert "<h3>Multiplier</h3>" in html and "<li>multiplier:</li>" not in html


def test_who_is_short_and_says_why_the_bot_moved_on_a_line_of_its_own() -> None:
    moved = Entry(5, "play_made", "x", actor=Actor(0, "root", bot=True, why="turn timed out",
                                                   since=5))  # fmt: skip
    assert (who(moved).name, who(moved).why) == ("bot for root", "seat 0 · turn timed out at #5")
    seat = Entry(6, "play_made", "x", actor=Actor(2, "bot-2", bot=True, why=BOT_SEAT))
    assert (who(seat).name, who(seat).why) == ("bot seat 2", "")
    person = Entry(7, "play_made", "x", actor=Actor(1, "ann"))
    assert who(person).name == "ann (seat 1)"
    assert who(Entry(1, "hand_started", "x", producer="dealer")).name == "dealer"
