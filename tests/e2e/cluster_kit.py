"""A scaled suite that loses a NATS node and an instance of every service while bots play,
and nobody starts them again: ``Stack`` (the code behind ``ddz up --scale ...
--nats-cluster 3``) with two instances of every service on a three-node JetStream
cluster, and ``ddz simulate`` of every variant at once, run as a user runs it (given only
the data dir, it finds the stack in ``stack.json``).

    report = run_cluster(data_dir, Cluster(seed=7))
    report.problems()   # what went wrong, each line naming the seed; [] when all held

Once some hands are over and while every variant is still playing, each instance's
Prometheus endpoint is read (every instance of rules, dealer, settlement and bot did a
share of the work; one recorder writes, holding its lease, while the other stands by),
then the seed picks one NATS node and one instance of every service, which are killed
with SIGKILL and left dead. Afterwards: every simulate exited 0 with every hand played
and stored; the store holds each event once, every stream's versions without a gap,
every hand at its end (so the recorder standby took over if the writer died); ``ddz
audit --all`` is clean, ``ddz rebuild`` equals the live balances; the survivors still
run, the surviving recorder holds the writer's lease and the surviving bot every
partition; ``ddz status`` names exactly the victims as exited (exit code 1), and the dead
node's replica of the stream as not current.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chaos_kit import audit_all, audit_problems, check_store, cli, hands_over, kill, rebuild
from ddz.adapters.runtime.children import ServiceProcess
from ddz.adapters.runtime.stack import Stack
from ddz.adapters.runtime.stack_env import SERVICES
from ddz.config import Settings
from ddz.domain.ruleset import VARIANTS
from metrics_kit import Series, scrape, total

SEED_VARIABLE = "DDZ_CLUSTER_SEED"
INSTANCES = 2
NATS_NODES = 3
LOCAL_STACK = "no suite is running from"  # what a tool says before it starts its own
"""What ``ddz simulate`` says on stderr when it finds no stack and starts its own."""


RPC = "ddz_rpc_handled_total"
CONSUMED = "ddz_events_consumed_total"
DECISIONS = "ddz_decision_seconds_count"
LEASES = "ddz_leases_held"
TABLE_ACTIVE = "ddz_table_active"


@dataclass(frozen=True)
class Cluster:
    seed: int
    hands: int = 25
    """Hands of each variant (one ``ddz simulate`` per variant, all at once)."""
    tables: int = 1
    """Tables of each variant."""
    variants: tuple[str, ...] = tuple(sorted(VARIANTS))
    table_instances: int = INSTANCES
    kill_after: int = 12
    """Hands over (in the store) before the metrics are read and the kills strike."""
    share_by: int = 40
    """Hands over by which every instance must have had its share: the kills strike
    then even if one has not (and the run fails on it)."""
    budget: float = 150.0
    """Seconds from the stack answering to every simulate's end; one still playing then
    is killed and the run fails."""
    lease_ttl: float = 20.0
    """The default: a lease outlives the election of a new leader for the bucket's stream
    when its node dies (up to about 10 s, ``lease.ELECTION``); a dead holder of this host
    is replaced at once."""
    turn_timeout: float = 3.0
    reads_timeout: float = 60.0
    """Seconds ``ddz audit --all`` and ``ddz rebuild`` may take, each."""


@dataclass
class Simulate:
    """One ``ddz simulate`` process, its output in files under the data dir."""

    variant: str
    process: subprocess.Popen[bytes]
    out: Path
    err: Path
    exit: int | None = None
    figures: dict[str, str] = field(default_factory=dict)

    def stderr(self) -> str:
        return self.err.read_text(encoding="utf-8", errors="replace")


@dataclass
class ClusterReport:
    cluster: Cluster
    started_in: float = 0.0  # seconds the stack took to answer
    seconds: float = 0.0  # seconds of play, the stack answering to every simulate's end
    simulates: list[Simulate] = field(default_factory=list)
    over_at_kill: int = 0
    kill_at: float = 0.0  # seconds of play before the kills
    playing_at_kill: list[str] = field(default_factory=list)
    victims: list[str] = field(default_factory=list)
    before: dict[str, Series] = field(default_factory=dict)  # instance -> its metrics
    after: dict[str, Series] = field(default_factory=dict)  # survivors, after the run
    table_instances: int = INSTANCES
    bot_partitions: int = 1
    exited: list[str] = field(default_factory=list)  # children not running after the run
    store: dict[str, int] = field(default_factory=dict)
    store_problems: list[str] = field(default_factory=list)
    audit_exit: int | None = None
    audit: dict[str, object] = field(default_factory=dict)
    rebuild_exit: int | None = None
    rebuild_out: str = ""
    status_exit: int | None = None
    status: dict[str, Any] = field(default_factory=dict)  # ddz status --json
    logs: str = ""

    def problems(self) -> list[str]:
        seed = f"[{SEED_VARIABLE}={self.cluster.seed}]"
        found = [f"{seed} {p}" for p in self._problems()]
        if found:
            found.append(f"{seed} killed {self.victims} at {self.over_at_kill} hands over")
        return found

    def _problems(self) -> list[str]:
        found: list[str] = []
        cluster = self.cluster
        for run in self.simulates:
            name = f"ddz simulate --variant {run.variant}"
            if run.exit != 0:
                found.append(f"{name} exited {run.exit}: {run.stderr()[-2000:]}")
            if LOCAL_STACK in run.stderr():
                found.append(f"{name} did not find the running stack: {run.stderr()[-500:]}")
            if run.figures.get("hands") != str(cluster.hands):
                found.append(f"{name} played {run.figures} of {cluster.hands} hands")
            elif run.figures.get("events (internal included)") != run.figures.get(
                "events stored by the recorder"
            ):
                found.append(f"{name}: stored events differ from played: {run.figures}")
        if self.over_at_kill < cluster.kill_after:
            found.append(f"the kills struck at {self.over_at_kill} hands over, not after some")
        if sorted(self.playing_at_kill) != sorted(cluster.variants):
            found.append(f"only {self.playing_at_kill} were playing when the kills struck")
        found += self.share_problems()
        found += self.survivor_problems()
        found += self.store_problems
        if self.store.get("hands_started") != self.store.get("hands_over"):
            found.append(f"hands started but never over: {self.store}")
        found += audit_problems(self.audit_exit, self.audit)
        found += self.status_problems()
        if self.rebuild_exit != 0:
            found.append(f"ddz rebuild exited {self.rebuild_exit}: {self.rebuild_out}")
        return found

    def status_problems(self) -> list[str]:
        """What ``ddz status`` got wrong about the run's end: the victims dead for good."""
        if self.status_exit != 1 or "instances" not in self.status:
            return [f"ddz status exited {self.status_exit}: {str(self.status)[-1000:]}"]
        parts = {p["name"]: p for p in [*self.status["instances"], *self.status["nats"]]}
        exited = sorted(name for name, part in parts.items() if part["health"] == "EXITED")
        found = []
        if exited != sorted(self.victims):
            found.append(f"ddz status says {exited} exited, the victims were {self.victims}")
        stream = self.status["stream"] or {}
        peers = {peer["name"]: peer for peer in stream.get("peers", [])}
        for node in (v for v in self.victims if v.startswith("nats-")):
            if node not in peers or peers[node]["current"]:
                found.append(f"ddz status shows the dead {node}'s replica as {peers.get(node)}")
        return found

    def share_problems(self) -> list[str]:
        """What the metrics read before the kills say went wrong with sharing the work."""
        return share_problems(self.before, self.table_instances)

    def survivor_problems(self) -> list[str]:
        found: list[str] = []
        if sorted(self.exited) != sorted(self.victims):
            found.append(f"after the run {sorted(self.exited)} had exited, not the victims only")
        for name, series in self.after.items():
            service = name.rsplit("-", 1)[0]
            if service == "recorder" and total(series, LEASES, service="recorder") != 1:
                found.append(f"the surviving recorder {name} does not hold the writer's lease")
            partitions = total(series, LEASES, service="bot")
            if service == "bot" and partitions != self.bot_partitions:
                found.append(
                    f"the surviving bot {name} holds {partitions:g} of "
                    f"{self.bot_partitions} partitions"
                )
        return found

    def figures(self) -> str:
        hands = sum(int(run.figures.get("hands", "0")) for run in self.simulates)
        return (
            f"seed {self.cluster.seed}: stack up in {self.started_in:.1f} s, {hands} hands "
            f"({', '.join(self.cluster.variants)}) in {self.seconds:.1f} s; killed "
            f"{', '.join(self.victims)} at {self.over_at_kill} hands over, "
            f"{self.kill_at:.1f} s in"
        )


def work(service: str, series: Series) -> float:
    """How much of the suite's work an instance of ``service`` did, by its metrics."""
    if service == "rules":  # the table's moves and the bot's batches
        return sum(total(series, RPC, service="rules", method=m) for m in ("Decide", "DecideBatch"))
    if service == "dealer":
        return total(series, RPC, service="dealer", method="Deal")
    if service == "settlement":  # the durable the instances share
        return total(series, CONSUMED, durable="settlement")
    if service == "bot":
        return total(series, DECISIONS)
    raise ValueError(f"no share of work is measured for {service}")


def share_problems(before: dict[str, Series], table_instances: int) -> list[str]:
    found: list[str] = []
    by_service: dict[str, list[tuple[str, Series]]] = {}
    for name, series in before.items():
        by_service.setdefault(name.rsplit("-", 1)[0], []).append((name, series))
    for service in ("rules", "dealer", "settlement", "bot"):
        shares = {name: work(service, series) for name, series in by_service.get(service, [])}
        if len(shares) != INSTANCES or not all(shares.values()):
            found.append(f"{service}: not every instance did a share of the work: {shares}")
    recorders = by_service.get("recorder", [])
    held = {name: total(series, LEASES, service="recorder") for name, series in recorders}
    consumed = {name: total(series, CONSUMED, durable="recorder") for name, series in recorders}
    writers = [name for name, count in held.items() if count == 1]
    if len(recorders) != INSTANCES or len(writers) != 1 or sum(held.values()) != 1:
        found.append(f"recorder: not one writer and one standby: leases held {held}")
    elif consumed[writers[0]] == 0 or sum(consumed.values()) != consumed[writers[0]]:
        found.append(f"recorder: not the writer alone consumed: {consumed}")
    tables = by_service.get("table", [])
    if table_instances > 1:
        active = {name: total(series, TABLE_ACTIVE) for name, series in tables}
        if sorted(active.values()) != [0.0] * (len(tables) - 1) + [1.0]:
            found.append(f"table: not one active instance and standbys: {active}")
    return found


def victims(stack: Stack, seed: int) -> list[str]:
    """One NATS node and one instance of every service that has another, from the seed
    alone (a lone instance has nobody to take over from it)."""
    rng = random.Random(seed)
    nodes = [child.name for child in stack.children() if not child.service]
    picked = [rng.choice(nodes)]
    for service in stack.services:
        instances = stack.instances(service)
        if len(instances) > 1:
            picked.append(rng.choice(instances).name)
    return picked


FIGURE_ROW = re.compile(r"^\W\s*(\S.*?)\s+\W\s+(\S+)\s+\W$")


def status(stack: Stack) -> tuple[int, dict[str, Any]]:
    """``ddz status --json``: its exit code and what it said."""
    done = cli(stack, "status", "--json", timeout=120)
    try:
        said: dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        said = {"output": done.stdout[-1000:], "stderr": done.stderr[-1000:]}
    return done.returncode, said


def report_figures(text: str) -> dict[str, str]:
    """The rows of ``ddz simulate``'s table (``hands``, ``events stored by the recorder``
    ...): figure -> value."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        match = FIGURE_ROW.match(line.strip())
        if match:
            found[match.group(1)] = match.group(2)
    return found


def simulate(stack: Stack, variant: str, cluster: Cluster) -> Simulate:
    """``ddz simulate`` as a user on the machine runs it: no ``DDZ_*`` but the data dir
    (and a database URL, which a PostgreSQL store needs), so it must find the stack by
    ``stack.json``; without ``--json``, which would keep it from saying that it starts
    a stack of its own."""
    settings = stack.settings
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env["DDZ_DATA_DIR"] = str(settings.data_dir)
    if not settings.store.database_url.startswith("sqlite"):
        env["DDZ_DATABASE_URL"] = settings.store.database_url
    out = settings.data_dir / f"simulate-{variant}.out"
    err = settings.data_dir / f"simulate-{variant}.err"
    with out.open("wb") as stdout, err.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "ddz.entrypoints.cli", "simulate", "--variant", variant,
             "--hands", str(cluster.hands), "--tables", str(cluster.tables)],
            stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr, env=env,
        )  # fmt: skip
    return Simulate(variant, process, out, err)


def stop(process: subprocess.Popen[bytes], grace: float = 20.0) -> None:
    """End a ``ddz simulate``: Ctrl-C first, so that a stack it started of its own
    (its children in their own sessions) is stopped with it, then SIGKILL."""
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def metrics_of(stack: Stack, children: list[ServiceProcess]) -> dict[str, Series]:
    return {child.name: scrape(stack.metrics_address(child)) for child in children}


def run_cluster(data_dir: Path, cluster: Cluster, database_url: str | None = None) -> ClusterReport:
    env = {
        "DDZ_DATA_DIR": str(data_dir),
        "DDZ_LEASE_TTL": str(cluster.lease_ttl),
        "DDZ_TURN_TIMEOUT": str(cluster.turn_timeout),
    }
    if database_url:
        env["DDZ_DATABASE_URL"] = database_url
    settings = Settings.from_env(env)
    scale = {service: INSTANCES for service in SERVICES} | {"table": cluster.table_instances}
    report = ClusterReport(cluster, table_instances=cluster.table_instances)
    begun = time.monotonic()
    with Stack(settings, ephemeral_ports=True, scale=scale, nats_cluster=NATS_NODES) as stack:
        started = time.monotonic()
        report.started_in = started - begun
        report.bot_partitions = stack.settings.bot.bot_partitions
        deadline = started + cluster.budget
        report.simulates = [simulate(stack, v, cluster) for v in cluster.variants]
        try:
            services = list(stack.processes.values())
            while time.monotonic() < deadline:
                if any(run.process.poll() is not None for run in report.simulates):
                    break  # one ended (or failed) before the kills: no point waiting more
                over = hands_over(stack.settings)
                if over >= cluster.kill_after:
                    report.before = metrics_of(stack, services)
                    if over >= cluster.share_by or not report.share_problems():
                        break
                time.sleep(0.2)
            report.over_at_kill = hands_over(stack.settings)
            report.kill_at = time.monotonic() - started
            report.playing_at_kill = [
                r.variant for r in report.simulates if r.process.poll() is None
            ]
            report.victims = victims(stack, cluster.seed)
            for victim in report.victims:
                kill(stack, victim)
            for run in report.simulates:
                try:
                    run.exit = run.process.wait(timeout=max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    stop(run.process)
                    run.exit = None
                    with run.err.open("a", encoding="utf-8") as err:
                        err.write(
                            f"\n(still playing {cluster.budget:g} s after the stack answered)\n"
                        )
                run.figures = report_figures(run.out.read_text(encoding="utf-8", errors="replace"))
            report.seconds = time.monotonic() - started
            report.exited = [child.name for child in stack.children() if not child.running()]
            survivors = [child for child in services if child.running()]
            report.after = metrics_of(stack, survivors)
            report.store, report.store_problems = check_store(stack.settings)
            report.audit_exit, report.audit = audit_all(stack, timeout=cluster.reads_timeout)
            report.rebuild_exit, report.rebuild_out = rebuild(stack, timeout=cluster.reads_timeout)
            report.status_exit, report.status = status(stack)
            if report.problems():
                report.logs = "\n".join(
                    f"--- {c.name} ({c.log_file})\n{c.log_lines(15)}" for c in stack.children()
                )
        finally:  # a run cut short leaves no simulate (nor a stack it started) behind
            for run in report.simulates:
                if run.process.poll() is None:
                    stop(run.process)
    return report
