from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor

class Reason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    REASON_UNSPECIFIED: _ClassVar[Reason]
    UNKNOWN_HAND: _ClassVar[Reason]
    UNKNOWN_TABLE: _ClassVar[Reason]
    UNKNOWN_ROOM: _ClassVar[Reason]
    UNKNOWN_SEAT: _ClassVar[Reason]
    UNKNOWN_STREAM: _ClassVar[Reason]
    MALFORMED_CARDS: _ClassVar[Reason]
    INVALID_ARGUMENT: _ClassVar[Reason]
    REQUEST_TOO_LARGE: _ClassVar[Reason]
    NOT_YOUR_TURN: _ClassVar[Reason]
    CARDS_NOT_IN_HAND: _ClassVar[Reason]
    NOT_A_COMBINATION: _ClassVar[Reason]
    DOES_NOT_BEAT: _ClassVar[Reason]
    LEADER_CANNOT_PASS: _ClassVar[Reason]
    BOMB_LIMIT_REACHED: _ClassVar[Reason]
    BID_NOT_HIGHER: _ClassVar[Reason]
    WRONG_PHASE: _ClassVar[Reason]
    UNAUTHENTICATED: _ClassVar[Reason]
    PERMISSION_DENIED: _ClassVar[Reason]
    BALANCE_TOO_LOW: _ClassVar[Reason]
    VERSION_CONFLICT: _ClassVar[Reason]
    DUPLICATE_EVENT_ID: _ClassVar[Reason]
    RATE_LIMITED: _ClassVar[Reason]
    TOO_MANY_STREAMS: _ClassVar[Reason]
REASON_UNSPECIFIED: Reason
UNKNOWN_HAND: Reason
UNKNOWN_TABLE: Reason
UNKNOWN_ROOM: Reason
UNKNOWN_SEAT: Reason
UNKNOWN_STREAM: Reason
MALFORMED_CARDS: Reason
INVALID_ARGUMENT: Reason
REQUEST_TOO_LARGE: Reason
NOT_YOUR_TURN: Reason
CARDS_NOT_IN_HAND: Reason
NOT_A_COMBINATION: Reason
DOES_NOT_BEAT: Reason
LEADER_CANNOT_PASS: Reason
BOMB_LIMIT_REACHED: Reason
BID_NOT_HIGHER: Reason
WRONG_PHASE: Reason
UNAUTHENTICATED: Reason
PERMISSION_DENIED: Reason
BALANCE_TOO_LOW: Reason
VERSION_CONFLICT: Reason
DUPLICATE_EVENT_ID: Reason
RATE_LIMITED: Reason
TOO_MANY_STREAMS: Reason
