"""What the people measure: per process a ``Tally`` they write into, taken as
``Delta``\\ s (what is new since the last take) that the crowd's parent process adds up in
``Totals``, with the time it got each, for the figures of a window of the run.

Latencies are wall-clock milliseconds, as a person lives them:

* **move**: from sending a move (bid, show, play, pass, resume) until the mover's own
  ``WatchHand`` stream shows it;
* **turn notice**: from the start of a person's turn (the time of the event that made it
  their turn, ``PlayerView.server_time``, as the suite's clock counts it) until their
  stream tells them. Only turns that start while the stream is open count: a stream
  opened again after a drop first brings back what happened while away.

Turns: ``told`` (a turn with its clock running reached the person), then one of
``moved`` (a move of theirs was accepted), ``resumed`` (a seat in auto-play taken back),
``let_go`` (left to time out, on purpose), ``away`` (they dropped or escaped on it),
``ended`` (the hand ended on it: another seat's escape in a bean room), ``stopped`` (the
crowd's ``--drain`` ran out on it: the person is ``cut_off`` and leaves) or ``missed``
(they meant to move and the turn timed out first, or every move was refused).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

TURN_OUTCOMES = ("moved", "resumed", "let_go", "away", "ended", "stopped", "missed")
COUNTS = (
    "told", *TURN_OUTCOMES, "hints", "hints_too_late",
    "drops", "rejoins", "escapes", "joins", "leaves", "cut_off",
)  # fmt: skip


@dataclass
class Delta:
    """What a process's people did since the last take (the gauges as they are now)."""

    move_ms: list[float] = field(default_factory=list)
    notice_ms: list[float] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    started: list[str] = field(default_factory=list)  # hand ids a person of ours was dealt
    ended: list[tuple[str, bool]] = field(default_factory=list)  # (hand id, settled)
    people: int = 0  # people of the process, and of them seated at a table now
    seated: int = 0


class Tally:
    def __init__(self) -> None:
        self._delta = Delta()
        self._started: set[str] = set()
        self._ended: set[str] = set()
        self.people = 0
        self.seated = 0

    def count(self, what: str, n: int = 1) -> None:
        self._delta.counts[what] += n

    def refused(self, reason: str) -> None:
        self._delta.refusals[reason] += 1

    def move_shown(self, sent: float) -> None:
        self._delta.move_ms.append((time.perf_counter() - sent) * 1000)

    def turn_told(self, started: float) -> None:
        """A turn that started at ``started`` (Unix seconds) was told now."""
        self._delta.notice_ms.append(max(0.0, time.time() - started) * 1000)

    def hand_started(self, hand_id: str) -> None:
        if hand_id and hand_id not in self._started:
            self._started.add(hand_id)
            self._delta.started.append(hand_id)

    def hand_ended(self, hand_id: str, settled: bool) -> None:
        if hand_id not in self._ended:
            self._ended.add(hand_id)
            self._delta.ended.append((hand_id, settled))

    def take(self) -> Delta:
        delta, self._delta = self._delta, Delta()
        delta.people, delta.seated = self.people, self.seated
        return delta


@dataclass
class Totals:
    """Every process's deltas added up, each sample kept with when it came in (the
    parent's monotonic clock) so that a window of the run can be told apart."""

    move: list[tuple[float, float]] = field(default_factory=list)  # (when, ms)
    notice: list[tuple[float, float]] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    refusals: Counter[str] = field(default_factory=Counter)
    hands: dict[str, str] = field(default_factory=dict)  # id -> started|settled|ended
    endings: list[float] = field(default_factory=list)  # when each hand's end came
    people: dict[int, int] = field(default_factory=dict)  # per process
    seated: dict[int, int] = field(default_factory=dict)

    def add(self, process: int, delta: Delta, now: float | None = None) -> None:
        when = time.monotonic() if now is None else now
        self.move += [(when, ms) for ms in delta.move_ms]
        self.notice += [(when, ms) for ms in delta.notice_ms]
        self.counts.update(delta.counts)
        self.refusals.update(delta.refusals)
        for hand_id in delta.started:
            self.hands.setdefault(hand_id, "started")
        for hand_id, settled in delta.ended:
            if self.hands.get(hand_id) not in ("settled", "ended"):
                self.hands[hand_id] = "settled" if settled else "ended"
                self.endings.append(when)
        self.people[process] = delta.people
        self.seated[process] = delta.seated

    @property
    def seated_now(self) -> int:
        return sum(self.seated.values())

    @property
    def people_now(self) -> int:
        return sum(self.people.values())

    @property
    def hands_in_play(self) -> int:
        """Hands started that have not ended (settled or otherwise) yet."""
        return sum(1 for state in self.hands.values() if state == "started")

    def window(self, since: float, until: float) -> Window:
        return Window(
            [ms for when, ms in self.move if since <= when < until],
            [ms for when, ms in self.notice if since <= when < until],
            sum(1 for when in self.endings if since <= when < until),
            until - since,
        )


@dataclass(frozen=True)
class Window:
    """A stretch of the run: its latencies and the hands that ended in it."""

    move_ms: list[float]
    notice_ms: list[float]
    hands_ended: int
    seconds: float

    def move(self, q: float) -> float:
        return percentile(self.move_ms, q)

    def notice(self, q: float) -> float:
        return percentile(self.notice_ms, q)

    @property
    def worst_p99(self) -> float:
        return max(self.move(0.99), self.notice(0.99))


def percentile(samples: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``samples``, 0 when there are none."""
    if not samples:
        return 0.0
    ordered = sorted(samples)
    rank = min(len(ordered) - 1, max(0, int(q * len(ordered) + 0.999999) - 1))
    return round(ordered[rank], 2)
