"""The hand before its first play (RULES.md §1, §2, §6, §7): starting it (the commitment,
the deal, a show before the deal), the bidding and its end (the landlord, the bottom
cards, wildcard draws, a redeal when everyone passes), and showing cards."""

from __future__ import annotations

import ddz
from ddz.domain.cards import Rank
from ddz.domain.multipliers import show_cards_factor
from ddz.domain.ruleset import AllPass, Bidding, RuleSet, WildcardDraw
from ddz.domain.shuffle import (
    ALGORITHM,
    SEED_BYTES,
    commitment,
    deal,
    draw_wildcard,
    master_seed,
    round_seed,
)

from .commands import Bid, BidAction, ShowCards, StartHand
from .events import (
    BidMade,
    CardsDealt,
    CardsShown,
    Event,
    HandStarted,
    LandlordChosen,
    Redealt,
    WildcardDrawn,
)
from .rejection import (
    Decision,
    Rejection,
    RejectReason,
    check_seat,
    check_turn,
    checked_master,
    mover,
    reject,
)
from .state import SEATS, HandState, Phase, bidding_winner, bomb_limits_for, next_bidder


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


def decide_start(state: HandState, cmd: StartHand, seed: bytes | None = None) -> Decision:
    if state.phase is not Phase.NOT_STARTED:
        return reject(RejectReason.WRONG_PHASE, "the hand has already started")
    if len(cmd.seed) != SEED_BYTES:
        return reject(RejectReason.INVALID_COMMAND, f"the seed must be {SEED_BYTES} bytes")
    if len(cmd.seats) != 3:
        return reject(RejectReason.INVALID_COMMAND, "a hand has exactly three seats")
    if cmd.first_bidder is not None and cmd.first_bidder not in SEATS:
        return reject(RejectReason.UNKNOWN_SEAT, f"no seat {cmd.first_bidder!r} to bid first")
    if not set(cmd.show_before_deal) <= set(SEATS):
        return reject(RejectReason.UNKNOWN_SEAT, "show_before_deal names an unknown seat")
    if cmd.show_before_deal and not cmd.rules.show_cards:
        return reject(RejectReason.NOT_ALLOWED, f"{cmd.rules.name} has no show cards (§6)")
    if cmd.balances is not None and (
        len(cmd.balances) != 3 or any(not isinstance(b, int) or b < 0 for b in cmd.balances)
    ):
        return reject(RejectReason.INVALID_COMMAND, "balances must be three whole numbers >= 0")
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


def _check_bid(state: HandState, cmd: Bid) -> Rejection | None:
    rules = state.rules
    if rules.bidding is Bidding.CALL_SCORE:
        if cmd.action is BidAction.PASS and cmd.score == 0:
            return None
        if cmd.action is not BidAction.CALL or not 1 <= cmd.score <= 3:
            return reject(RejectReason.INVALID_BID, "call score: pass, or call 1, 2 or 3")
        highest = max((b.score for b in state.bids), default=0)
        if cmd.score <= highest:
            return reject(RejectReason.BID_NOT_HIGHER, f"a call must be above {highest}")
        return None
    called = any(b.action is BidAction.CALL for b in state.bids)
    allowed = BidAction.GRAB if called else BidAction.CALL
    if cmd.score != 0 or cmd.action not in (BidAction.PASS, allowed):
        return reject(RejectReason.INVALID_BID, f"grab landlord: {allowed.value} or pass now")
    return None


def decide_bid(state: HandState, cmd: Bid, seed: bytes | None) -> Decision:
    refused = check_turn(state, cmd.seat, Phase.BIDDING) or _check_bid(state, cmd)
    if refused is not None:
        return refused
    by = mover(state, cmd.seat, cmd.by_bot)
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
    master = checked_master(state, seed)
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


def decide_show(state: HandState, cmd: ShowCards, seed: bytes | None = None) -> Decision:
    refused = check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    rules = state.rules
    if not rules.show_cards:
        return reject(RejectReason.NOT_ALLOWED, f"{rules.name} has no show cards (§6)")
    if any(shown.seat == cmd.seat for shown in state.shown):
        return reject(RejectReason.ALREADY_SHOWN, f"seat {cmd.seat} has already shown")
    if cmd.cards_held is not None:
        if state.phase is not Phase.BIDDING or state.bids:
            return reject(RejectReason.WRONG_PHASE, "the deal is over: show after the deal")
        if not 0 < cmd.cards_held < rules.hand_size:
            return reject(
                RejectReason.INVALID_COMMAND, f"cards_held must be 1..{rules.hand_size - 1}"
            )
        when = "during_deal"
    elif any(state.plays_made):
        return reject(RejectReason.WRONG_PHASE, "show cards only before the first play (§6)")
    else:
        when = "after_deal"
    factor = show_cards_factor(rules, when, cmd.cards_held)
    return [CardsShown(cmd.seat, when, cmd.cards_held, factor, state.cards[cmd.seat])]
