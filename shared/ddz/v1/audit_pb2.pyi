from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AuditVerdict(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUDIT_VERDICT_UNSPECIFIED: _ClassVar[AuditVerdict]
    AUDIT_VERDICT_CLEAN: _ClassVar[AuditVerdict]
    AUDIT_VERDICT_FAILED: _ClassVar[AuditVerdict]
    AUDIT_VERDICT_INCOMPLETE: _ClassVar[AuditVerdict]
AUDIT_VERDICT_UNSPECIFIED: AuditVerdict
AUDIT_VERDICT_CLEAN: AuditVerdict
AUDIT_VERDICT_FAILED: AuditVerdict
AUDIT_VERDICT_INCOMPLETE: AuditVerdict

class AuditHandRequest(_message.Message):
    __slots__ = ("hand_id",)
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    def __init__(self, hand_id: _Optional[str] = ...) -> None: ...

class AuditCheck(_message.Message):
    __slots__ = ("name", "passed", "detail")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PASSED_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    name: str
    passed: bool
    detail: str
    def __init__(self, name: _Optional[str] = ..., passed: _Optional[bool] = ..., detail: _Optional[str] = ...) -> None: ...

class AuditHandResponse(_message.Message):
    __slots__ = ("hand_id", "verdict", "failed_check", "message", "checks", "transcript", "events", "key_id")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    FAILED_CHECK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CHECKS_FIELD_NUMBER: _ClassVar[int]
    TRANSCRIPT_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    KEY_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    verdict: AuditVerdict
    failed_check: str
    message: str
    checks: _containers.RepeatedCompositeFieldContainer[AuditCheck]
    transcript: _containers.RepeatedScalarFieldContainer[str]
    events: int
    key_id: str
    def __init__(self, hand_id: _Optional[str] = ..., verdict: _Optional[_Union[AuditVerdict, str]] = ..., failed_check: _Optional[str] = ..., message: _Optional[str] = ..., checks: _Optional[_Iterable[_Union[AuditCheck, _Mapping]]] = ..., transcript: _Optional[_Iterable[str]] = ..., events: _Optional[int] = ..., key_id: _Optional[str] = ...) -> None: ...

class AuditAllRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class AuditFailure(_message.Message):
    __slots__ = ("hand_id", "failed_check", "message")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    FAILED_CHECK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    failed_check: str
    message: str
    def __init__(self, hand_id: _Optional[str] = ..., failed_check: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class AuditAllResponse(_message.Message):
    __slots__ = ("hands", "clean", "incomplete", "failed_by_check", "failures", "seconds")
    class FailedByCheckEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    HANDS_FIELD_NUMBER: _ClassVar[int]
    CLEAN_FIELD_NUMBER: _ClassVar[int]
    INCOMPLETE_FIELD_NUMBER: _ClassVar[int]
    FAILED_BY_CHECK_FIELD_NUMBER: _ClassVar[int]
    FAILURES_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    hands: int
    clean: int
    incomplete: int
    failed_by_check: _containers.ScalarMap[str, int]
    failures: _containers.RepeatedCompositeFieldContainer[AuditFailure]
    seconds: float
    def __init__(self, hands: _Optional[int] = ..., clean: _Optional[int] = ..., incomplete: _Optional[int] = ..., failed_by_check: _Optional[_Mapping[str, int]] = ..., failures: _Optional[_Iterable[_Union[AuditFailure, _Mapping]]] = ..., seconds: _Optional[float] = ...) -> None: ...
