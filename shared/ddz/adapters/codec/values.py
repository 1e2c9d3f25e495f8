"""Domain values <-> protobuf: ranks, cards, readings, rule sets, rooms, seats,
multipliers, ledgers, balances, fractions, and the enum maps they use.

Values that recur from event to event are decoded once per distinct encoding
(``_Memo``), and decoded cards are interned: decoding a hand's stream is on the hot
path of every service that rebuilds a hand.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from enum import Enum
from fractions import Fraction
from typing import Any, Generic, TypeVar

from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from ddz.domain.cards import Card, Rank
from ddz.domain.hand import AutoPlayEnd, BidAction, DisconnectReason, MoveBy, SeatInfo
from ddz.domain.ledger import Ledger, LedgerLine
from ddz.domain.multipliers import Factor, MultiplierBreakdown, Side
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.ruleset import (
    AllPass,
    Bidding,
    BombLimits,
    BombTier,
    KickerRules,
    RuleSet,
    Scoring,
    WildcardDraw,
)
from ddz.domain.settlement import TWO_SHARES, BeanEscapeRule, RoomSettings
from ddz.v1 import hand_events_pb2 as pb

from .errors import CodecError

# --- enums -------------------------------------------------------------------------------

E = TypeVar("E", bound=Enum)


class _EnumMap(Generic[E]):
    """A domain enum <-> a proto enum whose names are ``PREFIX`` + the member name.

    Built at import and checked both ways, so a member added on one side only fails
    loudly at startup instead of mid-hand. Proto zero (``*_UNSPECIFIED``) maps to
    ``None`` where the domain allows it (``optional=True``).
    """

    def __init__(self, domain: type[E], proto: Any, prefix: str) -> None:
        self.domain = domain
        self.to_number: dict[E, int] = {m: proto.Value(prefix + m.name) for m in domain}
        self.from_number: dict[int, E] = {n: m for m, n in self.to_number.items()}
        names = {prefix + m.name for m in domain} | {prefix + "UNSPECIFIED"}
        extra = set(proto.keys()) - names
        if extra:
            raise ImportError(f"proto enum values without a domain member: {sorted(extra)}")

    def encode(self, member: E | None) -> Any:
        # Any: the stubs type each proto enum's numbers as its own NewType of int.
        return 0 if member is None else self.to_number[member]

    def decode(self, number: int) -> E:
        try:
            return self.from_number[number]
        except KeyError:
            raise CodecError(f"{number} is not a {self.domain.__name__}") from None

    def decode_optional(self, number: int) -> E | None:
        return None if number == 0 else self.decode(number)


_RANK = _EnumMap(Rank, pb.Rank, "RANK_")
_COMBO = _EnumMap(ComboType, pb.ComboType, "COMBO_TYPE_")
_BOMB_CLASS = _EnumMap(BombClass, pb.BombClass, "BOMB_CLASS_")
_BIDDING = _EnumMap(Bidding, pb.Bidding, "BIDDING_")
_ALL_PASS = _EnumMap(AllPass, pb.AllPass, "ALL_PASS_")
_DRAW = _EnumMap(WildcardDraw, pb.WildcardDraw, "WILDCARD_DRAW_")
_SCORING = _EnumMap(Scoring, pb.Scoring, "SCORING_")
_BID_ACTION = _EnumMap(BidAction, pb.BidAction, "BID_ACTION_")
_SIDE = _EnumMap(Side, pb.Side, "SIDE_")
_MOVE_BY = _EnumMap(MoveBy, pb.MoveBy, "MOVE_BY_")
_DISCONNECT_REASON = _EnumMap(DisconnectReason, pb.DisconnectReason, "DISCONNECT_REASON_")
_AUTO_PLAY_END = _EnumMap(AutoPlayEnd, pb.AutoPlayEnd, "AUTO_PLAY_END_")


def ms_to_timestamp(ms: int) -> Timestamp:
    stamp = Timestamp()
    stamp.FromMilliseconds(ms)
    return stamp


def ms_from_timestamp(stamp: Timestamp) -> int:
    return int(stamp.ToMilliseconds())


def _opt(message: Message, name: str) -> Any:
    """The value of an ``optional`` scalar field, or None when absent."""
    return getattr(message, name) if message.HasField(name) else None


def _seat(value: int) -> int:
    if not 0 <= value <= 2:
        raise CodecError(f"no seat {value}")
    return value


M = TypeVar("M", bound=Message)
V = TypeVar("V")


class _Memo(Generic[M, V]):
    """A decoder that decodes each distinct encoding of a message once.

    For values that recur from event to event (a rule set and room in every
    HandStarted, a reading in every play of it, a multiplier breakdown): keyed by the
    message's serialised bytes, so equal bytes give the very same immutable value (and
    the engine's caches, keyed by value, then meet the same object). Only values that
    decoded are kept; bounded, because the bytes come from outside."""

    def __init__(self, decode: Callable[[M], V], size: int) -> None:
        self._decode = decode
        self._size = size
        self._values: dict[bytes, V] = {}

    def __call__(self, msg: M) -> V:
        data = msg.SerializeToString()
        value = self._values.get(data)
        if value is None:
            value = self._decode(msg)
            if len(self._values) >= self._size:
                self._values.clear()
            self._values[data] = value
        return value


# --- values -------------------------------------------------------------------------------


def rank_to_pb(rank: Rank) -> Any:
    """The ``ddz.v1.Rank`` number of a rank (domain rank + 1)."""
    return _RANK.encode(rank)


def rank_from_pb(number: int) -> Rank:
    return _RANK.decode(number)


def card_to_pb(card: Card) -> pb.Card:
    return pb.Card(rank=_RANK.encode(card.rank), suit=card.suit, copy=card.copy)


# Decoded cards are interned: a card is an immutable value, and a deck has at most 108
# of them, so every decoded copy of one card is the same object (no allocation per card
# of a deal, and equal cards compare by identity first). Bounded, because the suit is a
# string from the bytes being decoded.
_CARDS: dict[tuple[int, str, int], Card] = {}
_CARDS_MAX = 1024


def card_from_pb(msg: pb.Card) -> Card:
    key = (msg.rank, msg.suit, msg.copy)
    card = _CARDS.get(key)
    return _new_card(key) if card is None else card


def _new_card(key: tuple[int, str, int]) -> Card:
    card = Card(_RANK.decode(key[0]), key[1], key[2])
    if len(_CARDS) < _CARDS_MAX:
        _CARDS[key] = card
    return card


def _cards(cards: Iterable[Card]) -> list[pb.Card]:
    return [card_to_pb(card) for card in cards]


def _cards_from(msgs: Iterable[pb.Card]) -> tuple[Card, ...]:
    known = _CARDS.get
    out = []
    for msg in msgs:  # card_from_pb, inlined: this runs for every card of a deal
        key = (msg.rank, msg.suit, msg.copy)
        card = known(key)
        out.append(_new_card(key) if card is None else card)
    return tuple(out)


def reading_to_pb(reading: Reading) -> pb.Reading:
    msg = pb.Reading(
        type=_COMBO.encode(reading.type),
        main=_RANK.encode(reading.main),
        length=reading.length,
        size=reading.size,
        bomb_class=_BOMB_CLASS.encode(reading.bomb_class),
        substitutes=[_RANK.encode(r) for r in reading.substitutes],
    )
    if reading.tier != -1:
        msg.tier = reading.tier
    return msg


def reading_from_pb(msg: pb.Reading) -> Reading:
    return _READINGS(msg)


def _reading_from_pb(msg: pb.Reading) -> Reading:
    tier = _opt(msg, "tier")
    return Reading(
        type=_COMBO.decode(msg.type),
        main=_RANK.decode(msg.main),
        length=msg.length,
        size=msg.size,
        bomb_class=_BOMB_CLASS.decode_optional(msg.bomb_class),
        substitutes=tuple(_RANK.decode(r) for r in msg.substitutes),
        tier=-1 if tier is None else tier,
    )


_READINGS = _Memo(_reading_from_pb, 4096)


def bomb_limits_to_pb(limits: BombLimits) -> pb.BombLimits:
    msg = pb.BombLimits(
        by_call=[
            pb.BombLimitByCall(call=call, limit=limit)
            if limit is not None
            else pb.BombLimitByCall(call=call)
            for call, limit in limits.by_call
        ]
    )
    for name in ("landlord", "turn_never_came", "passed"):
        value = getattr(limits, name)
        if value is not None:
            setattr(msg, name, value)
    return msg


def bomb_limits_from_pb(msg: pb.BombLimits) -> BombLimits:
    return BombLimits(
        landlord=_opt(msg, "landlord"),
        turn_never_came=_opt(msg, "turn_never_came"),
        by_call=tuple((b.call, _opt(b, "limit")) for b in msg.by_call),
        passed=_opt(msg, "passed"),
    )


def ruleset_to_pb(rules: RuleSet) -> pb.RuleSet:
    msg = pb.RuleSet(
        name=rules.name,
        rank_copies=rules.rank_copies,
        joker_copies=rules.joker_copies,
        hand_size=rules.hand_size,
        bottom_size=rules.bottom_size,
        # Sorted by the enum's order: a frozenset has no order of its own.
        combo_types=sorted(_COMBO.encode(t) for t in rules.combo_types),
        min_solo_chain=rules.min_solo_chain,
        min_pair_chain=rules.min_pair_chain,
        min_triple_chain=rules.min_triple_chain,
        kickers=pb.KickerRules(
            four_as_kickers=rules.kickers.four_as_kickers,
            jokers_as_kickers=rules.kickers.jokers_as_kickers,
            kicker_of_main_rank=rules.kickers.kicker_of_main_rank,
        ),
        bomb_ladder=[
            pb.BombTier(
                type=_COMBO.encode(tier.type),
                size=tier.size,
                bomb_class=_BOMB_CLASS.encode(tier.bomb_class),
                multiplier=tier.multiplier,
            )
            for tier in rules.bomb_ladder
        ],
        wildcard_draws=[_DRAW.encode(d) for d in rules.wildcard_draws],
        golden_card=rules.golden_card,
        bidding=_BIDDING.encode(rules.bidding),
        all_pass=_ALL_PASS.encode(rules.all_pass),
        show_cards=rules.show_cards,
        spring_multiplier=rules.spring_multiplier,
        grab_multiplier=rules.grab_multiplier,
        show_card_factors=[
            pb.ShowCardFactor(when=when, factor=factor) for when, factor in rules.show_card_factors
        ],
        show_during_deal_late=rules.show_during_deal_late,
        scoring=_SCORING.encode(rules.scoring),
    )
    if rules.bomb_limits is not None:
        msg.bomb_limits.CopyFrom(bomb_limits_to_pb(rules.bomb_limits))
    return msg


def ruleset_from_pb(msg: pb.RuleSet) -> RuleSet:
    return _RULE_SETS(msg)


def _ruleset_from_pb(msg: pb.RuleSet) -> RuleSet:
    return RuleSet(
        name=msg.name,
        rank_copies=msg.rank_copies,
        joker_copies=msg.joker_copies,
        hand_size=msg.hand_size,
        bottom_size=msg.bottom_size,
        combo_types=frozenset(_COMBO.decode(t) for t in msg.combo_types),
        min_solo_chain=msg.min_solo_chain,
        min_pair_chain=msg.min_pair_chain,
        min_triple_chain=msg.min_triple_chain,
        kickers=KickerRules(
            four_as_kickers=msg.kickers.four_as_kickers,
            jokers_as_kickers=msg.kickers.jokers_as_kickers,
            kicker_of_main_rank=msg.kickers.kicker_of_main_rank,
        ),
        bomb_ladder=tuple(
            BombTier(
                _COMBO.decode(t.type),
                t.size,
                _BOMB_CLASS.decode_optional(t.bomb_class),
                t.multiplier,
            )
            for t in msg.bomb_ladder
        ),
        wildcard_draws=tuple(_DRAW.decode(d) for d in msg.wildcard_draws),
        golden_card=msg.golden_card,
        bidding=_BIDDING.decode(msg.bidding),
        all_pass=_ALL_PASS.decode(msg.all_pass),
        show_cards=msg.show_cards,
        bomb_limits=bomb_limits_from_pb(msg.bomb_limits) if msg.HasField("bomb_limits") else None,
        spring_multiplier=msg.spring_multiplier,
        grab_multiplier=msg.grab_multiplier,
        show_card_factors=tuple((f.when, f.factor) for f in msg.show_card_factors),
        show_during_deal_late=msg.show_during_deal_late,
        scoring=_SCORING.decode(msg.scoring),
    )


def fraction_to_pb(value: Fraction) -> pb.Fraction:
    return pb.Fraction(numerator=value.numerator, denominator=value.denominator)


def fraction_from_pb(msg: pb.Fraction) -> Fraction:
    if msg.denominator == 0:
        raise CodecError("a fraction with denominator 0")
    return Fraction(msg.numerator, msg.denominator)


def room_to_pb(room: RoomSettings) -> pb.RoomSettings:
    escape = room.bean_escape
    msg = pb.RoomSettings(
        initial_multiplier=room.initial_multiplier,
        rake=fraction_to_pb(room.rake),
        coefficient=room.coefficient,
        fee=room.fee,
        wildcard_coefficient=fraction_to_pb(room.wildcard_coefficient),
        hand_cap=room.hand_cap,
        min_balance=room.min_balance,
        escape_penalty=room.escape_penalty,
        bean_escape=pb.BeanEscapeRule(
            threshold=escape.threshold,
            landlord_floor=escape.landlord_floor,
            landlord_scale=escape.landlord_scale,
            farmer_floor=escape.farmer_floor,
            farmer_scale=escape.farmer_scale,
        ),
        bean_rounding=room.bean_rounding,
    )
    if room.cap is not None:
        msg.cap = room.cap
    return msg


def room_from_pb(msg: pb.RoomSettings) -> RoomSettings:
    return _ROOMS(msg)


def _room_from_pb(msg: pb.RoomSettings) -> RoomSettings:
    escape = msg.bean_escape
    return RoomSettings(
        initial_multiplier=msg.initial_multiplier,
        rake=fraction_from_pb(msg.rake),
        cap=_opt(msg, "cap"),
        coefficient=msg.coefficient,
        fee=msg.fee,
        wildcard_coefficient=fraction_from_pb(msg.wildcard_coefficient),
        hand_cap=msg.hand_cap,
        min_balance=msg.min_balance,
        escape_penalty=msg.escape_penalty,
        bean_escape=BeanEscapeRule(
            threshold=escape.threshold,
            landlord_floor=escape.landlord_floor,
            landlord_scale=escape.landlord_scale,
            farmer_floor=escape.farmer_floor,
            farmer_scale=escape.farmer_scale,
        ),
        # Recorded before the setting existed: the rule those hands were settled under.
        bean_rounding=msg.bean_rounding or TWO_SHARES,
    )


_RULE_SETS = _Memo(_ruleset_from_pb, 256)
_ROOMS = _Memo(_room_from_pb, 256)


def seat_to_pb(seat: SeatInfo) -> pb.SeatInfo:
    return pb.SeatInfo(player_id=seat.player_id, is_bot=seat.is_bot)


def seat_from_pb(msg: pb.SeatInfo) -> SeatInfo:
    return SeatInfo(msg.player_id, msg.is_bot)


def factor_to_pb(factor: Factor) -> pb.Factor:
    msg = pb.Factor(reason=factor.reason, factor=factor.factor, detail=factor.detail)
    if factor.seat is not None:
        msg.seat = factor.seat
    if factor.event is not None:
        msg.event = factor.event
    return msg


def multiplier_to_pb(breakdown: MultiplierBreakdown) -> pb.MultiplierBreakdown:
    return pb.MultiplierBreakdown(factors=[factor_to_pb(f) for f in breakdown.factors])


def multiplier_from_pb(msg: pb.MultiplierBreakdown) -> MultiplierBreakdown:
    return _BREAKDOWNS(msg)


def _multiplier_from_pb(msg: pb.MultiplierBreakdown) -> MultiplierBreakdown:
    return MultiplierBreakdown(
        tuple(
            Factor(f.reason, f.factor, _opt(f, "seat"), _opt(f, "event"), f.detail)
            for f in msg.factors
        )
    )


_BREAKDOWNS = _Memo(_multiplier_from_pb, 4096)


def ledger_to_pb(ledger: Ledger) -> pb.Ledger:
    lines = []
    for line in ledger.lines:
        msg = pb.LedgerLine(amount=line.amount, reason=line.reason, detail=line.detail)
        if line.seat is not None:
            msg.seat = line.seat
        lines.append(msg)
    return pb.Ledger(
        deltas=list(ledger.deltas),
        system=ledger.system,
        multiplier=ledger.multiplier,
        lines=lines,
    )


def ledger_from_pb(msg: pb.Ledger) -> Ledger:
    if len(msg.deltas) != 3:
        raise CodecError(f"a ledger has three deltas, got {len(msg.deltas)}")
    return Ledger(
        deltas=(msg.deltas[0], msg.deltas[1], msg.deltas[2]),
        system=msg.system,
        multiplier=msg.multiplier,
        lines=tuple(
            LedgerLine(_opt(line, "seat"), line.amount, line.reason, line.detail)
            for line in msg.lines
        ),
    )


def _balances_to_pb(balances: tuple[int, int, int] | None) -> pb.Balances | None:
    return None if balances is None else pb.Balances(values=list(balances))


def balances_from_pb(msg: Message, name: str = "balances") -> tuple[int, int, int] | None:
    if not msg.HasField(name):
        return None
    values = getattr(msg, name).values
    if len(values) != 3:
        raise CodecError(f"balances are three numbers, got {len(values)}")
    return (values[0], values[1], values[2])
