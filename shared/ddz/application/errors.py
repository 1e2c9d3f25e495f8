"""The one error type of a refused call: ``Refusal(kind, reason, message)``.

Use cases and adapters raise it; ``ddz.adapters.rpc.grpc_server`` turns it into a gRPC
status with a ``google.rpc.ErrorInfo`` (reason, domain ``ddz.v1``) at the one boundary,
and ``ddz.adapters.rpc.grpc_client`` turns such a status back into a ``Refusal`` when one
service relays another's answer. Nothing here knows gRPC.

``kind`` says what class of failure it is (the status code follows from it); ``reason``
is a ``ddz.v1.Reason`` name, the public contract clients compare; ``message`` is for
people and never carries a secret.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum, StrEnum
from types import MappingProxyType


class Kind(Enum):
    """The class of a refusal; each maps to one gRPC status code."""

    INVALID = "invalid"  # the request is wrong in itself
    NOT_FOUND = "not_found"  # it names something that does not exist
    EXISTS = "exists"  # it would create something that exists already
    PRECONDITION = "precondition"  # not now: the state does not allow it
    CONFLICT = "conflict"  # another writer got there first; read again and retry
    DENIED = "denied"  # the caller may not do this
    UNAUTHENTICATED = "unauthenticated"  # the caller did not say who they are
    EXHAUSTED = "exhausted"  # a limit was reached
    UNAVAILABLE = "unavailable"  # a service it needs cannot answer now; retry later
    TIMEOUT = "timeout"  # a service it needs did not answer in time
    INTERNAL = "internal"  # a service it needs failed (a bug there, not the caller's fault)


class Reason(StrEnum):
    """The names of ``ddz.v1.Reason`` (``protos/ddz/v1/errors.proto``); a unit test keeps
    the two equal."""

    REASON_UNSPECIFIED = "REASON_UNSPECIFIED"
    UNKNOWN_HAND = "UNKNOWN_HAND"
    UNKNOWN_TABLE = "UNKNOWN_TABLE"
    UNKNOWN_ROOM = "UNKNOWN_ROOM"
    UNKNOWN_SEAT = "UNKNOWN_SEAT"
    UNKNOWN_STREAM = "UNKNOWN_STREAM"
    MALFORMED_CARDS = "MALFORMED_CARDS"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"
    NOT_YOUR_TURN = "NOT_YOUR_TURN"
    CARDS_NOT_IN_HAND = "CARDS_NOT_IN_HAND"
    NOT_A_COMBINATION = "NOT_A_COMBINATION"
    DOES_NOT_BEAT = "DOES_NOT_BEAT"
    LEADER_CANNOT_PASS = "LEADER_CANNOT_PASS"
    BOMB_LIMIT_REACHED = "BOMB_LIMIT_REACHED"
    BID_NOT_HIGHER = "BID_NOT_HIGHER"
    WRONG_PHASE = "WRONG_PHASE"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    BALANCE_TOO_LOW = "BALANCE_TOO_LOW"
    VERSION_CONFLICT = "VERSION_CONFLICT"
    DUPLICATE_EVENT_ID = "DUPLICATE_EVENT_ID"
    RATE_LIMITED = "RATE_LIMITED"
    TOO_MANY_STREAMS = "TOO_MANY_STREAMS"


class Refusal(Exception):
    """A call refused, for ``reason``; ``metadata`` goes into the ErrorInfo as is."""

    def __init__(self, kind: Kind, reason: Reason | str, message: str, **metadata: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.reason = Reason(reason)  # ValueError for a name ddz.v1.Reason does not have
        self.message = message
        self.metadata: Mapping[str, str] = MappingProxyType(dict(metadata))

    def __repr__(self) -> str:
        return f"Refusal({self.kind.name}, {self.reason.value}, {self.message!r})"

    @classmethod
    def invalid(cls, message: str, reason: Reason = Reason.INVALID_ARGUMENT) -> Refusal:
        return cls(Kind.INVALID, reason, message)

    @classmethod
    def not_found(cls, reason: Reason, message: str) -> Refusal:
        return cls(Kind.NOT_FOUND, reason, message)

    @classmethod
    def precondition(cls, reason: Reason, message: str) -> Refusal:
        return cls(Kind.PRECONDITION, reason, message)

    @classmethod
    def denied(cls, message: str) -> Refusal:
        return cls(Kind.DENIED, Reason.PERMISSION_DENIED, message)

    @classmethod
    def unauthenticated(cls, message: str) -> Refusal:
        return cls(Kind.UNAUTHENTICATED, Reason.UNAUTHENTICATED, message)

    @classmethod
    def conflict(cls, message: str, **metadata: str) -> Refusal:
        return cls(Kind.CONFLICT, Reason.VERSION_CONFLICT, message, **metadata)

    @classmethod
    def unavailable(cls, message: str) -> Refusal:
        return cls(Kind.UNAVAILABLE, Reason.REASON_UNSPECIFIED, message)
