"""``decide(state, command) -> events | Rejection``: the hand's rules (RULES.md §2, §5-§10).

Pure: the same state, command and seed always give the same answer, and a
rejection changes nothing. Everything random comes from the hand's server seed by
``ddz-shuffle-v1`` (docs/SHUFFLE.md). The seed is the one secret of a hand: it is in
no event until ``SeedRevealed``, so the authority that decides commands holds it and
passes it in (``seed=``) -- the ``Hand`` wrapper does. It is needed only by commands
that deal or draw (start, the bid that ends bidding) or end the hand (to reveal it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from operator import ge
from typing import Any

import ddz
from ddz.domain.cards import NUM_RANKS, SUITED_RANKS, Card, Rank, RankCounts
from ddz.domain.classify import choose_reading, classify
from ddz.domain.multipliers import MultiplierBreakdown, Side, bomb, show_cards_factor
from ddz.domain.readings import Reading
from ddz.domain.ruleset import AllPass, Bidding, RuleSet, Scoring, WildcardDraw
from ddz.domain.settlement import HandOutcome, settle
from ddz.domain.shuffle import (
    ALGORITHM,
    SEED_BYTES,
    commitment,
    deal,
    draw_wildcard,
    master_seed,
    round_seed,
)

from .commands import (
    Bid,
    BidAction,
    Command,
    Disconnect,
    DisconnectReason,
    Escape,
    Pass,
    Play,
    Reconnect,
    Resume,
    ShowCards,
    StartHand,
    TimeOut,
)
from .events import (
    AutoPlayEnd,
    AutoPlayEnded,
    AutoPlayStarted,
    BidMade,
    CardsDealt,
    CardsShown,
    Event,
    HandEnded,
    HandSettled,
    HandStarted,
    LandlordChosen,
    MoveBy,
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
from .state import (
    SEATS,
    HandState,
    Phase,
    bidding_winner,
    bomb_limits_for,
    evolve,
    next_bidder,
)


class RejectReason(StrEnum):
    """Stable reason codes (public: clients and audits match on them)."""

    NOT_YOUR_TURN = "not_your_turn"
    CARDS_NOT_IN_HAND = "cards_not_in_hand"
    NOT_A_COMBINATION = "not_a_combination"
    DOES_NOT_BEAT = "does_not_beat"
    LEADER_CANNOT_PASS = "leader_cannot_pass"
    BOMB_LIMIT_REACHED = "bomb_limit_reached"
    BID_NOT_HIGHER = "bid_not_higher"
    WRONG_PHASE = "wrong_phase"
    UNKNOWN_SEAT = "unknown_seat"
    INVALID_BID = "invalid_bid"  # a bid of the other scheme, or a score outside 1..3
    ALREADY_SHOWN = "already_shown"
    NOT_ALLOWED = "not_allowed"  # the rule set has no such thing (show cards in ct)
    INVALID_COMMAND = "invalid_command"  # a malformed start (seed size, seats, balances)


@dataclass(frozen=True, slots=True)
class Rejection:
    code: RejectReason
    message: str


class SeedRequired(RuntimeError):
    """The command deals, draws or reveals, and no (matching) seed was passed in."""


Decision = list[Event] | Rejection


def decide(state: HandState, command: Command, seed: bytes | None = None) -> Decision:
    """The events ``command`` causes in ``state``, or why it is refused."""
    # A table, not a ``match``: plays and passes are most commands of a hand, and a
    # lookup by type costs the same for every command.
    handler = _DECIDERS.get(type(command))
    if handler is None:
        raise TypeError(f"not a hand command: {command!r}")
    decision = handler(state, command, seed)
    if state.auto_play and isinstance(decision, list) and type(command) in _OWN_MOVES:
        seat = command.seat  # type: ignore[union-attr]
        if seat in state.auto_play and not getattr(command, "by_bot", False):
            # The person's own move ends auto-play: said right after the move.
            decision.insert(1, AutoPlayEnded(seat, AutoPlayEnd.ACTED))
    return decision


# --- helpers ---------------------------------------------------------------------------


def _reject(code: RejectReason, message: str) -> Rejection:
    return Rejection(code, message)


def _master(state: HandState, seed: bytes | None) -> bytes:
    if seed is None:
        raise SeedRequired("this command deals, draws or reveals: pass the hand's seed")
    if commitment(seed) != state.commitment:
        raise SeedRequired("the seed does not match the hand's commitment")
    return master_seed(seed, [bytes.fromhex(c) for c in state.client_seeds])


def _check_seat(state: HandState, seat: int, *phases: Phase) -> Rejection | None:
    if isinstance(seat, bool) or seat not in SEATS:
        return _reject(RejectReason.UNKNOWN_SEAT, f"no seat {seat!r} (seats are 0, 1, 2)")
    if state.phase not in phases:
        return _reject(RejectReason.WRONG_PHASE, f"not now: the hand is {state.phase.value}")
    return None


def _mover(state: HandState, seat: int, by_bot: bool) -> MoveBy | Rejection:
    """Who makes a move of ``seat``: its player, or the bot, which moves in a person's
    seat only while it stands in for them (a timed-out turn, auto-play, away)."""
    if not by_bot:
        return MoveBy.PLAYER
    if state.seats[seat].is_bot:
        return MoveBy.BOT_SEAT
    if seat in state.disconnected:
        return MoveBy.BOT_LEFT if seat in state.left else MoveBy.BOT_CONNECTION_LOST
    timed_out = state.timed_out
    if timed_out is not None and timed_out.seat == seat:
        return MoveBy.BOT_AUTO_PLAY if timed_out.on_auto_play else MoveBy.BOT_TURN_TIMEOUT
    return _reject(
        RejectReason.NOT_YOUR_TURN,
        f"seat {seat}'s player is on turn with time left: the bot moves for them only "
        "once their clock runs out",
    )


def _check_turn(state: HandState, seat: int, phase: Phase) -> Rejection | None:
    refused = _check_seat(state, seat, phase)
    if refused is None and seat != state.turn:
        return _reject(RejectReason.NOT_YOUR_TURN, f"it is seat {state.turn}'s turn")
    return refused


def _deal_round(
    rules: RuleSet, master: bytes, round_no: int, asked: int | None, open_seats: tuple[int, ...]
) -> list[Event]:
    """One deal round: the cards, the draws due before bidding (§5), the open hands (§6)."""
    dealt = deal(rules, master, round_no)
    first = dealt.first_bidder_drawn if asked is None else asked
    events: list[Event] = [
        CardsDealt(
            round_no,
            dealt.hands,
            dealt.bottom,
            dealt.golden_card,
            dealt.golden_position,
            dealt.first_bidder_drawn if dealt.golden_card is not None else None,
            first,
        )
    ]
    events += _draws(rules, master, round_no, WildcardDraw.BEFORE_BIDDING, ())
    factor = show_cards_factor(rules, "before_deal") if open_seats else 0
    events += [
        CardsShown(seat, "before_deal", None, factor, dealt.hands[seat]) for seat in open_seats
    ]
    return events


def _draws(
    rules: RuleSet, master: bytes, round_no: int, when: WildcardDraw, taken: tuple[Rank, ...]
) -> list[Event]:
    events: list[Event] = []
    drawn = list(taken)
    for index, draw in enumerate(rules.wildcard_draws):
        if draw is when:
            rank = draw_wildcard(master, round_no, index, drawn)
            drawn.append(rank)
            events.append(WildcardDrawn(index, draw, rank))
    return events


# --- start (§1, §2, §6 show before deal) ------------------------------------------------


def _start(state: HandState, cmd: StartHand, seed: bytes | None = None) -> Decision:
    if state.phase is not Phase.NOT_STARTED:
        return _reject(RejectReason.WRONG_PHASE, "the hand has already started")
    if len(cmd.seed) != SEED_BYTES:
        return _reject(RejectReason.INVALID_COMMAND, f"the seed must be {SEED_BYTES} bytes")
    if len(cmd.seats) != 3:
        return _reject(RejectReason.INVALID_COMMAND, "a hand has exactly three seats")
    if cmd.first_bidder is not None and cmd.first_bidder not in SEATS:
        return _reject(RejectReason.UNKNOWN_SEAT, f"no seat {cmd.first_bidder!r} to bid first")
    if not set(cmd.show_before_deal) <= set(SEATS):
        return _reject(RejectReason.UNKNOWN_SEAT, "show_before_deal names an unknown seat")
    if cmd.show_before_deal and not cmd.rules.show_cards:
        return _reject(RejectReason.NOT_ALLOWED, f"{cmd.rules.name} has no show cards (§6)")
    if cmd.balances is not None and (
        len(cmd.balances) != 3 or any(not isinstance(b, int) or b < 0 for b in cmd.balances)
    ):
        return _reject(RejectReason.INVALID_COMMAND, "balances must be three whole numbers >= 0")
    client_seeds = tuple(sorted(c.hex() for c in cmd.client_seeds))
    open_seats = tuple(sorted(cmd.show_before_deal))
    started = HandStarted(
        cmd.hand_id,
        cmd.rules,
        cmd.room,
        cmd.seats,
        cmd.first_bidder,
        commitment(cmd.seed),
        client_seeds,
        ALGORITHM,
        ddz.ENGINE_VERSION,
        cmd.balances,
        open_seats,
    )
    master = master_seed(cmd.seed, cmd.client_seeds)
    return [started, *_deal_round(cmd.rules, master, 0, cmd.first_bidder, open_seats)]


# --- bidding (§6, §7) -------------------------------------------------------------------


def _check_bid(state: HandState, cmd: Bid) -> Rejection | None:
    rules = state.rules
    if rules.bidding is Bidding.CALL_SCORE:
        if cmd.action is BidAction.PASS and cmd.score == 0:
            return None
        if cmd.action is not BidAction.CALL or not 1 <= cmd.score <= 3:
            return _reject(RejectReason.INVALID_BID, "call score: pass, or call 1, 2 or 3")
        highest = max((b.score for b in state.bids), default=0)
        if cmd.score <= highest:
            return _reject(RejectReason.BID_NOT_HIGHER, f"a call must be above {highest}")
        return None
    called = any(b.action is BidAction.CALL for b in state.bids)
    allowed = BidAction.GRAB if called else BidAction.CALL
    if cmd.score != 0 or cmd.action not in (BidAction.PASS, allowed):
        return _reject(RejectReason.INVALID_BID, f"grab landlord: {allowed.value} or pass now")
    return None


def _bid(state: HandState, cmd: Bid, seed: bytes | None) -> Decision:
    refused = _check_turn(state, cmd.seat, Phase.BIDDING) or _check_bid(state, cmd)
    if refused is not None:
        return refused
    by = _mover(state, cmd.seat, cmd.by_bot)
    if isinstance(by, Rejection):
        return by
    made = BidMade(cmd.seat, cmd.action, cmd.score, by)
    bids = (*state.bids, made)
    if next_bidder(state.rules, state.first_bidder, bids) is not None:
        return [made]
    return [made, *_end_bidding(state, bids, seed)]


def _end_bidding(state: HandState, bids: tuple[BidMade, ...], seed: bytes | None) -> list[Event]:
    rules = state.rules
    result = bidding_winner(rules, bids)
    master = _master(state, seed)
    if result is None:
        if rules.all_pass is AllPass.FIRST_BIDDER_LANDLORD:
            result = (state.first_bidder, 1)  # ct: the golden card holder at base 1 (§6)
        else:
            new_round = state.round + 1  # classic (Decision), grab: deal again (§6)
            return [
                Redealt(new_round, commitment(round_seed(master, new_round))),
                *_deal_round(
                    rules, master, new_round, state.asked_first_bidder, state.show_before_deal
                ),
            ]
    landlord, base = result
    chosen = LandlordChosen(landlord, base, state.bottom, bomb_limits_for(rules, landlord, bids))
    return [chosen, *_draws(rules, master, state.round, WildcardDraw.AFTER_LANDLORD, state.wild)]


# --- show cards (§6) ---------------------------------------------------------------------


def _show(state: HandState, cmd: ShowCards, seed: bytes | None = None) -> Decision:
    refused = _check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    rules = state.rules
    if not rules.show_cards:
        return _reject(RejectReason.NOT_ALLOWED, f"{rules.name} has no show cards (§6)")
    if any(shown.seat == cmd.seat for shown in state.shown):
        return _reject(RejectReason.ALREADY_SHOWN, f"seat {cmd.seat} has already shown")
    if cmd.cards_held is not None:
        if state.phase is not Phase.BIDDING or state.bids:
            return _reject(RejectReason.WRONG_PHASE, "the deal is over: show after the deal")
        if not 0 < cmd.cards_held < rules.hand_size:
            return _reject(
                RejectReason.INVALID_COMMAND, f"cards_held must be 1..{rules.hand_size - 1}"
            )
        when = "during_deal"
    elif any(state.plays_made):
        return _reject(RejectReason.WRONG_PHASE, "show cards only before the first play (§6)")
    else:
        when = "after_deal"
    factor = show_cards_factor(rules, when, cmd.cards_held)
    return [CardsShown(cmd.seat, when, cmd.cards_held, factor, state.cards[cmd.seat])]


# --- play (§3, §4, §7, §8) --------------------------------------------------------------


def _take(held: tuple[Card, ...], play: RankCounts) -> tuple[Card, ...]:
    """The physical cards a play removes: of each rank, the first cards in hand order
    (a hand is in canonical deck order: S, H, C, D, *, S')."""
    need = list(play)
    taken = []
    for card in held:
        if need[card.rank]:
            need[card.rank] -= 1
            taken.append(card)
    return tuple(taken)


def _refuse_play(state: HandState, cmd: Play, over: Reading | None) -> Rejection:
    readings = classify(cmd.cards, state.rules, state.wild_set)
    if not readings:
        return _reject(RejectReason.NOT_A_COMBINATION, "these cards are not a combination (§3)")
    if cmd.declared is not None and all(r.key() != cmd.declared.key() for r in readings):
        return _reject(RejectReason.NOT_A_COMBINATION, "the cards cannot be read as declared")
    assert over is not None  # a combination can always lead
    return _reject(RejectReason.DOES_NOT_BEAT, "this does not beat the play on the table (§3)")


def _play(state: HandState, cmd: Play, seed: bytes | None) -> Decision:
    if state.phase is not Phase.PLAYING or cmd.seat != state.turn:
        refused = _check_turn(state, cmd.seat, Phase.PLAYING)
        if refused is not None:
            return refused
    cards = cmd.cards
    if len(cards) != NUM_RANKS or min(cards) < 0:
        return _reject(RejectReason.INVALID_COMMAND, "cards must be 15 rank counts")
    if not any(cards):
        return _reject(RejectReason.NOT_A_COMBINATION, "no cards: to pass, send Pass")
    if not all(map(ge, state.counts[cmd.seat], cards)):
        return _reject(RejectReason.CARDS_NOT_IN_HAND, "you do not hold these cards")
    over = state.trick.reading if state.trick is not None else None
    reading = choose_reading(cards, state.rules, state.wild_set, over, cmd.declared)
    if reading is None:
        return _refuse_play(state, cmd, over)
    limit = state.bomb_limits[cmd.seat]
    if reading.is_bomb and limit is not None and state.bombs_made[cmd.seat] >= limit:
        return _reject(
            RejectReason.BOMB_LIMIT_REACHED, f"seat {cmd.seat} may play {limit} bomb(s) (§7)"
        )
    by = MoveBy.PLAYER if not cmd.by_bot else _mover(state, cmd.seat, True)
    if isinstance(by, Rejection):
        return by
    made = PlayMade(cmd.seat, _take(state.cards[cmd.seat], cards), reading, by)
    if len(made.cards) < len(state.cards[cmd.seat]):
        return [made]
    return [made, *_end_hand(evolve(state, made), cmd.seat, seed)]


def _pass(state: HandState, cmd: Pass, seed: bytes | None = None) -> Decision:
    if state.phase is not Phase.PLAYING or cmd.seat != state.turn:
        refused = _check_turn(state, cmd.seat, Phase.PLAYING)
        if refused is not None:
            return refused
    if state.trick is None:
        return _reject(RejectReason.LEADER_CANNOT_PASS, "you lead this trick: play something")
    by = MoveBy.PLAYER if not cmd.by_bot else _mover(state, cmd.seat, True)
    if isinstance(by, Rejection):
        return by
    return [Passed(cmd.seat, by)]


# --- the end (§8, §9, §10) ---------------------------------------------------------------


def _end_hand(state: HandState, out_seat: int, seed: bytes | None) -> list[Event]:
    landlord = state.landlord
    assert landlord is not None
    farmers_played = sum(n for seat, n in enumerate(state.plays_made) if seat != landlord)
    winner = Side.LANDLORD if out_seat == landlord else Side.FARMERS
    ended = HandEnded(
        winner,
        out_seat,
        spring=winner is Side.LANDLORD and farmers_played == 0,
        anti_spring=winner is Side.FARMERS and state.plays_made[landlord] == 1,
        final_hands=state.cards,
    )
    # §10.2: in a points hand the first to disconnect is the escapee; §10.3 bean rooms
    # penalise leaving (``Escape``), not dropping and coming back.
    escapee = None if state.rules.scoring is Scoring.BEANS else state.escapee
    return [ended, *_settle(evolve(state, ended), landlord, winner, escapee, None, seed)]


def _settle(
    state: HandState,
    landlord: int,
    winner: Side | None,
    escapee: int | None,
    escape_multiplier: MultiplierBreakdown | None,
    seed: bytes | None,
) -> list[Event]:
    rules = state.rules
    outcome = HandOutcome(
        scoring=rules.scoring,
        room=state.room,
        landlord=landlord,
        base=state.base,
        multiplier=state.multiplier,
        winner=winner,
        wildcard_room=rules.wildcard_count > 0,
        balances=state.balances,
        escapee=escapee,
        escape_multiplier=escape_multiplier,
    )
    _master(state, seed)  # checks the seed against the commitment before revealing it
    assert seed is not None
    return [
        HandSettled(settle(outcome), state.multiplier, landlord, state.base),
        SeedRevealed(seed.hex()),
    ]


# --- people (§10.2, §10.3) ------------------------------------------------------------------


def _disconnect(state: HandState, seat: int, reason: DisconnectReason | None) -> Decision:
    refused = _check_seat(state, seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if seat in state.disconnected:
        return _reject(RejectReason.NOT_ALLOWED, f"seat {seat} is already disconnected")
    return [PlayerDisconnected(seat, state.escapee is None, reason)]


def _time_out(state: HandState, cmd: TimeOut, seed: bytes | None = None) -> Decision:
    """A turn's clock ran out for a connected person: recorded, and the bot may make
    this one move (``_mover``); ``auto_play_after`` in a row start auto-play. Never a
    disconnect: no escapee, no penalty (docs/RULE_DECISIONS.md §10.2)."""
    seat = cmd.seat
    refused = _check_seat(state, seat, Phase.BIDDING, Phase.PLAYING)
    if refused is None and seat != state.turn:
        refused = _reject(RejectReason.NOT_YOUR_TURN, f"it is seat {state.turn}'s turn")
    if refused is not None:
        return refused
    if state.seats[seat].is_bot or seat in state.disconnected:
        return _reject(RejectReason.NOT_ALLOWED, f"the bot already plays seat {seat}")
    if state.timed_out is not None:
        return _reject(RejectReason.NOT_ALLOWED, f"seat {seat}'s turn has already timed out")
    if cmd.deadline_ms < 0 or not cmd.turn_seconds >= 0 or cmd.auto_play_after < 0:
        return _reject(RejectReason.INVALID_COMMAND, "a time-out needs a deadline and seconds")
    timeouts = state.timeouts[seat] + 1
    on_auto_play = seat in state.auto_play
    events: list[Event] = [
        TurnTimedOut(
            seat, cmd.deadline_ms, cmd.turn_seconds, timeouts, on_auto_play, cmd.auto_play_after
        )
    ]
    if not on_auto_play and cmd.auto_play_after and timeouts >= cmd.auto_play_after:
        events.append(AutoPlayStarted(seat, timeouts))
    return events


def _resume(state: HandState, cmd: Resume, seed: bytes | None = None) -> Decision:
    refused = _check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if cmd.seat not in state.auto_play:
        return _reject(RejectReason.NOT_ALLOWED, f"seat {cmd.seat} is not in auto-play")
    return [AutoPlayEnded(cmd.seat, AutoPlayEnd.RESUMED)]


def _reconnect(state: HandState, cmd: Reconnect, seed: bytes | None = None) -> Decision:
    refused = _check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if cmd.seat not in state.disconnected:
        return _reject(RejectReason.NOT_ALLOWED, f"seat {cmd.seat} is not disconnected")
    return [PlayerReconnected(cmd.seat)]


def unplayed_bombs(state: HandState) -> list[tuple[int, Reading]]:
    """Every bomb still held, for §10.3's escape multiplier: per seat, each rank 3..2
    whose cards alone make a bomb (its highest reading: a 6-card ct rank is one sky
    bomb), and the rocket when one seat holds all the jokers. Wildcards are not
    assigned to other ranks (that would be a choice the holder never made); the
    wildcard rank's own four cards are its pure wildcard bomb (§4)."""
    rules, wild = state.rules, state.wild_set
    jokers = (Rank.BLACK_JOKER, Rank.RED_JOKER)
    found: list[tuple[int, Reading]] = []
    for seat, counts in enumerate(state.counts):
        for rank in SUITED_RANKS:
            if counts[rank] >= 4:
                only = tuple(counts[r] if r == rank else 0 for r in range(NUM_RANKS))
                bombs = [r for r in classify(only, rules, wild) if r.is_bomb]
                if bombs:
                    found.append((seat, bombs[0]))
        if all(counts[j] == rules.joker_copies for j in jokers):
            only = tuple(counts[r] if r in jokers else 0 for r in range(NUM_RANKS))
            found += [(seat, r) for r in classify(only, rules, wild) if r.is_bomb][:1]
    return found


def _escape(state: HandState, cmd: Escape, seed: bytes | None) -> Decision:
    refused = _check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if state.rules.scoring is not Scoring.BEANS:
        # §10.2: the bot plays on for whoever leaves; it is a disconnect that stays.
        if cmd.seat in state.disconnected:
            return []
        return _disconnect(state, cmd.seat, DisconnectReason.LEFT)
    escape_multiplier = state.multiplier
    for holder, reading in unplayed_bombs(state):
        factor = bomb(state.rules, reading, holder)
        if factor.factor != 1:
            escape_multiplier = escape_multiplier.with_factor(factor)
    escaped = PlayerEscaped(cmd.seat, escape_multiplier)
    ended = HandEnded(None, None, False, False, state.cards)
    after = evolve(evolve(state, escaped), ended)
    # Decision: before the landlord is known the escapee settles as a farmer and the
    # next seat in play order takes the landlord's share (§10.3 needs a landlord).
    landlord = state.landlord if state.landlord is not None else (cmd.seat + 1) % 3
    settled = _settle(after, landlord, None, cmd.seat, escape_multiplier, seed)
    return [escaped, ended, *settled]


# Every decider takes (state, command, seed); only those that deal, draw or reveal use
# the seed.
_DECIDERS: dict[type, Callable[[HandState, Any, bytes | None], Decision]] = {
    StartHand: _start,
    Bid: _bid,
    Play: _play,
    Pass: _pass,
    ShowCards: _show,
    Disconnect: lambda state, cmd, seed: _disconnect(state, cmd.seat, cmd.reason),
    Reconnect: _reconnect,
    Escape: _escape,
    TimeOut: _time_out,
    Resume: _resume,
}
_OWN_MOVES = frozenset({Bid, Play, Pass, ShowCards})
"""Commands by which a person in auto-play takes their seat back."""
