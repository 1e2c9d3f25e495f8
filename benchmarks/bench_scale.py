#!/usr/bin/env python3
"""One instance of each service, two of each, and two of each on a 3-node JetStream
cluster, side by side: hands/s, p99 play latency, CPU ms per hand by service.

    .venv/bin/python benchmarks/bench_scale.py [--rounds 3] [--hands 200] [--tables 8]
        [--json]

Each round runs ``ddz bench e2e --json --player greedy`` once per layout, the layouts in
an order that turns each round (so none always runs first on a cooling machine), each
with the whole suite started by the bench in a fresh temporary data dir:

- ``1x``: one instance of every service, one nats-server;
- ``2x``: two instances of every service (``--scale``), one nats-server;
- ``2x cluster``: two of every service on a three-node cluster (``--nats-cluster 3``),
  every stream on three nodes.

``--against DIR``: also, each round, ``1x`` with the code of another checkout ``DIR``
(e.g. ``git worktree add DIR <commit>``, its compiled engine built or copied in), so that
the figures of an earlier version are taken in the same run as today's.

The bench sums the CPU time of a service's instances (and of every NATS node). Printed
per layout: the median over the rounds of hands/s, p99 play latency and suite CPU ms per
hand, and each service's median CPU ms per hand; then 2x / 1x for the suite's CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SERVICES = ("recorder", "settlement", "dealer", "rules", "bot", "table")
EVERY_TWICE = ",".join(f"{name}=2" for name in SERVICES)
LAYOUTS: dict[str, list[str]] = {
    "1x": [],
    "2x": ["--scale", EVERY_TWICE],
    "2x cluster": ["--scale", EVERY_TWICE, "--nats-cluster", "3"],
}
COLUMNS = (*SERVICES, "nats-server")


def bench_once(
    layout: str, hands: int, tables: int, scratch: Path, tree: Path | None = None
) -> dict[str, Any]:
    """One ``ddz bench e2e`` of ``layout``; ``tree``: with the code of that checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
    env["DDZ_DATA_DIR"] = str(scratch)
    if tree is not None:  # its packages first on the path, its services run from it
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "shared"), str(tree)])
    done = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "bench", "e2e", "--json",
         "--player", "greedy", "--hands", str(hands), "--tables", str(tables),
         *LAYOUTS[layout.split(" at ")[0]]],
        env=env, capture_output=True, text=True, timeout=1800, cwd=tree,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{layout}: ddz bench e2e failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def median(values: list[float]) -> float:
    return round(statistics.median(values), 1) if values else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hands", type=int, default=200)
    parser.add_argument("--tables", type=int, default=8)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--against", type=Path, default=None, metavar="DIR",
                        help="also 1x with the code of the checkout DIR")  # fmt: skip
    args = parser.parse_args()
    trees: dict[str, Path | None] = {layout: None for layout in LAYOUTS}
    if args.against is not None:
        trees[f"1x at {args.against.name}"] = args.against.resolve()
    runs: dict[str, list[dict[str, Any]]] = {layout: [] for layout in trees}
    names = list(trees)
    with tempfile.TemporaryDirectory(prefix="ddz-bench-scale-") as scratch:
        for round_ in range(args.rounds):
            order = names[round_ % len(names) :] + names[: round_ % len(names)]
            for layout in order:
                where = Path(scratch) / f"{round_}-{layout.replace(' ', '-')}"
                result = bench_once(layout, args.hands, args.tables, where, trees[layout])
                runs[layout].append(result)
                cpu = sum(result["cpu_ms_per_hand"].values())
                print(f"round {round_ + 1} {layout:<10} {result['hands_per_s']:6.1f} hands/s  "
                      f"p99 {result['play_latency_ms']['p99']:6.2f} ms  "
                      f"suite CPU {cpu:6.1f} ms/hand", file=sys.stderr)  # fmt: skip
    summary: dict[str, Any] = {}
    for layout, results in runs.items():
        suite = [sum(r["cpu_ms_per_hand"].values()) for r in results]
        summary[layout] = {
            "hands_per_s": [r["hands_per_s"] for r in results],
            "median_hands_per_s": median([r["hands_per_s"] for r in results]),
            "median_p99_ms": median([r["play_latency_ms"]["p99"] for r in results]),
            "suite_cpu_ms_per_hand": [round(v, 1) for v in suite],
            "median_suite_cpu_ms_per_hand": median(suite),
            "cpu_ms_per_hand": {
                name: median([r["cpu_ms_per_hand"].get(name, 0.0) for r in results])
                for name in COLUMNS
            },
        }
    one = summary["1x"]["suite_cpu_ms_per_hand"]
    ratios = {}
    for layout in trees:
        if layout != "1x":
            pairs = zip(one, summary[layout]["suite_cpu_ms_per_hand"], strict=True)
            ratios[layout] = [round(b / a, 2) for a, b in pairs]
    if args.json:
        print(json.dumps({"layouts": summary, "suite_cpu_ratio_to_1x": ratios}, indent=2))
        return 0
    header = "| layout | hands/s | median | p99 | suite CPU ms/hand | " + " | ".join(COLUMNS) + " |"
    print(header)
    print("|---|---|---:|---:|---|" + "---:|" * len(COLUMNS))
    for layout, row in summary.items():
        cells = " | ".join(f"{row['cpu_ms_per_hand'][name]:.1f}" for name in COLUMNS)
        rates = ", ".join(f"{v:.1f}" for v in row["hands_per_s"])
        suite = ", ".join(f"{v:.1f}" for v in row["suite_cpu_ms_per_hand"])
        print(f"| {layout} | {rates} | {row['median_hands_per_s']:.1f} | "
              f"{row['median_p99_ms']:.1f} ms | {suite} | {cells} |")  # fmt: skip
    for layout, values in ratios.items():
        print(f"\nsuite CPU per hand, {layout} / 1x, round by round: "
              f"{', '.join(str(v) for v in values)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
