"""``ddz bench crowd`` as CI runs it: a short crowd of people at human pace through a
suite the command starts for itself (its store left in the data dir), asserting
behaviour only, never timing: no hand lost, every hand audited clean (by the bench, and
again by ``ddz audit --all`` on the store it left), every person got every turn, and the
``--json`` object has its keys with sane values. The people's seed is fixed and said on
failure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_kit import ddz

# Five minutes, most of it waiting on people at human pace: started first in a parallel run.
pytestmark = pytest.mark.early

SEED = "34"
PEOPLE = 150
KEYS = {
    "people_seated", "hands_started", "hands_settled", "hands_lost", "hands_per_s",
    "suite_cores", "suite_cpu_ms_per_hand", "loadgen_cores", "move_p50_ms", "move_p99_ms",
    "turn_notice_p99_ms", "rss_mb", "restarts", "refusals",
}  # fmt: skip
TURN_OUTCOMES = ("moved", "resumed", "let_go", "away", "ended", "stopped", "missed")


def test_a_short_crowd_loses_no_hand_and_every_person_gets_every_turn(tmp_path: Path) -> None:
    crowd = ["--people", str(PEOPLE), "--minutes", "1", "--ramp", "20", "--drain", "900"]
    done = ddz(tmp_path, "bench", "crowd", *crowd, "--seed", SEED, "--json", timeout=1500)
    said = f"seed {SEED}; stderr: {done.stderr[-3000:]}"
    assert done.returncode == 0, said
    data = json.loads(done.stdout.strip().splitlines()[-1])
    said = f"seed {SEED}; turns {data.get('turns')}; refusals {data.get('refusals')}"
    assert set(data) >= KEYS, said
    assert f"seed {SEED}" in done.stderr

    # Nothing lost, every hand audited clean, each settled (no hand here ends otherwise).
    assert data["hands_started"] > 0 and data["hands_lost"] == 0, said
    assert data["audit"] == {"clean": data["hands_started"], "failed": 0, "incomplete": 0}, said
    assert data["hands_settled"] + data["hands_ended_otherwise"] == data["hands_started"]

    # Every person was seated and got every turn: each turn told became a move, a
    # resume, a turn let go on purpose, one they were away for or one a hand's end cut;
    # none timed out on a person who meant to move, and every hand was played out.
    turns = data["turns"]
    assert turns["joins"] >= PEOPLE and data["people_seated"] >= 0.9 * PEOPLE, said
    assert turns["missed"] == 0 and turns["cut_off"] == 0, said
    assert turns["told"] > PEOPLE and turns["told"] == sum(turns[k] for k in TURN_OUTCOMES), said
    assert turns["moved"] > turns["let_go"] > 0, said
    assert turns["leaves"] > 0  # at the end, between hands

    # Sane figures: measured, ordered, of every service.
    assert 0 < data["move_p50_ms"] <= data["move_p99_ms"] <= data["move_max_ms"], said
    assert 0 < data["turn_notice_p99_ms"] <= data["turn_notice_max_ms"], said
    assert data["suite_cores"] > 0 and data["loadgen_cores"] > 0
    # The whole run's CPU a hand, service by service, adds up to the suite's.
    by_service = data["suite_cpu_ms_per_hand_whole_run_by_service"]
    assert set(by_service) >= {"table", "rules", "bot", "recorder", "nats-server"}, by_service
    assert all(ms > 0 for ms in by_service.values()), by_service
    whole = data["suite_cpu_ms_per_hand_whole_run"]
    assert abs(sum(by_service.values()) - whole) <= 0.01 * whole + 1, (by_service, whole)
    assert set(data["rss_mb"]) >= {"table", "rules", "bot", "recorder", "nats-server"}
    assert all(mb > 0 for series in data["rss_mb"].values() for mb in series)
    assert data["restarts"] == 0 and data["exited"] == []

    # The store it left behind audits clean on its own.
    audited = ddz(tmp_path, "audit", "--all", "--json", timeout=600)
    assert audited.returncode == 0, audited.stdout[-2000:] + audited.stderr[-2000:]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    for args in (["--people", "0"], ["--minutes", "x"], ["--ramp", "-1"], ["--seed", "y"]):
        done = ddz(tmp_path, "bench", "crowd", *args, timeout=60)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.startswith("ddz: error: ") and done.stderr.count("\n") == 1, args
