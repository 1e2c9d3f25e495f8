"""``ddz audit --all`` throughput in hands/s, from SQLite and from PostgreSQL.

    .venv/bin/python benchmarks/bench_audit.py [--hands 1000] [--workers 2] [--runs 3]
        [--postgres postgresql://postgres@127.0.0.1:5432/test] [--corpus PATH]

The corpus: ``--hands`` finished hands, the four variants in equal shares, recorded
as the services record them (``ddz.audit.store.sample.record_hand``: random players, about
8% refused commands, disconnects, bean-room escapes; every decision appended as its
envelopes, each signed by its producer's key, the head signed). It is written once to a
SQLite file (``--corpus``, kept for later runs, with the producers' public keyring
beside it: ``<corpus>.event-keyring.json``, which every run audits with; a corpus
without one is from before events were signed and is built again) and, with
``--postgres``, copied row for row (same bytes, same hashes)
into a fresh schema of that database (then ``VACUUM ANALYZE``d, as autovacuum keeps a
live store), dropped afterwards.

Each run is the real command in a subprocess, ``ddz audit --all --json --workers K``,
against each store; its own figure (hands / wall seconds, worker start-up included)
is reported, best and median of the runs, and the CPU seconds the command and its
workers used beyond a one-hand run's (``hands per CPU-second``: the rate one core
sustains, which does not depend on what else the machine is running; on an idle
machine the command reaches about cores x that figure).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import sqlalchemy as sa
from ddz.adapters.store import create_store, make_engine
from ddz.adapters.store.schema import events, stream_signatures
from ddz.audit.store.sample import Mischief, SampleKeys, record_hand
from ddz.domain.ruleset import VARIANTS

KEY = "bench-audit-key"
ODDS = Mischief(refuse=0.08, disconnect=0.02, escape=0.005)


def keyring_of(corpus: Path) -> Path:
    """The producers' public keyring the corpus's events are signed under."""
    return corpus.with_suffix(".event-keyring.json")


def build_corpus(path: Path, hands: int) -> None:
    """``hands`` hands into a new SQLite store at ``path`` (a temporary name first, so
    an interrupted build is never taken for a corpus), signed by producers' keys made
    for it, whose public keyring is written beside it."""
    partial = path.with_suffix(".partial")
    for leftover in path.parent.glob(partial.name + "*"):
        leftover.unlink()
    path.unlink(missing_ok=True)
    keyring_of(path).unlink(missing_ok=True)
    producers = SampleKeys.generate()
    store = create_store(f"sqlite:///{partial}", upgrade=True)
    rng = random.Random(f"bench-audit-{hands}")
    variants = sorted(VARIANTS)
    started = time.perf_counter()
    for index in range(hands):
        rules = VARIANTS[variants[index % len(variants)]]
        record_hand(store, rules, rng, signers=producers, key=KEY.encode(), odds=ODDS)
        if (index + 1) % 100 == 0:
            print(f"  corpus: {index + 1}/{hands} hands", file=sys.stderr, flush=True)
    store.close()
    producers.publish(keyring_of(path))
    partial.rename(path)
    print(f"  corpus built in {time.perf_counter() - started:.0f} s", file=sys.stderr)


def copy_to_postgres(corpus: Path, base_url: str) -> tuple[str, str]:
    """The corpus's rows and signatures, byte for byte, in a new schema; (url, schema)."""
    schema = f"ddz_bench_{uuid.uuid4().hex[:8]}"
    admin = make_engine(base_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
    admin.dispose()
    url = (
        sa.make_url(base_url)
        .update_query_dict({"options": f"-csearch_path={schema}"})
        .render_as_string(hide_password=False)
    )
    source = create_store(f"sqlite:///{corpus}")
    target = create_store(url, upgrade=True)
    with source.engine.connect() as read, target.engine.begin() as write:
        rows = [dict(row._mapping) for row in read.execute(sa.select(events))]
        for start in range(0, len(rows), 5000):
            write.execute(sa.insert(events), rows[start : start + 5000])
        signatures = [
            {k: v for k, v in row._mapping.items() if k != "id"}
            for row in read.execute(sa.select(stream_signatures))
        ]
        write.execute(sa.insert(stream_signatures), signatures)
    source.close()
    target.close()
    # As a live store is, by autovacuum: planner statistics and the visibility map. A
    # table just bulk-loaded has neither, and autovacuum would analyze it in the middle
    # of the runs instead.
    maintenance = make_engine(url, isolation_level="AUTOCOMMIT")  # VACUUM: no transaction
    with maintenance.connect() as conn:
        conn.exec_driver_sql("VACUUM ANALYZE events")
        conn.exec_driver_sql("VACUUM ANALYZE stream_signatures")
    maintenance.dispose()
    return url, schema


def drop_schema(base_url: str, schema: str) -> None:
    admin = make_engine(base_url)
    with admin.begin() as conn:
        conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
    admin.dispose()


@dataclasses.dataclass
class Run:
    hands_per_s: float
    seconds: float
    cpu_seconds: float
    report: dict[str, object]


def audit_all(database_url: str, keyring: Path, workers: int, limit: int | None = None) -> Run:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env.update(
        {"DDZ_DATABASE_URL": database_url, "DDZ_AUDIT_KEY": KEY, "DDZ_EVENT_KEYRING": str(keyring)}
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "audit", "--all", "--json",
         "--workers", str(workers), *(["--limit", str(limit)] if limit else [])],
        capture_output=True, text=True, env=env, timeout=3600,
    )  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(
            f"ddz audit --all failed ({done.returncode}): {done.stderr or done.stdout}"
        )
    report = json.loads(done.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(float(report["hands_per_s"]), float(report["seconds"]), cpu, report)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hands", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("DDZ_TEST_DATABASE_URL", ""))
    parser.add_argument("--corpus", type=Path, default=None)
    args = parser.parse_args()

    corpus = args.corpus or Path(f"/tmp/ddz-bench-audit-{args.hands}.sqlite3")
    if not (corpus.exists() and keyring_of(corpus).exists()):
        build_corpus(corpus, args.hands)
    stores = [("SQLite", f"sqlite:///{corpus}")]
    schema = ""
    if args.postgres:
        url, schema = copy_to_postgres(corpus, args.postgres)
        stores.append(("PostgreSQL", url))
    try:
        rows = []
        for name, url in stores:
            # the command's fixed cost (interpreter, imports, pool): one hand's run
            fixed = audit_all(url, keyring_of(corpus), args.workers, limit=1).cpu_seconds
            runs = [audit_all(url, keyring_of(corpus), args.workers) for _ in range(args.runs)]
            first = runs[0].report
            assert first["clean"] == first["hands"] == args.hands, first
            rates = [r.hands_per_s for r in runs]
            cpu = statistics.median(r.cpu_seconds for r in runs) - fixed
            rows.append(
                (name, first["hands"], first["events"], max(rates), statistics.median(rates),
                 (args.hands - 1) / cpu, first["by_rules"])
            )  # fmt: skip
    finally:
        if schema:
            drop_schema(args.postgres, schema)

    load = os.getloadavg()
    print(
        f"# ddz audit --all --workers {args.workers}, {args.runs} runs per store; "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} cores, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}"
    )
    print(
        f"{'store':<11} {'hands':>6} {'events':>7} {'best hands/s':>13} "
        f"{'median hands/s':>15} {'hands per CPU-s':>16}"
    )
    for name, hands, n_events, best, median, per_cpu, _ in rows:
        print(
            f"{name:<11} {hands:>6} {n_events:>7} {best:>13,.0f} {median:>15,.0f} {per_cpu:>16,.0f}"
        )
    print(f"corpus: {corpus} ({rows[0][6]})")


if __name__ == "__main__":
    main()
