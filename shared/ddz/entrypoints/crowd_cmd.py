"""``ddz bench crowd``: N simulated people at human pace through the public table
service, over TLS, each with their own player token (``ddz.loadgen``).

    ddz bench crowd [--people N] [--minutes M] [--ramp S] [--find-max] [--json]
                    [--seed SEED] [--processes P] [--drain S]
                    [--scale NAME=N[,NAME=N...]] [--nats-cluster N]

Like ``ddz bench e2e`` it plays through the suite of its data dir, or starts one for
the run (its store stays in the data dir). Exit codes: 0; 1 a hand was lost or an
audit failed; 2 bad input. With ``--json`` the last line of stdout is one object.
"""

from __future__ import annotations

import argparse
import json
import random
import sys

from ddz.config import Settings
from ddz.entrypoints.arguments import whole
from ddz.entrypoints.figures import print_figures
from ddz.entrypoints.progress import Progress, add_quiet
from ddz.entrypoints.running_suite import bench_stack
from ddz.entrypoints.simulate_cmd import failing_suite
from ddz.entrypoints.up_cmd import count_of, parse_scale
from ddz.loadgen.run import MAX_CORES, MAX_P99_MS, CrowdOptions, CrowdRun

LOST = 1


def register(kinds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    crowd = kinds.add_parser(
        "crowd",
        help="N people at human pace through the public table service: how many a machine seats",
        description="N simulated people at human pace (think time, timeouts, drops, "
        "escapes) through the public TableService over TLS, each with their own player "
        "token, in all four rooms: people seated, hands/s, the suite's CPU and memory, "
        "move and turn-notice latency, refusals, restarts; every hand audited.",
    )
    add = crowd.add_argument
    add("--people", default="150", help="people (default 150; with --find-max, the step)")
    add("--minutes", default="1",
        help="minutes measured after the ramp (--find-max: each step's; default 1)")  # fmt: skip
    add("--ramp", default="30", help="seconds over which people arrive (default 30)")
    add("--find-max", action="store_true",
        help=f"add --people people a step until the p99 passes {MAX_P99_MS:g} ms, the "
        f"suite uses {MAX_CORES:g} cores, or its people are not served (turned away, "
        "their turns missed)")  # fmt: skip
    add("--json", action="store_true", help="print one JSON object last")
    add("--seed", default=None, help="the people's seed (default: a new one, printed)")
    add("--processes", default="2", help="processes of the crowd (default 2)")
    add("--drain", default="300",
        help="seconds the people have to finish their hands at the end (default 300)")  # fmt: skip
    add("--scale", default="", metavar="NAME=N[,NAME=N...]",
        help="instances of services for a stack started here (as ddz up --scale)")  # fmt: skip
    add("--nats-cluster", default=None, metavar="N",
        help="a JetStream cluster of N nodes for a stack started here")  # fmt: skip
    add_quiet(crowd)
    crowd.set_defaults(handler=run_crowd)


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"--minutes must be a number of minutes, got {text!r}") from None
    if not 0.1 <= value <= 24 * 60:
        raise ValueError(f"--minutes must be between 0.1 and 1440, got {text}")
    return value


def options_of(args: argparse.Namespace) -> CrowdOptions:
    seed = random.SystemRandom().randrange(1 << 31) if args.seed is None else whole(
        args.seed, "--seed", (1 << 63) - 1, low=0)  # fmt: skip
    return CrowdOptions(
        people=whole(args.people, "--people", 100_000),
        minutes=_minutes(args.minutes),
        ramp=float(whole(args.ramp, "--ramp", 3600, low=0)),
        find_max=args.find_max,
        processes=whole(args.processes, "--processes", 64),
        seed=seed,
        drain=float(whole(args.drain, "--drain", 3600, low=0)),
    )


def run_crowd(args: argparse.Namespace) -> int:
    options = options_of(args)
    scale = parse_scale(args.scale)
    cluster = 0 if args.nats_cluster is None else count_of(args.nats_cluster, "--nats-cluster")
    settings = Settings.from_env()
    print(f"ddz bench crowd: seed {options.seed} (--seed {options.seed} plays the same people)",
          file=sys.stderr, flush=True)  # fmt: skip

    def measure() -> int:
        with Progress("ddz bench crowd", quiet=args.quiet) as progress:

            def say(what: str, done: int, total: int | None, unit: str) -> None:
                stage = what.split(":")[0]
                if stage != progress.what.split(":")[0]:
                    progress.stage(what, total=total, unit=unit)
                progress.describe(what)
                progress.update(done, total)

            with bench_stack(settings, None, scale, cluster) as (live, stack):
                report = CrowdRun(live, options, say).run()
                if stack is not None:
                    progress.stage("stopping its stack", unit="")
        if args.json:
            print(json.dumps(report.to_json()))
        else:
            title = f"ddz bench crowd: {options.people} people, seed {options.seed}"
            print_figures(title, report.rows())
        if report.failed:
            print(
                f"ddz bench crowd: {report.hands_lost} hands lost, "
                f"{report.audit.get('failed', 0)} failed their audit "
                f"({', '.join((report.lost_ids + report.audit_failures)[:5])})",
                file=sys.stderr,
            )
            return LOST
        return 0

    return failing_suite(measure)
