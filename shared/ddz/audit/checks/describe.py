"""Short readable phrases for cards, readings, commands, events, factors and ledgers.

Shared by the audit's failure messages and its transcript, so a dispute reads the
same in both: ``seat 2 plays 334455 as pair_chain (main 5, length 3)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ddz.domain.cards import Card, card_counts, format_counts
from ddz.domain.hand import (
    Bid,
    BidAction,
    Command,
    CommandRejected,
    Disconnect,
    Escape,
    Event,
    HandState,
    Pass,
    Phase,
    Play,
    Reconnect,
    Recorded,
    Resume,
    ShowCards,
    StartHand,
    TimeOut,
)
from ddz.domain.hand.events import (
    AutoPlayEnded,
    AutoPlayStarted,
    BidMade,
    CardsDealt,
    CardsShown,
    HandEnded,
    HandSettled,
    HandStarted,
    LandlordChosen,
    Passed,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    PlayMade,
    Redealt,
    SeedRevealed,
    TurnTimedOut,
    WildcardDrawn,
)
from ddz.domain.ledger import Ledger, LedgerLine
from ddz.domain.multipliers import Factor, MultiplierBreakdown
from ddz.domain.readings import Reading
from ddz.domain.ruleset import Bidding, WildcardDraw

NOTHING = "—"


def ranks(cards: Iterable[Card]) -> str:
    """Cards in rank notation, low to high (``33456TTJ``); ``—`` for none."""
    return format_counts(card_counts(cards)) or NOTHING


def reading(read: Reading) -> str:
    """``pair_chain (main 5, length 3)``, ``soft bomb (main 7)``, with wildcards' stand-ins."""
    parts = [f"main {read.main.symbol}"]
    if read.length > 1:
        parts.append(f"length {read.length}")
    made = f"{read.bomb_class.value} " if read.bomb_class is not None else ""
    text = f"{made}{read.type.value} ({', '.join(parts)})"
    if read.substitutes:
        text += f", wildcards as {''.join(r.symbol for r in read.substitutes)}"
    return text


def bid(seat: int, action: BidAction, score: int, scheme: Bidding | None = None) -> str:
    if action is BidAction.PASS:
        return f"seat {seat} passes" if scheme is not Bidding.GRAB else f"seat {seat} does not call"
    if action is BidAction.GRAB:
        return f"seat {seat} grabs the landlord"
    if score:
        return f"seat {seat} calls {score}"
    return f"seat {seat} calls the landlord"


def command(cmd: Command) -> str:
    """A command as the player sent it: ``play 3334 (declared triple_single ...)``."""
    match cmd:
        case Bid():
            if cmd.action is BidAction.PASS:
                return "bid: pass"
            return f"bid: {cmd.action.value}" + (f" {cmd.score}" if cmd.score else "")
        case Play():
            declared = f" as {reading(cmd.declared)}" if cmd.declared is not None else ""
            return f"play {format_counts(cmd.cards) or NOTHING}{declared}"
        case Pass():
            return "pass"
        case ShowCards():
            held = f" (holding {cmd.cards_held})" if cmd.cards_held is not None else ""
            return f"show cards{held}"
        case Disconnect():
            return "disconnect"
        case Reconnect():
            return "reconnect"
        case Escape():
            return "escape"
        case TimeOut():
            return f"turn timed out ({cmd.turn_seconds:g} s)"
        case Resume():
            return "resume (end auto-play)"
        case StartHand():
            return "start the hand"
    return type(cmd).__name__  # pragma: no cover


def factor(f: Factor) -> str:
    """``grab ×2 (seat 1, hand event 5)``."""
    where = []
    if f.seat is not None:
        where.append(f"seat {f.seat}")
    if f.detail:
        where.append(f.detail)
    if f.event is not None:
        where.append(f"hand event {f.event}")
    return f"{f.reason} ×{f.factor}" + (f" ({', '.join(where)})" if where else "")


def breakdown(multiplier: MultiplierBreakdown) -> str:
    """``×8 = initial ×1 · grab ×2 · bomb ×4``."""
    if not multiplier.factors:
        return "×1 (no factors)"
    factors = " · ".join(f"{f.reason} ×{f.factor}" for f in multiplier.factors)
    return f"×{multiplier.total} = {factors}"


def _wild_when(when: WildcardDraw) -> str:
    return "before bidding" if when is WildcardDraw.BEFORE_BIDDING else "after the landlord"


def event(e: Event, state: HandState | None = None) -> str:
    """One event in a phrase (no cards of other seats unless the event shows them)."""
    scheme = None if state is None or state.phase is Phase.NOT_STARTED else state.rules.bidding
    match e:
        case HandStarted():
            return f"the start of hand {e.hand_id} ({e.rules.name})"
        case CardsDealt():
            return f"the deal of round {e.round} (seat {e.first_bidder} bids first)"
        case WildcardDrawn():
            return f"wildcard rank {e.rank.symbol} drawn {_wild_when(e.when)}"
        case CardsShown():
            return f"seat {e.seat} shows their cards ({e.when.replace('_', ' ')}, ×{e.factor})"
        case BidMade():
            return bid(e.seat, e.action, e.score, scheme) + _by(e)
        case Redealt():
            return f"a re-deal (round {e.round})"
        case LandlordChosen():
            return f"seat {e.seat} is the landlord at base {e.base}"
        case PlayMade():
            return f"seat {e.seat} plays {ranks(e.cards)} as {reading(e.reading)}{_by(e)}"
        case Passed():
            return f"seat {e.seat} passes{_by(e)}"
        case PlayerDisconnected():
            why = f" ({e.reason.value.replace('_', ' ')})" if e.reason is not None else ""
            return f"seat {e.seat} disconnected{why}"
        case TurnTimedOut():
            clock = "auto-play clock" if e.on_auto_play else "clock"
            return (
                f"seat {e.seat}'s {clock} ran out ({e.turn_seconds:g} s; timeout "
                f"{e.timeouts} in a row): the bot moves once for them"
            )
        case AutoPlayStarted():
            return f"seat {e.seat} is in auto-play after {e.timeouts} timeouts in a row"
        case AutoPlayEnded():
            return f"seat {e.seat}'s auto-play ended ({e.reason.value})"
        case PlayerReconnected():
            return f"seat {e.seat} reconnected"
        case PlayerEscaped():
            return f"seat {e.seat} escaped (×{e.escape_multiplier.total} with bombs held)"
        case HandEnded():
            if e.winner is None:
                return "the hand ended by an escape"
            return (
                f"the hand ended: {e.winner.value} win"
                + ("; spring" if e.spring else "")
                + ("; anti-spring" if e.anti_spring else "")
            )
        case HandSettled():
            return f"the settlement (deltas {list(e.ledger.deltas)})"
        case SeedRevealed():
            return f"the seed {e.seed[:16]}…"
    return e.TYPE  # pragma: no cover


def _by(e: BidMade | PlayMade | Passed) -> str:
    """Who moved, when the bot moved in a person's seat."""
    if e.acted_by is None or not e.acted_by.for_person:
        return ""
    return f" (the bot, for the person: {e.acted_by.value.removeprefix('bot_').replace('_', ' ')})"


def command_unseen(cmd: Command) -> str:
    """A command as a seat that did not send it may know of it: a play names no card."""
    return "play (its cards not shown)" if isinstance(cmd, Play) else command(cmd)


def recorded(e: Recorded, state: HandState | None = None, *, cards: bool = True) -> str:
    """One recorded event in a phrase; ``cards=False``: a refused attempt's cards (the
    seat's own, perhaps) are not named."""
    if isinstance(e, CommandRejected):
        what = command(e.command) if cards else command_unseen(e.command)
        return f"a refusal of seat {e.seat}'s {what} ({e.reason.value})"
    return event(e, state)


def events(decided: Sequence[Event]) -> str:
    return "; ".join(event(e) for e in decided) or "no events"


def ledger_line(line: LedgerLine, names: Sequence[str] = ()) -> str:
    who = "system" if line.seat is None else f"seat {line.seat}"
    if line.seat is not None and line.seat < len(names):
        who += f" ({names[line.seat]})"
    detail = f" — {line.detail}" if line.detail else ""
    return f"{who} {line.amount:+d} {line.reason}{detail}"


def ledger_difference(recorded_ledger: Ledger, recomputed: Ledger) -> str:
    """The first place the recorded ledger departs from the recomputed one."""
    for index, (a, b) in enumerate(
        zip(recorded_ledger.lines, recomputed.lines, strict=False), start=1
    ):
        if a != b:
            return f"ledger line {index}: recorded {ledger_line(a)}, recomputed {ledger_line(b)}"
    if len(recorded_ledger.lines) != len(recomputed.lines):
        return (
            f"the ledger has {len(recorded_ledger.lines)} lines recorded, "
            f"{len(recomputed.lines)} recomputed"
        )
    if recorded_ledger.deltas != recomputed.deltas:
        return (
            f"recorded deltas {list(recorded_ledger.deltas)}, recomputed {list(recomputed.deltas)}"
        )
    if recorded_ledger.system != recomputed.system:
        return f"recorded system take {recorded_ledger.system}, recomputed {recomputed.system}"
    return f"recorded multiplier ×{recorded_ledger.multiplier}, recomputed ×{recomputed.multiplier}"
