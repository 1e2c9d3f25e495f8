"""What a simulated person does, drawn from their own rng (seeded from the run's seed
and their number, so a run's people behave the same when run again with its seed).

A turn: think for a log-normal time (median ``THINK_MEDIAN``, 95th percentile
``THINK_P95``), never past the turn's clock less ``CLOCK_MARGIN`` (a person sees the
clock running down), then play the hint (``HINT_SHARE`` of turns) or a plain legal
move of their own (``Person._own_move``); or, on ``LET_TIME_OUT`` of turns, do nothing
and let the clock run out. A hand: on ``DROP`` of hands the person's connection goes at
one of their turns and they come back after ``AWAY`` seconds; on ``ESCAPE`` of hands
they leave the table in the middle of the hand (an escape, RULES.md §10) and join the
room again after ``AWAY``.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

THINK_MEDIAN = 2.5
THINK_P95 = 8.0
THINK_SIGMA = math.log(THINK_P95 / THINK_MEDIAN) / 1.6448536269514722  # z of the 95th
LET_TIME_OUT = 0.05
DROP = 0.02
ESCAPE = 0.01
HINT_SHARE = 0.8
AWAY = (5.0, 20.0)
CLOCK_MARGIN = 2.0
"""Seconds of the turn's clock a person leaves at least: whoever means to move has
moved by then, so a turn that times out anyway is one the suite made them miss."""
TURN_OF_MISHAP = (1, 6)
"""The person's turn of the hand (first to last) at which a drop or an escape happens;
a hand that ends sooner has none."""


@dataclass(frozen=True, slots=True)
class HandPlan:
    """What befalls one hand of a person: at which of their turns they drop or escape
    (0: never)."""

    drop_at: int = 0
    escape_at: int = 0


def person_seed(run_seed: int, number: int) -> str:
    """The seed of person ``number``'s rng (a string: ``random`` hashes it the same in
    every process and every run)."""
    return f"crowd:{run_seed}:{number}"


class Behaviour:
    def __init__(self, seed: str) -> None:
        self.rng = random.Random(seed)

    def think(self, seconds_left: float | None = None) -> float:
        """Seconds before the person moves: log-normal, within the clock's margin."""
        seconds = self.rng.lognormvariate(math.log(THINK_MEDIAN), THINK_SIGMA)
        if seconds_left is not None:
            seconds = min(seconds, max(0.0, seconds_left - CLOCK_MARGIN))
        return seconds

    def plan_hand(self) -> HandPlan:
        draw = self.rng.random()
        turn = self.rng.randint(*TURN_OF_MISHAP)
        if draw < ESCAPE:
            return HandPlan(escape_at=turn)
        if draw < ESCAPE + DROP:
            return HandPlan(drop_at=turn)
        return HandPlan()

    def lets_time_out(self) -> bool:
        return self.rng.random() < LET_TIME_OUT

    def takes_hint(self) -> bool:
        return self.rng.random() < HINT_SHARE

    def away(self) -> float:
        return self.rng.uniform(*AWAY)

    def choose(self, count: int) -> int:
        return self.rng.randrange(count)
