"""The shipped alert rules (deploy/prometheus/alerts.yaml) fire on the faults the chaos
test makes, as a real suite exports them: a stack of real processes plays hands while
a tiny Prometheus (``prometheus_kit.Scraper``) scrapes every instance each second; then
an event signed by a key not in the keyring is published with the rules' NATS
credentials, the settlement service is killed (SIGKILL) and started again three times,
the dealer is killed and left down, and nats-server is killed and left down before it
is started again. What was scraped is written as a ``promtool test rules`` file that
expects DdzEventsRefused, DdzRestartLoop, DdzServiceDown, DdzNatsUnreachable and
DdzNatsNodeLost to fire after their fault (with their labels and words) and none of
them while the suite was well, and promtool runs it against the shipped rules.

Time is scaled: each scrape, one second apart here, is written as one scrape of the
shipped Prometheus (``scrape_interval: 15s`` in deploy/prometheus/prometheus.yml), with
the rules evaluated at each. The series are then those of a suite whose faults last
fifteen times as long: a fault held for eight scrapes is two minutes down, three
restarts in a dozen scrapes are three in three minutes. That is faithful for these
rules: they read states held over so many scrapes (``up``, ``ddz_nats_connected``),
changes of a value (the start time), and increases of counters within a window of so
many scrapes, never how fast a counter rises against the clock.
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from chaos_kit import kill, wait_serving
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ddz.adapters import codec
from ddz.adapters.messaging import nats_auth
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.nats_auth import connect_options
from ddz.adapters.messaging.server import MSG_ID
from ddz.adapters.messaging.subjects import subject_for
from ddz.adapters.runtime.stack import NATS, Stack
from ddz.adapters.security.event_signing import EventSigner
from ddz.adapters.store import create_store
from ddz.config import Settings
from ddz.domain.ruleset import VARIANTS
from ddz.loadgen.driver import Driver
from ddz.v1 import envelope_pb2
from prometheus_kit import Check, Scraper, Target, rule_test_file, targets
from promql_kit import RULES, promtool

EVERY = 1.0
"""Seconds between two scrapes here."""
INTERVAL = 15
"""Seconds of promtool's time per scrape: the shipped Prometheus's scrape_interval."""
HELD = 8
"""Scrapes a lasting fault is held for: two minutes at INTERVAL, past a ``for: 1m``."""
FOR_1M = 60 // INTERVAL + 1
"""Scrapes after a condition starts to hold at which a ``for: 1m`` alert fires."""
FAULTS = ("DdzEventsRefused", "DdzRestartLoop", "DdzServiceDown", "DdzNatsUnreachable",
          "DdzNatsNodeLost")  # fmt: skip
BOUND = 60.0  # seconds any one wait may take on a loaded machine


def until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND
    while not condition():
        assert time.monotonic() < deadline, f"not within {BOUND:g}s: {what}"
        time.sleep(0.1)


def target_labels(target: Target) -> dict[str, str]:
    return {"job": target.job, "instance": target.instance}


async def play(settings: Settings) -> None:
    async with Driver(settings.calling, settings.keys) as driver:
        results = await driver.play(next(iter(VARIANTS)), hands=3, tables=1)
        assert len(results) == 3 and all(r.events >= 5 for r in results)


async def forge(settings: Settings) -> None:
    """A played hand's ``hand_settled`` again, under the rules' key id but signed with a
    key of the forger's own, published with the rules' NATS credentials (which let it
    onto the bus): its consumers refuse it for a bad signature."""
    store = create_store(settings.store.database_url)
    hand = next(s for s in store.stream_ids() if s.startswith("hand-"))
    rows = store.read_stream(hand)
    genuine = codec.parse_envelope(next(r.envelope for r in rows if r.type == "hand_settled"))
    forged = envelope_pb2.EventEnvelope()
    forged.CopyFrom(genuine)
    forged.event_id = f"forged-{hand}"
    forged.stream_version = len(rows) + 1
    forger = EventSigner("rules", genuine.producer_key_id, Ed25519PrivateKey.generate())
    bus = await EventBus.connect(
        settings.bus.nats_url, max_reconnect_attempts=0, **connect_options(settings.bus, "rules")
    )
    try:
        await bus.js.publish(
            subject_for(hand, "hand_settled"),
            forger.seal(forged),
            headers={MSG_ID: forged.event_id},
        )
    finally:
        await bus.close()


def test_the_shipped_alerts_fire_on_the_faults_the_chaos_test_makes(tmp_path: Path) -> None:
    tool = promtool()
    settings = Settings.from_env({"DDZ_DATA_DIR": str(tmp_path / "ddz")})
    with Stack(settings, ephemeral_ports=True, nats_port=0) as stack:
        where = {target.job: target for target in targets(stack)}
        nats_users = sorted(set(where) & set(nats_auth.ROLES))  # the console has no NATS
        with Scraper(where.values(), every=EVERY) as prometheus:
            asyncio.run(play(stack.settings))
            # Scraped from its start long enough for a `for: 1m` alert to fire, were its
            # condition to hold on a suite that is well.
            well = prometheus.wait_ticks(max(1, FOR_1M + 2 - prometheus.ticks)) - 1
            checks = [Check(name, well, why="the suite is well, hands played") for name in FAULTS]

            asyncio.run(forge(stack.settings))
            until(lambda: any(prometheus.last("ddz_events_refused_total").values()),
                  "a consumer counts the forged event refused")  # fmt: skip
            refused = prometheus.ticks - 1
            checks.append(Check("DdzEventsRefused", refused + FOR_1M, ({"why": "bad_signature"},),
                                why="a forged event refused"))  # fmt: skip

            start = "ddz_process_start_time_seconds"
            checks.append(Check("DdzRestartLoop", prometheus.ticks, why="before the restarts"))
            for _ in range(3):
                before = prometheus.last(start, job="settlement")
                kill(stack, "settlement")
                time.sleep(0.3)
                stack.restart("settlement")
                until(lambda: prometheus.last(start, job="settlement") != before,  # noqa: B023
                      "the restarted settlement service is scraped")  # fmt: skip
            third = prometheus.ticks - 1
            checks.append(Check("DdzRestartLoop", third + FOR_1M,
                                (target_labels(where["settlement"]),),
                                why="settlement killed and started again 3 times"))  # fmt: skip
            assert wait_serving(stack, time.monotonic()) is not None

            checks.append(Check("DdzServiceDown", prometheus.ticks, why="before the kill"))
            kill(stack, "dealer")
            down = prometheus.wait_ticks(HELD + 1) - 1  # HELD scrapes surely after the kill
            stack.restart("dealer")
            checks.append(Check("DdzServiceDown", down, (target_labels(where["dealer"]),),
                                why=f"dealer killed {HELD} scrapes ago"))  # fmt: skip
            assert wait_serving(stack, time.monotonic()) is not None

            lost = prometheus.ticks
            checks += [Check("DdzNatsUnreachable", lost, why="before the kill"),
                       Check("DdzNatsNodeLost", lost, why="before the kill")]  # fmt: skip
            kill(stack, NATS)
            gone = prometheus.wait_ticks(HELD + 1) - 1
            stack.restart(NATS)
            every_user = tuple(
                {"service": name, **target_labels(where[name])} for name in nats_users
            )
            checks.append(Check("DdzNatsUnreachable", gone, every_user,
                                why=f"nats-server killed {HELD} scrapes ago"))  # fmt: skip
            assert wait_serving(stack, time.monotonic()) is not None
            until(lambda: set(prometheus.last("ddz_nats_connected").values()) == {1.0},
                  "every service has NATS again")  # fmt: skip
            back = prometheus.ticks - 1
            checks.append(Check("DdzNatsNodeLost", back + FOR_1M,
                                tuple({"service": name} for name in nats_users),
                                why="every service reconnected to nats-server"))  # fmt: skip
            prometheus.wait_ticks(max(1, max(c.tick for c in checks) - prometheus.ticks + 2))

    written = tmp_path / "alerts_on_faults_test.yaml"
    written.write_text(rule_test_file(prometheus, RULES, INTERVAL, checks), encoding="utf-8")
    done = subprocess.run(
        [tool, "test", "rules", str(written)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{written}\n{done.stdout}{done.stderr}"
    assert "SUCCESS" in done.stdout
