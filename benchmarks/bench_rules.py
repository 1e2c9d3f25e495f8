#!/usr/bin/env python3
"""Rules engine speed, side by side with the peers.

    .venv/bin/python benchmarks/bench_rules.py [--quick] [--seed N]

One run measures this engine, RLCard's judger (rlcard==1.2.0) and DouZero's move
generator (douzero==1.1.0) on IDENTICAL seeded classic positions. Each position is
converted to every library's own format before timing starts; then, per position and
per repeat, the libraries run one after the other in an order rotated per position, so
that machine noise hits all of them alike. Nothing is carried between positions: RLCard's
thread-local ``contains_cards`` cache (keyed by hand) is cleared before each of its
calls, DouZero builds a fresh ``MovesGener`` per call as its game does, and the engine is
called as a service would call it.

Figures:
  follow      ours ``legal_moves(hand, over=reading)``; RLCard ``get_gt_cards`` (what its
              game calls when following); DouZero ``GameEnv.get_legal_card_play_actions``
              (generator + type detection + its ``move_selector`` filter + bombs + pass)
  lead 17/20  ours ``legal_moves(hand)``; RLCard ``playable_cards_from_hand`` (its full
              legal action set, computed from scratch); DouZero ``MovesGener.gen_moves``
  worst case  the lead of ``333444555666777888BR``
  ours only   laizi lead with all 4 wildcards, ct lead of 26 cards, tiandi with 8 wildcards

Work returned differs in kind, and the table says so: RLCard returns a set of strings,
DouZero lists of ints with duplicates (it never deduplicates kicker choices), the engine
``Move`` objects each with its ``Reading``; the move counts are printed to show that the
classic answers agree.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import signal
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType, SimpleNamespace
from typing import Any

from ddz.compiled import engine_build
from ddz.domain import moves as moves_module
from ddz.domain.cards import RANK_SYMBOLS, Rank, RankCounts, format_counts, parse_ranks
from ddz.domain.classify import classify
from ddz.domain.moves import legal_moves
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI

try:
    from douzero.env import game as douzero_game
    from douzero.env import move_generator as douzero_generator
    from rlcard.games.base import Card as RLCardCard
    from rlcard.games.doudizhu import utils as rlcard_utils
    from rlcard.games.doudizhu.judger import DoudizhuJudger
    from rlcard.games.doudizhu.player import DoudizhuPlayer
except ImportError as exc:  # the peers are test-only dependencies
    sys.exit(f"bench_rules: error: peers missing ({exc}); run `python3 scripts/dev.py test` once")

OURS, RLCARD, DOUZERO = "ours", "RLCard", "DouZero"
LIBRARIES = (OURS, RLCARD, DOUZERO)
WORST_CASE = "333444555666777888BR"
CLASSIC_DECK = "".join(symbol * 4 for symbol in RANK_SYMBOLS[:13]) + "BR"
CT_DECK = "".join(symbol * 6 for symbol in RANK_SYMBOLS[:13]) + "BBRR"
DOUZERO_CODES = (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17, 20, 30)  # indexed by Rank


@dataclass(frozen=True)
class Size:
    follow: int
    lead: int
    repeats: int
    worst_repeats: int
    ours_only: int


FULL = Size(follow=1500, lead=300, repeats=5, worst_repeats=30, ours_only=100)
QUICK = Size(follow=200, lead=50, repeats=3, worst_repeats=10, ours_only=20)


# --- positions (seeded; identical for every library) -------------------------------


def in_rank_order(cards: str) -> str:
    return "".join(sorted(cards, key=RANK_SYMBOLS.index))


def shuffled(rng: random.Random, deck: str) -> str:
    cards = list(deck)
    rng.shuffle(cards)
    return "".join(cards)


def sub_hand(rng: random.Random, hand: str) -> str:
    return in_rank_order(rng.sample(hand, rng.randint(1, len(hand))))


def follow_positions(rng: random.Random, count: int) -> list[tuple[str, str]]:
    """(hand, previous play): a hand of a classic deal, whole or partly played, facing a
    random legal play of another hand of the deal (a type drawn first, then a play of it,
    so chains, planes, kicker types and bombs weigh as much as singles)."""
    out = []
    while len(out) < count:
        deck = shuffled(rng, CLASSIC_DECK)
        hands = [in_rank_order(deck[:17]), in_rank_order(deck[17:34]), in_rank_order(deck[34:])]
        seat = rng.randrange(3)
        hand = rng.choice((hands[seat], sub_hand(rng, hands[seat])))
        other = hands[(seat + rng.randint(1, 2)) % 3]
        by_type: dict[str, list[str]] = {}
        for play in sorted(DoudizhuJudger.playable_cards_from_hand(other)):
            by_type.setdefault(rlcard_utils.CARD_TYPE[0][play][0][0], []).append(play)
        out.append((hand, rng.choice(by_type[rng.choice(sorted(by_type))])))
    return out


def lead_hands(rng: random.Random, count: int, size: int) -> list[str]:
    return [in_rank_order(shuffled(rng, CLASSIC_DECK)[:size]) for _ in range(count)]


def wildcard_hands(
    rng: random.Random, count: int, size: int, wild_ranks: int
) -> list[tuple[str, frozenset[Rank]]]:
    """Hands holding every copy of ``wild_ranks`` distinct wildcard ranks (4 each)."""
    out = []
    for _ in range(count):
        wild = rng.sample(range(Rank.TWO + 1), wild_ranks)
        wildcards = "".join(RANK_SYMBOLS[r] * 4 for r in wild)
        rest = [c for c in CLASSIC_DECK if RANK_SYMBOLS.index(c) not in wild]
        hand = wildcards + "".join(rng.sample(rest, size - len(wildcards)))
        out.append((in_rank_order(hand), frozenset(Rank(r) for r in wild)))
    return out


# --- each library's own format (built before timing) ------------------------------


def rlcard_cards(hand: str) -> list[Any]:
    jokers = {"B": "BJ", "R": "RJ"}
    return [RLCardCard(jokers[c], "") if c in jokers else RLCardCard("S", c) for c in hand]


def douzero_cards(hand: str) -> list[int]:
    return [DOUZERO_CODES[RANK_SYMBOLS.index(c)] for c in hand]


def reset_rlcard_cache() -> None:
    # contains_cards() keeps the last hand's counts in a thread-local; a new position
    # must not find the previous repeat's counts there.
    rlcard_utils._local_objs.cached_candidate_cards = None


Call = Callable[[], object]


def follow_calls(hand: str, prev: str) -> dict[str, Call]:
    counts = parse_ranks(hand)
    (reading,) = classify(parse_ranks(prev), CLASSIC)
    player = DoudizhuPlayer(0, None)
    player.set_current_hand(rlcard_cards(hand))
    greater = DoudizhuPlayer(1, None)
    greater.played_cards = prev
    env = SimpleNamespace(
        info_sets={"landlord": SimpleNamespace(player_hand_cards=douzero_cards(hand))},
        acting_player_position="landlord",
        card_play_action_seq=[douzero_cards(prev)],
    )
    dz_legal = douzero_game.GameEnv.get_legal_card_play_actions
    return {
        OURS: lambda: legal_moves(counts, CLASSIC, over=reading),
        RLCARD: lambda: rlcard_utils.get_gt_cards(player, greater),
        DOUZERO: lambda: dz_legal(env),
    }


def lead_calls(hand: str) -> dict[str, Call]:
    counts = parse_ranks(hand)
    dz_hand = douzero_cards(hand)
    return {
        OURS: lambda: legal_moves(counts, CLASSIC),
        RLCARD: lambda: DoudizhuJudger.playable_cards_from_hand(hand),
        DOUZERO: lambda: douzero_generator.MovesGener(dz_hand).gen_moves(),
    }


# --- timing ------------------------------------------------------------------------


@dataclass
class Timing:
    per_position: list[list[float]] = field(default_factory=list)

    @property
    def mean(self) -> float:
        return statistics.fmean(t for runs in self.per_position for t in runs)

    @property
    def best(self) -> float:
        """Mean over positions of each position's best-of-repeats (least noisy)."""
        return statistics.fmean(min(runs) for runs in self.per_position)


def measure(
    cases: list[dict[str, Call]], repeats: int, resets: dict[str, Call] | None = None
) -> dict[str, Timing]:
    """Per position, ``repeats`` rounds of one call per library, in rotated order; the
    untimed ``resets`` run before their library's every call."""
    resets = {RLCARD: reset_rlcard_cache, **(resets or {})}
    names = list(cases[0])
    timings = {name: Timing() for name in names}
    for case in cases[:3]:  # warm-up: imports, lazy tables, first-call costs
        for name in names:
            case[name]()
    gc.collect()
    gc.freeze()  # the peers' big tables stay out of the collections below
    for i, case in enumerate(cases):
        order = names[i % len(names) :] + names[: i % len(names)]
        runs: dict[str, list[float]] = {name: [] for name in names}
        gc.disable()
        for _ in range(repeats):
            for name in order:
                reset = resets.get(name)
                if reset is not None:
                    reset()
                call = case[name]
                start = time.perf_counter()
                call()
                runs[name].append(time.perf_counter() - start)
        gc.enable()
        gc.collect()
        for name in names:
            timings[name].per_position.append(runs[name])
    gc.unfreeze()
    return timings


def move_counts(cases: list[dict[str, Call]]) -> dict[str, tuple[int, int]]:
    """Plays returned, summed over positions: (as returned, distinct rank multisets)."""
    totals: dict[str, tuple[int, int]] = {}
    for name in cases[0]:
        raw = unique = 0
        for case in cases:
            # RLCard and DouZero add a pass when following; plays only are counted
            answer = [m for m in case[name]() if multiset(name, m)]  # type: ignore[attr-defined]
            raw += len(answer)
            unique += len({multiset(name, move) for move in answer})
        totals[name] = (raw, unique)
    return totals


def multiset(library: str, move: Any) -> str:
    if library == OURS:
        return format_counts(move.cards)
    if library == RLCARD:
        return "" if move == "pass" else format_counts(parse_ranks(move))
    return "".join(RANK_SYMBOLS[DOUZERO_CODES.index(code)] for code in sorted(move))


# --- report ------------------------------------------------------------------------


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


@dataclass
class Row:
    figure: str
    timings: dict[str, Timing]
    counts: dict[str, tuple[int, int]]
    positions: int


def print_peer_table(rows: list[Row], repeats: int) -> None:
    print(
        f"\nTimes in microseconds per call: mean of all calls / mean of per-position "
        f"best-of-{repeats}. Ratio = peer time / ours (on best-of); target: ours >= 2x "
        f"faster than the faster peer on every figure.\n"
    )
    print(
        "| figure | positions | ours | RLCard | DouZero | RLCard/ours | DouZero/ours "
        "| faster peer / ours | target 2x |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|:---:|")
    for row in rows:
        t = row.timings
        ratios = {name: t[name].best / t[OURS].best for name in (RLCARD, DOUZERO)}
        faster = min(ratios.values())
        print(
            f"| {row.figure} | {row.positions} "
            + "".join(f"| {us(t[name].mean)} / {us(t[name].best)} " for name in LIBRARIES)
            + f"| {ratios[RLCARD]:.2f}x | {ratios[DOUZERO]:.2f}x | {faster:.2f}x "
            f"| {'met' if faster >= 2 else 'NOT met'} |"
        )
    print(
        "\nPlays returned (pass not counted), summed over the positions "
        "(as returned / distinct rank multisets):\n"
    )
    print("| figure | ours | RLCard | DouZero |")
    print("|---|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row.figure} "
            + "".join(f"| {row.counts[n][0]:,} / {row.counts[n][1]:,} " for n in LIBRARIES)
            + "|"
        )


OURS_COLD = "ours, intern table emptied"


def empty_intern_table() -> None:
    # The engine keeps one table of kicker-play Move objects per rule set, filled as
    # plays are first seen (keyed by play, never by hand). Emptying it before a call
    # shows what a call costs when none of its kicker plays was ever seen.
    natural_moves = getattr(moves_module, "_natural_moves_for", None)
    table = getattr(natural_moves(CLASSIC), "kicked", None) if natural_moves else None
    if isinstance(table, dict):
        table.clear()


def print_interning(rng: random.Random, size: Size) -> None:
    print(
        "\nOurs, warm (as above, the per-rule-set intern table filled by earlier calls) "
        "vs cold (the table emptied before every call), interleaved; best-of µs:\n"
    )
    print("| figure | warm | cold | cold / warm |")
    print("|---|---:|---:|---:|")
    for figure, hands in (
        ("lead, 20 cards", lead_hands(rng, size.lead, 20)),
        (f"lead, worst case {WORST_CASE}", [WORST_CASE]),
    ):
        cases = []
        for hand in hands:
            counts = parse_ranks(hand)
            cases.append(
                {
                    OURS: lambda c=counts: legal_moves(c, CLASSIC),  # type: ignore[misc]
                    OURS_COLD: lambda c=counts: legal_moves(c, CLASSIC),  # type: ignore[misc]
                }
            )
        repeats = size.repeats if len(hands) > 1 else size.worst_repeats
        t = measure(cases, repeats, resets={OURS_COLD: empty_intern_table})
        warm, cold = t[OURS].best, t[OURS_COLD].best
        print(f"| {figure} | {us(warm)} | {us(cold)} | {cold / warm:.2f}x |")


class TookTooLong(Exception):
    pass


def time_ours(
    label: str, hands: list[tuple[str, frozenset[Rank]]], rules: Any, repeats: int, limit_s: int
) -> str:
    """Ours only: mean / best-of over hands, with a wall-clock limit for the first call.

    As in ``measure``: the collector is off during the calls and the heap built so far
    (the peers' tables among it) is frozen, so that a call is not charged for a full
    collection of the benchmark's own heap. The first call of each hand is reported
    apart too: it meets the hand's readings before they are interned."""

    def on_alarm(signum: int, frame: FrameType | None) -> None:
        raise TookTooLong

    previous = signal.signal(signal.SIGALRM, on_alarm)
    runs: list[list[float]] = []
    moves: list[int] = []
    gc.collect()
    gc.freeze()
    try:
        for hand, wild in hands:
            counts: RankCounts = parse_ranks(hand)
            gc.disable()
            signal.alarm(limit_s)
            start = time.perf_counter()
            first = legal_moves(counts, rules, wild=wild)
            signal.alarm(0)
            times = [time.perf_counter() - start]
            moves.append(len(first))
            del first
            for _ in range(repeats - 1):
                start = time.perf_counter()
                legal_moves(counts, rules, wild=wild)
                times.append(time.perf_counter() - start)
            gc.enable()
            gc.collect()
            runs.append(times)
    except TookTooLong:
        return f"| {label} | {len(runs)} | did not finish within {limit_s} s | | | | |"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        gc.enable()
        gc.unfreeze()
    mean = statistics.fmean(t for r in runs for t in r)
    best = statistics.fmean(min(r) for r in runs)
    first_mean = statistics.fmean(r[0] for r in runs)
    worst = max(min(r) for r in runs)
    return (
        f"| {label} | {len(runs)} | {us(mean)} / {us(best)} | {us(first_mean)} | {us(worst)} "
        f"| {statistics.fmean(moves):,.0f} (max {max(moves):,}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer positions and repeats")
    parser.add_argument("--seed", type=int, default=2, help="seed of the position sample")
    args = parser.parse_args()
    size = QUICK if args.quick else FULL
    rng = random.Random(args.seed)

    print(f"bench_rules: seed {args.seed}, {'quick' if args.quick else 'full'} run")
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {platform.system()}; shared and noisy"
    )
    print(f"engine: {engine_build().describe()}")

    rows = []
    follows = [follow_calls(h, p) for h, p in follow_positions(rng, size.follow)]
    for figure, cases, repeats in (
        ("follow (random hand, random legal prev)", follows, size.repeats),
        ("lead, 17 cards", [lead_calls(h) for h in lead_hands(rng, size.lead, 17)], size.repeats),
        ("lead, 20 cards", [lead_calls(h) for h in lead_hands(rng, size.lead, 20)], size.repeats),
        (f"lead, worst case {WORST_CASE}", [lead_calls(WORST_CASE)], size.worst_repeats),
    ):
        print(f"measuring {figure} ...", flush=True)
        timings = measure(cases, repeats)
        rows.append(Row(figure, timings, move_counts(cases), len(cases)))
    print_peer_table(rows, size.repeats)

    print_interning(rng, size)

    print("\nOurs only (lead enumeration from scratch, wildcards included):\n")
    print(
        "| figure | hands | mean / best (µs) | first call (µs) | slowest hand best (µs) | moves |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    n = size.ours_only
    ct_hands = [(in_rank_order(shuffled(rng, CT_DECK)[:26]), frozenset[Rank]()) for _ in range(n)]
    for label, hands, rules in (
        (
            "laizi, 17 cards with the 4 wildcards (target < 2 ms)",
            wildcard_hands(rng, n, 17, 1),
            LAIZI,
        ),
        (
            "laizi, 20 cards with the 4 wildcards (target < 2 ms)",
            wildcard_hands(rng, n, 20, 1),
            LAIZI,
        ),
        ("ct, 26 cards", ct_hands, CT),
        (
            "tiandi, 20 cards with the 8 wildcards",
            wildcard_hands(rng, max(3, n // 10), 20, 2),
            TIANDI,
        ),
    ):
        print(time_ours(label, hands, rules, size.repeats, limit_s=120), flush=True)
    print(
        "\nReturned objects: ours a list of Move (cards as a rank-count code + Reading); "
        "RLCard a set/list of strings (following adds 'pass'); DouZero lists of ints, kicker "
        "choices repeated, following adds [] for pass."
    )


if __name__ == "__main__":
    main()
