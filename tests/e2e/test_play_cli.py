"""``ddz play`` driven as a person drives it: the real command in a
pseudo-terminal (Python's ``pty``), keys typed, the screen read back, against a real
stack (NATS and the six services as processes, ``ddz.adapters.stack.Stack``).

The player joins a room, is matched with bots after the room's wait, bids and plays a
whole hand by typing the moves the hint key suggests, sees a clear one-line refusal for
an illegal play, the settlement at the end, and quits.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator

import pytest
from ddz.adapters.stack import Stack
from ddz.config import Settings
from ddz.entrypoints.cli import build_parser
from ddz.entrypoints.play_cmd import check_address
from terminal_kit import Terminal, env_for

ROOMS = """
opening_balance = 10000

[[rooms]]
id = "classic"
name = "Classic"
variant = "classic"
bot_fill_wait = 0.5
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("ddz-play")
    rooms = data_dir / "rooms.toml"
    rooms.write_text(ROOMS, encoding="utf-8")
    settings = Settings.from_env({"DDZ_DATA_DIR": str(data_dir), "DDZ_ROOMS_FILE": str(rooms)})
    with Stack(settings, ephemeral_ports=True, nats_port=0) as running:
        yield running


PROMPT = r"→ (your bid|your turn|the hand is over)"


def test_a_person_plays_a_hand_against_bots_by_typing(stack: Stack) -> None:
    """Join, be matched with two bots, play by typing the hinted moves, see the
    settlement, quit."""
    term = Terminal(
        [sys.executable, "-m", "ddz.entrypoints.cli", "play", "--room", "classic",
         "--name", "tester"],
        env_for(stack),
    )  # fmt: skip
    try:
        term.wait_for(r"your hand: [0-9TJQKA2BR ]+ \(17 cards\)")
        screen = term.screen
        assert "tester · room classic" in screen
        assert len(re.findall(r"^\s*→?\s*\d\s+bot\s", screen, re.M)) == 2  # bots filled in
        assert re.search(r"→\s+\d\s+you|\d\s+you", screen)
        tried_illegal = False
        for _ in range(200):
            prompt = term.wait_for(PROMPT).group(1)
            if prompt == "the hand is over":
                break
            if prompt == "your turn" and not tried_illegal:
                tried_illegal = True
                term.type("RRR")  # a classic deck has one red joker: not in hand
                refusal = term.wait_for(r"✗ (.+)").group(1)
                assert "\n" not in refusal.strip() and refusal.strip()
                continue
            term.output = term.output[-20000:]
            term.type("?")
            typed = term.wait_for(r'hint: type "([^"]+)"').group(1)
            term.output = ""  # from here on, only what the move brings
            term.type(typed)
            term.wait_for(r"→ ")
        else:
            raise AssertionError("the hand did not end")
        assert tried_illegal
        settled = term.wait_for(r"Settlement: the (landlord|farmers) wins?")
        assert settled
        block = term.screen.split("Settlement:")[-1]
        rows = re.findall(r"^\s*(\d)\s+\S+\s+([+-]\d+)\s", block, re.M)
        assert [int(seat) for seat, _delta in rows] == [0, 1, 2], block
        deltas = [int(delta) for _seat, delta in rows]
        system = re.search(r"system\s+([+-]\d+)", block)
        assert system is not None, block
        assert sum(deltas) + int(system.group(1)) == 0  # §10: nothing created or lost
        term.type("q")
        assert term.close() == 0
    finally:
        if term.process.poll() is None:
            term.process.kill()


def test_bad_input_is_one_line_and_exit_code_2(stack: Stack) -> None:
    cases = (["--room", "casino", "--name", "tester2"], ["--name", "not a name"])
    runs = [
        subprocess.Popen(
            [sys.executable, "-m", "ddz.entrypoints.cli", "play", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env_for(stack),
        )
        for args in cases
    ]
    for run in runs:
        _out, err = run.communicate(timeout=60)
        assert run.returncode == 2, err
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ddz: error: "), err
    args = build_parser().parse_args(
        ["play", "--room", "ct", "--name", "n", "--table-address", "h:1"]
    )
    assert (args.room, args.name, args.table_address) == ("ct", "n", "h:1")
    with pytest.raises(ValueError, match="HOST:PORT"):
        check_address("nowhere")
