"""What every decider of the hand shares (RULES.md §2): the refusal of a command
(``Rejection``, its stable ``RejectReason``), the checks of a seat and of whose turn it
is, and the hand's server seed, checked against its commitment before it is used."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from ddz.domain.shuffle import commitment, master_seed

from .events import Event, MoveBy
from .state import SEATS, HandState, Phase


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


def reject(code: RejectReason, message: str) -> Rejection:
    return Rejection(code, message)


def checked_master(state: HandState, seed: bytes | None) -> bytes:
    if seed is None:
        raise SeedRequired("this command deals, draws or reveals: pass the hand's seed")
    if commitment(seed) != state.commitment:
        raise SeedRequired("the seed does not match the hand's commitment")
    return master_seed(seed, [bytes.fromhex(c) for c in state.client_seeds])


def check_seat(state: HandState, seat: int, *phases: Phase) -> Rejection | None:
    if isinstance(seat, bool) or seat not in SEATS:
        return reject(RejectReason.UNKNOWN_SEAT, f"no seat {seat!r} (seats are 0, 1, 2)")
    if state.phase not in phases:
        return reject(RejectReason.WRONG_PHASE, f"not now: the hand is {state.phase.value}")
    return None


def mover(state: HandState, seat: int, by_bot: bool) -> MoveBy | Rejection:
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
    return reject(
        RejectReason.NOT_YOUR_TURN,
        f"seat {seat}'s player is on turn with time left: the bot moves for them only "
        "once their clock runs out",
    )


def check_turn(state: HandState, seat: int, phase: Phase) -> Rejection | None:
    refused = check_seat(state, seat, phase)
    if refused is None and seat != state.turn:
        return reject(RejectReason.NOT_YOUR_TURN, f"it is seat {state.turn}'s turn")
    return refused
