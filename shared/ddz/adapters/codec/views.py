"""What a seat, or everyone, sees on the wire: domain ``PlayerView`` ->
``ddz.v1.PlayerView``, a hand's public state -> ``GetPublicStateResponse``, and a
suggested command -> ``ddz.v1.SuggestedMove``.

``view_to_pb`` reads nothing but the domain ``PlayerView`` (which has no field for
another seat's hidden cards) and the public events in its history, so the message it
builds cannot carry more than the seat may see.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from functools import lru_cache

from ddz.application.turns import TurnDeadline
from ddz.domain.cards import Card, Rank, counts_of, format_counts
from ddz.domain.hand import (
    Bid,
    BidAction,
    Command,
    HandState,
    Pass,
    Play,
    PlayerView,
    ShowCards,
)
from ddz.domain.hand import events as ev
from ddz.domain.hand.state import NO_ONE, Phase
from ddz.domain.multipliers import Side
from ddz.domain.ruleset import RuleSet
from ddz.domain.settlement import RoomSettings
from ddz.v1 import hand_events_pb2 as pb
from ddz.v1 import rules_pb2, table_pb2

from .commands import command_to_pb
from .events import event_to_pb
from .values import (
    card_to_pb,
    ledger_to_pb,
    multiplier_to_pb,
    rank_to_pb,
    room_to_pb,
    ruleset_to_pb,
    seat_to_pb,
)

PHASES = {
    Phase.NOT_STARTED: rules_pb2.HAND_PHASE_NOT_STARTED,
    Phase.BIDDING: rules_pb2.HAND_PHASE_BIDDING,
    Phase.PLAYING: rules_pb2.HAND_PHASE_PLAYING,
    Phase.ENDED: rules_pb2.HAND_PHASE_ENDED,
}


@lru_cache(maxsize=64)
def _rules_bytes(rules: RuleSet) -> bytes:
    # A rule set is the biggest part of a view and rarely changes: encode it once.
    return bytes(ruleset_to_pb(rules).SerializeToString())


@lru_cache(maxsize=64)
def _room_bytes(room: RoomSettings) -> bytes:
    return bytes(room_to_pb(room).SerializeToString())


@lru_cache(maxsize=4096)
def _cards_bytes(cards: tuple[Card, ...]) -> bytes:
    """``PlayerView.cards`` and ``cards_text`` of ``cards``, encoded (merged into a
    view, it sets them)."""
    text = format_counts(counts_of(card.rank for card in cards))
    message = table_pb2.PlayerView(cards=[card_to_pb(c) for c in cards], cards_text=text)
    return bytes(message.SerializeToString())


@lru_cache(maxsize=1024)
def _bottom_bytes(bottom: tuple[Card, ...]) -> bytes:
    return bytes(table_pb2.PlayerView(bottom=[card_to_pb(c) for c in bottom]).SerializeToString())


def view_to_pb(
    view: PlayerView, *, version: int, table_id: str = "", clock: TurnDeadline | None = None,
    now: float | None = None,
) -> table_pb2.PlayerView:  # fmt: skip
    """The ``PlayerView`` message of ``view`` at stream version ``version``; with
    ``clock``, the turn's deadline and seconds, and what is left at ``now`` (Unix s)."""
    msg = table_pb2.PlayerView()
    # What every seat sees alike at this position, encoded once for the three of them
    # (used again only for a view of the very state it was made from: the same public
    # log object, which a state folded again does not share).
    msg.MergeFromString(_public_parts.get(
        (view.hand_id, version, table_id), view.history,
        lambda: bytes(_public_message(view, version, table_id).SerializeToString()),
    ))  # fmt: skip
    # What only this seat sees, or sees differently: its own cards (they change only
    # when it plays: kept while they are the very same tuple), its seat, its turn.
    msg.MergeFromString(
        _own_cards.get((view.hand_id, view.seat), view.cards, lambda: _cards_bytes(view.cards))
    )
    msg.seat = view.seat
    if view.my_turn:
        msg.my_turn = True
        msg.can_pass = view.can_pass
        msg.legal_bids.extend(_bid_command(bid) for bid in view.legal_bids())
    msg.can_show = view.can_show
    at = time.time() if now is None else now
    msg.server_time.FromNanoseconds(round(at * 1e9))
    if clock is not None:
        msg.turn_deadline.FromNanoseconds(round(clock.deadline * 1e9))
        msg.turn_seconds = clock.seconds
        msg.turn_seconds_left = max(0.0, clock.deadline - at)
    return msg


ENCODINGS_KEPT = 512
"""Encoded parts of views kept of each kind (a few positions of each table in play)."""


class _Encodings:
    """Encoded parts of views by key, each used again only for the very object it was
    made from (identity: a look-up by value would hash every card and event); the
    oldest out past ``ENCODINGS_KEPT``."""

    def __init__(self) -> None:
        self._kept: dict[Hashable, tuple[object, bytes]] = {}

    def get(self, key: Hashable, source: object, encode: Callable[[], bytes]) -> bytes:
        kept = self._kept.get(key)
        if kept is not None and kept[0] is source:
            return kept[1]
        part = encode()
        if len(self._kept) >= ENCODINGS_KEPT:
            del self._kept[next(iter(self._kept))]
        self._kept[key] = (source, part)
        return part

    def clear(self) -> None:
        self._kept.clear()


_public_parts = _Encodings()  # by (hand, version, table), of the state's public log
_own_cards = _Encodings()  # by (hand, seat), of the seat's cards


def forget_encodings() -> None:
    """Drop every encoded part kept (each view is then encoded whole once more)."""
    _public_parts.clear()
    _own_cards.clear()


def _public_message(view: PlayerView, version: int, table_id: str) -> table_pb2.PlayerView:
    """No field of this message may depend on ``view.seat``: it is every seat's."""
    msg = table_pb2.PlayerView(
        hand_id=view.hand_id,
        table_id=table_id,
        version=version,
        phase=PHASES[view.phase],
        card_counts=list(view.card_counts),
        bids=[event_to_pb(bid) for bid in view.bids],
        base=view.base,
        wild=[_rank(rank) for rank in view.wild],
        shown=[
            table_pb2.SeatCards(seat=seat, cards=[card_to_pb(c) for c in cards])
            for seat, cards in enumerate(view.shown)
            if cards is not None
        ],
        multiplier=multiplier_to_pb(view.multiplier),
        multiplier_total=view.multiplier.total,
        passes=view.passes,
        plays_made=list(view.plays_made),
        bomb_limits=[
            pb.BombLimit() if limit is None else pb.BombLimit(limit=limit)
            for limit in view.bomb_limits
        ],
        bombs_made=list(view.bombs_made),
        disconnected=sorted(view.disconnected),
        auto_play=sorted(view.auto_play),
    )
    if view.bottom:  # public once the landlord has them (§1)
        msg.MergeFromString(_bottom_bytes(view.bottom))
    if view.phase is not Phase.NOT_STARTED:
        msg.rules.MergeFromString(_rules_bytes(view.rules))
    if view.turn >= 0:
        msg.turn = view.turn
    if view.golden_card is not None:
        msg.golden_card.CopyFrom(card_to_pb(view.golden_card))
    if view.golden_receiver is not None:
        msg.golden_receiver = view.golden_receiver
    if view.first_bidder >= 0:
        msg.first_bidder = view.first_bidder
    if view.landlord is not None:
        msg.landlord = view.landlord
    if view.trick is not None:
        msg.trick.CopyFrom(event_to_pb(view.trick))
    _public_history(view, msg)
    return msg


def public_state_to_pb(
    hand_id: str, state: HandState, version: int
) -> rules_pb2.GetPublicStateResponse:
    """What everyone at the table may know of ``state`` at stream version ``version``:
    no seat's cards, only their counts."""
    response = rules_pb2.GetPublicStateResponse(
        hand_id=hand_id,
        phase=PHASES[state.phase],
        base=state.base,
        card_counts=[len(cards) for cards in state.cards],
        wild=[rank_to_pb(rank) for rank in state.wild],
        multiplier=multiplier_to_pb(state.multiplier),
        version=version,
        seats=[seat_to_pb(seat) for seat in state.seats],
        disconnected=sorted(state.disconnected),
        auto_play=sorted(state.auto_play),
    )
    if state.phase is not Phase.NOT_STARTED:
        response.rules.CopyFrom(ruleset_to_pb(state.rules))
    if state.turn != NO_ONE:
        response.turn = state.turn
    if state.landlord is not None:
        response.landlord = state.landlord
    if state.trick is not None:
        response.trick.CopyFrom(event_to_pb(state.trick))
    return response


def _public_history(view: PlayerView, msg: table_pb2.PlayerView) -> None:
    """Fields that only public events carry: seats, room, deal round, the end."""
    for event in view.history:
        match event:
            case ev.HandStarted():
                msg.room.MergeFromString(_room_bytes(event.room))
                msg.seats.extend(seat_to_pb(seat) for seat in event.seats)
            case ev.Redealt():
                msg.round = event.round
            case ev.HandEnded():
                msg.winner = _side(event.winner)
                msg.final_hands.extend(
                    pb.CardList(cards=[card_to_pb(c) for c in hand]) for hand in event.final_hands
                )
            case ev.HandSettled():
                msg.ledger.CopyFrom(ledger_to_pb(event.ledger))
            case ev.SeedRevealed():
                msg.seed = event.seed


def _rank(rank: Rank) -> str:
    return "RANK_" + rank.name  # the proto enum's value name (codec's mapping)


def _side(side: Side | None) -> pb.Side:
    value: pb.Side = pb.Side.Value("SIDE_UNSPECIFIED" if side is None else "SIDE_" + side.name)
    return value


def _bid_command(bid: Bid) -> pb.BidCommand:
    _name, body = command_to_pb(bid)
    assert isinstance(body, pb.BidCommand)
    return body


def move_text(command: Command) -> str:
    """A command in words: ``"play 33344456 (plane_singles)"``, ``"call 2"``, ``"pass"``."""
    match command:
        case Bid(action=BidAction.CALL, score=score) if score:
            return f"call {score}"
        case Bid():
            return command.action.value
        case ShowCards():
            return "show cards"
        case Play():
            kind = f" ({command.declared.type.value})" if command.declared is not None else ""
            return f"play {format_counts(command.cards)}{kind}"
        case Pass():
            return "pass"
    return type(command).__name__.lower()


def move_to_pb(command: Command) -> table_pb2.SuggestedMove:
    """A seat's command as a ``SuggestedMove`` (bid, show cards, play or pass)."""
    name, body = command_to_pb(command)
    if name not in ("bid", "show_cards", "play", "pass"):
        raise ValueError(f"{name} is not a move a seat is suggested")
    move = table_pb2.SuggestedMove(text=move_text(command))
    getattr(move, name).CopyFrom(body)
    return move
