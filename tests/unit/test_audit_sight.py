"""One account of a hand for the terminal and the desk, seen by whom it is shown to:
every seat's cards for the operator (``ddz audit``), none of a hand in play on the desk,
one seat's and what the table showed everyone in that seat's view; and the desk's page
rendering of an entry's trace id."""

from __future__ import annotations

import datetime as dt
import json
import random
from collections.abc import Iterator

import pytest
from ddz.adapters.store import SqlEventStore, create_store
from ddz.adapters.store.keys import Keyring
from ddz.audit import AuditReport, audit_hand, audited_report
from ddz.audit.account.sight import DESK, EVERY_SEAT, Sight
from ddz.audit.account.snapshot import HIDDEN
from ddz.audit.account.timeline import Entry, Timeline
from ddz.audit.checks.describe import ranks
from ddz.audit.store.sample import PRODUCER, SampleKeys, record_hand
from ddz.audit.store.source import load_hand
from ddz.domain.hand.events import CardsDealt, HandSettled, HandStarted
from ddz.domain.ruleset import CLASSIC

from services.console.servicer import templates

KEY = b"k" * 32
PRODUCERS = SampleKeys.generate()


@pytest.fixture(scope="module")
def hand() -> Iterator[tuple[SqlEventStore, AuditReport]]:
    store = create_store("sqlite:///:memory:", upgrade=True)
    hand_id = record_hand(store, CLASSIC, random.Random(7), signers=PRODUCERS, key=KEY)
    record = load_hand(store, hand_id)
    assert record is not None
    keys = Keyring.of_hmac(KEY, "k1").with_events(PRODUCERS.keyring)
    report = audit_hand(record.events, keys, record.signatures)
    assert report.clean, report.message
    yield store, report
    store.close()


def _dealt(report: AuditReport) -> CardsDealt:
    return next(a.event for a in report.events if isinstance(a.event, CardsDealt))


def _words(timeline: Timeline) -> str:
    return json.dumps(timeline.to_json(), ensure_ascii=False)


def test_the_operators_account_is_the_terminal_transcript(
    hand: tuple[SqlEventStore, AuditReport],
) -> None:
    _, report = hand
    every = report.timeline(EVERY_SEAT)
    assert every is report.timeline() and every.lines() == report.transcript()
    words = _words(every)
    assert all(ranks(cards) in words for cards in _dealt(report).hands)
    settled = next(a.event for a in report.events if isinstance(a.event, HandSettled))
    assert every.entries[-1].multiplier == settled.multiplier.total
    assert every.entries[0].multiplier == settled.multiplier.factors[0].factor  # the initial
    assert {e.producer for e in every.entries} == {PRODUCER}  # the envelopes say who recorded
    started = report.events[0].event
    assert isinstance(started, HandStarted)
    assert every.players == tuple(s.player_id for s in started.seats)
    assert every.ended and every.variant == CLASSIC.name


def test_one_seats_view_shows_its_cards_and_no_other_seats(
    hand: tuple[SqlEventStore, AuditReport],
) -> None:
    _, report = hand
    dealt = _dealt(report)
    for seat in range(3):
        sight = Sight(seat, hide_in_play=True)
        view = report.timeline(sight)
        deal = next(e for e in view.entries if e.type == "cards_dealt")
        assert f"seat {seat} holds {ranks(dealt.hands[seat])}" in deal.text
        words = _words(view)
        for other in {0, 1, 2} - {seat}:
            assert ranks(dealt.hands[other]) not in words
        assert ranks(dealt.bottom) not in deal.text + " ".join(deal.details)
        table = report.state_at(2, sight)
        assert table.cards(seat) == ranks(dealt.hands[seat])
        assert [table.cards(o) for o in {0, 1, 2} - {seat}] == [HIDDEN, HIDDEN]
        assert HIDDEN in "\n".join(table.lines())


def test_a_hand_in_play_shows_no_card_on_the_desk(
    hand: tuple[SqlEventStore, AuditReport],
) -> None:
    store, report = hand
    stored = store.read_stream(report.stream_id)
    played = next(i for i, a in enumerate(report.events) if a.type == "play_made") + 3
    live = audited_report(report.stream_id, [row.envelope for row in stored[:played]], ())
    dealt = _dealt(live)
    for sight in (DESK, Sight(0, hide_in_play=True)):
        view = live.timeline(sight)
        assert not view.ended
        deal = next(e for e in view.entries if e.type == "cards_dealt")
        assert "cards hidden while the hand is in play" in deal.text
        words = _words(view)
        assert not any(ranks(cards) in words for cards in dealt.hands)
        table = live.state_at(played, sight)
        assert [table.cards(s) for s in range(3)] == [HIDDEN] * 3
        assert all(seat["physical"] == [] for seat in table.to_json()["seats"])
    # the operator's terminal shows them: it holds the store
    assert ranks(dealt.hands[0]) in _words(live.timeline())


def _page(entry: Entry, trace_url: str) -> str:
    account = Timeline("h1", "hand-h1", 1, None, None, (entry,), None, "clean", ())
    return (
        templates(trace_url)
        .get_template("_timeline.html")
        .render(account=account, hand={"at": 1}, v="")
    )


def test_a_trace_id_is_text_or_the_operators_link() -> None:
    at = dt.datetime(2026, 12, 4, 18, 3, 7, 412_000, tzinfo=dt.UTC)
    entry = Entry(1, "hand_started", "hand started", at=at, producer="dealer",
                  trace_id="4bf92f3577b34da6a3ce929d0e0e4736")  # fmt: skip
    plain = _page(entry, "")
    assert "<code>4bf92f3577b34da6a3ce929d0e0e4736</code>" in plain and '<a href="http' not in plain
    assert "2026-12-04 18:03:07.412" in plain and "dealer" in plain
    linked = _page(entry, "https://traces.example/trace/{trace_id}?from=desk")
    assert ('<a href="https://traces.example/trace/4bf92f3577b34da6a3ce929d0e0e4736?from=desk"'
            in linked)  # fmt: skip
    # an id is the record's data: markup in it is text, and the link escapes it
    odd = _page(Entry(1, "hand_started", "x", trace_id="<b>&"), "https://t.example/{trace_id}")
    assert "<b>" not in odd and "&lt;b&gt;&amp;" in odd and "https://t.example/%3Cb%3E%26" in odd
    assert 'class="trace"></td>' in _page(Entry(1, "hand_started", "x"), "https://t/{trace_id}")
