"""The audit replays a stored hand as it was played: under the rule set it recorded, with
the table shown after any event.
"""

from __future__ import annotations

import dataclasses
import random

import pytest
from ddz.adapters.store import SqlEventStore, create_store
from ddz.audit import Verdict
from ddz.audit.store.sample import Mischief, record_hand
from ddz.domain.hand import CommandRejected, Phase, RejectReason, ShowCards, decide, replay
from ddz.domain.hand.events import CardsShown, PlayMade
from ddz.domain.ruleset import CLASSIC, ruleset_for
from tamper_kit import KEY, PRODUCERS, _audit, decoded

# --- replay independence ----------------------------------------------------------------------


def test_the_audit_replays_under_the_recorded_rule_set_not_the_variants_default() -> None:
    """A room's own rule set, named like a built-in variant: classic with show cards (§6
    lets a classic room turn them on). Replayed with the default ``classic`` the shows
    would be refused (``not_allowed``); the audit uses what HandStarted recorded."""
    store = create_store("sqlite:///:memory:", upgrade=True)
    own = dataclasses.replace(CLASSIC, show_cards=True)
    assert own.name == "classic" and own != ruleset_for("classic")
    rng = random.Random(8)
    for _ in range(20):
        hand_id = record_hand(
            store, own, rng, signers=PRODUCERS, key=KEY, odds=Mischief(refuse=0, show=0.4)
        )
        history = decoded(store.read_stream(f"hand-{hand_id}"))
        shows = [i for i, (_, e) in enumerate(history) if isinstance(e, CardsShown)]
        if shows:
            break
    else:
        raise AssertionError("no hand with a show in 20 tries")
    report = _audit(store, hand_id)
    assert report.clean, report.message
    before = replay(e for _, e in history[: shows[0]] if not isinstance(e, CommandRejected))
    assert before.phase in (Phase.BIDDING, Phase.PLAYING)
    shown = history[shows[0]][1]
    assert isinstance(shown, CardsShown)
    default_rules = dataclasses.replace(before, rules=ruleset_for("classic"))
    refusal = decide(default_rules, ShowCards(shown.seat, shown.cards_held), None)
    assert getattr(refusal, "code", None) is RejectReason.NOT_ALLOWED
    store.close()


def test_state_at_shows_the_table_after_any_event(
    originals: tuple[SqlEventStore, dict[str, list[str]]],
) -> None:
    source, by_variant = originals
    hand_id = by_variant["classic"][1]
    report = _audit(source, hand_id)
    history = [a.event for a in report.events]
    first_play = next(i for i, e in enumerate(history) if isinstance(e, PlayMade))
    version = first_play + 1
    table = report.state_at(version)
    made = history[first_play]
    assert isinstance(made, PlayMade)
    assert table.to_beat == made and table.turn == (made.seat + 1) % 3
    counts = [len(table.hand(seat)) for seat in range(3)]
    assert made.seat == table.state.landlord  # the landlord leads the first trick (§2)
    assert counts == [20 - len(made.cards) if s == made.seat else 17 for s in range(3)]
    lines = table.lines()
    assert lines[0].startswith(f"After event #{version}:") and "multiplier so far" in lines[-1]
    as_json = table.to_json()
    assert as_json["turn"] == table.turn and as_json["to_beat"]["seat"] == made.seat
    assert [s["count"] for s in as_json["seats"]] == counts
    # After the last event: the hand is over, nobody's turn, the cards left are shown.
    end = report.state_at(report.event_count)
    assert end.state.phase is Phase.ENDED and end.turn is None
    with pytest.raises(LookupError):
        report.state_at(report.event_count + 1)
    assert report.verdict is Verdict.CLEAN
