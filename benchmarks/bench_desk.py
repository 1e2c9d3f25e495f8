"""The dispute desk's two questions, timed: a filtered search of the hand index, and a
hand page, with 100,000 hands indexed, on SQLite and PostgreSQL.

    .venv/bin/python benchmarks/bench_desk.py [--hands 100000] [--real 200] [--queries 100]
        [--postgres postgresql://postgres@127.0.0.1:5432/test]

The index: ``--real`` finished hands recorded as the services record them
(``ddz.audit.store.sample.record_hand``: signed events, signed heads, refusals, disconnects,
escapes) and indexed from the store (``rebuild_hand_index``, the recorder's fold), plus
bulk summaries up to ``--hands`` (2,000 players, 400 tables in 20 rooms, the four
variants, start times over 30 days, 4% with a bot playing for someone, 0.5% failed
audits), so every filter meets the index size it would in production.

A search is ``HandIndex.find`` (what ``DeskService.FindHands`` runs): each shape of
``/hands`` (a player; a player and an evening; a table; a room and a variant; an
evening; failed audits; a bot played for someone; an outcome; a player's second page)
``--queries`` times with random values. A hand page is what ``/hands/<id>`` costs the
services: the recorder's ``ReadStream`` and ``AuditHand`` (the store read, ``audit_hand``:
every check, the replay included) and ``GetHandSummary``, then the console's page: the
audit's account of the stream for the desk's sight (``handlers.hand_view``:
``ddz.audit``'s timeline and the table after event 12) rendered (Jinja2); gRPC and
TLS are not in it (about a millisecond each on loopback, docs/BENCHMARKS_HISTORY.md, "zero
trust"). p50, p95 and max per shape.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import sqlalchemy as sa
from ddz.adapters.service_db import upgrade_service_db
from ddz.adapters.service_db.hand_index import HandFilter, HandIndex, rebuild_hand_index
from ddz.adapters.service_db.schema import hand_players, hand_summaries
from ddz.adapters.store import SqlEventStore, create_store, make_engine
from ddz.adapters.store.keys import Keyring
from ddz.audit import audit_hand
from ddz.audit.store.sample import Mischief, SampleKeys, record_hand
from ddz.audit.store.source import load_hand
from ddz.domain.ruleset import VARIANTS

from services.console.servicer import templates
from services.console.use_cases.handlers import hand_view
from services.console.use_cases.session import Staff

KEY = b"bench-desk-key"
DAY = 86400.0
NOW = 1_796_000_000.0  # a fixed "now": the same corpus every run


def bulk_summaries(store: SqlEventStore, count: int, rng: random.Random) -> None:
    players = [f"player-{i:04d}" for i in range(2000)]
    tables = [(f"table-{i:03d}", f"room-{i % 20:02d}") for i in range(400)]
    variants = sorted(VARIANTS)
    outcomes = ["landlord"] * 6 + ["farmers"] * 4 + ["in_play"] * 0 + ["no_winner"]
    summaries, seats = [], []
    for n in range(count):
        hand_id = uuid.UUID(int=rng.getrandbits(128)).hex
        table, room = rng.choice(tables)
        started = NOW - rng.random() * 30 * DAY
        summaries.append({
            "hand_id": hand_id, "table_id": table, "room": room,
            "variant": variants[n % len(variants)], "started_at": started,
            "ended_at": started + 60 + rng.random() * 240, "outcome": rng.choice(outcomes),
            "landlord": rng.randrange(3), "multiplier": 2 ** rng.randrange(6),
            "bot_for_person": rng.random() < 0.04,
            "audit": "failed" if rng.random() < 0.005 else "clean", "audit_detail": "",
            "events": 20 + rng.randrange(30),
        })  # fmt: skip
        for seat, player in enumerate(rng.sample(players, 3)):
            seats.append({"hand_id": hand_id, "seat": seat, "player_id": player,
                          "is_bot": False, "delta": rng.randrange(-40, 40),
                          "started_at": started})  # fmt: skip
    with store.engine.begin() as conn:
        for start in range(0, len(summaries), 5000):
            conn.execute(sa.insert(hand_summaries), summaries[start : start + 5000])
        for start in range(0, len(seats), 15000):
            conn.execute(sa.insert(hand_players), seats[start : start + 15000])


def shapes(rng: random.Random, index: HandIndex) -> dict[str, Callable[[], object]]:
    def player() -> str:
        return f"player-{rng.randrange(2000):04d}"

    def evening() -> tuple[float, float]:
        start = NOW - rng.randrange(30) * DAY - 5 * 3600
        return start, start + 4 * 3600

    def second_page() -> object:
        wanted = HandFilter(player=player())
        first = index.find(wanted, limit=20)
        last = first[-1] if first else None
        if last is None or last.started_at is None:
            return first
        return index.find(wanted, limit=20, before=(last.started_at, last.hand_id))

    return {
        "player": lambda: index.find(HandFilter(player=player())),
        "player + evening": lambda: index.find(
            HandFilter(player=player(), since=(e := evening())[0], until=e[1])
        ),
        "table": lambda: index.find(HandFilter(table_id=f"table-{rng.randrange(400):03d}")),
        "room + variant": lambda: index.find(
            HandFilter(room=f"room-{rng.randrange(20):02d}", variant=rng.choice(sorted(VARIANTS)))
        ),
        "evening": lambda: index.find(HandFilter(since=(e := evening())[0], until=e[1])),
        "failed audit": lambda: index.find(HandFilter(failed_audit=True)),
        "bot for someone": lambda: index.find(
            HandFilter(bot_for_person=True, room=f"room-{rng.randrange(20):02d}")
        ),
        "outcome + evening": lambda: index.find(
            HandFilter(outcome="farmers", since=(e := evening())[0], until=e[1])
        ),
        "player, page 2": second_page,
    }


def hand_page(store: SqlEventStore, index: HandIndex, keys: Keyring, hand_id: str,
              render: Callable[..., str]) -> str:  # fmt: skip
    """What opening ``/hands/<id>`` asks of the recorder and then of the console."""
    stored = store.read_stream(f"hand-{hand_id}")  # ReadStream
    record = load_hand(store, hand_id)  # AuditHand
    assert record is not None
    report = audit_hand(record.events, keys, record.signatures)
    summary = index.get(hand_id)  # GetHandSummary
    # the console: the audit's account of what it read (ddz.audit's timeline and state_at)
    page = hand_view(hand_id, [e.envelope for e in stored], report.checks, report.key_id,
                     None, at=12, view=None)  # fmt: skip
    return render(staff=Staff("bench", "support", 0), hand=page, account=page.timeline,
                  table=page.table, summary=summary)  # fmt: skip


def timed(call: Callable[[], object], runs: int) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of each of ``runs`` calls (this process's CPU: on SQLite
    the query's work too, on PostgreSQL not the server's)."""
    call()  # warm: caches, the planner, the connection pool
    wall, cpu = [], []
    for _ in range(runs):
        started, used = time.perf_counter(), time.process_time()
        call()
        wall.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - used) * 1000)
    return wall, cpu


def p95(ms: list[float]) -> float:
    return statistics.quantiles(ms, n=20)[18] if len(ms) >= 20 else max(ms)


def line(name: str, times: tuple[list[float], list[float]]) -> str:
    wall, cpu = times
    return (f"  {name:<18} wall p50 {statistics.median(wall):6.1f} p95 {p95(wall):6.1f} "
            f"max {max(wall):6.1f} ms | cpu p50 {statistics.median(cpu):6.1f} "
            f"p95 {p95(cpu):6.1f} ms")  # fmt: skip


def load() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def run(url: str, label: str, args: argparse.Namespace) -> None:
    rng = random.Random(f"bench-desk-{args.hands}")
    store = create_store(url, upgrade=True)
    upgrade_service_db(store.engine)
    index = HandIndex(store.engine)
    producers = SampleKeys.generate()
    started = time.perf_counter()
    variants = sorted(VARIANTS)
    for n in range(args.real):
        record_hand(store, VARIANTS[variants[n % 4]], rng, signers=producers, key=KEY,
                    odds=Mischief(refuse=0.08, disconnect=0.02, escape=0.005))  # fmt: skip
    rebuild_hand_index(store, index)
    real = [h.hand_id for h in index.find(HandFilter(), limit=200)]
    bulk_summaries(store, args.hands - args.real, rng)
    if store.engine.dialect.name == "postgresql":
        with make_engine(url, isolation_level="AUTOCOMMIT").connect() as conn:
            for table in ("hand_summaries", "hand_players", "events"):
                conn.exec_driver_sql(f"VACUUM ANALYZE {table}")
    index.optimize()  # as the recorder's writer does every ANALYZE_EVERY seconds
    with store.engine.connect() as conn:
        indexed = conn.execute(sa.select(sa.func.count()).select_from(hand_summaries)).scalar()
    print(f"{label}: {indexed} hands indexed ({args.real} recorded in full), built in "
          f"{time.perf_counter() - started:.0f} s", flush=True)  # fmt: skip
    print(f"  (load average {load()} on {os.cpu_count()} cores)", flush=True)
    for name, call in shapes(rng, index).items():
        print(line(name, timed(call, args.queries)), flush=True)
    template = templates().get_template("hand.html")
    keys = Keyring.of_hmac(KEY, "k1").with_events(producers.keyring)
    pages = iter(real * (args.queries // len(real) + 2))
    times = timed(lambda: hand_page(store, index, keys, next(pages), template.render),
                  args.queries)  # fmt: skip
    print(line("hand page", times), flush=True)
    print(f"  (load average {load()})", flush=True)
    store.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=100_000)
    parser.add_argument("--real", type=int, default=200)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--postgres", default="", help="a PostgreSQL URL (a schema is made)")
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, "
          f"{args.hands} hands, {args.queries} queries per shape", flush=True)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        run(f"sqlite:///{Path(tmp) / 'desk.sqlite3'}", "SQLite", args)
    if args.postgres:
        schema = f"ddz_bench_{uuid.uuid4().hex[:8]}"
        admin = make_engine(args.postgres)
        with admin.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        url = (sa.make_url(args.postgres)
               .update_query_dict({"options": f"-csearch_path={schema}"})
               .render_as_string(hide_password=False))  # fmt: skip
        try:
            run(url, "PostgreSQL", args)
        finally:
            with admin.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            admin.dispose()
    return 0


if __name__ == "__main__":
    sys.exit(main())
