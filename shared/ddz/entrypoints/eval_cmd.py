"""``ddz eval``: duplicate-deal evaluation of the bot against a reference opponent.

    ddz eval --variant V --opponent {rlcard-rule,greedy,random} --deals N [--seed S] [--json]
    ddz eval ... --bidding

Each deal is played twice, landlord seat fixed and bidding scripted: the bot as the
landlord against two opponents, then the opponent as the landlord against two bots
(``ddz.bot.eval``). Prints WP (share of games the bot's side won) and ADP (mean
points of the bot's side per game, by the variant's settlement) per role and overall
with 95% intervals, and the bot's decision time p99. ``--json`` prints
``{"wp": x, "wp_ci": [lo, hi], "adp": y, "deals": N, "decision_ms_p99": z, ...}``.

``--bidding`` measures bidding instead: real bidding on the same deals, the bot in
one seat against two opponents, then the opponent in that seat against two bots;
how often the seat's bids make it the landlord, and how often it then wins.
``rlcard-rule`` (RLCard's ``doudizhu-rule-v1``, needs ``rlcard==1.2.0``) plays classic
only. Progress goes to stderr: a bar on a terminal, a line every few seconds elsewhere
(``--quiet``: none).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ddz.bot.eval import OPPONENTS, check_request, run_bidding, run_eval
from ddz.domain.ruleset import VARIANTS
from ddz.entrypoints.arguments import whole
from ddz.entrypoints.progress import Progress, add_quiet

MAX_DEALS = 1_000_000


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="duplicate-deal evaluation of the bot against a reference opponent",
        description="Play duplicate deals (each deal twice, roles swapped) between the bot "
        "and an opponent; report WP and ADP with 95% intervals.",
    )
    parser.add_argument("--variant", default="classic", help=f"one of {', '.join(VARIANTS)}")
    parser.add_argument("--opponent", default="greedy", help=f"one of {', '.join(OPPONENTS)}")
    parser.add_argument("--deals", default="100", help="duplicate deals (default 100)")
    parser.add_argument("--seed", default="0", help="run seed, a whole number (default 0)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--bidding", action="store_true", help="measure bidding quality instead of play"
    )
    add_quiet(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    deals = whole(args.deals, "--deals", MAX_DEALS)
    seed = whole(args.seed, "--seed", 2**63 - 1, low=0)
    check_request(args.variant, args.opponent, deals)
    if args.opponent == "rlcard-rule":
        from ddz.bot.rlcard_peer import RLCardUnavailable, load_rlcard

        try:
            load_rlcard()
        except RLCardUnavailable as exc:
            raise ValueError(str(exc)) from None
    with Progress("ddz eval", quiet=args.quiet) as progress:
        progress.stage(f"{args.variant} vs {args.opponent}", total=deals, unit="deals")
        on_deal = progress.update
        if args.bidding:
            data = run_bidding(args.variant, args.opponent, deals, seed, on_deal=on_deal).to_json()
        else:
            data = run_eval(args.variant, args.opponent, deals, seed, on_deal=on_deal).to_json()
    if args.json:
        print(json.dumps(data))
    elif args.bidding:
        _print_bidding(data)
    else:
        _print_eval(data)
    return 0


def _ci(pair: list[float], percent: bool) -> str:
    if percent:
        return f"[{pair[0]:.1%}, {pair[1]:.1%}]"
    return f"[{pair[0]:+.3f}, {pair[1]:+.3f}]"


def _print_eval(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"ddz eval: bot vs {data['opponent']}, {data['variant']}, "
        f"{data['deals']} duplicate deals (seed {data['seed']})"
    )
    for name in ("bot's role", "games", "WP", "WP 95% CI", "ADP", "ADP 95% CI"):
        table.add_column(name, justify="left" if name == "bot's role" else "right")
    roles = data["roles"]
    rows = [
        ("landlord", roles["landlord"]),
        ("farmers", roles["farmers"]),
        (
            "overall",
            {
                "games": data["games"],
                "wp": data["wp"],
                "wp_ci": data["wp_ci"],
                "adp": data["adp"],
                "adp_ci": data["adp_ci"],
            },
        ),
    ]
    for name, row in rows:
        table.add_row(
            name,
            str(row["games"]),
            f"{row['wp']:.1%}",
            _ci(row["wp_ci"], True),
            f"{row['adp']:+.3f}",
            _ci(row["adp_ci"], False),
        )
    console = Console()
    console.print(table)
    console.print(
        f"bot decision time: p99 {data['decision_ms_p99']:.1f} ms, "
        f"mean {data['decision_ms_mean']:.2f} ms, max {data['decision_ms_max']:.1f} ms "
        f"(CPU p99 {data['decision_cpu_ms_p99']:.1f} ms) over {data['decisions']} decisions"
    )


def _print_bidding(data: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"ddz eval --bidding: {data['variant']}, {data['deals']} deals, "
        f"opponent {data['opponent']} (seed {data['seed']})"
    )
    for name in ("measured seat", "landlord rate", "landlord WP", "landlord & won", "ADP"):
        table.add_column(name, justify="left" if name == "measured seat" else "right")
    for who in ("bot", "opponent"):
        row = data["seat"][who]
        wp = "-" if row["landlord_wp"] is None else f"{row['landlord_wp']:.1%}"
        table.add_row(
            who,
            f"{row['landlord_rate']:.1%}",
            wp,
            f"{row['landlord_and_won_rate']:.1%}",
            f"{row['adp']:+.3f}",
        )
    Console().print(table)
