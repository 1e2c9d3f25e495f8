"""The table as the player sees it, drawn with rich from their seat's ``PlayerView``
(which holds nothing another seat keeps hidden) and the public events of the stream.

    ── ddz play · alice · room ct · table 1f3a… ────────────────────────────
    hand 9c2e4b1a-…  (to quote it: ddz audit 9c2e4b1a-…)
    seat  player   role      cards  last
    0     you      landlord     20  play 345678
    1     bot-…    farmer       17  pass
    2     bob      farmer       15  play 99
    to beat: 99 (bob)         multiplier ×4 = initial ×1 · bomb ×2 · ...
    your hand: 33 4 5 66 7 99 T J QQ K A 2 B      wildcards: 7
    ⏱ your turn: 14 s left (of 20 s)
    → your turn: a play (cards like 3344 or 10JQKA), pass, hint

The clock line counts down from the view's ``turn_seconds_left`` on this machine's
monotonic clock (clocks differ; the server's deadline is for display and logs) and
turns red in the last ``URGENT`` seconds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from ddz.adapters import codec
from ddz.domain.cards import RANK_SYMBOLS, counts_of, format_counts, parse_ranks
from ddz.domain.hand import events as ev
from ddz.v1 import hand_events_pb2, rules_pb2, table_pb2

PHASE_BIDDING = rules_pb2.HAND_PHASE_BIDDING
PHASE_PLAYING = rules_pb2.HAND_PHASE_PLAYING
PHASE_ENDED = rules_pb2.HAND_PHASE_ENDED
SIDE_NAMES = {1: "the landlord wins", 2: "the farmers win", 0: "no winner (an escape)"}
AWAY = "away: the bot plays"
URGENT = 5.0
"""Seconds left from which the clock line is red."""
WHY_THE_BOT = {
    ev.MoveBy.BOT_TURN_TIMEOUT: "your turn's clock ran out",
    ev.MoveBy.BOT_AUTO_PLAY: "you are in auto-play",
    ev.MoveBy.BOT_CONNECTION_LOST: "your connection was lost",
    ev.MoveBy.BOT_LEFT: "you left the table",
}
"""Why the bot moved in the player's seat, in the player's words (MoveBy)."""
SHORT_WHY = {
    ev.MoveBy.BOT_TURN_TIMEOUT: "bot: time ran out",
    ev.MoveBy.BOT_AUTO_PLAY: "bot: auto-play",
    ev.MoveBy.BOT_CONNECTION_LOST: "bot: connection lost",
    ev.MoveBy.BOT_LEFT: "bot: left",
}


@dataclass
class Scene:
    """What the screen shows; the app updates it from the stream and the player's input."""

    player: str
    room: table_pb2.Room | None = None
    seat: int = 0
    table_id: str = ""
    view: table_pb2.PlayerView | None = None
    last: dict[int, str] = field(default_factory=dict)  # seat -> its last public action
    message: str = ""
    status: str = ""  # what the app is doing (joining, waiting for others...)
    bot_note: str = ""  # the bot's last move for the player, and why (its own line)
    # the turn's clock: (seat on turn, monotonic deadline here, seconds the turn got)
    clock: tuple[int, float, float] | None = None
    now: Callable[[], float] = time.monotonic

    def follow(self, update: table_pb2.WatchHandResponse) -> None:
        """Take in one stream update: the seat's view, and the public event for the log."""
        if update.HasField("view"):
            self.take_view(update.view)
        if update.HasField("event"):
            self.log(update.event)

    def follow_move(self, outcome: table_pb2.MoveOutcome) -> None:
        """Take in the answer to the player's own move, when it is ahead of the stream:
        the screen shows the move at once instead of a stale "your turn" until the
        stream catches up (the stream then sends the same events again: the "last"
        column ends up the same)."""
        if not outcome.HasField("view"):
            return
        if self.view is not None and outcome.view.version <= self.view.version:
            return  # the stream got there first
        for event in outcome.events:
            self.log(event)
        self.take_view(outcome.view)

    def take_view(self, view: table_pb2.PlayerView) -> None:
        """Show ``view`` unless a later one is shown already (a move's answer came first)."""
        if self.view is None or view.version >= self.view.version:
            self.view = view
            self.clock = None
            if view.HasField("turn_deadline") and view.HasField("turn"):
                self.clock = (view.turn, self.now() + view.turn_seconds_left, view.turn_seconds)

    def seconds_left(self) -> float | None:
        """Seconds left on the turn's clock, here (None: no clock runs)."""
        if self.clock is None:
            return None
        return max(0.0, self.clock[1] - self.now())

    def log(self, event: Any) -> None:
        """A public event's mark in its seat's "last" column."""
        decoded = codec.decode_event(event.type, event.type_version, event.payload)
        seat = getattr(decoded, "seat", None)
        text = action_text(decoded)
        if isinstance(decoded, ev.LandlordChosen | ev.Redealt):
            self.last.clear()  # a new start: bids are history
        by = getattr(decoded, "acted_by", None)
        if by in SHORT_WHY and text:
            text += f" ({SHORT_WHY[by]})"
            if seat == self.seat:
                self.bot_note = (
                    f"the bot played for you: {action_text(decoded)} — {WHY_THE_BOT[by]}"
                )
        if seat == self.seat and isinstance(decoded, ev.AutoPlayStarted):
            self.bot_note = (
                f"auto-play: your turn's clock ran out {decoded.timeouts} times in a row, so "
                "the bot plays your turns after a short clock — type resume, or any move, "
                "to play yourself"
            )
        if seat is not None and text:
            self.last[seat] = text


def action_text(event: object) -> str:
    match event:
        case ev.BidMade(action=action, score=score):
            return f"call {score}" if score else str(action.value)
        case ev.PlayMade(cards=cards):
            return "play " + format_counts(counts_of(card.rank for card in cards))
        case ev.Passed():
            return "pass"
        case ev.CardsShown():
            return "shows their hand"
        case ev.PlayerDisconnected():
            return AWAY
        case ev.PlayerReconnected():
            return "back"
        case ev.PlayerEscaped():
            return "left (escape)"
        case ev.TurnTimedOut():
            return "time ran out"
        case ev.AutoPlayStarted():
            return "auto-play"
        case ev.AutoPlayEnded():
            return "plays again"
        case ev.LandlordChosen():
            return "landlord"
    return ""


def grouped(cards_text: str, wild: Collection[str] = ()) -> Text:
    """``3345666`` -> ``33 4 5 666``, wildcard ranks marked."""
    counts = parse_ranks(cards_text) if cards_text else ()
    text = Text()
    for rank, n in enumerate(counts):
        if not n:
            continue
        if text:
            text.append(" ")
        symbol = RANK_SYMBOLS[rank]
        text.append(symbol * n, style="bold yellow" if symbol in wild else "bold")
    return text if text else Text("—")


def card_ranks(cards: Any) -> str:
    """Cards in rank notation, low to high."""
    return format_counts(counts_of(codec.card_from_pb(card).rank for card in cards))


def wild_ranks(view: table_pb2.PlayerView) -> set[str]:
    return {RANK_SYMBOLS[codec.rank_from_pb(rank)] for rank in view.wild}


def render(scene: Scene) -> RenderableType:
    view = scene.view
    room = scene.room.room_id if scene.room is not None else "?"
    title = f"ddz play · {scene.player} · room {room}"
    if scene.table_id:
        title += f" · table {scene.table_id[:8]}"
    parts: list[RenderableType] = [Rule(title)]
    if view is None or view.phase == rules_pb2.HAND_PHASE_NOT_STARTED:
        parts.append(Text(scene.status or "…"))
        if scene.message:
            parts.append(Text(scene.message))
        return Group(*parts)
    if view.hand_id:
        parts.append(Text(f"hand {view.hand_id}  (to quote it: ddz audit {view.hand_id})",
                          style="dim"))  # fmt: skip
    parts += [_seats(scene, view), _middle(view), _hand(view)]
    clock = clock_line(scene, view)
    if clock is not None:
        parts.append(clock)
    if view.phase == PHASE_ENDED:
        parts.append(_settlement(scene, view))
        parts.append(Text(f"hand {view.hand_id} is over: check it with  ddz audit {view.hand_id}"))
    if scene.status:
        parts.append(Text(scene.status, style="dim"))
    if scene.bot_note:
        parts.append(Text(scene.bot_note, style="yellow"))
    if scene.message:
        parts.append(Text(scene.message, style="bold"))
    parts.append(Text(prompt_line(scene, view), style="cyan"))
    return Group(*parts)


def _seats(scene: Scene, view: table_pb2.PlayerView) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False)
    for column in ("", "seat", "player", "role", "cards", "last"):
        table.add_column(column)
    landlord = view.landlord if view.HasField("landlord") else None
    shown = {entry.seat: card_ranks(entry.cards) for entry in view.shown}
    for seat in range(len(view.seats)):
        name = seat_name(view, seat)
        role = "" if landlord is None else ("landlord" if seat == landlord else "farmer")
        turn = "→" if view.HasField("turn") and view.turn == seat else ""
        last = scene.last.get(seat, "")
        if seat in view.disconnected and not last.endswith(AWAY):
            last = (last + " · " if last else "") + AWAY
        if seat in shown and seat != view.seat:
            last = (last + " · " if last else "") + f"shown: {shown[seat]}"
        count = view.card_counts[seat] if seat < len(view.card_counts) else 0
        table.add_row(turn, str(seat), name, role, str(count), last)
    return table


def seat_name(view: table_pb2.PlayerView, seat: int) -> str:
    if seat == view.seat:
        return "you"
    info = view.seats[seat] if seat < len(view.seats) else None
    if info is None:
        return f"seat {seat}"
    return "bot" if info.is_bot else str(info.player_id)


def _middle(view: table_pb2.PlayerView) -> Text:
    line = Text()
    if view.phase == PHASE_BIDDING:
        bids = ", ".join(f"seat {b.seat}: {_bid(b)}" for b in view.bids) or "none yet"
        line.append(f"bidding · bids: {bids}")
    elif view.phase == PHASE_PLAYING:
        if view.HasField("trick"):
            line.append(f"to beat: {card_ranks(view.trick.cards)} (seat {view.trick.seat})")
        else:
            line.append("to beat: nothing (the player on turn leads)")
    factors = " · ".join(f"{f.reason} ×{f.factor}" for f in view.multiplier.factors)
    line.append(f"   multiplier ×{view.multiplier_total}" + (f" = {factors}" if factors else ""))
    if view.base:
        line.append(f"   base {view.base}")
    if view.bottom:
        line.append(f"   bottom: {card_ranks(view.bottom)}")
    if view.wild:
        line.append(f"   wildcards: {' '.join(sorted(wild_ranks(view)))}")
    return line


def _bid(bid: Any) -> str:
    action = str(hand_events_pb2.BidAction.Name(bid.action)).removeprefix("BID_ACTION_").lower()
    return f"call {bid.score}" if bid.score else action


def _hand(view: table_pb2.PlayerView) -> Text:
    text = Text("your hand: ")
    text.append_text(grouped(view.cards_text, wild_ranks(view)))
    text.append(f"   ({len(view.cards)} cards)")
    return text


def _settlement(scene: Scene, view: table_pb2.PlayerView) -> RenderableType:
    if not view.ledger.deltas:
        return Text("the hand is over; settling…")
    table = Table(title=f"Settlement: {SIDE_NAMES.get(view.winner, '')}", box=None)
    table.add_column("seat")
    table.add_column("player")
    table.add_column("change", justify="right")
    table.add_column("cards left")
    for seat, delta in enumerate(view.ledger.deltas):
        name = seat_name(view, seat)
        left = card_ranks(view.final_hands[seat].cards) if seat < len(view.final_hands) else ""
        table.add_row(str(seat), name, f"{delta:+d}", left or "—")
    table.add_row("", "system", f"{view.ledger.system:+d}", "")
    return table


def clock_line(scene: Scene, view: table_pb2.PlayerView) -> Text | None:
    """``⏱ your turn: 14 s left (of 20 s)``, red in the last ``URGENT`` seconds."""
    left = scene.seconds_left()
    if left is None or scene.clock is None or view.phase == PHASE_ENDED:
        return None
    seat, _deadline, given = scene.clock
    whose = "your turn" if seat == view.seat else f"seat {seat} ({seat_name(view, seat)})"
    style = "bold red" if left <= URGENT else "green"
    text = Text(f"⏱ {whose}: {math.ceil(left):d} s left (of {given:g} s)", style=style)
    if seat == view.seat and seat in view.auto_play:
        text.append("  auto-play: the bot moves when it runs out", style="yellow")
    return text


def prompt_line(scene: Scene, view: table_pb2.PlayerView) -> str:
    if view.phase == PHASE_ENDED:
        return "→ the hand is over: next (n) for another hand, quit (q)"
    if view.seat in view.disconnected:
        return "→ you are away and the bot plays for you: type any move to take over"
    if view.seat in view.auto_play:
        return (
            "→ auto-play: the bot plays your turns after a short clock; type resume, or "
            "any move on your turn, to play yourself"
        )
    if not view.my_turn:
        if not view.HasField("turn"):
            return "→ waiting…"
        return f"→ waiting for seat {view.turn} ({seat_name(view, view.turn)})"
    if view.phase == PHASE_BIDDING:
        options = ", ".join(_bid_word(b) for b in view.legal_bids)
        return f"→ your bid: {options}; hint (?)" + (", show" if view.can_show else "")
    options = "a play (cards like 3344 or 10JQKA)"
    if view.can_pass:
        options += ", pass"
    return f"→ your turn: {options}, hint (?)" + (", show" if view.can_show else "")


def _bid_word(bid: Any) -> str:
    if bid.score:
        return str(bid.score)
    name = str(hand_events_pb2.BidAction.Name(bid.action))
    return name.removeprefix("BID_ACTION_").lower()
