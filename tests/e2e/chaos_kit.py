"""A seeded chaos run against the suite as an operator runs it: every service its own
process (``Stack``, the code behind ``ddz up``) on a real nats-server with its file
store, SQLite, and ``ddz simulate`` playing bots at several tables while ``kill -9``s
hit every service and nats-server itself, each victim started again 0.2–1.5 s later.

    report = run_chaos(data_dir, Chaos(seed=7, hands=100, tables=4, kills=12))
    report.problems()   # what went wrong, each line naming the seed; [] when all held

The schedule (victims, gaps, downtimes) comes from the seed alone, so a failing run is
replayed with ``DDZ_CHAOS_SEED=<seed>``. Every victim is hit once before any is hit
twice. After the run: the driving client exited 0 with every hand played; the store
holds each event once, every stream's versions without a gap, every hand at its end;
``ddz audit --all`` is clean and ``ddz rebuild`` equals the live balances. Those checks
(``check_store``, ``audit_all``, ``rebuild``) and ``kill`` serve ``cluster_kit`` too.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy as sa
from ddz.adapters.runtime.probes import SERVING, health_status
from ddz.adapters.runtime.stack import NATS, Stack
from ddz.adapters.runtime.stack_env import SERVICES
from ddz.adapters.store import make_engine
from ddz.adapters.store.schema import events
from ddz.config import Settings

VICTIMS: tuple[str, ...] = (*SERVICES, NATS)
RECOVERY_LIMIT = 60.0
"""A suite not SERVING again this long after a kill is a failure of its own."""


@dataclass(frozen=True)
class Chaos:
    seed: int
    hands: int = 100
    tables: int = 4
    kills: int = 12
    variant: str = "classic"
    first_kill_after: float = 1.0
    """Seconds after the first hand ended before the first kill (hands are in play)."""
    gap: tuple[float, float] = (0.3, 1.5)
    """Seconds between the suite answering again and the next kill."""
    downtime: tuple[float, float] = (0.2, 1.5)
    """Seconds a victim stays dead before it is started again."""
    turn_timeout: float = 3.0


@dataclass(frozen=True)
class Kill:
    victim: str
    gap: float
    downtime: float


def schedule(chaos: Chaos) -> list[Kill]:
    """The kills of a run, from its seed alone: every victim once (shuffled), then
    random ones."""
    rng = random.Random(chaos.seed)
    victims = list(VICTIMS)
    rng.shuffle(victims)
    victims = victims[: chaos.kills]
    victims += [rng.choice(VICTIMS) for _ in range(chaos.kills - len(victims))]
    return [Kill(v, rng.uniform(*chaos.gap), rng.uniform(*chaos.downtime)) for v in victims]


@dataclass
class KillRecord:
    victim: str
    at: float  # seconds since the client started
    recovered_after: float | None  # kill -> every service SERVING again; None = never
    during_play: bool  # the client was still playing when it struck


@dataclass
class ChaosReport:
    chaos: Chaos
    kills: list[KillRecord] = field(default_factory=list)
    client_exit: int | None = None
    client_out: str = ""
    client_err: str = ""
    seconds: float = 0.0
    simulated: dict[str, int] = field(default_factory=dict)
    store: dict[str, int] = field(default_factory=dict)
    store_problems: list[str] = field(default_factory=list)
    audit: dict[str, object] = field(default_factory=dict)
    audit_exit: int | None = None
    rebuild_exit: int | None = None
    rebuild_out: str = ""
    logs: str = ""

    def recoveries(self) -> list[float]:
        return [k.recovered_after for k in self.kills if k.recovered_after is not None]

    def percentile(self, q: float) -> float:
        times = sorted(self.recoveries())
        if not times:
            return float("nan")
        if len(times) == 1:
            return times[0]
        return statistics.quantiles(times, n=100, method="inclusive")[int(q) - 1]

    def problems(self) -> list[str]:
        seed = f"[DDZ_CHAOS_SEED={self.chaos.seed}]"
        found: list[str] = []
        never = [k.victim for k in self.kills if k.recovered_after is None]
        if never:
            found.append(f"{seed} the suite did not answer again after killing {never}")
        if self.client_exit != 0:
            found.append(
                f"{seed} ddz simulate exited {self.client_exit}: {self.client_err[-2000:]}"
            )
        if self.simulated.get("hands") != self.chaos.hands:
            found.append(f"{seed} ddz simulate played {self.simulated} of {self.chaos.hands}")
        elif self.simulated.get("events") != self.simulated.get("stored_events"):
            found.append(f"{seed} stored events differ from played: {self.simulated}")
        found += [f"{seed} {p}" for p in self.store_problems]
        if self.store.get("hands_started") != self.store.get("hands_over"):
            found.append(f"{seed} hands started but never over: {self.store}")
        found += [f"{seed} {p}" for p in audit_problems(self.audit_exit, self.audit)]
        if self.rebuild_exit != 0:
            found.append(f"{seed} ddz rebuild exited {self.rebuild_exit}: {self.rebuild_out}")
        if found:
            found.append(f"{seed} kills: {[(k.victim, round(k.at, 1)) for k in self.kills]}")
        return found

    def figures(self) -> str:
        return (
            f"seed {self.chaos.seed}: {self.simulated.get('hands', 0)} hands at "
            f"{self.chaos.tables} tables in {self.seconds:.1f} s, {len(self.kills)} kills "
            f"({sum(k.during_play for k in self.kills)} while hands were in play; "
            f"{', '.join(f'{v} {sum(k.victim == v for k in self.kills)}' for v in VICTIMS)}), "
            f"recovery p50 {self.percentile(50):.2f} s, p99 {self.percentile(99):.2f} s"
        )


def all_serving(stack: Stack) -> bool:
    return all(
        health_status(stack.settings.network.address(name), 0.5, settings=stack.settings.calling)
        == SERVING
        for name in stack.services
    )


def wait_serving(stack: Stack, since: float) -> float | None:
    """Seconds from ``since`` until every service answers SERVING (None: not within
    ``RECOVERY_LIMIT``)."""
    deadline = since + RECOVERY_LIMIT
    while time.monotonic() < deadline:
        if all_serving(stack):
            return time.monotonic() - since
        time.sleep(0.05)
    return None


def kill(stack: Stack, victim: str) -> None:
    """SIGKILL the child named ``victim`` (``rules-2``, ``nats-1`` ...) and reap it."""
    child = next(c for c in stack.children() if c.name == victim)
    with contextlib.suppress(ProcessLookupError):
        os.kill(child.process.pid, signal.SIGKILL)
    child.process.wait()


def hands_over(settings: Settings) -> int:
    """Hands the store holds to their end (a ``seed_revealed``), 0 while it cannot say."""
    engine = make_engine(settings.store.database_url)
    try:
        with engine.connect() as connection:
            return int(
                connection.execute(
                    sa.select(sa.func.count()).where(events.c.type == "seed_revealed")
                ).scalar_one()
            )
    except sa.exc.SQLAlchemyError:
        return 0  # the store is not there yet, or busy
    finally:
        engine.dispose()


def cli(stack: Stack, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``ddz <args>`` in a process of its own, with the stack's environment."""
    return subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", *args],
        capture_output=True, text=True, env=stack.child_env(), timeout=timeout,
    )  # fmt: skip


def audit_all(stack: Stack, timeout: float = 300) -> tuple[int, dict[str, object]]:
    """``ddz audit --all``: its exit code and its JSON verdict (or what it printed)."""
    audit = cli(stack, "audit", "--all", "--json", "--workers", "2", timeout=timeout)
    try:
        verdict: dict[str, object] = json.loads(audit.stdout)
    except ValueError:
        verdict = {"output": audit.stdout[-1000:], "stderr": audit.stderr[-1000:]}
    return audit.returncode, verdict


def rebuild(stack: Stack, timeout: float = 300) -> tuple[int, str]:
    """``ddz rebuild`` (balances from the events vs settlement's): exit code, output."""
    done = cli(stack, "rebuild", "--json", timeout=timeout)
    return done.returncode, done.stdout[-1000:]


def audit_problems(exit_code: int | None, verdict: dict[str, object]) -> list[str]:
    """What is wrong with an ``audit_all`` answer ([] when the audit is clean)."""
    if exit_code != 0 or verdict.get("failed") != 0 or verdict.get("incomplete"):
        return [f"ddz audit --all exited {exit_code}: {verdict}"]
    return []


def run_chaos(data_dir: Path, chaos: Chaos) -> ChaosReport:
    settings = Settings.from_env(
        {"DDZ_DATA_DIR": str(data_dir), "DDZ_TURN_TIMEOUT": str(chaos.turn_timeout)}
    )
    report = ChaosReport(chaos)
    with Stack(settings, ephemeral_ports=True, nats_port=0) as stack:
        started = time.monotonic()
        client = subprocess.Popen(
            [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--json",
             "--variant", chaos.variant, "--hands", str(chaos.hands),
             "--tables", str(chaos.tables)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=stack.child_env(),
        )  # fmt: skip
        output: dict[str, str] = {}

        def drain() -> None:
            output["out"], output["err"] = client.communicate()

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        while hands_over(stack.settings) == 0 and client.poll() is None:
            time.sleep(0.1)
        time.sleep(chaos.first_kill_after)
        for planned in schedule(chaos):
            at = time.monotonic()
            during_play = client.poll() is None
            kill(stack, planned.victim)
            time.sleep(planned.downtime)
            stack.restart(planned.victim)
            recovered = wait_serving(stack, at)
            report.kills.append(KillRecord(planned.victim, at - started, recovered, during_play))
            if recovered is None:
                break
            time.sleep(planned.gap)
        reader.join(timeout=600)
        if client.poll() is None:
            client.kill()
            reader.join()
        report.seconds = time.monotonic() - started
        report.client_exit = client.returncode
        report.client_out, report.client_err = output.get("out", ""), output.get("err", "")
        try:
            report.simulated = json.loads(report.client_out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            report.simulated = {}
        report.store, report.store_problems = check_store(stack.settings)
        report.audit_exit, report.audit = audit_all(stack)
        report.rebuild_exit, report.rebuild_out = rebuild(stack)
        if report.problems():
            report.logs = "\n".join(
                f"--- {c.name} ({c.log_file})\n{c.log_lines(15)}" for c in stack.children()
            )
    return report


def check_store(settings: Settings) -> tuple[dict[str, int], list[str]]:
    """Each event once, every stream's versions 1..n, every hand dealt also over: the
    store's figures (events, streams, hands started and over) and what is wrong."""
    engine = make_engine(settings.store.database_url)
    try:
        with engine.connect() as connection:
            rows = connection.execute(
                sa.select(events.c.event_id, events.c.stream_id, events.c.stream_version,
                          events.c.type).order_by(events.c.position)
            ).all()  # fmt: skip
    finally:
        engine.dispose()
    problems: list[str] = []
    ids = [row.event_id for row in rows]
    if len(set(ids)) != len(ids):
        problems.append(f"{len(ids) - len(set(ids))} events stored twice")
    versions: dict[str, list[int]] = {}
    for row in rows:
        versions.setdefault(row.stream_id, []).append(row.stream_version)
    for stream, seen in versions.items():
        if sorted(seen) != list(range(1, len(seen) + 1)):
            problems.append(f"{stream}: versions {seen} have a gap or a repeat")
    hand_streams = {s for s in versions if s.startswith("hand-")}
    over = {row.stream_id for row in rows if row.type == "seed_revealed"}
    figures = {
        "events": len(rows),
        "streams": len(versions),
        "hands_started": len(hand_streams),
        "hands_over": len(over & hand_streams),
    }
    return figures, problems
