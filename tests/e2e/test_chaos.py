"""Nothing a crash can lose: seeded ``kill -9``s of every service and of nats-server
while bots play, each victim started again, and afterwards every hand over, every event
stored once without a version gap, the audit clean and the balances rebuilt equal
(``chaos_kit``). A failure names its seed: ``DDZ_CHAOS_SEED=<seed>`` replays its
schedule. The long run (marked slow) prints its figures for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from chaos_kit import VICTIMS, Chaos, run_chaos

SEED = int(os.environ.get("DDZ_CHAOS_SEED", "20261201"))


def test_a_dozen_kills_of_every_service_and_nats_lose_and_stall_nothing(
    tmp_path: Path,
) -> None:
    # Enough hands that play outlasts the first kill of each of the nine victims (each
    # kill, restart and recovery takes 2-4 s): 100 hands ended before the last of them.
    report = run_chaos(tmp_path, Chaos(seed=SEED, hands=160, tables=4, kills=12, gap=(0.2, 0.8)))
    print(report.figures())
    problems = report.problems()
    print(*problems, sep="\n")
    assert not problems, "\n".join([*problems, report.logs])
    # the first kill of each victim struck while hands were in play (chaos_kit.schedule)
    first = report.kills[: len(VICTIMS)]
    assert {k.victim for k in first} == set(VICTIMS), report.figures()
    assert all(k.during_play for k in first), report.figures()


@pytest.mark.slow
@pytest.mark.timeout(3600)  # the long run: ~5-10 min
def test_a_thousand_hands_through_a_hundred_kills(tmp_path: Path) -> None:
    report = run_chaos(tmp_path, Chaos(seed=SEED, hands=1000, tables=4, kills=100, gap=(0.2, 1.0)))
    print(report.figures())
    problems = report.problems()
    print(*problems, sep="\n")
    assert not problems, "\n".join([*problems, report.logs])
