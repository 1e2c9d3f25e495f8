"""A table's stream as its use cases see it: where it stands (``TableCursor``), the table
folded from it (``TableHistory``), and when an event happened (``occurred_at``). The
stream itself is ``ddz.adapters.messaging.table_stream``."""

from __future__ import annotations

from dataclasses import dataclass

from ddz.domain.table import TableState
from ddz.v1 import envelope_pb2


@dataclass(frozen=True, slots=True)
class TableCursor:
    """Where a table's stream stands: events written, and the JetStream sequence of the
    last (what the next publish expects)."""

    version: int = 0
    seq: int = 0


@dataclass(frozen=True, slots=True)
class TableHistory:
    """A table folded from its stream, with the cursor to extend it."""

    state: TableState
    cursor: TableCursor


def occurred_at(envelope: envelope_pb2.EventEnvelope) -> float:
    """The envelope's time, Unix seconds (to the microsecond, as a datetime has it;
    read from the fields: ``ToDatetime`` costs more than the rest of a view update)."""
    stamp = envelope.occurred_at
    seconds: float = stamp.seconds + (stamp.nanos // 1000) / 1e6
    return seconds
