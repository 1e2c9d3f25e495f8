"""In-process self-play throughput, side by side with RLCard in one run.

    .venv/bin/python benchmarks/bench_selfplay.py [--hands N]

Ours: ``play_hand`` with ``RandomPlayer`` (uniformly random legal bids and plays, pass
included when allowed) for each variant, *including* the deal from the audited seed,
bidding, every event folded, settlement and the seed reveal.
RLCard: ``rlcard.games.doudizhu.game.DoudizhuGame`` (rlcard==1.2.0, bare game, no env
wrapper) playing uniformly random legal actions from ``init_game`` until ``is_over``;
it has no bidding (the landlord is fixed) and no settlement.

The engines take turns game by game, so that load from other processes on a shared
machine (cache and memory contention) hits them alike, and each engine's time is the
CPU time it used (``time.process_time``), not wall time. Prints games per CPU-second
and the ratio to RLCard.
"""

from __future__ import annotations

import argparse
import platform
import random
import time

from ddz.domain.players import RandomPlayer
from ddz.domain.ruleset import VARIANTS
from ddz.domain.selfplay import hand_seed, play_hand, run_seed
from ddz.domain.settlement import RoomSettings

# wildcard hands enumerate far more moves per decision: play them on every k-th step only
EVERY = {"classic": 1, "ct": 1, "laizi": 4, "tiandi": 10}


class Ours:
    """One variant's self-play: ``play()`` plays the next hand."""

    def __init__(self, variant: str) -> None:
        self.rules = VARIANTS[variant]
        rng = random.Random(variant)
        self.players = [RandomPlayer(rng) for _ in range(3)]
        self.room = RoomSettings()
        self.master = run_seed(f"bench-{variant}")
        self.index = 0

    def play(self) -> None:
        play_hand(self.rules, self.room, self.players, hand_seed(self.master, self.index))
        self.index += 1


class RLCard:
    """RLCard's bare classic game with uniformly random legal actions."""

    def __init__(self) -> None:
        import numpy as np
        from rlcard.games.doudizhu.game import DoudizhuGame

        self.game = DoudizhuGame(allow_step_back=False)
        self.game.np_random = np.random.RandomState(0)
        self.rng = random.Random(0)

    def play(self) -> None:
        game, rng = self.game, self.rng
        state, _ = game.init_game()
        while not game.is_over():
            state, _ = game.step(rng.choice(state["actions"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hands", type=int, default=1000, help="classic hands (and RLCard games)")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help="comma-separated variants to play beside RLCard (default: all four)",
    )
    args = parser.parse_args()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or not variants:
        parser.error(f"--variants: expected some of {', '.join(VARIANTS)}, got {args.variants!r}")

    # Interleaved game by game, so that load from other processes hits all engines alike.
    engines: dict[str, Ours | RLCard] = {"rlcard": RLCard()}
    engines.update((variant, Ours(variant)) for variant in variants)
    every = {"rlcard": 1, **EVERY}
    seconds = dict.fromkeys(engines, 0.0)
    games = dict.fromkeys(engines, 0)
    # CPU time of this process: on a shared machine, wall time also counts the time other
    # processes hold the cores; CPU time counts only the work each engine did.
    clock = time.process_time
    for step in range(args.hands):
        for name, engine in engines.items():
            if step % every[name] == 0:
                start = clock()
                engine.play()
                seconds[name] += clock() - start
                games[name] += 1

    rate = {name: games[name] / seconds[name] for name in engines}
    base = rate["rlcard"]
    print(
        f"# self-play, uniformly random legal players, {args.hands} steps interleaved "
        f"game by game, CPU time; Python {platform.python_version()}, {platform.machine()}"
    )
    print(f"{'engine':36} {'games':>6} {'games/s':>9} {'vs RLCard':>10}")
    print(f"{'RLCard DoudizhuGame (classic, play)':36} {games['rlcard']:6} {base:9.1f} {1:9.2f}x")
    for variant in variants:
        label = f"ddz {variant} (deal+bid+play+settle)"
        print(f"{label:36} {games[variant]:6} {rate[variant]:9.1f} {rate[variant] / base:9.2f}x")


if __name__ == "__main__":
    main()
