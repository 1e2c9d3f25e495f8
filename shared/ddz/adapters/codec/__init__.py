"""Domain <-> protobuf: every hand event and command, the event envelope, and what a
seat or a service answers with. The one place that knows both shapes
(protos/ddz/v1/*.proto and ``ddz.domain``); services never build these messages
themselves.

    type_, type_version, payload = encode_event(event)
    event = decode_event(type_, type_version, payload)
    data = envelope_for(stream_id, version, event, causation_id, correlation_id, producer)
    envelope, event = decode_envelope(data)

One module per seam: ``values`` (cards, readings, rule sets, rooms, ledgers, ...),
``events`` (hand events by type name), ``commands`` (the ``command`` oneof, card
notation), ``envelope``, ``views`` (a seat's view, the public state, suggested moves),
``settlement`` (balances and settled hands), ``errors``. Decoding is strict: bytes that
do not make a valid domain value raise ``CodecError``, never a half-filled value.
"""

from __future__ import annotations

from .commands import (
    COMMAND_FIELD,
    MAX_CARD_TEXT,
    NO_CARDS,
    command_from_pb,
    command_from_request,
    command_to_pb,
    command_type,
    format_rank_counts,
    parse_rank_counts,
    play_counts,
    set_command,
)
from .envelope import (
    CONTENT_TYPE,
    decode_envelope,
    envelope_and_bytes,
    envelope_for,
    new_event_id,
    parse_envelope,
)
from .errors import CodecError, MalformedCards
from .events import (
    EVENT_VERSIONS,
    HIDDEN_TYPES,
    decode_event,
    encode_event,
    event_from_pb,
    event_to_pb,
    message_name,
)
from .settlement import balance_to_pb, player_ledger_to_pb, settled_hand_to_pb
from .values import (
    balances_from_pb,
    bomb_limits_from_pb,
    bomb_limits_to_pb,
    card_from_pb,
    card_to_pb,
    factor_to_pb,
    fraction_from_pb,
    fraction_to_pb,
    ledger_from_pb,
    ledger_to_pb,
    multiplier_from_pb,
    multiplier_to_pb,
    rank_from_pb,
    rank_to_pb,
    reading_from_pb,
    reading_to_pb,
    room_from_pb,
    room_to_pb,
    ruleset_from_pb,
    ruleset_to_pb,
    seat_from_pb,
    seat_to_pb,
)
from .views import (
    PHASES,
    move_text,
    move_to_pb,
    public_state_to_pb,
    view_to_pb,
)

__all__ = [
    "COMMAND_FIELD",
    "CONTENT_TYPE",
    "EVENT_VERSIONS",
    "HIDDEN_TYPES",
    "MAX_CARD_TEXT",
    "NO_CARDS",
    "PHASES",
    "CodecError",
    "MalformedCards",
    "balance_to_pb",
    "balances_from_pb",
    "bomb_limits_from_pb",
    "bomb_limits_to_pb",
    "card_from_pb",
    "card_to_pb",
    "command_from_pb",
    "command_from_request",
    "command_to_pb",
    "command_type",
    "decode_envelope",
    "decode_event",
    "encode_event",
    "envelope_and_bytes",
    "envelope_for",
    "event_from_pb",
    "event_to_pb",
    "factor_to_pb",
    "format_rank_counts",
    "fraction_from_pb",
    "fraction_to_pb",
    "ledger_from_pb",
    "ledger_to_pb",
    "message_name",
    "move_text",
    "move_to_pb",
    "multiplier_from_pb",
    "multiplier_to_pb",
    "new_event_id",
    "parse_envelope",
    "parse_rank_counts",
    "play_counts",
    "player_ledger_to_pb",
    "public_state_to_pb",
    "rank_from_pb",
    "rank_to_pb",
    "reading_from_pb",
    "reading_to_pb",
    "room_from_pb",
    "room_to_pb",
    "ruleset_from_pb",
    "ruleset_to_pb",
    "seat_from_pb",
    "seat_to_pb",
    "set_command",
    "settled_hand_to_pb",
    "view_to_pb",
]
