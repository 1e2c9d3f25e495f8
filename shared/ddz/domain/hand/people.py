"""The people at the table (RULES.md §10.2, §10.3): dropping and coming back, a turn timed
out and auto-play, and escaping, which ends the hand with its settlement."""

from __future__ import annotations

from ddz.domain.cards import NUM_RANKS, SUITED_RANKS, Rank
from ddz.domain.classify import classify
from ddz.domain.multipliers import bomb
from ddz.domain.readings import Reading
from ddz.domain.ruleset import Scoring

from .commands import DisconnectReason, Escape, Reconnect, Resume, TimeOut
from .events import (
    AutoPlayEnd,
    AutoPlayEnded,
    AutoPlayStarted,
    Event,
    HandEnded,
    PlayerDisconnected,
    PlayerEscaped,
    PlayerReconnected,
    TurnTimedOut,
)
from .playing import settle_hand
from .rejection import Decision, RejectReason, check_seat, reject
from .state import HandState, Phase, evolve


def decide_disconnect(state: HandState, seat: int, reason: DisconnectReason | None) -> Decision:
    refused = check_seat(state, seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if seat in state.disconnected:
        return reject(RejectReason.NOT_ALLOWED, f"seat {seat} is already disconnected")
    return [PlayerDisconnected(seat, state.escapee is None, reason)]


def decide_time_out(state: HandState, cmd: TimeOut, seed: bytes | None = None) -> Decision:
    """A turn's clock ran out for a connected person: recorded, and the bot may make
    this one move (``mover``); ``auto_play_after`` in a row start auto-play. Never a
    disconnect: no escapee, no penalty (docs/RULE_DECISIONS.md §10.2)."""
    seat = cmd.seat
    refused = check_seat(state, seat, Phase.BIDDING, Phase.PLAYING)
    if refused is None and seat != state.turn:
        refused = reject(RejectReason.NOT_YOUR_TURN, f"it is seat {state.turn}'s turn")
    if refused is not None:
        return refused
    if state.seats[seat].is_bot or seat in state.disconnected:
        return reject(RejectReason.NOT_ALLOWED, f"the bot already plays seat {seat}")
    if state.timed_out is not None:
        return reject(RejectReason.NOT_ALLOWED, f"seat {seat}'s turn has already timed out")
    if cmd.deadline_ms < 0 or not cmd.turn_seconds >= 0 or cmd.auto_play_after < 0:
        return reject(RejectReason.INVALID_COMMAND, "a time-out needs a deadline and seconds")
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


def decide_resume(state: HandState, cmd: Resume, seed: bytes | None = None) -> Decision:
    refused = check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if cmd.seat not in state.auto_play:
        return reject(RejectReason.NOT_ALLOWED, f"seat {cmd.seat} is not in auto-play")
    return [AutoPlayEnded(cmd.seat, AutoPlayEnd.RESUMED)]


def decide_reconnect(state: HandState, cmd: Reconnect, seed: bytes | None = None) -> Decision:
    refused = check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if cmd.seat not in state.disconnected:
        return reject(RejectReason.NOT_ALLOWED, f"seat {cmd.seat} is not disconnected")
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


def decide_escape(state: HandState, cmd: Escape, seed: bytes | None) -> Decision:
    refused = check_seat(state, cmd.seat, Phase.BIDDING, Phase.PLAYING)
    if refused is not None:
        return refused
    if state.rules.scoring is not Scoring.BEANS:
        # §10.2: the bot plays on for whoever leaves; it is a disconnect that stays.
        if cmd.seat in state.disconnected:
            return []
        return decide_disconnect(state, cmd.seat, DisconnectReason.LEFT)
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
    settled = settle_hand(after, landlord, None, cmd.seat, escape_multiplier, seed)
    return [escaped, ended, *settled]
