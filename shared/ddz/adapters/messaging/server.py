"""What the bus needs to know of the NATS server: the JetStream headers and error codes
it speaks, the versions it needs, the list of servers of a URL, and the bus's errors."""

from __future__ import annotations

from collections.abc import Sequence

MSG_ID = "Nats-Msg-Id"
EXPECTED_LAST_SUBJECT_SEQUENCE = "Nats-Expected-Last-Subject-Sequence"
EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT = "Nats-Expected-Last-Subject-Sequence-Subject"
WRONG_LAST_SEQUENCE_ERR = 10071  # JSStreamWrongLastSequenceErr
BATCH_ID = "Nats-Batch-Id"
BATCH_SEQUENCE = "Nats-Batch-Sequence"
BATCH_COMMIT = "Nats-Batch-Commit"
BATCH_DUPLICATE_MSG_ID_ERR = 10201  # JSAtomicPublishContainsDuplicateMessageErr
ATOMIC_SERVER_VERSION = (2, 12, 0)
"""The oldest nats-server with atomic batch publishing (``allow_atomic``)."""
MIN_SERVER_VERSION = (2, 11, 0)
"""The oldest nats-server the suite runs on: the single-writer check over a hand's wildcard
filter needs ``Nats-Expected-Last-Subject-Sequence-Subject`` (2.11). An older server
ignores that header and checks the event's own subject instead: it refuses a hand's second
event and lets a stale writer through."""

CONSUMER_NOT_FOUND_ERR = 10014  # JSConsumerNotFoundErr
STREAM_NOT_FOUND_ERR = 10059  # JSStreamNotFoundErr
STREAM_NAME_IN_USE_ERR = 10058  # JSStreamNameExistErr


class BusError(Exception):
    """Base class of the bus's own errors."""


class WrongLastSequence(BusError):
    """``Nats-Expected-Last-Subject-Sequence`` did not hold: someone else published first."""


class BatchDuplicate(BusError):
    """An atomic batch held an event id the stream already has: it was stored before
    (a retry after a lost acknowledgement), or the ids are not unique."""


class UnsupportedServer(BusError, ValueError):
    """The NATS server is older than ``MIN_SERVER_VERSION`` (a configuration error)."""


def check_server_version(version: tuple[int, int, int], where: str = "") -> None:
    """``UnsupportedServer`` when ``version`` (major, minor, patch) is too old."""
    if version < MIN_SERVER_VERSION:
        found = ".".join(map(str, version))
        need = ".".join(map(str, MIN_SERVER_VERSION))
        at = f" at {where}" if where else ""
        raise UnsupportedServer(
            f"nats-server {found}{at} is too old: the suite needs {need} or later "
            f"(the per-hand Nats-Expected-Last-Subject-Sequence-Subject check)"
        )


def server_list(url: str | Sequence[str]) -> list[str]:
    """The servers of ``url``: ``"nats://a:4222,nats://b:4222"`` is two."""
    parts = url.split(",") if isinstance(url, str) else url
    return [part.strip() for part in parts if part.strip()]
