from ddz.v1 import envelope_pb2 as _envelope_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadStreamRequest(_message.Message):
    __slots__ = ("stream_id", "after_version")
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    AFTER_VERSION_FIELD_NUMBER: _ClassVar[int]
    stream_id: str
    after_version: int
    def __init__(self, stream_id: _Optional[str] = ..., after_version: _Optional[int] = ...) -> None: ...

class ReadStreamResponse(_message.Message):
    __slots__ = ("events",)
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_envelope_pb2.StoredEvent]
    def __init__(self, events: _Optional[_Iterable[_Union[_envelope_pb2.StoredEvent, _Mapping]]] = ...) -> None: ...

class ReadAllRequest(_message.Message):
    __slots__ = ("after_position", "limit")
    AFTER_POSITION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    after_position: int
    limit: int
    def __init__(self, after_position: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ReadAllResponse(_message.Message):
    __slots__ = ("events", "max_position")
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    MAX_POSITION_FIELD_NUMBER: _ClassVar[int]
    events: _containers.RepeatedCompositeFieldContainer[_envelope_pb2.StoredEvent]
    max_position: int
    def __init__(self, events: _Optional[_Iterable[_Union[_envelope_pb2.StoredEvent, _Mapping]]] = ..., max_position: _Optional[int] = ...) -> None: ...
