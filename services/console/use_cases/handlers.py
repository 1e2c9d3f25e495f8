"""The desk's use cases, on its ports (``ports.py``): find hands, open one, open a
player, list the live tables and hands, read the access log.

Every page that shows hand or player data (a search, a hand at any step and in any
seat's view, a player, the live tables, an evidence file) is written to the access log,
who, what and when, BEFORE anything of it is read: a page whose opening could not be
recorded is not shown (the log is the recorder's, in the store's database;
``DeskService.LogAccess``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import quote, urlencode

from ddz.application.errors import Kind, Reason, Refusal
from ddz.audit.account.sight import Sight
from ddz.audit.account.snapshot import HandAt, NoSuchEvent
from ddz.audit.account.timeline import Entry, Timeline
from ddz.audit.checks.results import CheckResult
from ddz.domain import ids
from ddz.v1 import desk_pb2, settlement_pb2

from .ports import HandReports, Ledgers, Records
from .session import Staff

PAGE = 50


@dataclass(frozen=True, slots=True)
class HandQuery:
    """The filters of ``/hands`` (already parsed from the query string)."""

    player: str = ""
    table_id: str = ""
    room: str = ""
    variant: str = ""
    since: float = 0.0
    until: float = 0.0
    outcome: str = ""
    bot_for_person: bool = False
    failed_audit: bool = False
    before_started_at: float = 0.0
    before_hand_id: str = ""

    def request(self, limit: int = PAGE) -> desk_pb2.FindHandsRequest:
        return desk_pb2.FindHandsRequest(
            player=self.player, table_id=self.table_id, room=self.room, variant=self.variant,
            since=self.since, until=self.until, outcome=self.outcome,
            bot_for_person=self.bot_for_person, failed_audit=self.failed_audit, limit=limit,
            before_started_at=self.before_started_at, before_hand_id=self.before_hand_id,
        )  # fmt: skip


@dataclass
class HandView:
    """A hand's page: the audit's account of it (``ddz.audit``, as ``ddz audit`` writes
    it) for the staff's sight, and the table after event ``at``."""

    timeline: Timeline  # entries, arithmetic, checks and verdict
    at: int  # the table is shown after this event
    table: HandAt | None  # None: it cannot be rebuilt there (``why_not`` says why)
    why_not: str
    key_id: str  # the key id the head's signature verified under ("" when none did)
    producer_keys: tuple[tuple[str, str], ...]  # (producer, key id) the events name
    summary: desk_pb2.HandSummary | None

    @property
    def last(self) -> int:
        return self.timeline.event_count

    @property
    def settled(self) -> Entry | None:
        """The settlement's entry: its details are the ledger and the arithmetic."""
        return next((e for e in self.timeline.entries if e.type == "hand_settled"), None)


@dataclass
class PlayerView:
    player_id: str
    balance: settlement_pb2.GetBalanceResponse
    ledgers: list[settlement_pb2.PlayerLedger] = field(default_factory=list)
    hands: list[desk_pb2.HandSummary] = field(default_factory=list)


@dataclass
class LiveTables:
    tables: list[tuple[desk_pb2.TableSummary, list[desk_pb2.HandSummary]]]
    elsewhere: list[desk_pb2.HandSummary] = field(default_factory=list)


def hand_view(
    reports: HandReports, hand_id: str, envelopes: Sequence[bytes],
    checks: Sequence[CheckResult], key_id: str, summary: desk_pb2.HandSummary | None, *,
    at: int | None, view: int | None, trace_ids: Sequence[str | None] = (),
) -> HandView:  # fmt: skip
    """A hand's page from its stored envelopes and the recorder's checks of them: the
    audit's account for the desk's sight (no card of a hand in play; in one seat's view,
    no other seat's) and the table after event ``at`` (None: the last)."""
    report = reports(f"hand-{hand_id}", envelopes, checks, key_id, trace_ids)
    sight = Sight(view, hide_in_play=True)
    last = report.event_count
    at = last if at is None else max(1, min(at, last))
    try:
        table: HandAt | None = report.state_at(at, sight)
        why_not = ""
    except NoSuchEvent as exc:
        table, why_not = None, str(exc)
    return HandView(report.timeline(sight), at, table, why_not, report.key_id,
                    report.producer_keys, summary)  # fmt: skip


def check_hand_id(hand_id: str) -> str:
    if not ids.is_hand_id(hand_id):
        raise Refusal.invalid(f"a hand id is {ids.HAND_RULE}", Reason.UNKNOWN_HAND)
    return hand_id


def check_player(player_id: str) -> str:
    if not ids.is_name(player_id):
        raise Refusal.invalid(f"a player id is {ids.NAME_RULE}")
    return player_id


class Desk:
    def __init__(self, records: Records, ledgers: Ledgers, reports: HandReports) -> None:
        self.records = records
        self.ledgers = ledgers
        self.reports = reports  # the audit's account of a hand (``ddz.audit.audited_report``)

    async def hands(
        self, staff: Staff, query: HandQuery, address: str, limit: int = PAGE
    ) -> list[desk_pb2.HandSummary]:
        """One page of a search; ``address`` is the page as asked (``/hands?...``), what
        the access log says was looked at."""
        await self.records.log_access(staff.name, staff.role, address)
        found = await self.records.find_hands(query.request(limit))
        return list(found.hands)

    async def hand(
        self, staff: Staff, hand_id: str, *, at: int | None, view: int | None
    ) -> HandView:
        check_hand_id(hand_id)
        if view is not None and view not in (0, 1, 2):
            raise Refusal.invalid("a seat's view is seat 0, 1 or 2")
        step = {name: value for name, value in (("at", at), ("view", view)) if value is not None}
        what = f"/hands/{hand_id}" + (f"?{urlencode(step)}" if step else "")
        await self.records.log_access(staff.name, staff.role, what)
        stored, audit, summary = await asyncio.gather(
            self.records.read_stream(f"hand-{hand_id}"),
            self.records.audit(hand_id),
            self._summary(hand_id),
        )
        checks = [CheckResult(c.name, c.passed, c.detail) for c in audit.checks]
        envelopes = [item.envelope for item in stored]
        traces = [item.trace_id or None for item in stored]  # the recorder's, per event
        return hand_view(self.reports, hand_id, envelopes, checks, audit.key_id, summary,
                         at=at, view=view, trace_ids=traces)  # fmt: skip

    async def _summary(self, hand_id: str) -> desk_pb2.HandSummary | None:
        try:
            return await self.records.summary(hand_id)
        except Refusal as refusal:
            if refusal.kind is Kind.NOT_FOUND:
                return None  # not indexed (yet): the page shows the hand without it
            raise

    async def evidence(self, staff: Staff, hand_id: str) -> desk_pb2.GetEvidenceResponse:
        """The hand's evidence file, to hand to the player (logged as its own access)."""
        check_hand_id(hand_id)
        await self.records.log_access(staff.name, staff.role, f"/hands/{hand_id}/evidence")
        return await self.records.evidence(hand_id)

    async def player(self, staff: Staff, player_id: str) -> PlayerView:
        check_player(player_id)
        await self.records.log_access(
            staff.name, staff.role, f"/players/{quote(player_id, safe='')}"
        )
        balance, ledgers, hands = await asyncio.gather(
            self.ledgers.balance(player_id),
            self.ledgers.ledgers(player_id, PAGE),
            self.records.find_hands(desk_pb2.FindHandsRequest(player=player_id, limit=PAGE)),
        )
        return PlayerView(player_id, balance, list(ledgers.ledgers), list(hands.hands))

    async def live(self, staff: Staff) -> LiveTables:
        """The open tables, each with its hands in play (no card: the summaries carry
        none), and hands in play at no open table (an operator's, say)."""
        await self.records.log_access(staff.name, staff.role, "/live")
        tables, found = await asyncio.gather(
            self.records.open_tables(200),
            self.records.find_hands(desk_pb2.FindHandsRequest(outcome="in_play", limit=200)),
        )
        live = LiveTables([(table, []) for table in tables.tables])
        at = {table.table_id: hands for table, hands in live.tables}
        for hand in found.hands:
            at.get(hand.table_id, live.elsewhere).append(hand)
        return live

    async def access(self, staff: Staff, before_id: int = 0) -> list[desk_pb2.AccessEntry]:
        if not staff.auditor:
            raise Refusal.denied("the access log is for auditors: sign in with an auditor token")
        found = await self.records.access(100, before_id)
        return list(found.entries)
