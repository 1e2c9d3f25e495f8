"""The dispute desk's projection: one summary per hand, found by player, table, room,
variant, time, outcome, "a bot played for someone" and audit state; one per table
(room, rules, who sits, the hands dealt there, closed or open: the desk's live tables);
and the desk's access log.

Kept by the recorder's writer (``HandIndex.apply_many``, called with each fetched batch's
streams once they are stored; what their events change is ``index_fold``'s) and by its
auditor loop (``pending_audits`` / ``set_audit``). A projection like the balances: it
can be dropped and rebuilt from the events at any time (``rebuild_hand_index``); the
access log is not a projection and is never rebuilt or changed, only appended to.

Synchronous and thread-safe (call it through ``asyncio.to_thread``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from ddz.adapters.service_db.index_fold import Counted, change_of, count_all
from ddz.adapters.service_db.schema import (
    desk_access,
    hand_players,
    hand_summaries,
    table_rooms,
    table_seats,
    table_summaries,
)
from ddz.application.event_store import EventStore

_BEGIN_OPTION = "ddz_sqlite_begin"
OUTCOMES = ("in_play", "landlord", "farmers", "no_winner")
AUDIT_STATES = ("", "clean", "failed", "incomplete")
MAX_PAGE = 200


@dataclass(frozen=True, slots=True)
class Seat:
    player_id: str
    is_bot: bool
    delta: int | None


@dataclass(frozen=True, slots=True)
class HandSummary:
    hand_id: str
    table_id: str
    room: str
    variant: str
    started_at: float | None
    ended_at: float | None
    outcome: str
    landlord: int | None
    multiplier: int | None
    bot_for_person: bool
    audit: str
    audit_detail: str
    events: int
    seats: tuple[Seat, ...] = ()


@dataclass(frozen=True, slots=True)
class HandFilter:
    """What ``/hands`` asks; empty fields filter nothing."""

    player: str = ""
    table_id: str = ""
    room: str = ""
    variant: str = ""
    since: float | None = None  # started at or after (Unix seconds)
    until: float | None = None  # started before
    outcome: str = ""
    bot_for_person: bool = False
    failed_audit: bool = False

    def __post_init__(self) -> None:
        if self.outcome and self.outcome not in OUTCOMES:
            raise ValueError(f"outcome is one of {', '.join(OUTCOMES)}, got {self.outcome!r}")


@dataclass(frozen=True, slots=True)
class TableSeat:
    player_id: str
    is_bot: bool
    left: bool  # the person left the table


@dataclass(frozen=True, slots=True)
class TableSummary:
    table_id: str
    room: str  # "" opened by an operator
    variant: str
    opened_at: float | None
    hands: int  # hands dealt there
    last_hand_id: str
    seats: tuple[TableSeat, ...] = ()


@dataclass(frozen=True, slots=True)
class Access:
    id: int
    at: float
    staff: str
    role: str
    what: str


class HandIndex:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- keeping it ----------------------------------------------------------------------

    def apply(self, stream_id: str, envelopes: Sequence[bytes]) -> None:
        """Fold one stream's newly stored events (in version order) into the index."""
        self.apply_many([(stream_id, envelopes)])

    def apply_many(self, streams: Sequence[tuple[str, Sequence[bytes]]]) -> None:
        """Fold several streams' newly stored events (each in version order) into the
        index in one transaction: the recorder stores a fetched batch of many hands at
        once, and a transaction per hand cost about as much as storing the events. If
        that transaction fails, each stream is tried in one of its own, so that one bad
        stream costs the index only its own summary (raised after the others)."""
        writes = [write for stream_id, envelopes in streams
                  if (write := change_of(stream_id, envelopes)) is not None]  # fmt: skip
        if not writes:
            return
        counted = [write for write in writes if isinstance(write, Counted)]
        try:
            with self._write() as conn:
                for write in writes:
                    if not isinstance(write, Counted):
                        write(conn)
                if counted:  # in one statement: most streams of a batch only add events
                    count_all(conn, counted)
            return
        except Exception:
            if len(writes) == 1:
                raise
        failed: Exception | None = None
        for write in writes:
            try:
                with self._write() as conn:
                    write(conn)
            except Exception as exc:
                failed = exc
        if failed is not None:
            raise failed

    def pending_audits(self, limit: int = 100) -> list[str]:
        """Ended hands not audited since their record ended, oldest first."""
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(hand_summaries.c.hand_id)
                .where(hand_summaries.c.audit == "", hand_summaries.c.ended_at.is_not(None))
                .order_by(hand_summaries.c.ended_at)
                .limit(limit)
            )
            return [row.hand_id for row in rows]

    def set_audit(self, hand_id: str, verdict: str, detail: str) -> None:
        if verdict not in AUDIT_STATES:
            raise ValueError(f"not an audit state: {verdict!r}")
        with self._write() as conn:
            conn.execute(
                sa.update(hand_summaries)
                .where(hand_summaries.c.hand_id == hand_id)
                .values(audit=verdict, audit_detail=detail[:500])
            )

    def optimize(self) -> None:
        """Planner statistics of the index, so each filter takes its most selective index
        (SQLite has none until asked: ``ANALYZE``; PostgreSQL's autovacuum keeps them, and
        this only refreshes them)."""
        with self.engine.connect() as conn:
            for table in ("hand_summaries", "hand_players"):
                conn.exec_driver_sql(f"ANALYZE {table}")
            conn.commit()

    def clear(self) -> None:
        """Drop the projection's rows (not the access log): ``rebuild_hand_index``."""
        with self._write() as conn:
            for table in (hand_players, hand_summaries, table_rooms, table_seats, table_summaries):
                conn.execute(sa.delete(table))

    # -- reading it ----------------------------------------------------------------------

    def find(
        self, wanted: HandFilter, *, limit: int = 50, before: tuple[float, str] | None = None
    ) -> list[HandSummary]:
        """Hands matching ``wanted``, newest first, ``limit`` of them, started before the
        cursor ``before`` (the last row's ``(started_at, hand_id)`` of the page before)."""
        limit = max(1, min(limit, MAX_PAGE))
        s = hand_summaries.c
        query = sa.select(hand_summaries)
        started: Any = s.started_at
        if wanted.player:  # the player's own index orders their hands
            p = hand_players.c
            started = p.started_at
            query = query.join(hand_players, p.hand_id == s.hand_id).where(
                p.player_id == wanted.player
            )
        conditions = [started.is_not(None)]
        if wanted.table_id:
            conditions.append(s.table_id == wanted.table_id)
        if wanted.room:
            conditions.append(s.room == wanted.room)
        if wanted.variant:
            conditions.append(s.variant == wanted.variant)
        if wanted.since is not None:
            conditions.append(started >= wanted.since)
        if wanted.until is not None:
            conditions.append(started < wanted.until)
        if wanted.outcome:
            conditions.append(s.outcome == wanted.outcome)
        if wanted.bot_for_person:
            conditions.append(s.bot_for_person.is_(True))
        if wanted.failed_audit:
            conditions.append(s.audit == "failed")
        if before is not None:
            at, hand = before
            conditions.append(sa.or_(started < at, sa.and_(started == at, s.hand_id < hand)))
        query = query.where(*conditions).order_by(started.desc(), s.hand_id.desc()).limit(limit)
        with self.engine.connect() as conn:
            rows = conn.execute(query).all()
            seats = self._seats(conn, [row.hand_id for row in rows])
        return [_summary(row, seats.get(row.hand_id, ())) for row in rows]

    def get(self, hand_id: str) -> HandSummary | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                sa.select(hand_summaries).where(hand_summaries.c.hand_id == hand_id)
            ).first()
            if row is None:
                return None
            return _summary(row, self._seats(conn, [hand_id]).get(hand_id, ()))

    def open_tables(self, limit: int = MAX_PAGE) -> list[TableSummary]:
        """The tables not closed, the newest first, with who sits at each."""
        t, s = table_summaries.c, table_seats.c
        with self.engine.connect() as conn:
            rows = conn.execute(
                sa.select(table_summaries).where(t.closed_at.is_(None))
                .order_by(t.opened_at.desc(), t.table_id).limit(max(1, min(limit, MAX_PAGE)))
            ).all()  # fmt: skip
            ids = [row.table_id for row in rows]
            seats: dict[str, list[TableSeat]] = {}
            if ids:
                query = sa.select(table_seats).where(s.table_id.in_(ids))
                for seat in conn.execute(query.order_by(s.table_id, s.seat)):
                    seats.setdefault(seat.table_id, []).append(
                        TableSeat(seat.player_id, bool(seat.is_bot), bool(seat.person_left))
                    )
        return [
            TableSummary(row.table_id, row.room, row.variant, row.opened_at, row.hands,
                         row.last_hand_id, tuple(seats.get(row.table_id, ())))
            for row in rows
        ]  # fmt: skip

    def _seats(self, conn: Connection, hand_ids: list[str]) -> dict[str, tuple[Seat, ...]]:
        if not hand_ids:
            return {}
        p = hand_players.c
        rows = conn.execute(
            sa.select(p.hand_id, p.seat, p.player_id, p.is_bot, p.delta)
            .where(p.hand_id.in_(hand_ids))
            .order_by(p.hand_id, p.seat)
        )
        out: dict[str, list[Seat]] = {}
        for row in rows:
            out.setdefault(row.hand_id, []).append(Seat(row.player_id, bool(row.is_bot), row.delta))
        return {hand: tuple(seats) for hand, seats in out.items()}

    # -- the access log --------------------------------------------------------------------

    def log_access(self, staff: str, role: str, what: str, at: float | None = None) -> None:
        with self._write() as conn:
            conn.execute(
                sa.insert(desk_access),
                {"at": time.time() if at is None else at, "staff": staff[:200],
                 "role": role[:32], "what": what[:400]},
            )  # fmt: skip

    def access(self, limit: int = 100, before_id: int | None = None) -> list[Access]:
        """The access log, newest first."""
        a = desk_access.c
        query = sa.select(desk_access).order_by(a.id.desc()).limit(max(1, min(limit, 1000)))
        if before_id is not None:
            query = query.where(a.id < before_id)
        with self.engine.connect() as conn:
            return [Access(r.id, r.at, r.staff, r.role, r.what) for r in conn.execute(query)]

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                conn.execution_options(**{_BEGIN_OPTION: "BEGIN IMMEDIATE"})
            with conn.begin():
                yield conn


def rebuild_hand_index(store: EventStore, index: HandIndex, page: int = 5000) -> int:
    """Drop the projection and fold every stored event into it again; the number of
    streams folded. Tables first within each page (a hand's table is known when its
    summary is made; a summary made before its table's events gets them either way)."""
    index.clear()
    after, streams = 0, set[str]()
    while True:
        events = store.read_all(after, page)
        if not events:
            return len(streams)
        grouped: dict[str, list[bytes]] = {}
        for event in events:
            grouped.setdefault(event.stream_id, []).append(event.envelope)
        ordered = sorted(grouped, key=lambda s: not s.startswith("table-"))
        index.apply_many([(stream_id, grouped[stream_id]) for stream_id in ordered])
        streams.update(ordered)
        after = events[-1].position


def _summary(row: Any, seats: Iterable[Seat]) -> HandSummary:
    return HandSummary(
        hand_id=row.hand_id, table_id=row.table_id, room=row.room, variant=row.variant,
        started_at=row.started_at, ended_at=row.ended_at, outcome=row.outcome,
        landlord=row.landlord, multiplier=row.multiplier, bot_for_person=bool(row.bot_for_person),
        audit=row.audit, audit_detail=row.audit_detail, events=row.events, seats=tuple(seats),
    )  # fmt: skip
