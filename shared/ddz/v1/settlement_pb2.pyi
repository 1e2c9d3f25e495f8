from ddz.v1 import hand_events_pb2 as _hand_events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GetBalanceRequest(_message.Message):
    __slots__ = ("player_id",)
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    def __init__(self, player_id: _Optional[str] = ...) -> None: ...

class GetBalanceResponse(_message.Message):
    __slots__ = ("player_id", "balance", "hands")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    BALANCE_FIELD_NUMBER: _ClassVar[int]
    HANDS_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    balance: int
    hands: int
    def __init__(self, player_id: _Optional[str] = ..., balance: _Optional[int] = ..., hands: _Optional[int] = ...) -> None: ...

class GetLedgerRequest(_message.Message):
    __slots__ = ("hand_id",)
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    def __init__(self, hand_id: _Optional[str] = ...) -> None: ...

class SettledHand(_message.Message):
    __slots__ = ("hand_id", "players", "landlord", "base", "ledger", "multiplier", "event_id")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    PLAYERS_FIELD_NUMBER: _ClassVar[int]
    LANDLORD_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    LEDGER_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    players: _containers.RepeatedScalarFieldContainer[str]
    landlord: int
    base: int
    ledger: _hand_events_pb2.Ledger
    multiplier: _hand_events_pb2.MultiplierBreakdown
    event_id: str
    def __init__(self, hand_id: _Optional[str] = ..., players: _Optional[_Iterable[str]] = ..., landlord: _Optional[int] = ..., base: _Optional[int] = ..., ledger: _Optional[_Union[_hand_events_pb2.Ledger, _Mapping]] = ..., multiplier: _Optional[_Union[_hand_events_pb2.MultiplierBreakdown, _Mapping]] = ..., event_id: _Optional[str] = ...) -> None: ...

class GetLedgerResponse(_message.Message):
    __slots__ = ("hand",)
    HAND_FIELD_NUMBER: _ClassVar[int]
    hand: SettledHand
    def __init__(self, hand: _Optional[_Union[SettledHand, _Mapping]] = ...) -> None: ...

class ListLedgersRequest(_message.Message):
    __slots__ = ("player_id", "limit")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    limit: int
    def __init__(self, player_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class PlayerLedger(_message.Message):
    __slots__ = ("hand", "seat", "delta")
    HAND_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    hand: SettledHand
    seat: int
    delta: int
    def __init__(self, hand: _Optional[_Union[SettledHand, _Mapping]] = ..., seat: _Optional[int] = ..., delta: _Optional[int] = ...) -> None: ...

class ListLedgersResponse(_message.Message):
    __slots__ = ("ledgers",)
    LEDGERS_FIELD_NUMBER: _ClassVar[int]
    ledgers: _containers.RepeatedCompositeFieldContainer[PlayerLedger]
    def __init__(self, ledgers: _Optional[_Iterable[_Union[PlayerLedger, _Mapping]]] = ...) -> None: ...
