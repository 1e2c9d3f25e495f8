"""`ddz rules classify|beats|moves` end to end: the installed console script (RULES.md §3-§5).

Expected answers are worked out by hand from the rules; the JSON shapes are the
contract of docs/CLI.md ("ddz rules").
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


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*ddz_command(), "rules", *args], input=stdin, capture_output=True, text=True, timeout=60
    )


def ok(*args: str) -> Any:
    done = run(*args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)


def test_s3_classify_plane_with_singles() -> None:
    assert ok("classify", "33344456") == {
        "readings": [{"type": "plane_singles", "main": "4", "length": 2, "size": 8}]
    }


def test_s3_classify_illegal_is_an_empty_list() -> None:
    assert ok("classify", "3334445556667779") == {"readings": []}


def test_s1_notation_any_order_spaces_and_10() -> None:
    expected = {"readings": [{"type": "solo_chain", "main": "A", "length": 5, "size": 5}]}
    assert ok("classify", "A K Q J 10") == expected
    assert ok("classify", "10JQKA") == expected


def test_s5_classify_with_a_wildcard_lists_every_reading() -> None:
    answer = ok("classify", "67789", "--variant", "laizi", "--wild", "7")
    assert [(r["type"], r["main"], r["length"], r["size"]) for r in answer["readings"]] == [
        ("solo_chain", "T", 5, 5),
        ("solo_chain", "9", 5, 5),
    ]
    assert all("bomb_class" not in r for r in answer["readings"])


def test_s4_bomb_class_only_in_wildcard_variants() -> None:
    assert ok("classify", "3337", "--variant", "laizi", "--wild", "7")["readings"][0] == {
        "type": "bomb",
        "main": "3",
        "length": 1,
        "size": 4,
        "bomb_class": "soft",
        "substitutes": "3",
    }
    assert (
        ok("classify", "7799", "--variant", "tiandi", "--wild", "7", "--wild", "9")["readings"][0][
            "bomb_class"
        ]
        == "mixed"
    )
    assert ok("classify", "3333") == {
        "readings": [{"type": "bomb", "main": "3", "length": 1, "size": 4}]
    }
    assert ok("classify", "333333", "--variant", "ct") == {
        "readings": [{"type": "sky_bomb", "main": "3", "length": 1, "size": 6}]
    }


def test_s3_beats() -> None:
    assert ok("beats", "4443", "--over", "3335") == {
        "beats": True,
        "reading": {"type": "triple_single", "main": "4", "length": 1, "size": 4},
    }
    assert ok("beats", "3334", "--over", "3335") == {"beats": False, "reading": None}
    assert ok("beats", "BR", "--over", "2222")["beats"] is True
    assert ok("beats", "34", "--over", "3") == {"beats": False, "reading": None}


def test_s3_moves_lead_and_follow() -> None:
    lead = ok("moves", "3334")
    assert lead["can_pass"] is False  # the leader cannot pass
    assert sorted(m["cards"] for m in lead["moves"]) == ["3", "33", "333", "3334", "4"]
    follow = ok("moves", "3456789TJQKA2", "--over", "TJQKA")
    assert follow == {"moves": [], "can_pass": True}
    follow = ok("moves", "TT9", "--over", "88")
    assert follow == {
        "moves": [
            {"cards": "TT", "reading": {"type": "pair", "main": "T", "length": 1, "size": 2}}
        ],
        "can_pass": True,
    }


def test_s1_ct_jokers_in_moves() -> None:
    answer = ok("moves", "BBRR", "--variant", "ct")
    assert sorted(m["cards"] for m in answer["moves"]) == ["B", "BB", "BBRR", "R", "RR"]


def test_jsonl_batch_answers_each_line_and_keeps_going() -> None:
    requests = [
        {"op": "classify", "cards": "3334", "id": 1},
        {"op": "moves", "cards": "3Z", "id": 2},
        "not json",
        {"op": "beats", "cards": "22", "over": "AA", "id": 3},
        {"op": "classify", "cards": "3337", "variant": "laizi", "wild": ["7"]},
        {"op": "classify", "cards": "BB"},
        {"op": "classify", "cards": "3", "variant": "laizi", "wild": "Z"},
        {"op": "beats", "cards": "33"},
        {"op": "classify", "cards": "3", "extra": 1},
    ]
    stdin = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in requests) + "\n"
    done = run("--jsonl", stdin=stdin)
    assert done.returncode == 2  # some line failed
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 9
    assert lines[0] == {
        "id": 1,
        "readings": [{"type": "triple_single", "main": "3", "length": 1, "size": 4}],
    }
    assert lines[1]["id"] == 2 and "unknown rank" in lines[1]["error"]
    assert set(lines[2]) == {"error"}
    assert lines[3] == {
        "id": 3,
        "beats": True,
        "reading": {"type": "pair", "main": "2", "length": 1, "size": 2},
    }
    assert [r["type"] for r in lines[4]["readings"]] == ["bomb", "triple_single"]
    assert "deck has 1" in lines[5]["error"]  # one B in the classic deck
    assert "unknown rank" in lines[6]["error"]
    assert "over" in lines[7]["error"]
    assert "extra" in lines[8]["error"]


def test_jsonl_all_good_exits_zero_and_takes_command_line_defaults() -> None:
    stdin = json.dumps({"op": "classify", "cards": "7"}) + "\n"
    done = run("--jsonl", "--variant", "laizi", "--wild", "7", stdin=stdin)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "readings": [{"type": "single", "main": "7", "length": 1, "size": 1, "substitutes": "7"}]
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("classify", "3X"), "unknown rank"),
        (("classify", "33333"), "deck has 4"),  # more copies than the deck has
        (("classify", "3", "--variant", "laizi", "--wild", "B"), "joker"),
        (("beats", "33", "--over", "34"), "not a combination"),
        ((), "operation"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: tuple[str, ...], message: str) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ddz: error:") and message in lines[0]
    assert "Traceback" not in done.stderr
