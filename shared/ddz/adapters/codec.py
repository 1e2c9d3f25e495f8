"""Domain <-> protobuf: every hand event and command, and the event envelope.

The one place that knows both shapes (protos/ddz/v1/hand_events.proto and
``ddz.domain.hand``). Services never build event messages themselves:

    type_, type_version, payload = encode_event(event)
    event = decode_event(type_, type_version, payload)
    data = envelope_for(stream_id, version, event, causation_id, correlation_id, producer)
    envelope, event = decode_envelope(data)

An envelope is serialised once, by its producer (``envelope_for``); those bytes are
what NATS carries and the store keeps. ``CommandRejected`` is recorded in a hand's
stream but is not a domain event: the hand's state never folds it, so ``hand_events``
filters it out before ``replay``.

Decoding is strict: stored bytes that do not make a valid domain value raise
``CodecError`` (a ``ValueError``), never a half-filled event.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from fractions import Fraction
from typing import Any, Generic, TypeAlias, TypeVar

from google.protobuf.message import DecodeError, Message

from ddz.application.errors import Kind, Reason, Refusal
from ddz.domain.cards import (
    NUM_RANKS,
    Card,
    CardNotationError,
    Rank,
    format_counts,
    parse_ranks,
)
from ddz.domain.hand import (
    Bid,
    BidAction,
    Command,
    Disconnect,
    Escape,
    Event,
    Pass,
    Play,
    Reconnect,
    RejectReason,
    SeatInfo,
    ShowCards,
)
from ddz.domain.hand import events as ev
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
from ddz.domain.settlement import BeanEscapeRule, Ledger, LedgerLine, RoomSettings
from ddz.v1 import envelope_pb2
from ddz.v1 import hand_events_pb2 as pb

CONTENT_TYPE = "application/x-protobuf; messageType={}"


class CodecError(Refusal, ValueError):
    """Bytes or a message that do not make a valid domain value: an invalid request."""

    REASON = Reason.INVALID_ARGUMENT

    def __init__(self, message: str) -> None:
        super().__init__(Kind.INVALID, self.REASON, message)


class MalformedCards(CodecError):
    """Card notation a command cannot be built from (``PlayCommand.cards``)."""

    REASON = Reason.MALFORMED_CARDS


# --- CommandRejected: recorded, never folded ------------------------------------------

SeatCommand: TypeAlias = Bid | ShowCards | Play | Pass | Disconnect | Reconnect | Escape
"""A command one seat sends to the rules service (``StartHand`` is the dealer's)."""


@dataclass(frozen=True, slots=True)
class CommandRejected:
    """A command the rules refused, with the domain's reason (RULES.md via decide).

    Lives in the hand's stream for audits ("my play was refused") but changes
    nothing: ``evolve`` does not know it, so callers replay ``hand_events(...)``.
    """

    TYPE = "command_rejected"
    VERSION = 1
    HIDDEN = False

    command: SeatCommand
    reason: RejectReason
    message: str
    request_id: str = ""

    @property
    def seat(self) -> int:
        return self.command.seat


Recorded: TypeAlias = Event | CommandRejected
"""Anything recorded in a hand's stream."""


def hand_events(recorded: Iterable[Recorded]) -> list[Event]:
    """The domain events of a stream, without rejections (what ``replay`` folds)."""
    return [event for event in recorded if not isinstance(event, CommandRejected)]


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


# --- events -------------------------------------------------------------------------------


def _hand_started(e: ev.HandStarted) -> pb.HandStarted:
    msg = pb.HandStarted(
        hand_id=e.hand_id,
        rules=ruleset_to_pb(e.rules),
        room=room_to_pb(e.room),
        seats=[seat_to_pb(s) for s in e.seats],
        commitment=e.commitment,
        client_seeds=list(e.client_seeds),
        algorithm=e.algorithm,
        engine_version=e.engine_version,
        balances=_balances_to_pb(e.balances),
        show_before_deal=list(e.show_before_deal),
    )
    if e.first_bidder is not None:
        msg.first_bidder = e.first_bidder
    return msg


def _hand_started_from(m: pb.HandStarted) -> ev.HandStarted:
    first_bidder = _opt(m, "first_bidder")
    return ev.HandStarted(
        hand_id=m.hand_id,
        rules=ruleset_from_pb(m.rules),
        room=room_from_pb(m.room),
        seats=tuple(seat_from_pb(s) for s in m.seats),
        first_bidder=None if first_bidder is None else _seat(first_bidder),
        commitment=m.commitment,
        client_seeds=tuple(m.client_seeds),
        algorithm=m.algorithm,
        engine_version=m.engine_version,
        balances=balances_from_pb(m),
        show_before_deal=tuple(m.show_before_deal),
    )


def _cards_dealt(e: ev.CardsDealt) -> pb.CardsDealt:
    msg = pb.CardsDealt(
        round=e.round,
        hands=[pb.CardList(cards=_cards(hand)) for hand in e.hands],
        bottom=_cards(e.bottom),
        golden_card=None if e.golden_card is None else card_to_pb(e.golden_card),
        first_bidder=e.first_bidder,
    )
    if e.golden_position is not None:
        msg.golden_position = e.golden_position
    if e.golden_receiver is not None:
        msg.golden_receiver = e.golden_receiver
    return msg


def _cards_dealt_from(m: pb.CardsDealt) -> ev.CardsDealt:
    return ev.CardsDealt(
        round=m.round,
        hands=tuple(_cards_from(hand.cards) for hand in m.hands),
        bottom=_cards_from(m.bottom),
        golden_card=card_from_pb(m.golden_card) if m.HasField("golden_card") else None,
        golden_position=_opt(m, "golden_position"),
        golden_receiver=_opt(m, "golden_receiver"),
        first_bidder=_seat(m.first_bidder),
    )


def _cards_shown(e: ev.CardsShown) -> pb.CardsShown:
    msg = pb.CardsShown(seat=e.seat, when=e.when, factor=e.factor, cards=_cards(e.cards))
    if e.cards_held is not None:
        msg.cards_held = e.cards_held
    return msg


def _landlord_chosen(e: ev.LandlordChosen) -> pb.LandlordChosen:
    return pb.LandlordChosen(
        seat=e.seat,
        base=e.base,
        bottom=_cards(e.bottom),
        bomb_limits=[
            pb.BombLimit() if limit is None else pb.BombLimit(limit=limit)
            for limit in e.bomb_limits
        ],
    )


def _landlord_chosen_from(m: pb.LandlordChosen) -> ev.LandlordChosen:
    limits = tuple(_opt(b, "limit") for b in m.bomb_limits)
    if len(limits) != 3:
        raise CodecError(f"bomb limits are one per seat, got {len(limits)}")
    return ev.LandlordChosen(
        _seat(m.seat), m.base, _cards_from(m.bottom), (limits[0], limits[1], limits[2])
    )


def _hand_ended(e: ev.HandEnded) -> pb.HandEnded:
    msg = pb.HandEnded(
        winner=_SIDE.encode(e.winner),
        spring=e.spring,
        anti_spring=e.anti_spring,
        final_hands=[pb.CardList(cards=_cards(hand)) for hand in e.final_hands],
    )
    if e.out_seat is not None:
        msg.out_seat = e.out_seat
    return msg


def _hand_ended_from(m: pb.HandEnded) -> ev.HandEnded:
    return ev.HandEnded(
        winner=_SIDE.decode_optional(m.winner),
        out_seat=_opt(m, "out_seat"),
        spring=m.spring,
        anti_spring=m.anti_spring,
        final_hands=tuple(_cards_from(hand.cards) for hand in m.final_hands),
    )


@dataclass(frozen=True, slots=True)
class _Codec:
    message: type[Message]
    encode: Callable[[Any], Message]
    decode: Callable[[Any], Recorded]


_CODECS: dict[str, _Codec] = {
    ev.HandStarted.TYPE: _Codec(pb.HandStarted, _hand_started, _hand_started_from),
    ev.CardsDealt.TYPE: _Codec(pb.CardsDealt, _cards_dealt, _cards_dealt_from),
    ev.WildcardDrawn.TYPE: _Codec(
        pb.WildcardDrawn,
        lambda e: pb.WildcardDrawn(
            index=e.index, when=_DRAW.encode(e.when), rank=_RANK.encode(e.rank)
        ),
        lambda m: ev.WildcardDrawn(m.index, _DRAW.decode(m.when), _RANK.decode(m.rank)),
    ),
    ev.CardsShown.TYPE: _Codec(
        pb.CardsShown,
        _cards_shown,
        lambda m: ev.CardsShown(
            _seat(m.seat), m.when, _opt(m, "cards_held"), m.factor, _cards_from(m.cards)
        ),
    ),
    ev.BidMade.TYPE: _Codec(
        pb.BidMade,
        lambda e: pb.BidMade(seat=e.seat, action=_BID_ACTION.encode(e.action), score=e.score),
        lambda m: ev.BidMade(_seat(m.seat), _BID_ACTION.decode(m.action), m.score),
    ),
    ev.Redealt.TYPE: _Codec(
        pb.Redealt,
        lambda e: pb.Redealt(round=e.round, commitment=e.commitment),
        lambda m: ev.Redealt(m.round, m.commitment),
    ),
    ev.LandlordChosen.TYPE: _Codec(pb.LandlordChosen, _landlord_chosen, _landlord_chosen_from),
    ev.PlayMade.TYPE: _Codec(
        pb.PlayMade,
        lambda e: pb.PlayMade(seat=e.seat, cards=_cards(e.cards), reading=reading_to_pb(e.reading)),
        lambda m: ev.PlayMade(_seat(m.seat), _cards_from(m.cards), reading_from_pb(m.reading)),
    ),
    ev.Passed.TYPE: _Codec(
        pb.Passed, lambda e: pb.Passed(seat=e.seat), lambda m: ev.Passed(_seat(m.seat))
    ),
    ev.PlayerDisconnected.TYPE: _Codec(
        pb.PlayerDisconnected,
        lambda e: pb.PlayerDisconnected(seat=e.seat, escapee=e.escapee),
        lambda m: ev.PlayerDisconnected(_seat(m.seat), m.escapee),
    ),
    ev.PlayerReconnected.TYPE: _Codec(
        pb.PlayerReconnected,
        lambda e: pb.PlayerReconnected(seat=e.seat),
        lambda m: ev.PlayerReconnected(_seat(m.seat)),
    ),
    ev.PlayerEscaped.TYPE: _Codec(
        pb.PlayerEscaped,
        lambda e: pb.PlayerEscaped(
            seat=e.seat, escape_multiplier=multiplier_to_pb(e.escape_multiplier)
        ),
        lambda m: ev.PlayerEscaped(_seat(m.seat), multiplier_from_pb(m.escape_multiplier)),
    ),
    ev.HandEnded.TYPE: _Codec(pb.HandEnded, _hand_ended, _hand_ended_from),
    ev.HandSettled.TYPE: _Codec(
        pb.HandSettled,
        lambda e: pb.HandSettled(
            ledger=ledger_to_pb(e.ledger),
            multiplier=multiplier_to_pb(e.multiplier),
            landlord=e.landlord,
            base=e.base,
        ),
        lambda m: ev.HandSettled(
            ledger_from_pb(m.ledger), multiplier_from_pb(m.multiplier), _seat(m.landlord), m.base
        ),
    ),
    ev.SeedRevealed.TYPE: _Codec(
        pb.SeedRevealed,
        lambda e: pb.SeedRevealed(seed=e.seed),
        lambda m: ev.SeedRevealed(m.seed),
    ),
    CommandRejected.TYPE: _Codec(
        pb.CommandRejected,
        lambda e: _rejected_to_pb(e),
        lambda m: _rejected_from_pb(m),
    ),
}

EVENT_VERSIONS: Mapping[str, int] = {
    **{cls.TYPE: cls.VERSION for cls in ev.EVENT_TYPES.values()},
    CommandRejected.TYPE: CommandRejected.VERSION,
}
HIDDEN_TYPES = frozenset(cls.TYPE for cls in ev.EVENT_TYPES.values() if cls.HIDDEN)
if set(_CODECS) != set(EVENT_VERSIONS):  # a domain event without a codec: fail at import
    raise ImportError(f"codec missing for {sorted(set(EVENT_VERSIONS) - set(_CODECS))}")


def message_name(event_type: str) -> str:
    """``"ddz.v1.PlayMade"`` for ``"play_made"``."""
    name: str = _codec(event_type).message.DESCRIPTOR.full_name
    return name


def _codec(event_type: str) -> _Codec:
    try:
        return _CODECS[event_type]
    except KeyError:
        raise CodecError(f"unknown event type {event_type!r}") from None


def event_to_pb(event: Recorded) -> Message:
    return _codec(event.TYPE).encode(event)


def event_from_pb(event_type: str, message: Message) -> Recorded:
    return _decoded(_codec(event_type), event_type, message)


def _decoded(codec: _Codec, event_type: str, message: Message) -> Recorded:
    """``codec``'s event from ``message``; any decoding failure as a ``CodecError``."""
    try:
        return codec.decode(message)
    except CodecError:
        raise
    except (ValueError, TypeError, KeyError) as exc:
        raise CodecError(f"{event_type}: {exc}") from exc


def encode_event(event: Recorded) -> tuple[str, int, bytes]:
    """``(type, type_version, payload)`` of an event."""
    return event.TYPE, event.VERSION, event_to_pb(event).SerializeToString()


def decode_event(event_type: str, type_version: int, payload: bytes) -> Recorded:
    """The event from ``encode_event``'s triple (``CodecError`` if it is not one)."""
    codec = _codec(event_type)
    expected = EVENT_VERSIONS[event_type]
    if type_version != expected:
        raise CodecError(
            f"{event_type} v{type_version} is not known (this build reads v{expected})"
        )
    try:
        message = codec.message.FromString(payload)
    except DecodeError as exc:
        raise CodecError(f"{event_type}: payload is not a {message_name(event_type)}") from exc
    return _decoded(codec, event_type, message)


# --- commands -------------------------------------------------------------------------------

COMMAND_FIELD = "command"
"""The oneof of DecideRequest and CommandRejected that holds the command."""

_COMMAND_TYPES: dict[type[Any], str] = {
    Bid: "bid",
    ShowCards: "show_cards",
    Play: "play",
    Pass: "pass",
    Disconnect: "disconnect",
    Reconnect: "reconnect",
    Escape: "escape",
}


def command_type(command: Command) -> str:
    """The oneof field name of a command: "bid", "play", ..."""
    try:
        return _COMMAND_TYPES[type(command)]
    except KeyError:
        raise CodecError(f"{type(command).__name__} is not sent to the rules service") from None


def command_to_pb(command: Command) -> tuple[str, Message]:
    """(oneof field name, its message) for a command; the seat travels beside it."""
    match command:
        case Bid():
            return "bid", pb.BidCommand(
                action=_BID_ACTION.encode(command.action), score=command.score
            )
        case ShowCards():
            msg = pb.ShowCardsCommand()
            if command.cards_held is not None:
                msg.cards_held = command.cards_held
            return "show_cards", msg
        case Play():
            play = pb.PlayCommand(cards=format_rank_counts(command.cards))
            if command.declared is not None:
                play.declared.CopyFrom(reading_to_pb(command.declared))
            return "play", play
        case Pass():
            return "pass", pb.PassCommand()
        case Disconnect():
            return "disconnect", pb.DisconnectCommand()
        case Reconnect():
            return "reconnect", pb.ReconnectCommand()
        case Escape():
            return "escape", pb.EscapeCommand()
    raise CodecError(f"{type(command).__name__} is not sent to the rules service")


def set_command(target: Message, command: Command) -> None:
    """Fill the ``command`` oneof of a DecideRequest or CommandRejected."""
    name, msg = command_to_pb(command)
    getattr(target, name).CopyFrom(msg)


def command_from_pb(seat: int, source: Message) -> SeatCommand:
    """The domain command in the ``command`` oneof of a DecideRequest or CommandRejected.

    ``CodecError`` when there is none or it is malformed (``MalformedCards`` for card
    notation). The seat is not checked here: an unknown seat is the rules' refusal.
    """
    which = source.WhichOneof(COMMAND_FIELD)
    if which is None:
        raise CodecError("no command given (one of bid, show_cards, play, pass, ...)")
    body = getattr(source, which)
    match which:
        case "bid":
            if body.action == 0:
                raise CodecError("a bid needs an action (pass, call or grab)")
            return Bid(seat, _BID_ACTION.decode(body.action), body.score)
        case "show_cards":
            return ShowCards(seat, _opt(body, "cards_held"))
        case "play":
            declared = reading_from_pb(body.declared) if body.HasField("declared") else None
            return Play(seat, parse_rank_counts(body.cards), declared)
        case "pass":
            return Pass(seat)
        case "disconnect":
            return Disconnect(seat)
        case "reconnect":
            return Reconnect(seat)
        case "escape":
            return Escape(seat)
    raise CodecError(f"unknown command {which!r}")  # pragma: no cover - oneof is closed


MAX_CARD_TEXT = 256  # more than any hand (ct: 30 cards); longer text is not a play


def parse_rank_counts(text: str) -> tuple[int, ...]:
    """Rank notation (§1) -> counts, or ``MalformedCards`` with a one-line reason."""
    counts = _COUNTS.get(text)
    if counts is None:
        counts = _parse_rank_counts(text)
        if len(_COUNTS) >= _COUNTS_MAX:
            _COUNTS.clear()
        _COUNTS[text] = counts
    return counts


# The same few plays are sent and refused over and over ("3", "33", "JQKA2" ...).
_COUNTS: dict[str, tuple[int, ...]] = {}
_COUNTS_MAX = 4096


def _parse_rank_counts(text: str) -> tuple[int, ...]:
    if len(text) > MAX_CARD_TEXT:
        raise MalformedCards(f"card text too long ({len(text)} characters)")
    try:
        counts = parse_ranks(text)
    except CardNotationError as exc:
        raise MalformedCards(str(exc)) from None
    if len(counts) != NUM_RANKS:  # pragma: no cover - parse_ranks always gives 15
        raise MalformedCards("cards must be 15 rank counts")
    return counts


def format_rank_counts(counts: tuple[int, ...]) -> str:
    """Counts -> canonical rank notation (low rank first)."""
    return format_counts(counts)


def _rejected_to_pb(e: CommandRejected) -> pb.CommandRejected:
    msg = pb.CommandRejected(
        seat=e.seat,
        command_type=command_type(e.command),
        reason=e.reason.value,
        message=e.message,
        request_id=e.request_id,
    )
    set_command(msg, e.command)
    return msg


def _rejected_from_pb(m: pb.CommandRejected) -> CommandRejected:
    command = command_from_pb(m.seat, m)
    if command_type(command) != m.command_type:
        raise CodecError(f"command_type {m.command_type!r} does not match the command")
    reason = _REASONS.get(m.reason)
    if reason is None:
        raise CodecError(f"unknown reject reason {m.reason!r}")
    return CommandRejected(command, reason, m.message, m.request_id)


_REASONS = {reason.value: reason for reason in RejectReason}


# --- the envelope ------------------------------------------------------------------------


def new_event_id() -> str:
    return str(uuid.uuid4())


def envelope_for(
    stream_id: str,
    version: int,
    event: Recorded,
    causation_id: str,
    correlation_id: str,
    producer: str,
    *,
    event_id: str | None = None,
    occurred_at: dt.datetime | None = None,
) -> bytes:
    """The serialised ``EventEnvelope`` of ``event`` at ``version`` of ``stream_id``.

    Serialised here, once: publish and store exactly these bytes (never re-encode an
    envelope to compare or hash it). Pass ``event_id`` to know it without parsing
    (it becomes the ``Nats-Msg-Id``); otherwise a new UUID is used.
    """
    return envelope_and_bytes(
        stream_id, version, event, causation_id, correlation_id, producer,
        event_id=event_id, occurred_at=occurred_at,
    )[1]  # fmt: skip


def envelope_and_bytes(
    stream_id: str,
    version: int,
    event: Recorded,
    causation_id: str,
    correlation_id: str,
    producer: str,
    *,
    event_id: str | None = None,
    occurred_at: dt.datetime | None = None,
) -> tuple[envelope_pb2.EventEnvelope, bytes]:
    """``envelope_for`` and the message it serialised (for a producer that also
    answers with the envelope: no second parse of its own bytes)."""
    type_, type_version, payload = encode_event(event)
    envelope = envelope_pb2.EventEnvelope(
        event_id=event_id or new_event_id(),
        stream_id=stream_id,
        stream_version=version,
        type=type_,
        type_version=type_version,
        causation_id=causation_id,
        correlation_id=correlation_id,
        producer=producer,
        payload=payload,
        content_type=CONTENT_TYPE.format(message_name(type_)),
    )
    if occurred_at is None:
        envelope.occurred_at.FromNanoseconds(time.time_ns())
    else:
        envelope.occurred_at.FromDatetime(occurred_at)
    data: bytes = envelope.SerializeToString()
    return envelope, data


def parse_envelope(data: bytes) -> envelope_pb2.EventEnvelope:
    try:
        envelope: envelope_pb2.EventEnvelope = envelope_pb2.EventEnvelope.FromString(data)
    except DecodeError as exc:
        raise CodecError("not an EventEnvelope") from exc
    return envelope


def decode_envelope(data: bytes) -> tuple[envelope_pb2.EventEnvelope, Recorded]:
    """The envelope and the event it carries."""
    envelope = parse_envelope(data)
    return envelope, decode_event(envelope.type, envelope.type_version, envelope.payload)
