"""Freed memory given back to the system (``ddz.adapters.runtime.memory``): a process
that held memory for a crowd and freed it shrinks again once ``GiveBack`` has run, where
without it the allocator keeps the freed pages (its resident size stays)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from ddz.adapters.runtime.memory import GiveBack, malloc_trim

# Held, then freed but for every 50th block (and the last), so the freed memory lies in
# holes between blocks still in use: the allocator cannot shrink its heap from the top.
SCRIPT = """
import asyncio, json
from ddz.adapters.runtime.memory import GiveBack

def rss_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1])

async def main():
    start = rss_kb()
    held = [bytearray(2000) for _ in range(25_000)]
    kept = held[::50] + held[-1:]
    del held
    freed = rss_kb()
    giving = GiveBack(every=0.05)
    giving.start()
    await asyncio.sleep(0.5)
    await giving.stop()
    print(json.dumps({"start": start, "freed": freed, "given": rss_kb(), "kept": len(kept)}))

asyncio.run(main())
"""


@pytest.mark.skipif(malloc_trim() is None, reason="no glibc malloc_trim here (not Linux/glibc)")
def test_freed_memory_is_given_back_to_the_system() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    rss = {k: int(v) for k, v in json.loads(out.stdout).items()}
    # ~50 MB was held: freed, the allocator kept most of it; given back, it is gone.
    assert rss["freed"] - rss["start"] > 30_000, rss
    assert rss["given"] - rss["start"] < 10_000, rss


async def test_give_back_stops_and_refuses_a_bad_interval() -> None:
    giving = GiveBack(every=0.01)
    giving.start()
    await giving.stop()
    await giving.stop()  # stopping twice is stopping
    with pytest.raises(ValueError):
        GiveBack(every=0)


SETTLED = """
import gc, json, weakref
from ddz.adapters.runtime.memory import YOUNG_COLLECTION_EVERY, settle_collector

class Node:
    pass

started = [Node() for _ in range(1000)]  # what a service holds once started
before = len(gc.get_objects())
settle_collector()
tracked = len(gc.get_objects())
cycle = Node()
cycle.me = cycle
gone = weakref.ref(cycle)
del cycle
held = [[None] for _ in range(2 * YOUNG_COLLECTION_EVERY)]  # what a while of serving makes
print(json.dumps({
    "before": before, "tracked": tracked, "frozen": gc.get_freeze_count(),
    "threshold": gc.get_threshold()[0], "cycle_freed": gone() is None,
}))
"""


def test_a_started_service_collects_cycles_among_its_new_objects_only() -> None:
    """``settle_collector``: what existed at start is out of the collector's walks, and a
    cycle made later is still freed, by the young collections run less often."""
    result = json.loads(
        subprocess.run(
            [sys.executable, "-c", SETTLED], capture_output=True, text=True, check=True
        ).stdout
    )
    assert result["frozen"] > 1000 and result["before"] > 1000
    assert result["tracked"] < 100, result  # only what was made since
    assert result["threshold"] == 50_000
    assert result["cycle_freed"]
