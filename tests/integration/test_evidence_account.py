"""The audit's account of a hand (``ddz.audit.account.transcript``) in its evidence file, on hands
recorded as the services record them (``evidence_kit``): each event's UTC time and time
since the deal, the moves the bot made for a person and why, and the settlement written
out, its figures checked against RULES.md §10 computed here, for a ct hand (cap, rake)
and a laizi hand (room coefficient 100, wildcard factor 1/4); the file is built alike
from SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import math
import random
from fractions import Fraction
from pathlib import Path

from cli_kit import ddz
from ddz.adapters.store import SqlEventStore
from ddz.audit import AuditReport, audit_hand
from ddz.audit.account.timeline import Timeline, clock
from ddz.audit.evidence.file import build_evidence, verify_evidence
from ddz.audit.evidence.published import published_keys
from ddz.audit.store.sample import record_hand
from ddz.audit.store.source import load_hand
from ddz.config import Settings
from ddz.domain.hand import CommandRejected
from ddz.domain.hand.events import (
    BidMade,
    CardsDealt,
    HandSettled,
    Passed,
    PlayerDisconnected,
    PlayerReconnected,
    PlayMade,
)
from ddz.domain.multipliers import Side
from ddz.domain.ruleset import VARIANTS
from evidence_kit import PRODUCERS, Operator, _public, _recorder
from tamper_kit import decoded

# --- the account: times, bot marks, arithmetic ----------------------------------------------


def _timeline(operator: Operator, hand_id: str) -> tuple[AuditReport, Timeline]:
    record = load_hand(operator.store, hand_id)
    assert record is not None
    report = audit_hand(record.events, _public(operator.settings), record.signatures)
    assert report.clean, report.message
    return report, report.timeline()


def test_every_event_has_its_utc_time_and_the_time_since_the_deal(operator: Operator) -> None:
    report, timeline = _timeline(operator, operator.hands["laizi"])
    stored = operator.store.read_stream(f"hand-{operator.hands['laizi']}")
    dealt = next(
        row.occurred_at for row, (_, e) in zip(stored, decoded(stored), strict=True)
        if isinstance(e, CardsDealt)
    )  # fmt: skip
    assert dealt is not None
    lines = report.transcript()
    for row, entry in zip(stored, timeline.entries, strict=True):
        assert entry.version == row.stream_version
        assert row.occurred_at is not None and entry.at is not None
        assert abs((entry.at - row.occurred_at).total_seconds()) < 1e-3
        assert entry.since_deal is not None
        assert abs(entry.since_deal - (row.occurred_at - dealt).total_seconds()) < 1e-3
        head = next(line for line in lines if line.startswith(f"#{row.stream_version} "))
        assert row.occurred_at.strftime("%H:%M:%S") in head
        assert clock(entry.at) in head and "s  " in head
    assert lines[1].startswith(f"dealt {dealt:%Y-%m-%d %H:%M:%S} UTC")


def test_moves_the_bot_made_for_a_person_are_marked_with_why(operator: Operator) -> None:
    hand_id = operator.hands["dropped"]
    report, timeline = _timeline(operator, hand_id)
    history = [e for _, e in decoded(operator.store.read_stream(f"hand-{hand_id}"))]
    away: dict[int, int] = {}  # seat -> version of its disconnect, computed here
    expected: dict[int, str] = {}
    for version, event in enumerate(history, start=1):
        if isinstance(event, PlayerDisconnected):
            away[event.seat] = version
        elif isinstance(event, PlayerReconnected):
            away.pop(event.seat, None)
        elif isinstance(event, BidMade | PlayMade | Passed | CommandRejected):
            seat = event.seat
            if seat in away:
                expected[version] = f"connection lost at #{away[seat]}"
            elif seat == 2:  # SEATS: carol is a bot seat
                expected[version] = "bot seat"
    assert any(why.startswith("connection lost") for why in expected.values())
    lines = report.transcript()
    for entry in timeline.entries:
        actor = entry.actor
        if entry.version in expected:
            assert actor is not None and actor.bot, entry
            why = expected[entry.version]
            mark = "bot seat" if why == "bot seat" else f"bot for {actor.player}: {why}"
            assert actor.mark == mark
            assert any(line.startswith(f"#{entry.version} ") and f"[{mark}]" in line
                       for line in lines)  # fmt: skip
        elif actor is not None:
            assert not actor.bot and actor.mark == "", entry


def _settled(operator: Operator, hand_id: str) -> HandSettled:
    events = [e for _, e in decoded(operator.store.read_stream(f"hand-{hand_id}"))]
    return next(e for e in events if isinstance(e, HandSettled))


def test_the_ct_arithmetic_ends_in_the_ledger(operator: Operator) -> None:
    """§10.2, computed here: bm = base × multiplier; the cap 24 bounds the landlord's
    side 2·bm, each share then moving 24 // 2; the rake 1/20 of each winner's capped
    gain, rounded down; no escape (nobody dropped)."""
    hand_id = operator.hands["ct"]
    report, timeline = _timeline(operator, hand_id)
    settled = _settled(operator, hand_id)
    arithmetic = timeline.arithmetic
    assert arithmetic is not None and arithmetic.scoring == "ct_points"
    bm = settled.base * settled.multiplier.total
    unit = bm if 2 * bm <= 24 else 12
    landlord_won = settled.ledger.deltas[settled.landlord] > 0
    winner_shares = 2 if landlord_won else 1
    rake = math.floor(Fraction(winner_shares * unit, 20))
    assert arithmetic.step("base × multiplier").value == bm
    assert arithmetic.step("cap").value == unit
    assert arithmetic.step("rake").value == rake
    assert arithmetic.step("winner").text.startswith(
        f"the {'landlord' if landlord_won else 'farmers'} "
    )
    # The ledger's own lines agree with those figures ...
    for line in settled.ledger.lines:
        if line.reason == "rake" and line.seat is not None:
            assert line.amount == -rake
        if line.reason == "win":
            assert line.amount == (2 if line.seat == settled.landlord else 1) * bm
    # ... and the account ends in the ledger's figures, seat by seat.
    totals = {t.seat: t.total for t in arithmetic.totals}
    assert [totals[s] for s in range(3)] == list(settled.ledger.deltas)
    assert totals[None] == settled.ledger.system
    lines = report.transcript()
    assert f"        base × multiplier: {settled.base} × {settled.multiplier.total} (" in "\n".join(
        lines
    )
    for seat in range(3):
        assert any(
            line.strip().startswith(f"seat {seat} ") and line.endswith(
                f"= {settled.ledger.deltas[seat]:+d}"
            ) for line in lines
        ), seat  # fmt: skip


def test_the_laizi_arithmetic_with_its_wildcard_factor_ends_in_the_ledger(
    operator: Operator,
) -> None:
    """§10.3, computed here: X = base × multiplier × 2 (the landlord's shares), × 1/4 in
    a wildcard room, at most the hand cap 10000; each loser pays their own X·N rounded
    down: the landlord ⌊X × 100⌋, a farmer ⌊X / 2 × 100⌋ (docs/RULE_DECISIONS.md §10.3
    "Beans, rounding"); fee 5 from each player; balances far from any limit."""
    hand_id = operator.hands["laizi"]
    report, timeline = _timeline(operator, hand_id)
    settled = _settled(operator, hand_id)
    arithmetic = timeline.arithmetic
    assert arithmetic is not None and arithmetic.scoring == "beans"
    x = Fraction(settled.base * settled.multiplier.total * 2)
    factored = x / 4
    capped = min(factored, Fraction(10000))
    unit = math.floor(capped / 2 * 100)
    landlord_stake = math.floor(capped * 100)
    assert arithmetic.step("X").value == str(x)
    assert Fraction(str(arithmetic.step("wildcard factor").value)) == factored
    assert Fraction(str(arithmetic.step("hand cap").value)) == capped
    assert arithmetic.step("room coefficient").value == landlord_stake
    assert arithmetic.step("fee").value == 5
    text = "\n".join(report.transcript())
    assert f"× 1/4 = {arithmetic.step('wildcard factor').value}" in text
    assert f"⌋ = {landlord_stake}, a farmer's ⌊" in text and f"⌋ = {unit}" in text
    landlord_won = settled.ledger.deltas[settled.landlord] > 0
    assert landlord_won == (settled.ledger.deltas[settled.landlord] + 5 > 0)
    side = Side.LANDLORD if landlord_won else Side.FARMERS
    for line in settled.ledger.lines:
        if line.reason == "loss":
            assert line.amount == -(unit if side is Side.LANDLORD else landlord_stake)
        if line.reason == "fee" and line.seat is not None:
            assert line.amount == -5
    totals = {t.seat: t.total for t in arithmetic.totals}
    assert [totals[s] for s in range(3)] == list(settled.ledger.deltas)
    assert (
        totals[None]
        == settled.ledger.system
        == 15 + sum(line.amount for line in settled.ledger.lines if line.reason == "rounding")
    )


def test_the_json_keeps_its_keys_and_adds_the_timeline(operator: Operator) -> None:
    hand_id = operator.hands["ct"]
    done = ddz(operator.data, "audit", hand_id, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert {"hand_id", "stream_id", "events", "verdict", "failed_check", "message", "checks",
            "transcript", "timeline"} <= set(report)  # fmt: skip
    timeline = report["timeline"]
    assert len(timeline["entries"]) == report["events"]
    assert timeline["arithmetic"]["totals"][-1]["name"] == "system"
    assert all(entry["at"] and entry["at"].endswith("+00:00") for entry in timeline["entries"])


def test_the_file_is_built_alike_from_sqlite_and_postgresql(
    store: SqlEventStore, tmp_path: Path
) -> None:
    """``build_evidence`` reads through the store's contract: the file of a hand stored
    in either backend verifies against the keys that signed it."""
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path)})
    PRODUCERS.publish(settings.keys.event_keyring_path)
    hand_id = record_hand(
        store, VARIANTS["tiandi"], random.Random(8), signers=PRODUCERS, key=_recorder(settings)
    )
    keys = _public(settings)
    data = build_evidence(store, hand_id, keys).to_bytes()
    report = verify_evidence(data, published_keys(keys))
    assert report.verdict == "clean", report.message
    assert report.hand_id == hand_id and report.audit is not None and report.audit.clean
