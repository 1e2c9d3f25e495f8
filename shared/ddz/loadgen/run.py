"""A crowd run: the people arrive over the ramp, play for the minutes asked, finish
their hands and leave; then every hand they were dealt is audited by the recorder
(``AuditService.AuditHand``), which also says which hands never ended (lost).

``--find-max`` grows the crowd step by step (``people`` more each step, each held for
the minutes asked after its ramp) until a step is past the limits (``within_limits``):
its p99 (the worse of "move shown" and "turn told") passes ``MAX_P99_MS``, the suite
uses more than ``MAX_CORES`` cores, or the people are not served (fewer than
``SEATED_ENOUGH`` of them seated, or more than ``MISSED_ENOUGH`` of their turns missed:
refused, for one); the largest crowd seated within them is ``max_people``.

A composition root: it keeps the whole ``Settings``, since it starts the crowd's
processes with an environment written from it (``client_env``).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import grpc

from ddz.adapters.rpc.grpc_client import make_channel
from ddz.adapters.runtime.stack_env import settings_env
from ddz.config import Settings
from ddz.loadgen.population import Crowd, PlanOfRun
from ddz.loadgen.report import CrowdReport, Minute, Step
from ddz.loadgen.tally import COUNTS, Window
from ddz.loadgen.usage import Sample, Usage
from ddz.v1 import audit_pb2, audit_pb2_grpc

INCOMPLETE = audit_pb2.AUDIT_VERDICT_INCOMPLETE
MAX_P99_MS = 250.0
MAX_CORES = 1.6
SEATED_ENOUGH = 0.9
"""A find-max step that seats less than this share of its people is past the limits."""
MISSED_ENOUGH = 0.001
"""A find-max step in which more than this share of the turns told were missed (the
person meant to move and their move did not count) is past the limits."""
MAX_STEPS = 40
AUDITS_AT_ONCE = 4
LOST_PATIENCE = 60.0
"""Seconds a hand may stay incomplete after the people left before it counts as lost
(the recorder catching up, a hand the bot plays on for an escapee)."""


def within_limits(
    p99_ms: float, cores: float | None, people: int, seated: int, told: int, missed: int
) -> bool:
    """Whether a find-max step's crowd was served within the limits: its p99 and the
    suite's cores (None: not read) within theirs, and its people seated and their
    turns answered (a suite that refuses people at its door or their moves once seated
    has not seated them, however fast it answers the rest)."""
    return (
        p99_ms <= MAX_P99_MS
        and (cores is None or cores <= MAX_CORES)
        and seated >= SEATED_ENOUGH * people
        and missed <= MISSED_ENOUGH * told
    )


@dataclass(frozen=True)
class CrowdOptions:
    people: int
    minutes: float
    ramp: float
    find_max: bool
    processes: int
    seed: int
    drain: float


CLIENT_ENV = (
    "DDZ_DATA_DIR",
    "DDZ_HOST",
    "DDZ_TABLE_ADDR",
    "DDZ_TABLE_PORT",
    "DDZ_TLS_CA",
    "DDZ_LOGIN_KEY",
    "DDZ_LOGIN_JWKS",
    "DDZ_INSECURE",
    "DDZ_RPC_TIMEOUT",
    "DDZ_MAX_MESSAGE_BYTES",
    "DDZ_SEAT_TOKEN_TTL",
)
"""What the people are told of the suite: where its table is, its CA, and the login key
that signs their player tokens (as the operator's login would); nothing else of it."""


def client_env(settings: Settings) -> dict[str, str]:
    env = settings_env(settings)
    return {name: env[name] for name in CLIENT_ENV if name in env}


Say = Callable[[str, int, int | None, str], None]
"""``say(what, done, total, unit)``: progress."""


class CrowdRun:
    def __init__(self, settings: Settings, options: CrowdOptions, say: Say) -> None:
        self.settings = settings
        self.options = options
        self.say = say
        self.report = CrowdReport(options.seed, options.people, options.processes)
        self.crowd = Crowd(PlanOfRun(client_env(settings), uuid.uuid4().hex[:6],
                                     options.seed, options.processes))  # fmt: skip
        self.usage = Usage(Path(settings.data_dir))
        self._started = 0.0
        self._minute_mark = 0.0

    def run(self) -> CrowdReport:
        self.crowd.start()
        self.usage.crowd_pids = self.crowd.pids
        self._started = self._minute_mark = time.monotonic()
        try:
            first = self.usage.sample()
            if self.options.find_max:
                self._find_max()
            else:
                self._steady(self.options.people)
            self._draining()
            self.crowd.stop(self.options.drain, on_wait=self._draining)
        except BaseException:
            self.crowd.kill()
            raise
        last = self.usage.sample()
        report = self.report
        totals = self.crowd.totals
        report.loadgen_cpu_s = report.loadgen_cpu_s or sum(self.crowd.cpu_seconds.values())
        report.refusals = dict(totals.refusals)
        report.turns = {what: totals.counts.get(what, 0) for what in COUNTS}
        report.move_all = [ms for _when, ms in totals.move]
        report.notice_all = [ms for _when, ms in totals.notice]
        if first is not None and last is not None:
            report.restarts = last.restarts - first.restarts
            report.gone = list(last.gone)
            report.suite_cpu_s_whole_run = last.suite_cpu - first.suite_cpu
            report.cpu_s_whole_run_by_service = {
                service: seconds - first.cpu.get(service, 0.0)
                for service, seconds in last.cpu.items()
            }
        self.say("auditing the hands played", 0, len(totals.hands), "hands")
        asyncio.run(self._audit())
        return report

    # -- holding a crowd -----------------------------------------------------------------

    def _hold(self, seconds: float, what: str) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.crowd.gather(min(1.0, left))
            self._minute_tick()
            totals = self.crowd.totals
            ended = len(totals.hands) - totals.hands_in_play
            self.say(
                f"{what}: {totals.seated_now}/{self.crowd.people} people seated, "
                f"{ended} hands ended",
                int(seconds - max(0.0, left)),
                int(seconds),
                "s",
            )

    def _draining(self) -> None:
        """While the people finish their hands: how many are still playing, in how many
        hands (a hand at human pace with turns left to the clock takes minutes)."""
        self._minute_tick()
        totals = self.crowd.totals
        self.say(
            f"people finishing their hands and leaving: {totals.people_now} still playing, "
            f"{totals.hands_in_play} hands in play",
            0, None, "",
        )  # fmt: skip

    def _minute_tick(self) -> None:
        now = time.monotonic()
        if now - self._minute_mark < 60:
            return
        window = self.crowd.totals.window(self._minute_mark, now)
        sample = self.usage.sample()
        self.report.minutes.append(Minute(
            minute=len(self.report.minutes) + 1, people=self.crowd.totals.people_now,
            seated=self.crowd.totals.seated_now,
            rss_mb=sample.rss_mb if sample is not None else {},
            move_p99_ms=window.move(0.99), turn_notice_p99_ms=window.notice(0.99),
            hands_ended=window.hands_ended,
        ))  # fmt: skip
        self._minute_mark = now

    def _measure(self, people: int) -> tuple[Window, Sample | None, Sample | None, int, float]:
        """Ramp to ``people``, then hold for the minutes asked: the window's figures, the
        suite's use at its ends, the people seated at its end and the crowd's CPU
        seconds in it."""
        self.crowd.grow(people, self.options.ramp)
        self._hold(self.options.ramp, f"{people} people arriving")
        before, since = self.usage.sample(), time.monotonic()
        crowd_before = self.usage.sample_crowd()
        self._hold(self.options.minutes * 60, f"{people} people playing")
        after, until = self.usage.sample(), time.monotonic()
        window = self.crowd.totals.window(since, until)
        crowd_cpu = self.usage.sample_crowd() - crowd_before
        return window, before, after, self.crowd.totals.seated_now, crowd_cpu

    def _record(self, window: Window, before: Sample | None, after: Sample | None,
                seated: int, crowd_cpu: float) -> None:  # fmt: skip
        report = self.report
        report.loadgen_cpu_s = crowd_cpu
        report.window, report.window_s = window, window.seconds
        report.hands_in_window, report.people_seated = window.hands_ended, seated
        if before is not None and after is not None:
            report.suite_cpu_s = after.suite_cpu - before.suite_cpu
            hands = max(1, window.hands_ended)
            report.cpu_by_service = {
                service: round((seconds - before.cpu.get(service, 0.0)) * 1000 / hands, 1)
                for service, seconds in sorted(after.cpu.items())
            }

    def _steady(self, people: int) -> None:
        self._record(*self._measure(people))

    def _find_max(self) -> None:
        report = self.report
        step_people = self.options.people
        counts = self.crowd.totals.counts
        for k in range(1, MAX_STEPS + 1):
            people = step_people * k
            told_before, missed_before = counts["told"], counts["missed"]
            window, before, after, seated, crowd_cpu = self._measure(people)
            told, missed = counts["told"] - told_before, counts["missed"] - missed_before
            cores = None
            if before is not None and after is not None:
                cores = (after.suite_cpu - before.suite_cpu) / max(1e-9, window.seconds)
            within = within_limits(window.worst_p99, cores, people, seated, told, missed)
            report.steps.append(Step(
                people, seated, window.move(0.99), window.notice(0.99),
                None if cores is None else round(cores, 3),
                round(window.hands_ended / max(1e-9, window.seconds), 3), within, missed,
            ))  # fmt: skip
            if within or k == 1:
                self._record(window, before, after, seated, crowd_cpu)
            if not within:
                break
            report.max_people = seated
        report.people = self.crowd.people
        if report.max_people is None:
            report.max_people = 0

    # -- afterwards --------------------------------------------------------------------

    async def _audit(self) -> None:
        """Every hand dealt to the people, audited; one still incomplete after
        ``LOST_PATIENCE`` is lost."""
        report, hands = self.report, self.crowd.totals.hands
        channel = make_channel(self.settings.calling, "recorder")
        stub = audit_pb2_grpc.AuditServiceStub(channel)  # type: ignore[no-untyped-call]
        gate = asyncio.Semaphore(AUDITS_AT_ONCE)
        verdicts: dict[str, audit_pb2.AuditHandResponse] = {}
        done = 0

        async def audit(hand_id: str) -> None:
            nonlocal done
            async with gate:
                try:
                    verdicts[hand_id] = await stub.AuditHand(
                        audit_pb2.AuditHandRequest(hand_id=hand_id), timeout=120
                    )
                except grpc.aio.AioRpcError:  # not stored at all: incomplete
                    verdicts[hand_id] = audit_pb2.AuditHandResponse(
                        hand_id=hand_id, verdict=INCOMPLETE
                    )
            done += 1
            self.say("auditing the hands played", done, len(hands), "hands")

        try:
            pending = list(hands)
            deadline = time.monotonic() + LOST_PATIENCE
            while pending:
                await asyncio.gather(*(audit(h) for h in pending))
                pending = [h for h in pending if verdicts[h].verdict == INCOMPLETE]
                if not pending or time.monotonic() > deadline:
                    break
                await asyncio.sleep(5)
        finally:
            await channel.close()
        counts = {"clean": 0, "failed": 0, "incomplete": 0}
        for hand_id, seen in hands.items():
            verdict = verdicts[hand_id]
            if verdict.verdict == audit_pb2.AUDIT_VERDICT_CLEAN:
                counts["clean"] += 1
                settled = seen == "settled" or any(c.name == "settlement" and c.passed
                                                   for c in verdict.checks)  # fmt: skip
                if settled:
                    report.hands_settled += 1
                else:
                    report.hands_ended_otherwise += 1
            elif verdict.verdict == audit_pb2.AUDIT_VERDICT_FAILED:
                counts["failed"] += 1
                report.audit_failures.append(
                    f"{hand_id}: {verdict.failed_check}: {verdict.message}"
                )
                report.hands_settled += seen == "settled"
            else:
                counts["incomplete"] += 1
                report.hands_lost += 1
                report.lost_ids.append(hand_id)
        report.hands_started = len(hands)
        report.audit = counts
