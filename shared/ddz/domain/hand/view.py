"""What one seat may see: ``view_for(state, seat) -> PlayerView``.

A ``PlayerView`` is built only from public fields of the hand plus the seat's own
cards, so it cannot hold another seat's hidden cards: there is no field for them.
Other seats' cards appear only where the rules make them public -- a shown hand (§6)
and, at the end, the cards left (``HandEnded``). Bots, the table service and the
terminal client all act on views, never on the full state.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddz.domain.cards import Card, Rank, RankCounts
from ddz.domain.move import Move
from ddz.domain.moves import legal_moves
from ddz.domain.multipliers import MultiplierBreakdown
from ddz.domain.readings import Reading
from ddz.domain.ruleset import Bidding, RuleSet

from .commands import Bid, BidAction
from .events import BidMade, Event, PlayMade
from .state import SEATS, HandState, Phase


@dataclass(frozen=True)
class PlayerView:
    seat: int
    hand_id: str
    rules: RuleSet
    phase: Phase
    turn: int  # whose move, -1 when nobody's
    cards: tuple[Card, ...]  # this seat's own cards
    counts: RankCounts  # the same, as rank counts
    card_counts: tuple[int, ...]  # every seat's number of cards
    bottom: tuple[Card, ...] | None  # once the landlord has them (§1)
    golden_card: Card | None  # dealt face up (§2)
    golden_receiver: int | None
    first_bidder: int
    bids: tuple[BidMade, ...]
    landlord: int | None
    base: int
    wild: tuple[Rank, ...]  # wildcard ranks drawn so far (§5)
    shown: tuple[tuple[Card, ...] | None, ...]  # each seat's cards if shown (§6)
    multiplier: MultiplierBreakdown
    trick: PlayMade | None  # the play to beat and who made it; None: the mover leads
    passes: int
    plays_made: tuple[int, ...]  # plays per seat so far
    bomb_limits: tuple[int | None, ...]  # §7, per seat; None = no limit
    bombs_made: tuple[int, ...]  # bomb-class plays per seat so far
    disconnected: frozenset[int]
    history: tuple[Event, ...]  # every public event, in order
    auto_play: frozenset[int] = frozenset()  # seats in auto-play (托管 after timeouts)

    @property
    def bombs_left(self) -> tuple[int | None, ...]:
        """§7 allowance remaining per seat; None = no limit."""
        return tuple(
            None if limit is None else max(0, limit - made)
            for limit, made in zip(self.bomb_limits, self.bombs_made, strict=True)
        )

    @property
    def my_turn(self) -> bool:
        return self.turn == self.seat

    @property
    def over(self) -> Reading | None:
        return self.trick.reading if self.trick is not None else None

    @property
    def can_pass(self) -> bool:
        return self.my_turn and self.phase is Phase.PLAYING and self.trick is not None

    @property
    def can_show(self) -> bool:
        """Show cards is open until the first play (§6), once per seat."""
        return (
            self.rules.show_cards
            and self.shown[self.seat] is None
            and (
                self.phase is Phase.BIDDING
                or (self.phase is Phase.PLAYING and not any(self.plays_made))
            )
        )

    def legal_bids(self) -> list[Bid]:
        """The bids this seat may make now (§6); empty when it is not its turn to bid."""
        if not self.my_turn or self.phase is not Phase.BIDDING:
            return []
        seat = self.seat
        if self.rules.bidding is Bidding.CALL_SCORE:
            highest = max((b.score for b in self.bids), default=0)
            return [Bid.pass_(seat), *(Bid.call(seat, s) for s in range(highest + 1, 4))]
        called = any(b.action is BidAction.CALL for b in self.bids)
        return [Bid.pass_(seat), Bid.grab(seat) if called else Bid.call(seat)]

    def legal_moves(self) -> list[Move]:
        """Every play this seat may make now (§3, §4), within its bomb allowance (§7)."""
        # my_turn and over inlined: a bot asks this for every move it makes
        if self.turn != self.seat or self.phase is not Phase.PLAYING:
            return []
        trick = self.trick
        over = trick.reading if trick is not None else None
        moves = legal_moves(self.counts, self.rules, frozenset(self.wild), over)
        limit = self.bomb_limits[self.seat]
        if limit is not None and self.bombs_made[self.seat] >= limit:
            moves = [m for m in moves if not m.reading.is_bomb]
        return moves


_NOT_SHOWN: tuple[None, None, None] = (None, None, None)


def view_for(state: HandState, seat: int) -> PlayerView:
    """What ``seat`` may see of ``state``: public fields and its own cards only."""
    if seat not in SEATS:
        raise ValueError(f"no seat {seat!r} (seats are 0, 1, 2)")
    shown: tuple[tuple[Card, ...] | None, ...] = _NOT_SHOWN
    if state.shown:
        shown_seats = {s.seat for s in state.shown}
        shown = tuple(state.cards[s] if s in shown_seats else None for s in SEATS)
    fields = {
        "seat": seat,
        "hand_id": state.hand_id,
        "rules": state.rules,
        "phase": state.phase,
        "turn": state.turn,
        "cards": state.cards[seat],
        "counts": state.counts[seat],
        "card_counts": (len(state.cards[0]), len(state.cards[1]), len(state.cards[2])),
        "bottom": state.bottom if state.landlord is not None else None,
        "golden_card": state.golden_card,
        "golden_receiver": state.golden_receiver,
        "first_bidder": state.first_bidder,
        "bids": state.bids,
        "landlord": state.landlord,
        "base": state.base,
        "wild": state.wild,
        "shown": shown,
        "multiplier": state.multiplier,
        "trick": state.trick,
        "passes": state.passes,
        "plays_made": state.plays_made,
        "bomb_limits": state.bomb_limits,
        "bombs_made": state.bombs_made,
        "disconnected": state.disconnected,
        "history": state.log,
        "auto_play": state.auto_play,
    }
    # Built like ``HandState.evolve``: one dict, no per-field frozen __setattr__ calls
    # (a view is made for every decision a bot takes). Same fields as __init__.
    view = object.__new__(PlayerView)
    object.__setattr__(view, "__dict__", fields)
    return view
