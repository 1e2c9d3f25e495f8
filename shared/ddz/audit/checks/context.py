"""What the checks of one audit share: the stored rows, what each check found, and how
a check fails (``CheckFailed``, caught by ``audit_hand``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ddz.adapters.store.keys import Keyring
from ddz.application.event_store import StreamSignature
from ddz.audit.checks.results import AuditedEvent, CheckResult
from ddz.domain.hand import Event, HandState
from ddz.domain.hand.events import HandSettled, HandStarted, PlayerEscaped
from ddz.v1 import envelope_pb2


class StoredRow(Protocol):
    """What the audit reads of a stored event (``ddz.adapters.store.StoredEvent``)."""

    @property
    def event_id(self) -> str: ...
    @property
    def stream_id(self) -> str: ...
    @property
    def stream_version(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def type_version(self) -> int: ...
    @property
    def payload(self) -> bytes: ...
    @property
    def envelope(self) -> bytes: ...
    @property
    def prev_hash(self) -> str: ...
    @property
    def hash(self) -> str: ...


class CheckFailed(Exception):
    """A check failed: ``detail`` says where and why."""

    def __init__(self, check: str, detail: str) -> None:
        super().__init__(detail)
        self.check = check
        self.detail = detail


@dataclass
class Audit:
    """The audit of one stream as it goes: what each check found for the next one."""

    rows: Sequence[StoredRow]
    keys: Keyring
    signatures: Sequence[StreamSignature]
    stream_id: str = ""
    signed_by: str = ""  # the key id of the signature the signature check accepted
    # (version, hash) of a head whose events 1..version the caller verified, producer
    # signature and all, as it stored them (the recorder's own chain): see
    # ``ddz.audit.checks.provenance``
    verified_through: tuple[int, str] | None = None
    passed: list[CheckResult] = field(default_factory=list)
    envelopes: list[envelope_pb2.EventEnvelope] = field(default_factory=list)
    decoded: list[AuditedEvent] = field(default_factory=list)
    started: HandStarted | None = None
    seed: bytes = b""
    master: bytes = b""
    start_decision: list[Event] | None = None  # the deal check's StartHand decision
    # found by the decisions check for the multiplier and settlement checks
    before_settled: HandState | None = None
    settled: HandSettled | None = None
    escaped: PlayerEscaped | None = None
    expected_escape: PlayerEscaped | None = None

    def ok(self, name: str, detail: str) -> None:
        self.passed.append(CheckResult(name, True, detail))
