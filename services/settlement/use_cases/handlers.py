"""Settlement's use cases: apply a delivered ``hand_settled`` to the balances, and
answer balance and ledger queries.

Applying is idempotent on the event id (the projection records it in the same
transaction as the balances): a redelivery changes nothing. The players of a hand come
from its ``hand_started`` (the bus, else the event store); a hand whose start cannot be
found yet is refused as "not now" and retried by the consumer, while an event that can
never be applied is refused as INVALID (the consumer terminates it).
"""

from __future__ import annotations

import asyncio

import structlog
from ddz.application.bad_events import BadEvent, CodecError
from ddz.application.errors import Reason, Refusal
from ddz.application.streams import stream_parts
from ddz.domain import ids
from ddz.domain.balances import Balance, SettledHand
from ddz.domain.hand.events import HandSettled, HandStarted

from .ports import Ledgers, SignedEvents, StartedHands, Streams

log = structlog.get_logger("ddz.settlement")

DEFAULT_PAGE = 100
MAX_PAGE = 1000


class ApplySettled:
    """Credits only what its producer signed: the ``hand_settled`` and the
    ``hand_started`` naming the players are both verified with ``keyring``
    (``ddz.adapters.security.event_signing``); a forged one is refused (terminated), never
    applied."""

    def __init__(
        self, ledgers: Ledgers, started: StartedHands, store: Streams, keyring: SignedEvents
    ) -> None:
        self.ledgers = ledgers
        self.started = started
        self.store = store
        self.keyring = keyring
        self.applied = 0  # hands applied (not counting redeliveries)

    async def __call__(self, data: bytes, subject: str) -> bool:
        """Apply the ``hand_settled`` envelope ``data`` (delivered on ``subject``);
        False when it was applied before."""
        try:
            envelope, event = self.keyring.decode(data)
        except BadEvent as exc:
            log.error("event_refused", subject=subject, why=exc.why, reason=str(exc))
            raise Refusal.invalid(f"{subject}: {exc}") from None
        if not isinstance(event, HandSettled):
            raise Refusal.invalid(f"{envelope.type} on {subject}: expected {HandSettled.TYPE}")
        _, hand_id = stream_parts(envelope.stream_id)
        players = await self._players(envelope.stream_id)
        applied = await asyncio.to_thread(
            self.ledgers.apply_settled,
            envelope.event_id, hand_id, players, event, envelope.payload,
        )  # fmt: skip
        if applied:
            self.applied += 1
        log.info("hand_settled", hand_id=hand_id, applied=applied, deltas=list(event.ledger.deltas))
        return applied

    async def _players(self, stream_id: str) -> tuple[str, ...]:
        data = await self.started.last_started(stream_id)
        if data is None:
            stored = await asyncio.to_thread(self.store.read_stream, stream_id, 0)
            data = stored[0].envelope if stored else None
        if not data:
            raise Refusal.precondition(
                Reason.UNKNOWN_HAND, f"{stream_id}: HandStarted not found yet"
            )
        try:
            _, started = self.keyring.decode(data)
        except BadEvent as exc:  # forged players: nobody is credited on its word
            log.error("event_refused", stream_id=stream_id, why=exc.why, reason=str(exc))
            raise Refusal.invalid(f"{stream_id}: {exc}") from None
        except CodecError as exc:  # e.g. a newer dealer's event: readable after an upgrade
            raise Refusal.precondition(
                Reason.INVALID_ARGUMENT, f"{stream_id}: its hand_started cannot be read: {exc}"
            ) from exc
        if not isinstance(started, HandStarted):
            raise Refusal.invalid(
                f"{stream_id}: the first event is {started.TYPE}, not hand_started"
            )
        return tuple(seat.player_id for seat in started.seats)


class Queries:
    """Balances and ledgers as the projection holds them."""

    def __init__(self, ledgers: Ledgers) -> None:
        self.ledgers = ledgers

    async def balance(self, player_id: str) -> Balance:
        _require_player(player_id)
        return await asyncio.to_thread(self.ledgers.balance, player_id)

    async def ledger(self, hand_id: str) -> SettledHand:
        if not ids.is_hand_id(hand_id):
            raise Refusal.invalid(f"hand_id must be {ids.HAND_RULE}", Reason.UNKNOWN_HAND)
        hand = await asyncio.to_thread(self.ledgers.settled_hand, hand_id)
        if hand is None:
            raise Refusal.not_found(Reason.UNKNOWN_HAND, f"no settled hand {hand_id!r}")
        return hand

    async def ledgers_of(self, player_id: str, limit: int) -> list[SettledHand]:
        """The player's settled hands, newest first: ``limit`` of them (0: a default
        page), never more than ``MAX_PAGE``."""
        _require_player(player_id)
        return await asyncio.to_thread(
            self.ledgers.player_hands, player_id, min(limit or DEFAULT_PAGE, MAX_PAGE)
        )


def _require_player(player_id: str) -> None:
    if not player_id:
        raise Refusal.invalid("player_id is empty")
    if not ids.is_name(player_id):
        raise Refusal.invalid(f"player_id must be {ids.NAME_RULE}")
