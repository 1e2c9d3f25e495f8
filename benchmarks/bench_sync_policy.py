#!/usr/bin/env python3
"""What JetStream's ``sync_interval: always`` costs a hand, against the default.

    .venv/bin/python benchmarks/bench_sync_policy.py [--rounds 3] [--hands 100]
        [--tables 4] [--json]

The default file store writes every message to the file at once but syncs it to disk
(``fsync``) every two minutes: a *process* crash (``kill -9`` of nats-server) loses
nothing acknowledged, since the data is in the OS's page cache; a *host* crash (power,
kernel) can lose what was acknowledged since the last sync on a single server. With
``sync_interval: always`` each write is synced before its publish is acknowledged.

Each round runs ``ddz bench e2e --json --player greedy`` twice, once per policy, in
alternating order, each against a private nats-server of its own (file store, a fresh
temporary directory; the policy read back from the server's ``/varz``) with the whole
suite started by the bench. Prints per policy the median hands/s and p99 play latency
over the rounds, and the ratio always/default: figures taken side by side in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from ddz.adapters.runtime.nats_server import free_port, start_nats_server

POLICIES = {"default": "", "always": "jetstream {\n  sync_interval: always\n}\n"}


def process_cpu_s(pid: int) -> float:
    """User plus system CPU seconds of a running process (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_once(policy: str, hands: int, tables: int, scratch: Path) -> dict[str, Any]:
    scratch.mkdir(parents=True)
    config = scratch / "nats.conf"
    monitor = free_port("127.0.0.1")
    config.write_text(f"http_port: {monitor}\n{POLICIES[policy]}", encoding="utf-8")
    server = start_nats_server(scratch / "nats", port=0, config_file=config)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{monitor}/varz", timeout=5) as answer:
            synced = json.load(answer)["jetstream"]["config"].get("sync_always", False)
        if synced != (policy == "always"):
            raise SystemExit(f"nats-server did not take the {policy} policy (sync_always={synced})")
        cpu_before = process_cpu_s(server.process.pid)
        env = {k: v for k, v in os.environ.items() if not k.startswith("DDZ_")}
        env.update(DDZ_NATS_URL=server.url, DDZ_DATA_DIR=str(scratch / "data"))
        done = subprocess.run(
            [sys.executable, "-m", "ddz.entrypoints.cli", "bench", "e2e", "--json",
             "--player", "greedy", "--hands", str(hands), "--tables", str(tables)],
            capture_output=True, text=True, env=env, timeout=900,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"ddz bench e2e failed ({policy}): {done.stderr.strip()[-500:]}")
        figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
        nats_cpu = process_cpu_s(server.process.pid) - cpu_before
        figures["nats_cpu_ms_per_hand"] = nats_cpu * 1000 / max(1, figures["hands"])
        return figures
    finally:
        server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hands", type=int, default=100)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in POLICIES}
    with tempfile.TemporaryDirectory(prefix="ddz-sync-") as tmp:
        for round_ in range(args.rounds):
            order = list(POLICIES) if round_ % 2 == 0 else list(reversed(POLICIES))
            for policy in order:
                figures = bench_once(policy, args.hands, args.tables,
                                     Path(tmp) / f"{policy}-{round_}")  # fmt: skip
                runs[policy].append(figures)
                p99 = figures["play_latency_ms"]["p99"]
                print(f"round {round_ + 1} {policy:>7}: {figures['hands_per_s']:.1f} hands/s, "
                      f"p99 {p99:.1f} ms", file=sys.stderr)  # fmt: skip
    summary = {
        policy: {
            "hands_per_s": statistics.median(r["hands_per_s"] for r in results),
            "p99_ms": statistics.median(r["play_latency_ms"]["p99"] for r in results),
            "services_cpu_ms_per_hand": statistics.median(
                sum(r["cpu_ms_per_hand"].values()) for r in results
            ),
            "nats_cpu_ms_per_hand": statistics.median(r["nats_cpu_ms_per_hand"] for r in results),
        }
        for policy, results in runs.items()
    }
    summary["ratio_hands_per_s"] = {
        "always/default": summary["always"]["hands_per_s"] / summary["default"]["hands_per_s"]
    }
    if args.json:
        print(json.dumps(summary))
    else:
        for policy in POLICIES:
            print(
                f"{policy:>8}: {summary[policy]['hands_per_s']:.1f} hands/s, "
                f"p99 {summary[policy]['p99_ms']:.1f} ms, CPU ms/hand: services "
                f"{summary[policy]['services_cpu_ms_per_hand']:.1f}, nats-server "
                f"{summary[policy]['nats_cpu_ms_per_hand']:.1f} (median of {args.rounds})"
            )
        ratio = summary["ratio_hands_per_s"]["always/default"]
        print(f"   ratio: always/default hands/s = {ratio:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
