"""Plays and passes (RULES.md §3, §4, §7, §8) and the end of the hand they lead to (§9,
§10): the events of a play or pass, the hand's end when a seat is out, its settlement
and the seed revealed."""

from __future__ import annotations

from operator import ge

from ddz.domain.cards import NUM_RANKS, Card, RankCounts
from ddz.domain.classify import choose_reading, classify
from ddz.domain.multipliers import MultiplierBreakdown, Side
from ddz.domain.readings import Reading
from ddz.domain.ruleset import Scoring
from ddz.domain.settlement import HandOutcome, settle

from .commands import Pass, Play
from .events import Event, HandEnded, HandSettled, MoveBy, Passed, PlayMade, SeedRevealed
from .rejection import Decision, Rejection, RejectReason, check_turn, checked_master, mover, reject
from .state import HandState, Phase, evolve


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
        return reject(RejectReason.NOT_A_COMBINATION, "these cards are not a combination (§3)")
    if cmd.declared is not None and all(r.key() != cmd.declared.key() for r in readings):
        return reject(RejectReason.NOT_A_COMBINATION, "the cards cannot be read as declared")
    assert over is not None  # a combination can always lead
    return reject(RejectReason.DOES_NOT_BEAT, "this does not beat the play on the table (§3)")


def decide_play(state: HandState, cmd: Play, seed: bytes | None) -> Decision:
    if state.phase is not Phase.PLAYING or cmd.seat != state.turn:
        refused = check_turn(state, cmd.seat, Phase.PLAYING)
        if refused is not None:
            return refused
    cards = cmd.cards
    if len(cards) != NUM_RANKS or min(cards) < 0:
        return reject(RejectReason.INVALID_COMMAND, "cards must be 15 rank counts")
    if not any(cards):
        return reject(RejectReason.NOT_A_COMBINATION, "no cards: to pass, send Pass")
    if not all(map(ge, state.counts[cmd.seat], cards)):
        return reject(RejectReason.CARDS_NOT_IN_HAND, "you do not hold these cards")
    over = state.trick.reading if state.trick is not None else None
    reading = choose_reading(cards, state.rules, state.wild_set, over, cmd.declared)
    if reading is None:
        return _refuse_play(state, cmd, over)
    limit = state.bomb_limits[cmd.seat]
    if reading.is_bomb and limit is not None and state.bombs_made[cmd.seat] >= limit:
        return reject(
            RejectReason.BOMB_LIMIT_REACHED, f"seat {cmd.seat} may play {limit} bomb(s) (§7)"
        )
    by = MoveBy.PLAYER if not cmd.by_bot else mover(state, cmd.seat, True)
    if isinstance(by, Rejection):
        return by
    made = PlayMade(cmd.seat, _take(state.cards[cmd.seat], cards), reading, by)
    if len(made.cards) < len(state.cards[cmd.seat]):
        return [made]
    return [made, *_end_hand(evolve(state, made), cmd.seat, seed)]


def decide_pass(state: HandState, cmd: Pass, seed: bytes | None = None) -> Decision:
    if state.phase is not Phase.PLAYING or cmd.seat != state.turn:
        refused = check_turn(state, cmd.seat, Phase.PLAYING)
        if refused is not None:
            return refused
    if state.trick is None:
        return reject(RejectReason.LEADER_CANNOT_PASS, "you lead this trick: play something")
    by = MoveBy.PLAYER if not cmd.by_bot else mover(state, cmd.seat, True)
    if isinstance(by, Rejection):
        return by
    return [Passed(cmd.seat, by)]


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
    return [ended, *settle_hand(evolve(state, ended), landlord, winner, escapee, None, seed)]


def settle_hand(
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
    checked_master(state, seed)  # checks the seed against the commitment before revealing it
    assert seed is not None
    return [
        HandSettled(settle(outcome), state.multiplier, landlord, state.base),
        SeedRevealed(seed.hex()),
    ]
