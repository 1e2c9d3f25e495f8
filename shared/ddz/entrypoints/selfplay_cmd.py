"""``ddz selfplay``: built-in players play N hands in-process (no services).

    ddz selfplay --variant V --hands N [--seed S] [--player random|greedy] [--json]

Prints hands/s and a summary: landlord win rate, mean multiplier, spring rate and
the conservation check (every ledger sums to zero, §10). ``--json`` prints
``{"hands": N, "hands_per_s": x, "landlord_wins": k, "conserved": true, ...}``.
The same ``--seed`` replays the same hands (every deal and every player's choice).
"""

from __future__ import annotations

import argparse
import json
import random
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ddz.domain.multipliers import Side
from ddz.domain.players import PLAYERS, Player
from ddz.domain.ruleset import VARIANTS, ruleset_for
from ddz.domain.selfplay import hand_seed, play_hand, run_seed
from ddz.domain.settlement import RoomSettings
from ddz.entrypoints.arguments import whole
from ddz.entrypoints.figures import print_figures
from ddz.entrypoints.progress import Progress, add_quiet

MAX_HANDS = 10_000_000


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "selfplay",
        help="play N hands in-process with built-in players and print hands/s",
        description="Built-in players play N hands in-process (no services).",
    )
    parser.add_argument("--variant", default="classic", help=f"one of {', '.join(VARIANTS)}")
    parser.add_argument("--hands", default="100", help="how many hands (default 100)")
    parser.add_argument("--seed", default=None, help="run seed (any text; default: random)")
    parser.add_argument("--player", default="random", help=f"one of {', '.join(PLAYERS)}")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(parser)
    parser.set_defaults(handler=run)


@dataclass
class Summary:
    variant: str
    player: str
    seed: str
    hands: int = 0
    seconds: float = 0.0
    landlord_wins: int = 0
    springs: int = 0
    anti_springs: int = 0
    redeals: int = 0
    events: int = 0
    multipliers: list[int] = field(default_factory=list)
    conserved: bool = True
    system_total: int = 0

    def to_json(self) -> dict[str, Any]:
        n = max(1, self.hands)
        return {
            "hands": self.hands,
            "hands_per_s": round(self.hands / self.seconds, 1) if self.seconds else 0.0,
            "landlord_wins": self.landlord_wins,
            "conserved": self.conserved,
            "variant": self.variant,
            "player": self.player,
            "seed": self.seed,
            "landlord_win_rate": round(self.landlord_wins / n, 4),
            "mean_multiplier": round(sum(self.multipliers) / n, 3),
            "spring_rate": round(self.springs / n, 4),
            "anti_spring_rate": round(self.anti_springs / n, 4),
            "redeals": self.redeals,
            "events": self.events,
            "system_total": self.system_total,
        }


def selfplay(
    variant: str, hands: int, seed: str, player: str, on_hand: Callable[[], None] | None = None
) -> Summary:
    rules = ruleset_for(variant)
    if player not in PLAYERS:
        raise ValueError(f"unknown player {player!r} (expected one of {', '.join(PLAYERS)})")
    master = run_seed(seed)
    rng = random.Random(master)
    players: list[Player] = [PLAYERS[player](rng) for _ in range(3)]
    room = RoomSettings()
    summary = Summary(variant, player, seed)
    start = time.perf_counter()
    for index in range(hands):
        events, state = play_hand(
            rules, room, players, hand_seed(master, index), hand_id=f"selfplay-{index}"
        )
        summary.hands += 1
        if on_hand is not None:
            on_hand()
        summary.events += len(events)
        summary.redeals += state.round
        summary.landlord_wins += state.winner is Side.LANDLORD
        summary.springs += state.spring
        summary.anti_springs += state.anti_spring
        summary.multipliers.append(state.multiplier.total)
        ledger = state.ledger
        if ledger is None or sum(ledger.deltas) + ledger.system != 0:
            summary.conserved = False
        else:
            summary.system_total += ledger.system
    summary.seconds = time.perf_counter() - start
    return summary


def run(args: argparse.Namespace) -> int:
    hands = whole(args.hands, "--hands", MAX_HANDS)
    seed = args.seed if args.seed is not None else secrets.token_hex(8)
    with Progress("ddz selfplay", quiet=args.quiet) as progress:
        progress.stage(f"{args.variant}: playing", total=hands)
        summary = selfplay(args.variant, hands, seed, args.player, progress.advance)
    data = summary.to_json()
    if args.json:
        print(json.dumps(data))
        return 0
    _print_table(data)
    return 0


def _print_table(data: dict[str, Any]) -> None:
    title = f"ddz selfplay: {data['variant']}, {data['player']} players"
    rows = [
        ("hands", f"{data['hands']}"),
        ("hands/s", f"{data['hands_per_s']:.1f}"),
        ("landlord win rate", f"{data['landlord_win_rate']:.1%}"),
        ("mean multiplier", f"{data['mean_multiplier']:.2f}"),
        ("spring rate", f"{data['spring_rate']:.1%}"),
        ("anti-spring rate", f"{data['anti_spring_rate']:.1%}"),
        ("re-deals", f"{data['redeals']}"),
        ("events", f"{data['events']}"),
        ("system take", f"{data['system_total']}"),
        ("conserved (every ledger sums to 0)", "yes" if data["conserved"] else "NO"),
        ("seed", data["seed"]),
    ]
    print_figures(title, rows)
