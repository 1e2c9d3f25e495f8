from ddz.v1 import envelope_pb2 as _envelope_pb2
from ddz.v1 import hand_events_pb2 as _hand_events_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HandPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    HAND_PHASE_UNSPECIFIED: _ClassVar[HandPhase]
    HAND_PHASE_NOT_STARTED: _ClassVar[HandPhase]
    HAND_PHASE_BIDDING: _ClassVar[HandPhase]
    HAND_PHASE_PLAYING: _ClassVar[HandPhase]
    HAND_PHASE_ENDED: _ClassVar[HandPhase]
HAND_PHASE_UNSPECIFIED: HandPhase
HAND_PHASE_NOT_STARTED: HandPhase
HAND_PHASE_BIDDING: HandPhase
HAND_PHASE_PLAYING: HandPhase
HAND_PHASE_ENDED: HandPhase

class DecideRequest(_message.Message):
    __slots__ = ("hand_id", "seat", "bid", "show_cards", "play", "disconnect", "reconnect", "escape", "time_out", "resume", "expected_version", "request_id")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEAT_FIELD_NUMBER: _ClassVar[int]
    BID_FIELD_NUMBER: _ClassVar[int]
    SHOW_CARDS_FIELD_NUMBER: _ClassVar[int]
    PLAY_FIELD_NUMBER: _ClassVar[int]
    PASS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECT_FIELD_NUMBER: _ClassVar[int]
    RECONNECT_FIELD_NUMBER: _ClassVar[int]
    ESCAPE_FIELD_NUMBER: _ClassVar[int]
    TIME_OUT_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_VERSION_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seat: int
    bid: _hand_events_pb2.BidCommand
    show_cards: _hand_events_pb2.ShowCardsCommand
    play: _hand_events_pb2.PlayCommand
    disconnect: _hand_events_pb2.DisconnectCommand
    reconnect: _hand_events_pb2.ReconnectCommand
    escape: _hand_events_pb2.EscapeCommand
    time_out: _hand_events_pb2.TimeOutCommand
    resume: _hand_events_pb2.ResumeCommand
    expected_version: int
    request_id: str
    def __init__(self, hand_id: _Optional[str] = ..., seat: _Optional[int] = ..., bid: _Optional[_Union[_hand_events_pb2.BidCommand, _Mapping]] = ..., show_cards: _Optional[_Union[_hand_events_pb2.ShowCardsCommand, _Mapping]] = ..., play: _Optional[_Union[_hand_events_pb2.PlayCommand, _Mapping]] = ..., disconnect: _Optional[_Union[_hand_events_pb2.DisconnectCommand, _Mapping]] = ..., reconnect: _Optional[_Union[_hand_events_pb2.ReconnectCommand, _Mapping]] = ..., escape: _Optional[_Union[_hand_events_pb2.EscapeCommand, _Mapping]] = ..., time_out: _Optional[_Union[_hand_events_pb2.TimeOutCommand, _Mapping]] = ..., resume: _Optional[_Union[_hand_events_pb2.ResumeCommand, _Mapping]] = ..., expected_version: _Optional[int] = ..., request_id: _Optional[str] = ..., **kwargs) -> None: ...

class DecideResponse(_message.Message):
    __slots__ = ("accepted", "reason", "message", "version", "events")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    reason: str
    message: str
    version: int
    events: _containers.RepeatedCompositeFieldContainer[_envelope_pb2.EventEnvelope]
    def __init__(self, accepted: _Optional[bool] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., version: _Optional[int] = ..., events: _Optional[_Iterable[_Union[_envelope_pb2.EventEnvelope, _Mapping]]] = ...) -> None: ...

class DecideBatchRequest(_message.Message):
    __slots__ = ("commands",)
    COMMANDS_FIELD_NUMBER: _ClassVar[int]
    commands: _containers.RepeatedCompositeFieldContainer[DecideRequest]
    def __init__(self, commands: _Optional[_Iterable[_Union[DecideRequest, _Mapping]]] = ...) -> None: ...

class DecideBatchResponse(_message.Message):
    __slots__ = ("outcomes",)
    OUTCOMES_FIELD_NUMBER: _ClassVar[int]
    outcomes: _containers.RepeatedCompositeFieldContainer[DecideOutcome]
    def __init__(self, outcomes: _Optional[_Iterable[_Union[DecideOutcome, _Mapping]]] = ...) -> None: ...

class DecideOutcome(_message.Message):
    __slots__ = ("response", "code", "reason", "message")
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    response: DecideResponse
    code: int
    reason: str
    message: str
    def __init__(self, response: _Optional[_Union[DecideResponse, _Mapping]] = ..., code: _Optional[int] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class GetPublicStateRequest(_message.Message):
    __slots__ = ("hand_id",)
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    def __init__(self, hand_id: _Optional[str] = ...) -> None: ...

class GetPublicStateResponse(_message.Message):
    __slots__ = ("hand_id", "phase", "turn", "landlord", "base", "card_counts", "wild", "multiplier", "trick", "version", "rules", "seats", "disconnected", "auto_play")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    PHASE_FIELD_NUMBER: _ClassVar[int]
    TURN_FIELD_NUMBER: _ClassVar[int]
    LANDLORD_FIELD_NUMBER: _ClassVar[int]
    BASE_FIELD_NUMBER: _ClassVar[int]
    CARD_COUNTS_FIELD_NUMBER: _ClassVar[int]
    WILD_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    TRICK_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    RULES_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    DISCONNECTED_FIELD_NUMBER: _ClassVar[int]
    AUTO_PLAY_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    phase: HandPhase
    turn: int
    landlord: int
    base: int
    card_counts: _containers.RepeatedScalarFieldContainer[int]
    wild: _containers.RepeatedScalarFieldContainer[_hand_events_pb2.Rank]
    multiplier: _hand_events_pb2.MultiplierBreakdown
    trick: _hand_events_pb2.PlayMade
    version: int
    rules: _hand_events_pb2.RuleSet
    seats: _containers.RepeatedCompositeFieldContainer[_hand_events_pb2.SeatInfo]
    disconnected: _containers.RepeatedScalarFieldContainer[int]
    auto_play: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, hand_id: _Optional[str] = ..., phase: _Optional[_Union[HandPhase, str]] = ..., turn: _Optional[int] = ..., landlord: _Optional[int] = ..., base: _Optional[int] = ..., card_counts: _Optional[_Iterable[int]] = ..., wild: _Optional[_Iterable[_Union[_hand_events_pb2.Rank, str]]] = ..., multiplier: _Optional[_Union[_hand_events_pb2.MultiplierBreakdown, _Mapping]] = ..., trick: _Optional[_Union[_hand_events_pb2.PlayMade, _Mapping]] = ..., version: _Optional[int] = ..., rules: _Optional[_Union[_hand_events_pb2.RuleSet, _Mapping]] = ..., seats: _Optional[_Iterable[_Union[_hand_events_pb2.SeatInfo, _Mapping]]] = ..., disconnected: _Optional[_Iterable[int]] = ..., auto_play: _Optional[_Iterable[int]] = ...) -> None: ...
