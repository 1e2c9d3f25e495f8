"""`ddz settle` end to end: the installed console script, JSON on stdin (RULES.md §10).

Expected ledgers are worked out by hand from RULES.md §9/§10 (arithmetic in comments).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


def ddz_command() -> list[str]:
    beside = Path(sys.executable).with_name("ddz")
    if beside.exists():
        return [str(beside)]
    found = shutil.which("ddz")
    if found is None:
        pytest.fail("the ddz console script is not installed (pip install -e .)")
    return [found]


def run_settle(stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ddz_command(), "settle"], input=stdin, capture_output=True, text=True, timeout=60
    )


def settle_json(outcome: dict[str, Any]) -> dict[str, Any]:
    done = run_settle(json.dumps(outcome))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    ledger: dict[str, Any] = json.loads(done.stdout)
    assert list(ledger) == ["deltas", "system", "multiplier", "lines"]
    assert sum(ledger["deltas"]) + ledger["system"] == 0
    return ledger


def test_section_10_3_worked_example_from_facts() -> None:
    """§10.3: N 1000, A 50, multiplier 6 = one grab (x2) x a show during the deal holding
    10 of 17 cards (x3, §6 Decision); landlord wins: +12000 - 50, -6000 - 50 each, +150."""
    ledger = settle_json(
        {
            "variant": "laizi",
            "room": {"coefficient": 1000, "fee": 50},
            "wildcard_room": False,
            "landlord": 0,
            "winner": "landlord",
            "base": 1,
            "grabs": 1,
            "shows": [{"when": "during_deal", "cards_held": 10, "seat": 2}],
        }
    )
    assert ledger["deltas"] == [11950, -6050, -6050]
    assert ledger["system"] == 150
    assert ledger["multiplier"] == 6
    assert {"seat": 0, "amount": 12000, "reason": "win"} in ledger["lines"]


def test_section_10_2_escape_with_explicit_breakdown_and_rake_string() -> None:
    """§10.2, landlord wins, farmer 2 escaped: base 2 x initial 2 x bomb 2 = bm 8;
    rake "1/4" of 16 = 4; penalty 10 x 2 = 20: [16 - 4, 0, -16 - 20], system 24."""
    ledger = settle_json(
        {
            "variant": "ct",
            "room": {"rake": "1/4", "initial_multiplier": 2},
            "landlord": 0,
            "winner": "landlord",
            "base": 2,
            "multiplier": [{"reason": "initial", "factor": 2}, {"reason": "bomb", "factor": 2}],
            "escapee": 2,
        }
    )
    assert ledger["deltas"] == [12, 0, -36]
    assert ledger["system"] == 24


def test_section_9_ct_bombs_given_as_cards() -> None:
    """§9 ct: 7777 x1, 55555 x2, 888888 (sky) x2, BBRR (rocket) x2 = 8; base 1; farmers
    win with landlord 1: landlord -16, farmers +8 each."""
    ledger = settle_json(
        {
            "variant": "ct",
            "landlord": 1,
            "winner": "farmers",
            "base": 1,
            "bombs": ["7777", "55555", "888888", "BBRR"],
        }
    )
    assert ledger["multiplier"] == 8
    assert ledger["deltas"] == [8, -16, 8]


def test_section_9_laizi_bombs_with_wildcards_in_a_wildcard_room() -> None:
    """§9 laizi with 5 wild: 3335 soft x2, 5555 pure x4, BR rocket x4 = 32. A laizi room
    is a wildcard room: landlord X = 32 x 2 x 0.25 = 16, farmer 8; N 100."""
    ledger = settle_json(
        {
            "variant": "laizi",
            "room": {"coefficient": 100},
            "landlord": 2,
            "winner": "landlord",
            "base": 1,
            "wild": ["5"],
            "bombs": ["3335", "5555", {"type": "rocket", "seat": 2}],
        }
    )
    assert ledger["multiplier"] == 32
    assert ledger["deltas"] == [-800, -800, 1600]


def test_section_10_3_bean_escape_counts_unplayed_bombs() -> None:
    """§10.3: landlord 0 escapes; played grab 2 x hard bomb 4 = 8, unplayed rocket 4:
    32 >= 10 -> 4 x actual = 128; X = 128 x 2 = 256; N 10: 2560, 1280 per farmer.
    Non-wildcard room, fee 0."""
    ledger = settle_json(
        {
            "variant": "laizi",
            "room": {"coefficient": 10},
            "wildcard_room": False,
            "landlord": 0,
            "winner": None,
            "base": 1,
            "grabs": 1,
            "bombs": [{"type": "bomb", "bomb_class": "hard"}],
            "escapee": 0,
            "escape_bombs": ["BR"],
            "balances": [100000, 100000, 100000],
        }
    )
    assert ledger["deltas"] == [-2560, 1280, 1280]
    assert ledger["system"] == 0


GOOD: dict[str, Any] = {"variant": "ct", "landlord": 0, "winner": "landlord", "base": 1}
MISSING = object()


def changed(**change: Any) -> str:
    outcome = {k: v for k, v in (GOOD | change).items() if v is not MISSING}
    return json.dumps(outcome)


@pytest.mark.parametrize(
    ("stdin", "words"),
    [
        ("", "JSON"),
        ("{not json", "JSON"),
        ("[1, 2]", "object"),
        (changed(variant=MISSING), "variant"),
        (changed(landlord=MISSING), "landlord"),
        (changed(base=MISSING), "base"),
        (changed(winner="nobody"), "winner"),
        (changed(variant="poker"), "variant"),
        (changed(bonus=1), "bonus"),
        (changed(escapee=5), "escapee"),
        (changed(base="3"), "base"),
        (changed(bombs=["7778"]), "bomb"),
        (changed(room={"rake": "x"}), "rake"),
        (changed(room={"tip": 1}), "tip"),
        (changed(multiplier=[{"reason": "bomb", "factor": 2}], grabs=1), "either"),
        (changed(multiplier=[{"reason": "luck", "factor": 2}]), "reason"),
        (changed(spring=True, winner="farmers"), "spring"),
        (changed(variant="laizi", escapee=1), "escape"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(stdin: str, words: str) -> None:
    done = run_settle(stdin)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ddz: error: ")
    assert words.lower() in lines[0].lower()
    assert "Traceback" not in done.stderr
