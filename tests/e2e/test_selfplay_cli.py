"""``ddz selfplay`` as a user runs it (contract): JSON keys, exit codes, errors. The program
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


@pytest.mark.parametrize("variant", ["classic", "ct", "laizi", "tiandi"])
def test_selfplay_json_contract(variant: str) -> None:
    done = ddz_here("selfplay", "--variant", variant, "--hands", "5", "--seed", "e2e", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["hands"] == 5 and data["conserved"] is True
    assert isinstance(data["hands_per_s"], float) and data["hands_per_s"] > 0
    assert 0 <= data["landlord_wins"] <= 5


def test_selfplay_same_seed_same_hands() -> None:
    args = ("selfplay", "--variant", "classic", "--hands", "8", "--seed", "s", "--json")
    first, second = json.loads(ddz(*args).stdout), json.loads(ddz(*args).stdout)
    for key in ("landlord_wins", "events", "mean_multiplier", "redeals"):
        assert first[key] == second[key]


def test_selfplay_greedy_and_human_output() -> None:
    done = ddz_here(
        "selfplay", "--variant", "ct", "--hands", "3", "--player", "greedy", "--seed", "g"
    )
    assert done.returncode == 0, done.stderr
    assert "hands/s" in done.stdout and "landlord win rate" in done.stdout
    assert "conserved" in done.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("--variant", "poker"),
        ("--hands", "zero"),
        ("--hands", "0"),
        ("--player", "genius"),
    ],
)
def test_selfplay_bad_input_is_one_line_exit_2(args: tuple[str, str]) -> None:
    done = ddz_here("selfplay", *args)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ddz: error: ")
    assert "Traceback" not in done.stderr
