import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from ddz.v1 import envelope_pb2 as _envelope_pb2
from ddz.v1 import hand_events_pb2 as _hand_events_pb2
from ddz.v1 import rules_pb2 as _rules_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SeatSpec(_message.Message):
    __slots__ = ("player_id", "is_bot")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_BOT_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    is_bot: bool
    def __init__(self, player_id: _Optional[str] = ..., is_bot: _Optional[bool] = ...) -> None: ...

class OpenTableRequest(_message.Message):
    __slots__ = ("variant", "rules", "room", "seats", "table_id")
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    variant: str
    rules: _hand_events_pb2.RuleSet
    room: _hand_events_pb2.RoomSettings
    seats: _containers.RepeatedCompositeFieldContainer[SeatSpec]
    table_id: str
    def __init__(self, variant: _Optional[str] = ..., rules: _Optional[_Union[_hand_events_pb2.RuleSet, _Mapping]] = ..., room: _Optional[_Union[_hand_events_pb2.RoomSettings, _Mapping]] = ..., seats: _Optional[_Iterable[_Union[SeatSpec, _Mapping]]] = ..., table_id: _Optional[str] = ...) -> None: ...

class Table(_message.Message):
    __slots__ = ("table_id", "variant", "rules", "room", "seats", "hand_ids", "current_hand_id", "room_id", "closed", "closed_reason", "left")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    HAND_IDS_FIELD_NUMBER: _ClassVar[int]
    CURRENT_HAND_ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    CLOSED_REASON_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    variant: str
    rules: _hand_events_pb2.RuleSet
    room: _hand_events_pb2.RoomSettings
    seats: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.SeatInfo]
    hand_ids: _containers.RepeatedScalarFieldContainer[str]
    current_hand_id: str
    room_id: str
    closed: bool
    closed_reason: str
    left: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, table_id: _Optional[str] = ..., variant: _Optional[str] = ..., rules: _Optional[_Union[_hand_events_pb2.RuleSet, _Mapping]] = ..., room: _Optional[_Union[_hand_events_pb2.RoomSettings, _Mapping]] = ..., seats: _Optional[_Iterable[_Union[_hand_events_pb2.SeatInfo, _Mapping]]] = ..., hand_ids: _Optional[_Iterable[str]] = ..., current_hand_id: _Optional[str] = ..., room_id: _Optional[str] = ..., closed: _Optional[bool] = ..., closed_reason: _Optional[str] = ..., left: _Optional[_Iterable[int]] = ...) -> None: ...

class OpenTableResponse(_message.Message):
    __slots__ = ("table",)
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: Table
    def __init__(self, table: _Optional[_Union[Table, _Mapping]] = ...) -> None: ...

class GetTableRequest(_message.Message):
    __slots__ = ("table_id",)
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    def __init__(self, table_id: _Optional[str] = ...) -> None: ...

class GetTableResponse(_message.Message):
    __slots__ = ("table",)
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: Table
    def __init__(self, table: _Optional[_Union[Table, _Mapping]] = ...) -> None: ...

class StartHandRequest(_message.Message):
    __slots__ = ("table_id", "client_seeds", "show_before_deal")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    SHOW_BEFORE_DEAL_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    client_seeds: _containers.RepeatedScalarFieldContainer[bytes]
    show_before_deal: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, table_id: _Optional[str] = ..., client_seeds: _Optional[_Iterable[bytes]] = ..., show_before_deal: _Optional[_Iterable[int]] = ...) -> None: ...

class StartHandResponse(_message.Message):
    __slots__ = ("hand_id", "table_id", "first_bidder", "commitment", "version")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_BIDDER_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    table_id: str
    first_bidder: int
    commitment: str
    version: int
    def __init__(self, hand_id: _Optional[str] = ..., table_id: _Optional[str] = ..., first_bidder: _Optional[int] = ..., commitment: _Optional[str] = ..., version: _Optional[int] = ...) -> None: ...

class BidRequest(_message.Message):
    __slots__ = ("hand_id", "seat", "action", "score")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    action: _hand_events_pb2.BidAction
    score: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ..., action: _Optional[_Union[_hand_events_pb2.BidAction, str]] = ..., score: _Optional[int] = ...) -> None: ...

class BidResponse(_message.Message):
    __slots__ = ("outcome",)
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    outcome: MoveOutcome
    def __init__(self, outcome: _Optional[_Union[MoveOutcome, _Mapping]] = ...) -> None: ...

class ShowCardsRequest(_message.Message):
    __slots__ = ("hand_id", "seat", "cards_held")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_HELD_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    cards_held: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ..., cards_held: _Optional[int] = ...) -> None: ...

class ShowCardsResponse(_message.Message):
    __slots__ = ("outcome",)
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    outcome: MoveOutcome
    def __init__(self, outcome: _Optional[_Union[MoveOutcome, _Mapping]] = ...) -> None: ...

class PlayRequest(_message.Message):
    __slots__ = ("hand_id", "seat", "cards", "declared")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    DECLARED_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    cards: str
    declared: _hand_events_pb2.Reading
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ..., cards: _Optional[str] = ..., declared: _Optional[_Union[_hand_events_pb2.Reading, _Mapping]] = ...) -> None: ...

class PlayResponse(_message.Message):
    __slots__ = ("outcome",)
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    outcome: MoveOutcome
    def __init__(self, outcome: _Optional[_Union[MoveOutcome, _Mapping]] = ...) -> None: ...

class PassRequest(_message.Message):
    __slots__ = ("hand_id", "seat")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ...) -> None: ...

class PassResponse(_message.Message):
    __slots__ = ("outcome",)
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    outcome: MoveOutcome
    def __init__(self, outcome: _Optional[_Union[MoveOutcome, _Mapping]] = ...) -> None: ...

class MoveOutcome(_message.Message):
    __slots__ = ("version", "events", "view")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    version: int
    events: _containers.RepeatedCompositeFieldContainer[_envelope_pb2.EventEnvelope]
    view: PlayerView
    def __init__(self, version: _Optional[int] = ..., events: _Optional[_Iterable[_Union[_envelope_pb2.EventEnvelope, _Mapping]]] = ..., view: _Optional[_Union[PlayerView, _Mapping]] = ...) -> None: ...

class GetViewRequest(_message.Message):
    __slots__ = ("hand_id", "seat", "min_version")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    MIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    min_version: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ..., min_version: _Optional[int] = ...) -> None: ...

class GetViewResponse(_message.Message):
    __slots__ = ("view",)
    VIEW_FIELD_NUMBER: _ClassVar[int]
    view: PlayerView
    def __init__(self, view: _Optional[_Union[PlayerView, _Mapping]] = ...) -> None: ...

class WatchHandRequest(_message.Message):
    __slots__ = ("hand_id", "seat", "after_position", "events_only")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    AFTER_POSITION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_ONLY_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    after_position: int
    events_only: bool
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ..., after_position: _Optional[int] = ..., events_only: _Optional[bool] = ...) -> None: ...

class WatchHandResponse(_message.Message):
    __slots__ = ("position", "event", "view")
    POSITION_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    position: int
    event: _envelope_pb2.EventEnvelope
    view: PlayerView
    def __init__(self, position: _Optional[int] = ..., event: _Optional[_Union[_envelope_pb2.EventEnvelope, _Mapping]] = ..., view: _Optional[_Union[PlayerView, _Mapping]] = ...) -> None: ...

class SeatCards(_message.Message):
    __slots__ = ("seat", "cards")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    seat: int
    cards: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.Card]
    def __init__(self, seat: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[_hand_events_pb2.Card, _Mapping]]] = ...) -> None: ...

class PlayerView(_message.Message):
    __slots__ = ("hand_id", "table_id", "seat", "version", "rules", "room", "seats", "phase", "turn", "round", "cards", "cards_text", "card_counts", "bottom", "golden_card", "golden_receiver", "first_bidder", "bids", "landlord", "base", "wild", "shown", "multiplier", "multiplier_total", "trick", "passes", "plays_made", "bomb_limits", "bombs_made", "disconnected", "turn_deadline", "turn_seconds", "turn_seconds_left", "server_time", "auto_play", "my_turn", "can_pass", "can_show", "legal_bids", "winner", "final_hands", "ledger", "seed")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    ROUND_FIELD_NUMBER: _ClassVar[int]
    CARDS_FIELD_NUMBER: _ClassVar[int]
    CARDS_TEXT_FIELD_NUMBER: _ClassVar[int]
    CARD_COUNTS_FIELD_NUMBER: _ClassVar[int]
    BOTTOM_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_CARD_FIELD_NUMBER: _ClassVar[int]
    GOLDEN_RECEIVER_FIELD_NUMBER: _ClassVar[int]
    FIRST_BIDDER_FIELD_NUMBER: _ClassVar[int]
    BIDS_FIELD_NUMBER: _ClassVar[int]
    LANDLORD_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    WILD_FIELD_NUMBER: _ClassVar[int]
    SHOWN_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_TOTAL_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    PASSES_FIELD_NUMBER: _ClassVar[int]
    PLAYS_MADE_FIELD_NUMBER: _ClassVar[int]
    BOMB_LIMITS_FIELD_NUMBER: _ClassVar[int]
    BOMBS_MADE_FIELD_NUMBER: _ClassVar[int]
    DISCONNECTED_FIELD_NUMBER: _ClassVar[int]
    TURN_DEADLINE_FIELD_NUMBER: _ClassVar[int]
    TURN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TURN_SECONDS_LEFT_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_FIELD_NUMBER: _ClassVar[int]
    AUTO_PLAY_FIELD_NUMBER: _ClassVar[int]
    MY_TURN_FIELD_NUMBER: _ClassVar[int]
    CAN_PASS_FIELD_NUMBER: _ClassVar[int]
    CAN_SHOW_FIELD_NUMBER: _ClassVar[int]
    LEGAL_BIDS_FIELD_NUMBER: _ClassVar[int]
    WINNER_FIELD_NUMBER: _ClassVar[int]
    FINAL_HANDS_FIELD_NUMBER: _ClassVar[int]
    LEDGER_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    table_id: str
    seat: int
    version: int
    rules: _hand_events_pb2.RuleSet
    room: _hand_events_pb2.RoomSettings
    seats: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.SeatInfo]
    phase: _rules_pb2.HandPhase
    turn: int
    round: int
    cards: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.Card]
    cards_text: str
    card_counts: _containers.RepeatedScalarFieldContainer[int]
    bottom: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.Card]
    golden_card: _hand_events_pb2.Card
    golden_receiver: int
    first_bidder: int
    bids: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.BidMade]
    landlord: int
    base: int
    wild: _containers.RepeatedScalarFieldContainer[_hand_events_pb2.Rank]
    shown: _containers.RepeatedCompositeFieldContainer[SeatCards]
    multiplier: _hand_events_pb2.MultiplierBreakdown
    multiplier_total: int
    trick: _hand_events_pb2.PlayMade
    passes: int
    plays_made: _containers.RepeatedScalarFieldContainer[int]
    bomb_limits: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.BombLimit]
    bombs_made: _containers.RepeatedScalarFieldContainer[int]
    disconnected: _containers.RepeatedScalarFieldContainer[int]
    turn_deadline: _timestamp_pb2.Timestamp
    turn_seconds: float
    turn_seconds_left: float
    server_time: _timestamp_pb2.Timestamp
    auto_play: _containers.RepeatedScalarFieldContainer[int]
    my_turn: bool
    can_pass: bool
    can_show: bool
    legal_bids: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.BidCommand]
    winner: _hand_events_pb2.Side
    final_hands: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.CardList]
    ledger: _hand_events_pb2.Ledger
    seed: str
    def __init__(self, hand_id: _Optional[str] = ..., table_id: _Optional[str] = ..., seat: _Optional[int] = ..., version: _Optional[int] = ..., rules: _Optional[_Union[_hand_events_pb2.RuleSet, _Mapping]] = ..., room: _Optional[_Union[_hand_events_pb2.RoomSettings, _Mapping]] = ..., seats: _Optional[_Iterable[_Union[_hand_events_pb2.SeatInfo, _Mapping]]] = ..., phase: _Optional[_Union[_rules_pb2.HandPhase, str]] = ..., turn: _Optional[int] = ..., round: _Optional[int] = ..., cards: _Optional[_Iterable[_Union[_hand_events_pb2.Card, _Mapping]]] = ..., cards_text: _Optional[str] = ..., card_counts: _Optional[_Iterable[int]] = ..., bottom: _Optional[_Iterable[_Union[_hand_events_pb2.Card, _Mapping]]] = ..., golden_card: _Optional[_Union[_hand_events_pb2.Card, _Mapping]] = ..., golden_receiver: _Optional[int] = ..., first_bidder: _Optional[int] = ..., bids: _Optional[_Iterable[_Union[_hand_events_pb2.BidMade, _Mapping]]] = ..., landlord: _Optional[int] = ..., base: _Optional[int] = ..., wild: _Optional[_Iterable[_Union[_hand_events_pb2.Rank, str]]] = ..., shown: _Optional[_Iterable[_Union[SeatCards, _Mapping]]] = ..., multiplier: _Optional[_Union[_hand_events_pb2.MultiplierBreakdown, _Mapping]] = ..., multiplier_total: _Optional[int] = ..., trick: _Optional[_Union[_hand_events_pb2.PlayMade, _Mapping]] = ..., passes: _Optional[int] = ..., plays_made: _Optional[_Iterable[int]] = ..., bomb_limits: _Optional[_Iterable[_Union[_hand_events_pb2.BombLimit, _Mapping]]] = ..., bombs_made: _Optional[_Iterable[int]] = ..., disconnected: _Optional[_Iterable[int]] = ..., turn_deadline: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., turn_seconds: _Optional[float] = ..., turn_seconds_left: _Optional[float] = ..., server_time: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., auto_play: _Optional[_Iterable[int]] = ..., my_turn: _Optional[bool] = ..., can_pass: _Optional[bool] = ..., can_show: _Optional[bool] = ..., legal_bids: _Optional[_Iterable[_Union[_hand_events_pb2.BidCommand, _Mapping]]] = ..., winner: _Optional[_Union[_hand_events_pb2.Side, str]] = ..., final_hands: _Optional[_Iterable[_Union[_hand_events_pb2.CardList, _Mapping]]] = ..., ledger: _Optional[_Union[_hand_events_pb2.Ledger, _Mapping]] = ..., seed: _Optional[str] = ...) -> None: ...

class ResumeRequest(_message.Message):
    __slots__ = ("hand_id", "seat")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ...) -> None: ...

class ResumeResponse(_message.Message):
    __slots__ = ("outcome",)
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    outcome: MoveOutcome
    def __init__(self, outcome: _Optional[_Union[MoveOutcome, _Mapping]] = ...) -> None: ...

class TableSuggestRequest(_message.Message):
    __slots__ = ("hand_id", "seat")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ...) -> None: ...

class TableSuggestResponse(_message.Message):
    __slots__ = ("move",)
    MOVE_FIELD_NUMBER: _ClassVar[int]
    move: SuggestedMove
    def __init__(self, move: _Optional[_Union[SuggestedMove, _Mapping]] = ...) -> None: ...

class SuggestedMove(_message.Message):
    __slots__ = ("bid", "show_cards", "play", "text")
    BID_FIELD_NUMBER: _ClassVar[int]
    SHOW_CARDS_FIELD_NUMBER: _ClassVar[int]
    PLAY_FIELD_NUMBER: _ClassVar[int]
    PASS_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    bid: _hand_events_pb2.BidCommand
    show_cards: _hand_events_pb2.ShowCardsCommand
    play: _hand_events_pb2.PlayCommand
    text: str
    def __init__(self, bid: _Optional[_Union[_hand_events_pb2.BidCommand, _Mapping]] = ..., show_cards: _Optional[_Union[_hand_events_pb2.ShowCardsCommand, _Mapping]] = ..., play: _Optional[_Union[_hand_events_pb2.PlayCommand, _Mapping]] = ..., text: _Optional[str] = ..., **kwargs) -> None: ...

class Room(_message.Message):
    __slots__ = ("room_id", "name", "variant", "rules", "settings", "bot_fill_wait_s", "queued", "tables")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    BOT_FILL_WAIT_S_FIELD_NUMBER: _ClassVar[int]
    QUEUED_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    name: str
    variant: str
    rules: _hand_events_pb2.RuleSet
    settings: _hand_events_pb2.RoomSettings
    bot_fill_wait_s: float
    queued: int
    tables: int
    def __init__(self, room_id: _Optional[str] = ..., name: _Optional[str] = ..., variant: _Optional[str] = ..., rules: _Optional[_Union[_hand_events_pb2.RuleSet, _Mapping]] = ..., settings: _Optional[_Union[_hand_events_pb2.RoomSettings, _Mapping]] = ..., bot_fill_wait_s: _Optional[float] = ..., queued: _Optional[int] = ..., tables: _Optional[int] = ...) -> None: ...

class ListRoomsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListRoomsResponse(_message.Message):
    __slots__ = ("rooms", "opening_balance")
    ROOMS_FIELD_NUMBER: _ClassVar[int]
    OPENING_BALANCE_FIELD_NUMBER: _ClassVar[int]
    rooms: _containers.RepeatedCompositeFieldContainer[Room]
    opening_balance: int
    def __init__(self, rooms: _Optional[_Iterable[_Union[Room, _Mapping]]] = ..., opening_balance: _Optional[int] = ...) -> None: ...

class JoinRoomRequest(_message.Message):
    __slots__ = ("room_id", "player_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    player_id: str
    def __init__(self, room_id: _Optional[str] = ..., player_id: _Optional[str] = ...) -> None: ...

class JoinRoomResponse(_message.Message):
    __slots__ = ("room_id", "table", "seat", "token", "token_expires", "hand_id", "balance", "rejoined")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_EXPIRES_FIELD_NUMBER: _ClassVar[int]
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    BALANCE_FIELD_NUMBER: _ClassVar[int]
    REJOINED_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    table: Table
    seat: int
    token: str
    token_expires: int
    hand_id: str
    balance: int
    rejoined: bool
    def __init__(self, room_id: _Optional[str] = ..., table: _Optional[_Union[Table, _Mapping]] = ..., seat: _Optional[int] = ..., token: _Optional[str] = ..., token_expires: _Optional[int] = ..., hand_id: _Optional[str] = ..., balance: _Optional[int] = ..., rejoined: _Optional[bool] = ...) -> None: ...

class LeaveRoomRequest(_message.Message):
    __slots__ = ("room_id", "player_id")
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    room_id: str
    player_id: str
    def __init__(self, room_id: _Optional[str] = ..., player_id: _Optional[str] = ...) -> None: ...

class LeaveRoomResponse(_message.Message):
    __slots__ = ("dequeued", "table_id", "seat", "escaped_hand_id")
    DEQUEUED_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    ESCAPED_HAND_ID_FIELD_NUMBER: _ClassVar[int]
    dequeued: bool
    table_id: str
    seat: int
    escaped_hand_id: str
    def __init__(self, dequeued: _Optional[bool] = ..., table_id: _Optional[str] = ..., seat: _Optional[int] = ..., escaped_hand_id: _Optional[str] = ...) -> None: ...

class RefreshSeatTokenRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class RefreshSeatTokenResponse(_message.Message):
    __slots__ = ("token", "token_expires", "table_id", "seat")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    TOKEN_EXPIRES_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    token: str
    token_expires: int
    table_id: str
    seat: int
    def __init__(self, token: _Optional[str] = ..., token_expires: _Optional[int] = ..., table_id: _Optional[str] = ..., seat: _Optional[int] = ...) -> None: ...

class NextHandRequest(_message.Message):
    __slots__ = ("table_id",)
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    def __init__(self, table_id: _Optional[str] = ...) -> None: ...

class NextHandResponse(_message.Message):
    __slots__ = ("hand_id", "first_bidder")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_BIDDER_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    first_bidder: int
    def __init__(self, hand_id: _Optional[str] = ..., first_bidder: _Optional[int] = ...) -> None: ...

class HintRequest(_message.Message):
    __slots__ = ("hand_id", "seat")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ...) -> None: ...

class GetHandEvidenceRequest(_message.Message):
    __slots__ = ("hand_id",)
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    def __init__(self, hand_id: _Optional[str] = ...) -> None: ...

class GetHandEvidenceResponse(_message.Message):
    __slots__ = ("file", "file_name")
    FILE_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    file: bytes
    file_name: str
    def __init__(self, file: _Optional[bytes] = ..., file_name: _Optional[str] = ...) -> None: ...
