from ddz.v1 import hand_events_pb2 as _hand_events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TableOpened(_message.Message):
    __slots__ = ("table_id", "rules", "room", "seats", "room_id", "balances")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    ROOM_ID_FIELD_NUMBER: _ClassVar[int]
    BALANCES_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    rules: _hand_events_pb2.RuleSet
    room: _hand_events_pb2.RoomSettings
    seats: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.SeatInfo]
    room_id: str
    balances: _hand_events_pb2.Balances
    def __init__(self, table_id: _Optional[str] = ..., rules: _Optional[_Union[_hand_events_pb2.RuleSet, _Mapping]] = ..., room: _Optional[_Union[_hand_events_pb2.RoomSettings, _Mapping]] = ..., seats: _Optional[_Iterable[_Union[_hand_events_pb2.SeatInfo, _Mapping]]] = ..., room_id: _Optional[str] = ..., balances: _Optional[_Union[_hand_events_pb2.Balances, _Mapping]] = ...) -> None: ...

class HandAssigned(_message.Message):
    __slots__ = ("hand_id", "first_bidder", "balances", "client_seeds", "show_before_deal", "deal_request_id")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    FIRST_BIDDER_FIELD_NUMBER: _ClassVar[int]
    BALANCES_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    SHOW_BEFORE_DEAL_FIELD_NUMBER: _ClassVar[int]
    DEAL_REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    first_bidder: int
    balances: _hand_events_pb2.Balances
    client_seeds: _containers.RepeatedScalarFieldContainer[bytes]
    show_before_deal: _containers.RepeatedScalarFieldContainer[int]
    deal_request_id: str
    def __init__(self, hand_id: _Optional[str] = ..., first_bidder: _Optional[int] = ..., balances: _Optional[_Union[_hand_events_pb2.Balances, _Mapping]] = ..., client_seeds: _Optional[_Iterable[bytes]] = ..., show_before_deal: _Optional[_Iterable[int]] = ..., deal_request_id: _Optional[str] = ...) -> None: ...

class PlayerLeft(_message.Message):
    __slots__ = ("seat", "player_id", "escaped_hand_id")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    ESCAPED_HAND_ID_FIELD_NUMBER: _ClassVar[int]
    seat: int
    player_id: str
    escaped_hand_id: str
    def __init__(self, seat: _Optional[int] = ..., player_id: _Optional[str] = ..., escaped_hand_id: _Optional[str] = ...) -> None: ...

class TableClosed(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class SeatReady(_message.Message):
    __slots__ = ("seat", "hand_number", "said_at")
    SEAT_FIELD_NUMBER: _ClassVar[int]
    HAND_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SAID_AT_FIELD_NUMBER: _ClassVar[int]
    seat: int
    hand_number: int
    said_at: float
    def __init__(self, seat: _Optional[int] = ..., hand_number: _Optional[int] = ..., said_at: _Optional[float] = ...) -> None: ...

class HandWithdrawn(_message.Message):
    __slots__ = ("hand_id", "reason")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    reason: str
    def __init__(self, hand_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...
