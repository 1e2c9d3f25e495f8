from ddz.v1 import table_pb2 as _table_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SuggestRequest(_message.Message):
    __slots__ = ("hand_id", "seat", "min_version")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    MIN_VERSION_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    min_version: int
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ..., min_version: _Optional[int] = ...) -> None: ...

class SuggestResponse(_message.Message):
    __slots__ = ("move", "version")
    MOVE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    move: _table_pb2.SuggestedMove
    version: int
    def __init__(self, move: _Optional[_Union[_table_pb2.SuggestedMove, _Mapping]] = ..., version: _Optional[int] = ...) -> None: ...

class GetStatsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class LatencyBucket(_message.Message):
    __slots__ = ("le_us", "count")
    LE_US_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    le_us: int
    count: int
    def __init__(self, le_us: _Optional[int] = ..., count: _Optional[int] = ...) -> None: ...

class GetStatsResponse(_message.Message):
    __slots__ = ("accepted", "refused", "conflicts", "errors", "latency", "hands_in_play", "player")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    CONFLICTS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    LATENCY_FIELD_NUMBER: _ClassVar[int]
    HANDS_IN_PLAY_FIELD_NUMBER: _ClassVar[int]
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    accepted: int
    refused: int
    conflicts: int
    errors: int
    latency: _containers.RepeatedCompositeFieldContainer[LatencyBucket]
    hands_in_play: int
    player: str
    def __init__(self, accepted: _Optional[int] = ..., refused: _Optional[int] = ..., conflicts: _Optional[int] = ..., errors: _Optional[int] = ..., latency: _Optional[_Iterable[_Union[LatencyBucket, _Mapping]]] = ..., hands_in_play: _Optional[int] = ..., player: _Optional[str] = ...) -> None: ...
