from ddz.v1 import envelope_pb2 as _envelope_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CancelOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CANCEL_OUTCOME_UNSPECIFIED: _ClassVar[CancelOutcome]
    CANCEL_OUTCOME_CANCELLED: _ClassVar[CancelOutcome]
    CANCEL_OUTCOME_DEALT: _ClassVar[CancelOutcome]
CANCEL_OUTCOME_UNSPECIFIED: CancelOutcome
CANCEL_OUTCOME_CANCELLED: CancelOutcome
CANCEL_OUTCOME_DEALT: CancelOutcome

class DealRequest(_message.Message):
    __slots__ = ("hand_id", "table_id", "client_seeds", "show_before_deal", "request_id")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_SEEDS_FIELD_NUMBER: _ClassVar[int]
    SHOW_BEFORE_DEAL_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    table_id: str
    client_seeds: _containers.RepeatedScalarFieldContainer[bytes]
    show_before_deal: _containers.RepeatedScalarFieldContainer[int]
    request_id: str
    def __init__(self, hand_id: _Optional[str] = ..., table_id: _Optional[str] = ..., client_seeds: _Optional[_Iterable[bytes]] = ..., show_before_deal: _Optional[_Iterable[int]] = ..., request_id: _Optional[str] = ...) -> None: ...

class DealResponse(_message.Message):
    __slots__ = ("hand_id", "commitment", "version", "events")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    commitment: str
    version: int
    events: _containers.RepeatedCompositeFieldContainer[_envelope_pb2.EventEnvelope]
    def __init__(self, hand_id: _Optional[str] = ..., commitment: _Optional[str] = ..., version: _Optional[int] = ..., events: _Optional[_Iterable[_Union[_envelope_pb2.EventEnvelope, _Mapping]]] = ...) -> None: ...

class GetSeedRequest(_message.Message):
    __slots__ = ("hand_id",)
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    def __init__(self, hand_id: _Optional[str] = ...) -> None: ...

class GetSeedResponse(_message.Message):
    __slots__ = ("hand_id", "seed")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    seed: bytes
    def __init__(self, hand_id: _Optional[str] = ..., seed: _Optional[bytes] = ...) -> None: ...

class CancelDealRequest(_message.Message):
    __slots__ = ("hand_id", "table_id", "request_id")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    table_id: str
    request_id: str
    def __init__(self, hand_id: _Optional[str] = ..., table_id: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class CancelDealResponse(_message.Message):
    __slots__ = ("outcome", "dealt")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DEALT_FIELD_NUMBER: _ClassVar[int]
    outcome: CancelOutcome
    dealt: DealResponse
    def __init__(self, outcome: _Optional[_Union[CancelOutcome, str]] = ..., dealt: _Optional[_Union[DealResponse, _Mapping]] = ...) -> None: ...
