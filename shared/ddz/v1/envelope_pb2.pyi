import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventEnvelope(_message.Message):
    __slots__ = ("event_id", "stream_id", "stream_version", "type", "type_version", "occurred_at", "causation_id", "correlation_id", "producer", "payload", "content_type", "envelope_version", "producer_key_id", "signature")
    EVENT_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_VERSION_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_VERSION_FIELD_NUMBER: _ClassVar[int]
    OCCURRED_AT_FIELD_NUMBER: _ClassVar[int]
    CAUSATION_ID_FIELD_NUMBER: _ClassVar[int]
    CORRELATION_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENVELOPE_VERSION_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_KEY_ID_FIELD_NUMBER: _ClassVar[int]
    SIGNATURE_FIELD_NUMBER: _ClassVar[int]
    event_id: str
    stream_id: str
    stream_version: int
    type: str
    type_version: int
    occurred_at: _timestamp_pb2.Timestamp
    causation_id: str
    correlation_id: str
    producer: str
    payload: bytes
    content_type: str
    envelope_version: int
    producer_key_id: str
    signature: bytes
    def __init__(self, event_id: _Optional[str] = ..., stream_id: _Optional[str] = ..., stream_version: _Optional[int] = ..., type: _Optional[str] = ..., type_version: _Optional[int] = ..., occurred_at: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., causation_id: _Optional[str] = ..., correlation_id: _Optional[str] = ..., producer: _Optional[str] = ..., payload: _Optional[bytes] = ..., content_type: _Optional[str] = ..., envelope_version: _Optional[int] = ..., producer_key_id: _Optional[str] = ..., signature: _Optional[bytes] = ...) -> None: ...

class StoredEvent(_message.Message):
    __slots__ = ("envelope", "position", "prev_hash", "hash", "trace_id")
    ENVELOPE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    PREV_HASH_FIELD_NUMBER: _ClassVar[int]
    HASH_FIELD_NUMBER: _ClassVar[int]
    TRACE_ID_FIELD_NUMBER: _ClassVar[int]
    envelope: bytes
    position: int
    prev_hash: str
    hash: str
    trace_id: str
    def __init__(self, envelope: _Optional[bytes] = ..., position: _Optional[int] = ..., prev_hash: _Optional[str] = ..., hash: _Optional[str] = ..., trace_id: _Optional[str] = ...) -> None: ...
