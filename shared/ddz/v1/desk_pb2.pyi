from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class HandSeat(_message.Message):
    __slots__ = ("player_id", "is_bot", "settled", "delta")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_BOT_FIELD_NUMBER: _ClassVar[int]
    SETTLED_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    is_bot: bool
    settled: bool
    delta: int
    def __init__(self, player_id: _Optional[str] = ..., is_bot: _Optional[bool] = ..., settled: _Optional[bool] = ..., delta: _Optional[int] = ...) -> None: ...

class HandSummary(_message.Message):
    __slots__ = ("hand_id", "table_id", "room", "variant", "started_at", "ended_at", "outcome", "landlord", "multiplier", "bot_for_person", "audit", "audit_detail", "events", "seats")
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    LANDLORD_FIELD_NUMBER: _ClassVar[int]
    MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    BOT_FOR_PERSON_FIELD_NUMBER: _ClassVar[int]
    AUDIT_FIELD_NUMBER: _ClassVar[int]
    AUDIT_DETAIL_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    table_id: str
    room: str
    variant: str
    started_at: float
    ended_at: float
    outcome: str
    landlord: int
    multiplier: int
    bot_for_person: bool
    audit: str
    audit_detail: str
    events: int
    seats: _containers.RepeatedCompositeFieldContainer[HandSeat]
    def __init__(self, hand_id: _Optional[str] = ..., table_id: _Optional[str] = ..., room: _Optional[str] = ..., variant: _Optional[str] = ..., started_at: _Optional[float] = ..., ended_at: _Optional[float] = ..., outcome: _Optional[str] = ..., landlord: _Optional[int] = ..., multiplier: _Optional[int] = ..., bot_for_person: _Optional[bool] = ..., audit: _Optional[str] = ..., audit_detail: _Optional[str] = ..., events: _Optional[int] = ..., seats: _Optional[_Iterable[_Union[HandSeat, _Mapping]]] = ...) -> None: ...

class FindHandsRequest(_message.Message):
    __slots__ = ("player", "table_id", "room", "variant", "since", "until", "outcome", "bot_for_person", "failed_audit", "limit", "before_started_at", "before_hand_id")
    PLAYER_FIELD_NUMBER: _ClassVar[int]
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    UNTIL_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    BOT_FOR_PERSON_FIELD_NUMBER: _ClassVar[int]
    FAILED_AUDIT_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_HAND_ID_FIELD_NUMBER: _ClassVar[int]
    player: str
    table_id: str
    room: str
    variant: str
    since: float
    until: float
    outcome: str
    bot_for_person: bool
    failed_audit: bool
    limit: int
    before_started_at: float
    before_hand_id: str
    def __init__(self, player: _Optional[str] = ..., table_id: _Optional[str] = ..., room: _Optional[str] = ..., variant: _Optional[str] = ..., since: _Optional[float] = ..., until: _Optional[float] = ..., outcome: _Optional[str] = ..., bot_for_person: _Optional[bool] = ..., failed_audit: _Optional[bool] = ..., limit: _Optional[int] = ..., before_started_at: _Optional[float] = ..., before_hand_id: _Optional[str] = ...) -> None: ...

class FindHandsResponse(_message.Message):
    __slots__ = ("hands",)
    HANDS_FIELD_NUMBER: _ClassVar[int]
    hands: _containers.RepeatedCompositeFieldContainer[HandSummary]
    def __init__(self, hands: _Optional[_Iterable[_Union[HandSummary, _Mapping]]] = ...) -> None: ...

class GetHandSummaryRequest(_message.Message):
    __slots__ = ("hand_id",)
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    def __init__(self, hand_id: _Optional[str] = ...) -> None: ...

class LogAccessRequest(_message.Message):
    __slots__ = ("staff", "role", "what")
    STAFF_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    WHAT_FIELD_NUMBER: _ClassVar[int]
    staff: str
    role: str
    what: str
    def __init__(self, staff: _Optional[str] = ..., role: _Optional[str] = ..., what: _Optional[str] = ...) -> None: ...

class LogAccessResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListAccessRequest(_message.Message):
    __slots__ = ("limit", "before_id")
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    BEFORE_ID_FIELD_NUMBER: _ClassVar[int]
    limit: int
    before_id: int
    def __init__(self, limit: _Optional[int] = ..., before_id: _Optional[int] = ...) -> None: ...

class AccessEntry(_message.Message):
    __slots__ = ("id", "at", "staff", "role", "what")
    ID_FIELD_NUMBER: _ClassVar[int]
    AT_FIELD_NUMBER: _ClassVar[int]
    STAFF_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    WHAT_FIELD_NUMBER: _ClassVar[int]
    id: int
    at: float
    staff: str
    role: str
    what: str
    def __init__(self, id: _Optional[int] = ..., at: _Optional[float] = ..., staff: _Optional[str] = ..., role: _Optional[str] = ..., what: _Optional[str] = ...) -> None: ...

class ListAccessResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AccessEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[AccessEntry, _Mapping]]] = ...) -> None: ...

class GetEvidenceRequest(_message.Message):
    __slots__ = ("hand_id",)
    HAND_ID_FIELD_NUMBER: _ClassVar[int]
    hand_id: str
    def __init__(self, hand_id: _Optional[str] = ...) -> None: ...

class GetEvidenceResponse(_message.Message):
    __slots__ = ("file", "file_name")
    FILE_FIELD_NUMBER: _ClassVar[int]
    FILE_NAME_FIELD_NUMBER: _ClassVar[int]
    file: bytes
    file_name: str
    def __init__(self, file: _Optional[bytes] = ..., file_name: _Optional[str] = ...) -> None: ...

class ListTablesRequest(_message.Message):
    __slots__ = ("limit",)
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    limit: int
    def __init__(self, limit: _Optional[int] = ...) -> None: ...

class TableSeat(_message.Message):
    __slots__ = ("player_id", "is_bot", "left")
    PLAYER_ID_FIELD_NUMBER: _ClassVar[int]
    IS_BOT_FIELD_NUMBER: _ClassVar[int]
    LEFT_FIELD_NUMBER: _ClassVar[int]
    player_id: str
    is_bot: bool
    left: bool
    def __init__(self, player_id: _Optional[str] = ..., is_bot: _Optional[bool] = ..., left: _Optional[bool] = ...) -> None: ...

class TableSummary(_message.Message):
    __slots__ = ("table_id", "room", "variant", "opened_at", "seats", "hands", "last_hand_id")
    TABLE_ID_FIELD_NUMBER: _ClassVar[int]
    ROOM_FIELD_NUMBER: _ClassVar[int]
    VARIANT_FIELD_NUMBER: _ClassVar[int]
    OPENED_AT_FIELD_NUMBER: _ClassVar[int]
    SEATS_FIELD_NUMBER: _ClassVar[int]
    HANDS_FIELD_NUMBER: _ClassVar[int]
    LAST_HAND_ID_FIELD_NUMBER: _ClassVar[int]
    table_id: str
    room: str
    variant: str
    opened_at: float
    seats: _containers.RepeatedCompositeFieldContainer[TableSeat]
    hands: int
    last_hand_id: str
    def __init__(self, table_id: _Optional[str] = ..., room: _Optional[str] = ..., variant: _Optional[str] = ..., opened_at: _Optional[float] = ..., seats: _Optional[_Iterable[_Union[TableSeat, _Mapping]]] = ..., hands: _Optional[int] = ..., last_hand_id: _Optional[str] = ...) -> None: ...

class ListTablesResponse(_message.Message):
    __slots__ = ("tables",)
    TABLES_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedCompositeFieldContainer[TableSummary]
    def __init__(self, tables: _Optional[_Iterable[_Union[TableSummary, _Mapping]]] = ...) -> None: ...

class OpenSessionRequest(_message.Message):
    __slots__ = ("digest", "staff", "role", "expires_at")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    STAFF_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    digest: str
    staff: str
    role: str
    expires_at: float
    def __init__(self, digest: _Optional[str] = ..., staff: _Optional[str] = ..., role: _Optional[str] = ..., expires_at: _Optional[float] = ...) -> None: ...

class OpenSessionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CheckSessionRequest(_message.Message):
    __slots__ = ("digest",)
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    digest: str
    def __init__(self, digest: _Optional[str] = ...) -> None: ...

class CheckSessionResponse(_message.Message):
    __slots__ = ("open", "staff", "role", "expires_at")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    STAFF_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    open: bool
    staff: str
    role: str
    expires_at: float
    def __init__(self, open: _Optional[bool] = ..., staff: _Optional[str] = ..., role: _Optional[str] = ..., expires_at: _Optional[float] = ...) -> None: ...

class EndSessionsRequest(_message.Message):
    __slots__ = ("digest", "staff")
    DIGEST_FIELD_NUMBER: _ClassVar[int]
    STAFF_FIELD_NUMBER: _ClassVar[int]
    digest: str
    staff: str
    def __init__(self, digest: _Optional[str] = ..., staff: _Optional[str] = ...) -> None: ...

class EndSessionsResponse(_message.Message):
    __slots__ = ("ended",)
    ENDED_FIELD_NUMBER: _ClassVar[int]
    ended: int
    def __init__(self, ended: _Optional[int] = ...) -> None: ...
