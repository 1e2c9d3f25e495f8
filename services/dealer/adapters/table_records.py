"""``TableRecords`` on the bus: a table's ``table_opened`` and its last
``hand_assigned``, each read as the last message on its own subject
(``ddz.v1.table.<bucket>.<id>.<type>``), two reads whatever the table's age.

Read with ``STREAM.MSG.GET``, which the dealer's NATS user may call; nobody but the
table service's user may publish on ``ddz.v1.table.>`` (``ddz.adapters.messaging.nats_auth``).
"""

from __future__ import annotations

from typing import TypeVar

import nats.errors
import nats.js.errors
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.subjects import subject_for
from ddz.adapters.messaging.table_stream import decode, table_stream_id
from ddz.adapters.security.event_signing import BadEvent, EventKeyring
from ddz.application.errors import Refusal
from ddz.domain.table import HandAssigned, TableEvent, TableOpened

E = TypeVar("E", TableOpened, HandAssigned)


class BusTableRecords:
    """The records, each verified as the table service's own (``event_signing``)."""

    def __init__(self, bus: EventBus, keyring: EventKeyring) -> None:
        self.bus = bus
        self.keyring = keyring

    async def opened(self, table_id: str) -> TableOpened | None:
        return await self._last(table_id, TableOpened)

    async def last_assigned(self, table_id: str) -> HandAssigned | None:
        return await self._last(table_id, HandAssigned)

    async def _last(self, table_id: str, kind: type[E]) -> E | None:
        subject = subject_for(table_stream_id(table_id), kind.TYPE)
        try:
            msg = await self.bus.js.get_last_msg(self.bus.stream, subject)
        except nats.js.errors.NotFoundError:
            return None
        except (TimeoutError, nats.errors.Error) as exc:  # the bus away: try again later
            why = f"table {table_id}'s records cannot be read now ({type(exc).__name__})"
            raise Refusal.unavailable(why) from None
        try:
            envelope = self.keyring.open(msg.data or b"")
        except BadEvent as exc:  # forged: no deal on it (stakes are the table's alone)
            raise Refusal.invalid(f"table {table_id}'s last {kind.TYPE}: {exc}") from None
        event: TableEvent = decode(envelope.type, envelope.type_version, envelope.payload)
        # The subject names the type; an envelope of another type there is not the table's.
        return event if isinstance(event, kind) else None
