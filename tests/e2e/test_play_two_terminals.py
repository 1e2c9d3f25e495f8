"""Two people at one table through ``ddz play``: two real
``ddz play --room duo`` processes in pseudo-terminals, as two players (``--name ann``,
``--name ben``), against a real stack (NATS and the six services as processes).

They join the room within its bot fill wait and are seated at one table with a bot
(RULES.md §11); both bid and play by typing what the hint key suggests. Ann's terminal
is killed in the middle of the hand: her stream drops, the table service disconnects her
seat and the bot plays it (托管, §10.2). ``ddz play --name ann`` run again gets the same
seat back (``JoinRoom`` -> rejoined), opens her stream again (the seat is hers again,
``player_reconnected``) and she plays the hand to its end. Both terminals then show the
settlement; it must be §10.1 worked from what the screens show, the ledger the
settlement service and the event store hold, and conserve (§10: deltas plus the system's
take sum to zero); ``ddz audit HAND_ID`` must pass.
Neither terminal may ever show the other person's hidden cards (a hand is public only
when its player shows it, §6, and classic rooms have no showing).

Every wait is for something to show on a screen (or in the settlement service, or the
store, polled), never a fixed sleep: the machine may be slow.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from ddz.adapters import codec
from ddz.adapters.runtime.probes import blocking_channel
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.store import create_store
from ddz.client.screen import AWAY
from ddz.config import Settings
from ddz.domain.hand import Recorded
from ddz.domain.hand.events import (
    HandSettled,
    Passed,
    PlayerDisconnected,
    PlayerReconnected,
    PlayMade,
)
from ddz.v1 import settlement_pb2, settlement_pb2_grpc
from terminal_kit import ANSI, CLEAR, Terminal, env_for

FILL_WAIT = 20  # seconds: both processes start and join well within it, even on a slow box
ROOMS = f"""
opening_balance = 10000

[[rooms]]
id = "duo"
name = "Two people and a bot"
variant = "classic"
bot_fill_wait = {FILL_WAIT}
"""
WAIT = 120.0  # for one thing to show on a screen
HAND_WAIT = 900.0  # for a whole hand
PROMPT = re.compile(r"→ (your bid|your turn|the hand is over|waiting|you are away)")
HAND = re.compile(r"your hand: ([0-9TJQKA2BR ]+?)\s+\((\d+) cards\)")
CARD = "0-9TJQKA2BR"


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    data_dir = tmp_path_factory.mktemp("ddz-two")
    rooms = data_dir / "rooms.toml"
    rooms.write_text(ROOMS, encoding="utf-8")
    # Nobody is timed out for being slow (the machine may be): the only disconnect in
    # this hand is the dropped terminal.
    settings = Settings.from_env(
        {
            "DDZ_DATA_DIR": str(data_dir),
            "DDZ_ROOMS_FILE": str(rooms),
            "DDZ_TURN_TIMEOUT": "600",
            "DDZ_RECONNECT_GRACE": "1",
        }  # a killed terminal is a lost connection a second later
    )
    with Stack(settings, ephemeral_ports=True, nats_port=0) as running:
        yield running


class Screen(Terminal):
    """A ``Terminal`` that keeps only the current screen in ``output`` (long hands redraw
    hundreds of times), everything ever shown in ``transcript``, and counts redraws."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        super().__init__(args, env)
        self.transcript = ""
        self.redraws = 0
        self.closed = False

    def pump(self, seconds: float = 0.05) -> None:
        before = len(self.output)
        super().pump(seconds)
        fresh = self.output[max(0, before - len(CLEAR) + 1) :]  # a CLEAR cut in two
        self.redraws += fresh.count(CLEAR)
        self.transcript += self.output[before:]
        cut = self.output.rfind(CLEAR)
        if cut > 0:
            self.output = self.output[cut:]

    def kill(self) -> None:
        """The terminal goes away (no quit, no leave): the process group is killed."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(30)
        self.pump()
        self.close()

    def close(self) -> int:
        if self.closed:
            return self.process.wait()
        self.closed = True
        return super().close()


@dataclass
class Player:
    name: str
    env: dict[str, str]
    screen: Screen | None = None
    runs: list[Screen] = field(default_factory=list)

    def start(self) -> Screen:
        self.screen = Screen(
            [sys.executable, "-m", "ddz.entrypoints.cli", "play", "--room", "duo",
             "--name", self.name],
            self.env,
        )  # fmt: skip
        self.runs.append(self.screen)
        return self.screen

    @property
    def live(self) -> Screen:
        assert self.screen is not None, f"{self.name}'s terminal is closed"
        return self.screen

    @property
    def prompt(self) -> str:
        if self.screen is None:
            return ""
        found = PROMPT.search(self.screen.screen)
        return found.group(1) if found else ""

    def transcript(self) -> str:
        return ANSI.sub("", "".join(run.transcript for run in self.runs)).replace("\r", "")

    def stop(self) -> None:
        for run in self.runs:
            if run.process.poll() is None:
                os.killpg(run.process.pid, signal.SIGKILL)
            run.close()


class Table:
    """The two terminals: every wait pumps both (neither program blocks on a full pty)."""

    def __init__(self, *players: Player) -> None:
        self.players = players

    def pump(self) -> None:
        for player in self.players:
            if player.screen is not None:
                player.screen.pump(0.02)

    def wait_for(
        self, player: Player, pattern: str, *, after: int = -1, timeout: float = WAIT
    ) -> re.Match[str]:
        """``pattern`` on ``player``'s screen, drawn after redraw number ``after``."""
        screen = player.live
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.pump()
            if screen.redraws > after:
                found = re.search(pattern, screen.screen)
                if found:
                    return found
            if screen.process.poll() is not None:
                screen.pump()
                break
        raise AssertionError(f"no {pattern!r} on {player.name}'s screen:\n{screen.screen[-3000:]}")

    def act(self, player: Player) -> None:
        """Ask for a hint and type it, as a person at the keyboard would."""
        screen = player.live
        mark = screen.redraws
        screen.type("?")
        hint = self.wait_for(player, r'hint: type "([^"]+)"|no hint: (.+)', after=mark)
        if hint.group(1) is None:
            return  # not this seat's turn after all: the screen was about to change
        mark = screen.redraws
        screen.type(hint.group(1))
        self.wait_for(player, r"→ |✗", after=mark)
        refused = re.search(r"✗ (.+)", screen.screen)
        assert refused is None, f"{player.name}'s hinted move was refused: {refused.group(1)}"

    def play(self, until: Callable[[], bool]) -> None:
        """Both play whatever is theirs to play until ``until()`` (looked at before every
        move, so the caller can stop a player at their turn)."""
        deadline = time.monotonic() + HAND_WAIT
        while time.monotonic() < deadline:
            self.pump()
            for player in self.players:
                if until():
                    return
                if player.prompt in ("your bid", "your turn"):
                    self.act(player)
        raise AssertionError("the hand did not get there: " + " / ".join(
            f"{p.name}: {p.live.screen[-1500:]}" for p in self.players if p.screen
        ))  # fmt: skip


def row_of(screen: str, name: str) -> str:
    """The line of the seats table for ``name`` (the first one: above the settlement)."""
    for line in screen.splitlines():
        if re.match(rf"^\s*→?\s*\d\s+{re.escape(name)}\s", line):
            return line
    return ""


def settlement_of(screen: str) -> tuple[dict[int, tuple[str, int]], int]:
    """The settlement as shown: seat -> (player column, delta), and the system's take."""
    block = screen.split("Settlement:")[-1]
    rows = re.findall(r"^\s*(\d)\s+(\S+)\s+([+-]\d+)\s", block, re.M)
    system = re.search(r"^\s*system\s+([+-]\d+)", block, re.M)
    assert system is not None, block
    return {int(s): (who, int(delta)) for s, who, delta in rows}, int(system.group(1))


def classic_deltas(screen: str) -> list[int]:
    """§10.1 worked from what the screen shows: bm = base × multiplier; the landlord
    wins +2·bm and each farmer pays bm, or the other way round (no rake, no cap)."""
    roles = dict(re.findall(r"^\s*→?\s*(\d)\s+\S+\s+(landlord|farmer)\s+\d+", screen, re.M))
    landlord = [int(seat) for seat, role in roles.items() if role == "landlord"]
    assert len(roles) == 3 and len(landlord) == 1, screen
    multiplier = re.search(r"multiplier ×(\d+)", screen)
    base = re.search(r"base (\d+)", screen)
    winner = re.search(r"Settlement: the (landlord|farmers) wins?", screen)
    assert multiplier and base and winner, screen
    bm = int(base.group(1)) * int(multiplier.group(1))
    sign = 1 if winner.group(1) == "landlord" else -1
    return [sign * (2 * bm if seat == landlord[0] else -bm) for seat in range(3)]


def hands_of(transcript: str, least: int) -> set[str]:
    """Every hand (as shown, grouped by rank) of at least ``least`` cards."""
    return {hand for hand, count in HAND.findall(transcript) if int(count) >= least}


def public_part(transcript: str) -> str:
    """What a terminal showed before the first settlement (which shows every hand's
    cards left, §10), with the plays taken out (played cards are public: a last play of
    all one's cards would otherwise look like a hand)."""
    before = transcript.split("Settlement:")[0]
    before = re.sub(rf"play [{CARD}]+", "play", before)
    return re.sub(rf"to beat: [{CARD}]+", "to beat:", before)


def assert_never_shown(hands: set[str], transcript: str, whose: str) -> None:
    assert hands, f"no hand of {whose} read"
    shown = public_part(transcript)
    for hand in hands:
        for form in (hand, hand.replace(" ", "")):
            found = re.search(rf"(?<![{CARD}]){re.escape(form)}(?![{CARD}])", shown)
            assert found is None, f"{whose}'s hidden cards {form!r} were on the other screen"


def ledger_of(stack: Stack, player_id: str) -> settlement_pb2.SettledHand:
    """The player's one settled hand, from the settlement service (it settles from the
    bus, so it may lag the screens a little)."""
    with blocking_channel(
        stack.settings.network.address("settlement"), stack.settings.calling
    ) as channel:
        settlement = settlement_pb2_grpc.SettlementServiceStub(channel)  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            ledgers = settlement.ListLedgers(
                settlement_pb2.ListLedgersRequest(player_id=player_id), timeout=30
            ).ledgers
            if ledgers:
                assert len(ledgers) == 1, ledgers
                hand: settlement_pb2.SettledHand = ledgers[0].hand
                balance = settlement.GetBalance(
                    settlement_pb2.GetBalanceRequest(player_id=player_id), timeout=30
                )
                assert balance.balance == ledgers[0].delta and balance.hands == 1
                return hand
            time.sleep(0.2)
    raise AssertionError(f"the settlement service never settled a hand of {player_id}")


def stored_events(stack: Stack, hand_id: str) -> list[Recorded]:
    """The hand's events as the recorder stored them, once it has stored the end."""
    store = create_store(stack.settings.store.database_url)
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            stored = store.read_stream(f"hand-{hand_id}")
            decoded = [codec.decode_envelope(s.envelope)[1] for s in stored]
            if any(isinstance(event, HandSettled) for event in decoded):
                return decoded
            time.sleep(0.2)
    finally:
        store.close()
    raise AssertionError(f"the recorder never stored the end of hand {hand_id}")


def test_two_people_one_drops_and_comes_back(stack: Stack) -> None:
    env = env_for(stack)
    ann, ben = Player("ann", env), Player("ben", env)
    table = Table(ann, ben)
    try:
        # Both join within the room's wait: one table, the third seat a bot (§11).
        ann.start()
        ben.start()
        seated = {}
        for player in (ann, ben):
            table.wait_for(player, r"your hand: [0-9TJQKA2BR ]+ \(17 cards\)",
                           timeout=FILL_WAIT + WAIT)  # fmt: skip
            found = table.wait_for(player, r"seated: seat (\d) at table (\w+)")
            seated[player.name] = (int(found.group(1)), found.group(2))
        (ann_seat, table_id), (ben_seat, ben_table) = seated["ann"], seated["ben"]
        assert ben_table == table_id and ann_seat != ben_seat, seated
        for player, other, other_seat in ((ann, "ben", ben_seat), (ben, "ann", ann_seat)):
            screen = player.live.screen
            assert re.match(rf"^\s*→?\s*{other_seat}\s", row_of(screen, other)), screen
            assert len(re.findall(r"^\s*→?\s*\d\s+bot\s", screen, re.M)) == 1, screen

        # Both bid and play until it is Ann's turn to play; her terminal dies there.
        table.play(lambda: ann.prompt == "your turn")
        ann.live.kill()
        ann.screen = None

        # Ben's screen: Ann's seat is away and the bot moves for it (托管).
        def bot_moved_for_ann() -> bool:
            row = row_of(ben.live.screen, "ann")
            # the bot's move for her says why (her connection went: the grace ran out)
            return bool(
                re.search(r"(play \S+|pass) \(bot: connection lost\) · away: the bot plays", row)
            )

        table.play(bot_moved_for_ann)
        assert "the hand is over" not in ben.live.screen

        # Ann runs `ddz play` again: her seat, her stream from the start, her turn later.
        ann.start()
        table.wait_for(ann, rf"back at your seat: seat {ann_seat} at table {table_id}")
        table.wait_for(ann, r"your hand: ")
        done = r"Settlement: [\s\S]*→ the hand is over"

        def both_settled() -> bool:
            return all(re.search(done, p.live.screen) for p in (ann, ben))

        table.play(both_settled)
        screens = {p.name: p.live.screen for p in (ann, ben)}
        for player in (ann, ben):
            player.live.type("q")
            assert player.live.close() == 0
            player.screen = None

        # The settlement both terminals show is one and the same, and conserves (§10).
        shown = {name: settlement_of(screen) for name, screen in screens.items()}
        (ann_rows, ann_system), (ben_rows, ben_system) = shown["ann"], shown["ben"]
        assert sorted(ann_rows) == sorted(ben_rows) == [0, 1, 2], shown
        deltas = [ann_rows[seat][1] for seat in range(3)]
        assert [ben_rows[seat][1] for seat in range(3)] == deltas
        assert ann_system == ben_system
        assert sum(deltas) + ann_system == 0
        assert (ann_rows[ann_seat][0], ann_rows[ben_seat][0]) == ("you", "ben")
        assert (ben_rows[ben_seat][0], ben_rows[ann_seat][0]) == ("you", "ann")
        assert deltas == classic_deltas(screens["ann"])

        # ... and it is the ledger the settlement service holds for both people.
        hand = ledger_of(stack, "ann")
        assert ledger_of(stack, "ben").hand_id == hand.hand_id
        assert (hand.players[ann_seat], hand.players[ben_seat]) == ("ann", "ben")
        assert list(hand.ledger.deltas) == deltas
        assert hand.ledger.system == ann_system

        # The event store: Ann's seat dropped, the bot moved for it, she came back.
        events = stored_events(stack, hand.hand_id)
        away = next(i for i, e in enumerate(events)
                    if isinstance(e, PlayerDisconnected) and e.seat == ann_seat)  # fmt: skip
        back = next(i for i, e in enumerate(events)
                    if isinstance(e, PlayerReconnected) and e.seat == ann_seat)  # fmt: skip
        assert away < back
        assert any(isinstance(e, PlayMade | Passed) and e.seat == ann_seat
                   for e in events[away:back])  # fmt: skip
        assert not any(isinstance(e, PlayerDisconnected) and e.seat == ben_seat for e in events)
        settled = [e for e in events if isinstance(e, HandSettled)]
        assert len(settled) == 1 and list(settled[0].ledger.deltas) == deltas

        # Ben saw her go and come back.
        ben_log = ben.transcript()
        assert f"{AWAY} · {AWAY}" not in ben_log  # said once
        assert re.search(r"^\s*→?\s*\d\s+ann\s.*away: the bot plays", ben_log, re.M)
        assert re.search(r"^\s*→?\s*\d\s+ann\s.*\bback\b", ben_log, re.M)

        # The operator's audit passes on that hand.
        audit = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "audit", hand.hand_id],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        assert audit.returncode == 0, audit.stdout[-3000:] + audit.stderr
        assert f"seat {ann_seat} ann disconnected; the bot plays" in audit.stdout

        # Neither terminal ever showed the other's hidden cards (no showing in classic, §6).
        ann_log = ann.transcript()
        assert_never_shown(hands_of(ben_log, 12), ann_log, "ben")
        assert_never_shown(hands_of(ann_log, 12), ben_log, "ann")
    finally:
        ann.stop()
        ben.stop()
