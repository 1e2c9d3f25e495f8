"""Hand events <-> protobuf: every event of a hand's stream, ``CommandRejected``
included, by its type name and version.

    type_, type_version, payload = encode_event(event)
    event = decode_event(type_, type_version, payload)

Decoding is strict: stored bytes that do not make a valid domain value raise
``CodecError`` (a ``ValueError``), never a half-filled event.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError, Message

from ddz.domain.hand import CommandRejected, Recorded
from ddz.domain.hand import events as ev
from ddz.v1 import hand_events_pb2 as pb

from .commands import _rejected_from_pb, _rejected_to_pb
from .errors import CodecError
from .values import (
    _AUTO_PLAY_END,
    _BID_ACTION,
    _DISCONNECT_REASON,
    _DRAW,
    _MOVE_BY,
    _RANK,
    _SIDE,
    _balances_to_pb,
    _cards,
    _cards_from,
    _opt,
    _seat,
    balances_from_pb,
    card_from_pb,
    card_to_pb,
    ledger_from_pb,
    ledger_to_pb,
    ms_from_timestamp,
    ms_to_timestamp,
    multiplier_from_pb,
    multiplier_to_pb,
    reading_from_pb,
    reading_to_pb,
    room_from_pb,
    room_to_pb,
    ruleset_from_pb,
    ruleset_to_pb,
    seat_from_pb,
    seat_to_pb,
)


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
        lambda e: pb.BidMade(
            seat=e.seat,
            action=_BID_ACTION.encode(e.action),
            score=e.score,
            acted_by=_MOVE_BY.encode(e.acted_by),
        ),
        lambda m: ev.BidMade(
            _seat(m.seat),
            _BID_ACTION.decode(m.action),
            m.score,
            _MOVE_BY.decode_optional(m.acted_by),
        ),
    ),
    ev.Redealt.TYPE: _Codec(
        pb.Redealt,
        lambda e: pb.Redealt(round=e.round, commitment=e.commitment),
        lambda m: ev.Redealt(m.round, m.commitment),
    ),
    ev.LandlordChosen.TYPE: _Codec(pb.LandlordChosen, _landlord_chosen, _landlord_chosen_from),
    ev.PlayMade.TYPE: _Codec(
        pb.PlayMade,
        lambda e: pb.PlayMade(
            seat=e.seat,
            cards=_cards(e.cards),
            reading=reading_to_pb(e.reading),
            acted_by=_MOVE_BY.encode(e.acted_by),
        ),
        lambda m: ev.PlayMade(
            _seat(m.seat),
            _cards_from(m.cards),
            reading_from_pb(m.reading),
            _MOVE_BY.decode_optional(m.acted_by),
        ),
    ),
    ev.Passed.TYPE: _Codec(
        pb.Passed,
        lambda e: pb.Passed(seat=e.seat, acted_by=_MOVE_BY.encode(e.acted_by)),
        lambda m: ev.Passed(_seat(m.seat), _MOVE_BY.decode_optional(m.acted_by)),
    ),
    ev.PlayerDisconnected.TYPE: _Codec(
        pb.PlayerDisconnected,
        lambda e: pb.PlayerDisconnected(
            seat=e.seat, escapee=e.escapee, reason=_DISCONNECT_REASON.encode(e.reason)
        ),
        lambda m: ev.PlayerDisconnected(
            _seat(m.seat), m.escapee, _DISCONNECT_REASON.decode_optional(m.reason)
        ),
    ),
    ev.TurnTimedOut.TYPE: _Codec(
        pb.TurnTimedOut,
        lambda e: pb.TurnTimedOut(
            seat=e.seat,
            deadline=ms_to_timestamp(e.deadline_ms),
            turn_seconds=e.turn_seconds,
            timeouts=e.timeouts,
            on_auto_play=e.on_auto_play,
            auto_play_after=e.auto_play_after,
        ),
        lambda m: ev.TurnTimedOut(
            _seat(m.seat),
            ms_from_timestamp(m.deadline),
            m.turn_seconds,
            m.timeouts,
            m.on_auto_play,
            m.auto_play_after,
        ),
    ),
    ev.AutoPlayStarted.TYPE: _Codec(
        pb.AutoPlayStarted,
        lambda e: pb.AutoPlayStarted(seat=e.seat, timeouts=e.timeouts),
        lambda m: ev.AutoPlayStarted(_seat(m.seat), m.timeouts),
    ),
    ev.AutoPlayEnded.TYPE: _Codec(
        pb.AutoPlayEnded,
        lambda e: pb.AutoPlayEnded(seat=e.seat, reason=_AUTO_PLAY_END.encode(e.reason)),
        lambda m: ev.AutoPlayEnded(_seat(m.seat), _AUTO_PLAY_END.decode(m.reason)),
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
