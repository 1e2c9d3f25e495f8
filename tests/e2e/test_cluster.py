"""Nothing lost when instances die for good: two instances of every service on a
three-node NATS cluster, bots playing every variant through ``ddz simulate``, and mid-run
one NATS node and one instance of every service killed with SIGKILL and never started
again (``cluster_kit``). Before the kills each instance's metrics show it did its share
(one recorder writing, the other standing by); afterwards every hand is over, every
event stored once without a version gap, the audit clean and the balances rebuilt equal.
A failure names its seed: ``DDZ_CLUSTER_SEED=<seed>`` picks the same victims again.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from cluster_kit import SEED_VARIABLE, Cluster, run_cluster

SEED = int(os.environ.get(SEED_VARIABLE, "20261202"))
TIME_BUDGET = 150.0
"""Seconds of play (stack answering to the last simulate's end); with the stack's start
and the audit the test stays under three minutes on two cores."""
TABLE_INSTANCES = 2  # one active, one standby forwarding to it (either may be the victim)
HANDS_PER_VARIANT = 25  # x 4 variants: 100 hands

# PostgreSQL when DDZ_TEST_DATABASE_URL is set (CI), else SQLite: one run, not both.
STORE = (
    [pytest.param("postgres", marks=pytest.mark.postgres)]
    if os.environ.get("DDZ_TEST_DATABASE_URL", "").strip()
    else ["sqlite"]
)


@pytest.mark.parametrize("database_url", STORE, indirect=True)
def test_a_nats_node_and_an_instance_of_every_service_killed_for_good_lose_nothing(
    tmp_path: Path, database_url: str
) -> None:
    cluster = Cluster(
        seed=SEED, hands=HANDS_PER_VARIANT, table_instances=TABLE_INSTANCES, budget=TIME_BUDGET
    )
    try:
        report = run_cluster(tmp_path / "ddz", cluster, database_url)
    except Exception as exc:  # the stack did not start, a CLI hung: still name the seed
        raise AssertionError(f"[{SEED_VARIABLE}={SEED}] {exc!r}") from exc
    print(report.figures())
    problems = report.problems()
    print(*problems, sep="\n")
    assert not problems, "\n".join([*problems, report.logs])
