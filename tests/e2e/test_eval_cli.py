"""``ddz eval`` as a user runs it (contract): JSON keys, exit codes, errors. The program
runs in a process of its own for the same-seed test; the others call its entry point."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from cli_kit import run_here


def ddz(*args: str) -> subprocess.CompletedProcess[str]:
    """The program in a process of its own: the same-seed test runs it twice this way,
    each with its own hash seed; the other tests call its entry point in this process."""
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def ddz_here(*args: str) -> subprocess.CompletedProcess[str]:
    return run_here(args)


def test_eval_json_contract() -> None:
    done = ddz_here("eval", "--variant", "ct", "--opponent", "random", "--deals", "2", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {"wp", "wp_ci", "adp", "deals", "decision_ms_p99"} <= set(data)
    assert data["deals"] == 2
    lo, hi = data["wp_ci"]
    assert 0.0 <= lo <= data["wp"] <= hi <= 1.0
    assert set(data["roles"]) == {"landlord", "farmers"}


def test_eval_same_seed_same_figures() -> None:
    args = (
        "eval",
        "--variant",
        "classic",
        "--opponent",
        "greedy",
        "--deals",
        "2",
        "--seed",
        "5",
        "--json",
    )
    first, second = json.loads(ddz(*args).stdout), json.loads(ddz(*args).stdout)
    for key in ("wp", "wp_ci", "adp", "roles"):
        assert first[key] == second[key]


def test_eval_table_and_bidding() -> None:
    done = ddz_here("eval", "--variant", "laizi", "--deals", "1")
    assert done.returncode == 0, done.stderr
    assert "landlord" in done.stdout and "farmers" in done.stdout and "p99" in done.stdout
    done = ddz_here("eval", "--variant", "classic", "--deals", "2", "--bidding", "--json")
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout)["seat"]) == {"bot", "opponent"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--variant", "ct", "--opponent", "rlcard-rule"), "classic only"),
        (("--variant", "poker"), "unknown variant"),
        (("--opponent", "nobody"), "unknown opponent"),
        (("--deals", "many"), "--deals"),
        (("--seed", "-1"), "--seed"),
    ],
)
def test_eval_bad_input_exits_2(args: tuple[str, ...], message: str) -> None:
    done = ddz_here("eval", *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddz: error:") and message in lines[0]
    assert "Traceback" not in done.stderr
