"""``ddz play`` driven as a person drives it: the real command in a
pseudo-terminal (Python's ``pty``), keys typed, the screen read back, against a real
stack (NATS and the six services as processes, ``ddz.adapters.runtime.stack.Stack``).

The player joins a room, is matched with bots after the room's wait, bids and plays a
whole hand by typing the moves the hint key suggests, sees a clear one-line refusal for
an illegal play, the settlement at the end, and quits. Under tmux (send-keys,
capture-pane), the turn's countdown turns red in its last seconds, the bot's move for a
player whose clock ran out is said with why, the hand id is on screen with the command
that audits it, and leaving mid-hand is asked first with its cost; with the input closed
and no terminal, ``ddz play`` leaves and says so on stderr.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from ddz.adapters.runtime.stack import Stack
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
    settings = Settings.from_env({
        "DDZ_DATA_DIR": str(data_dir), "DDZ_ROOMS_FILE": str(rooms),
        "DDZ_TURN_TIMEOUT": str(TURN),  # short enough to watch one run out
    })  # fmt: skip
    with Stack(settings, ephemeral_ports=True, nats_port=0) as running:
        yield running


PROMPT = r"→ (your bid|your turn|the hand is over)"
TURN = 10.0


def test_a_person_plays_a_hand_against_bots_by_typing(stack: Stack, tmp_path: Path) -> None:
    """Join, be matched with two bots, play by typing the hinted moves, see the
    settlement, save the hand's evidence file (which verifies), quit."""
    term = Terminal(
        [sys.executable, "-m", "ddz.entrypoints.cli", "play", "--room", "classic",
         "--name", "tester"],
        env_for(stack), cwd=tmp_path,
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
        saved = None
        for _ in range(30):  # the recorder may still be storing the hand's last events
            term.output = ""
            term.type("evidence")
            said = term.wait_for(r"(saved (\S+\.ddz-evidence\.json)|no evidence file: [^\n]+)")
            if said.group(2):
                saved = tmp_path / said.group(2)
                break
            time.sleep(0.3)
        assert saved is not None and saved.is_file(), "the evidence file was saved"
        audit = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "audit", "--bundle", str(saved)],
            env=env_for(stack), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert audit.returncode == 0, audit.stdout + audit.stderr
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


def test_closed_input_without_a_terminal_leaves_and_says_so_on_stderr(stack: Stack) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "play", "--room", "classic",
         "--name", "piped"],
        capture_output=True, stdin=subprocess.DEVNULL, text=True, env=env_for(stack),
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    said = re.search(r"the input closed during hand ([0-9a-f]{32}): leaving the table", run.stderr)
    assert said, run.stderr
    assert "escape" in run.stderr and "no penalty in this room" in run.stderr
    assert f"you left during hand {said.group(1)}" in run.stdout


class Tmux:
    """A program in a tmux session of its own: keys sent, the pane captured."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.name = f"ddz-play-{uuid.uuid4().hex[:8]}"
        command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items()), *args])
        tmux = ["tmux", "-L", self.name]
        self.tmux = tmux
        subprocess.run([*tmux, "-f", "/dev/null", "new-session", "-d", "-s", self.name,
                        "-x", "150", "-y", "50", command], check=True)  # fmt: skip
        subprocess.run([*tmux, "set-option", "-t", self.name, "remain-on-exit", "on"], check=True)

    def capture(self, *, colours: bool = False) -> str:
        flags = ["-p", "-e"] if colours else ["-p"]
        out = subprocess.run([*self.tmux, "capture-pane", *flags, "-t", self.name],
                             capture_output=True, text=True, check=True)  # fmt: skip
        return out.stdout

    def wait_for(
        self, pattern: str, timeout: float = 60.0, *, colours: bool = False
    ) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.capture(colours=colours)
            found = re.search(pattern, screen)
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"no {pattern!r} in the pane:\n{screen}")

    def send(self, line: str) -> None:
        subprocess.run([*self.tmux, "send-keys", "-t", self.name, line, "Enter"], check=True)

    def kill(self) -> None:
        subprocess.run([*self.tmux, "kill-server"], capture_output=True)


CLOCK = r"⏱ your turn: (\d+) s left \(of 10 s\)"
COLOURED = r"\x1b\[([0-9;]*)m⏱ your turn: (\d+) s left"


@pytest.mark.alone  # a terminal's countdown read to the second
def test_the_clock_the_bots_move_and_the_hand_id_under_tmux(stack: Stack) -> None:
    if shutil.which("tmux") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true and tmux is not installed (apt-get install tmux)")
        pytest.skip("tmux is not installed")
    env = {k: v for k, v in env_for(stack).items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    pane = Tmux([sys.executable, "-m", "ddz.entrypoints.cli", "play", "--room", "classic",
                 "--name", "clocky"], env)  # fmt: skip
    try:
        hand_id = pane.wait_for(r"hand ([0-9a-f]{32})  \(to quote it: ddz audit \1\)").group(1)
        # The player's clock counts down, green, then red in its last 5 s; they let it run.
        first = pane.wait_for(COLOURED, colours=True)
        early = int(first.group(2))
        late = pane.wait_for(r"\x1b\[([0-9;]*)m⏱ your turn: [1-5] s left", colours=True)
        if early > 5:
            assert "32" in first.group(1).split(";"), first.group(0)  # green
        assert "31" in late.group(1).split(";"), late.group(0)  # red
        said = pane.wait_for(r"the bot played for you: (.+?) — your turn's clock ran out", 30)
        assert said.group(1)
        # Leaving mid-hand asks first, with the cost in this room (classic: none).
        pane.send("quit")
        pane.wait_for(r"(?s)no penalty in this room.*Type quit again to leave", 30)
        pane.send("quit")
        pane.wait_for(rf"you left during hand {hand_id}: that is an escape", 30)
    finally:
        pane.kill()
