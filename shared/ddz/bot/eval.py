"""Duplicate-deal evaluation of the bot against a reference opponent.

Each deal is played twice with the landlord's seat fixed and bidding scripted (the
landlord calls 1 / calls, the farmers pass: base 1, no grab), so that bidding does
not mix in: once with the bot as landlord against two opponents, once with the
opponent as landlord against two bots. Everything else is the real hand aggregate,
settlement included. The landlord's seat rotates with the deal number.

Figures: WP, the share of games the bot's side won (Wilson 95% interval); ADP, the
mean over games of the points the bot's side made (the sum of its seats' ledger
deltas; normal 95% interval), per role and overall; the bot's decision time p99.
The evaluation room is the variant's default room, except bean rooms, which use a
room coefficient of 4 so that with the 0.25 wildcard coefficient a game is worth
``multiplier x role coefficient`` beans, the same scale as the point variants.

Bidding is measured separately (``run_bidding``): real bidding on the same deals,
the bot in one seat (rotating) and the opponent in the other two; how often the
bot's bids make it the landlord, and how often it then wins.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ddz.domain.hand import Bid, Hand, HandState, Phase, Rejection, SeatInfo, StartHand, view_for
from ddz.domain.hand.commands import Command
from ddz.domain.hand.view import PlayerView
from ddz.domain.multipliers import Side
from ddz.domain.players import GreedyPlayer, Player, RandomPlayer
from ddz.domain.ruleset import Bidding, RuleSet, Scoring, ruleset_for
from ddz.domain.settlement import RoomSettings

from .player import Bot

OPPONENTS = ("rlcard-rule", "greedy", "random")
CLASSIC_ONLY = frozenset({"rlcard-rule"})
Z95 = 1.959963984540054

SEATS = (SeatInfo("eval-0", True), SeatInfo("eval-1", True), SeatInfo("eval-2", True))


class EvalError(ValueError):
    """Bad evaluation request (unknown opponent, variant it cannot play, ...)."""


class IllegalDecision(RuntimeError):
    """A player sent a command the hand refused."""


# -- statistics ------------------------------------------------------------------------


def wilson(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion."""
    if n == 0:
        return (0.0, 1.0)
    p = wins / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def mean_ci(values: Sequence[float], z: float = Z95) -> tuple[float, float, float]:
    """Mean and its normal 95% interval."""
    n = len(values)
    if n == 0:
        return (0.0, 0.0, 0.0)
    mean = sum(values) / n
    if n == 1:
        return (mean, mean, mean)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return (mean, mean - half, mean + half)


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


# -- players --------------------------------------------------------------------------


def make_opponent(name: str, rng: random.Random) -> Player:
    if name == "greedy":
        return GreedyPlayer(rng)
    if name == "random":
        return RandomPlayer(rng)
    if name == "rlcard-rule":
        from .rlcard_peer import RLCardRulePlayer

        return RLCardRulePlayer(rng)
    raise EvalError(f"unknown opponent {name!r} (expected one of {', '.join(OPPONENTS)})")


class TimedBot:
    """Wraps the bot to record how long each decision takes (ms): wall-clock, and the
    CPU time of the deciding thread (which other processes on the machine do not
    inflate)."""

    def __init__(self, bot: Bot, times: list[float], cpu_times: list[float]) -> None:
        self.bot = bot
        self.times = times
        self.cpu_times = cpu_times

    def act(self, view: PlayerView) -> Command:
        start, cpu = time.perf_counter(), time.thread_time()
        command = self.bot.act(view)
        self.cpu_times.append((time.thread_time() - cpu) * 1000.0)
        self.times.append((time.perf_counter() - start) * 1000.0)
        return command


def eval_room(rules: RuleSet) -> RoomSettings:
    if rules.scoring is Scoring.BEANS:
        return RoomSettings(coefficient=4)
    return RoomSettings()


def deal_seed(run_seed: int, deal: int) -> bytes:
    key = hashlib.sha256(f"ddz-eval/{run_seed}".encode()).digest()
    return hmac.digest(key, deal.to_bytes(8, "big"), "sha256")


# -- playing ---------------------------------------------------------------------------


def _execute(hand: Hand, command: Command) -> None:
    result = hand.execute(command)
    if isinstance(result, Rejection):
        raise IllegalDecision(f"{command!r} rejected: {result.code.value}: {result.message}")


def play_fixed(
    rules: RuleSet,
    room: RoomSettings,
    players: Sequence[Player],
    seed: bytes,
    landlord: int,
    hand_id: str,
) -> HandState:
    """Play one hand with ``landlord`` fixed by scripted bids; returns the final state."""
    hand = Hand()
    _execute(hand, StartHand(hand_id, rules, room, SEATS, seed, first_bidder=landlord))
    while hand.state.phase is Phase.BIDDING:
        seat = hand.state.turn
        if seat == landlord:
            bid = Bid.call(seat, 1) if rules.bidding is Bidding.CALL_SCORE else Bid.call(seat)
        else:
            bid = Bid.pass_(seat)
        _execute(hand, bid)
    return _play_out(hand, players)


def _play_out(hand: Hand, players: Sequence[Player]) -> HandState:
    while hand.state.phase is not Phase.ENDED:
        seat = hand.state.turn
        _execute(hand, players[seat].act(view_for(hand.state, seat)))
    return hand.state


@dataclass(frozen=True, slots=True)
class Game:
    deal: int
    bot_landlord: bool
    bot_won: bool
    points: int  # the bot side's ledger deltas, summed
    multiplier: int


@dataclass(frozen=True, slots=True)
class Stats:
    games: int
    wins: int
    wp: float
    wp_ci: tuple[float, float]
    adp: float
    adp_ci: tuple[float, float]

    @classmethod
    def of(cls, games: Sequence[Game]) -> Stats:
        wins = sum(g.bot_won for g in games)
        n = len(games)
        adp, lo, hi = mean_ci([float(g.points) for g in games])
        return cls(n, wins, wins / n if n else 0.0, wilson(wins, n), adp, (lo, hi))

    def to_json(self) -> dict[str, Any]:
        return {
            "games": self.games,
            "wins": self.wins,
            "wp": round(self.wp, 4),
            "wp_ci": [round(self.wp_ci[0], 4), round(self.wp_ci[1], 4)],
            "adp": round(self.adp, 4),
            "adp_ci": [round(self.adp_ci[0], 4), round(self.adp_ci[1], 4)],
        }


@dataclass
class EvalReport:
    variant: str
    opponent: str
    deals: int
    seed: int
    games: list[Game] = field(default_factory=list)
    decision_ms: list[float] = field(default_factory=list)
    decision_cpu_ms: list[float] = field(default_factory=list)

    def stats(self, role: str | None = None) -> Stats:
        if role is None:
            return Stats.of(self.games)
        want = role == "landlord"
        return Stats.of([g for g in self.games if g.bot_landlord == want])

    def to_json(self) -> dict[str, Any]:
        overall = self.stats()
        return {
            "wp": round(overall.wp, 4),
            "wp_ci": [round(overall.wp_ci[0], 4), round(overall.wp_ci[1], 4)],
            "adp": round(overall.adp, 4),
            "deals": self.deals,
            "decision_ms_p99": round(percentile(self.decision_ms, 99), 3),
            "adp_ci": [round(overall.adp_ci[0], 4), round(overall.adp_ci[1], 4)],
            "games": overall.games,
            "variant": self.variant,
            "opponent": self.opponent,
            "seed": self.seed,
            "decision_ms_mean": round(sum(self.decision_ms) / max(1, len(self.decision_ms)), 3),
            "decision_ms_max": round(max(self.decision_ms, default=0.0), 3),
            "decision_cpu_ms_p99": round(percentile(self.decision_cpu_ms, 99), 3),
            "decision_cpu_ms_max": round(max(self.decision_cpu_ms, default=0.0), 3),
            "decisions": len(self.decision_ms),
            "roles": {
                "landlord": self.stats("landlord").to_json(),
                "farmers": self.stats("farmers").to_json(),
            },
        }


def check_request(variant: str, opponent: str, deals: int) -> RuleSet:
    rules = ruleset_for(variant)
    if opponent not in OPPONENTS:
        raise EvalError(f"unknown opponent {opponent!r} (expected one of {', '.join(OPPONENTS)})")
    if opponent in CLASSIC_ONLY and variant != "classic":
        raise EvalError(f"the {opponent} opponent plays classic only, not {variant!r}")
    if deals < 1:
        raise EvalError(f"--deals must be at least 1, got {deals}")
    return rules


def run_eval(
    variant: str,
    opponent: str,
    deals: int,
    seed: int = 0,
    *,
    bot_factory: Callable[[int], Bot] | None = None,
    on_deal: Callable[[int], None] | None = None,
) -> EvalReport:
    """Play ``deals`` duplicate deals; ``on_deal(done)`` is called after each deal."""
    rules = check_request(variant, opponent, deals)
    room = eval_room(rules)
    report = EvalReport(variant, opponent, deals, seed)
    make_bot = bot_factory or (lambda s: Bot(s))
    for deal in range(deals):
        hand_seed = deal_seed(seed, deal)
        landlord = deal % 3
        for bot_landlord in (True, False):
            tag = "L" if bot_landlord else "F"
            bot = TimedBot(make_bot(seed), report.decision_ms, report.decision_cpu_ms)
            players: list[Player] = []
            for s in range(3):
                if (s == landlord) == bot_landlord:
                    players.append(bot)
                else:
                    players.append(
                        make_opponent(opponent, random.Random(f"{seed}/{deal}/{tag}/{s}"))
                    )
            state = play_fixed(rules, room, players, hand_seed, landlord, f"eval-{deal}-{tag}")
            report.games.append(_game(state, deal, landlord, bot_landlord))
        if on_deal is not None:
            on_deal(deal + 1)
    return report


def _game(state: HandState, deal: int, landlord: int, bot_landlord: bool) -> Game:
    bot_seats = [s for s in range(3) if (s == landlord) == bot_landlord]
    landlord_won = state.winner is Side.LANDLORD
    ledger = state.ledger
    points = sum(ledger.deltas[s] for s in bot_seats) if ledger is not None else 0
    return Game(
        deal,
        bot_landlord,
        landlord_won == bot_landlord,
        points,
        ledger.multiplier if ledger is not None else state.multiplier.total,
    )


# -- bidding quality -------------------------------------------------------------------


@dataclass
class BiddingReport:
    variant: str
    opponent: str
    deals: int
    seed: int
    # per player kind ("bot", "opponent") sitting in the measured seat
    landlord: dict[str, int] = field(default_factory=lambda: {"bot": 0, "opponent": 0})
    landlord_wins: dict[str, int] = field(default_factory=lambda: {"bot": 0, "opponent": 0})
    points: dict[str, list[float]] = field(default_factory=lambda: {"bot": [], "opponent": []})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "deals": self.deals,
            "variant": self.variant,
            "opponent": self.opponent,
            "seed": self.seed,
        }
        seats: dict[str, Any] = {}
        out["seat"] = seats
        for who in ("bot", "opponent"):
            n = self.landlord[who]
            k = self.landlord_wins[who]
            mean, lo, hi = mean_ci(self.points[who])
            seats[who] = {
                "landlord_rate": round(n / self.deals, 4),
                "landlord_rate_ci": [round(x, 4) for x in wilson(n, self.deals)],
                "landlord_wp": round(k / n, 4) if n else None,
                "landlord_wp_ci": [round(x, 4) for x in wilson(k, n)] if n else None,
                "landlord_and_won_rate": round(k / self.deals, 4),
                "adp": round(mean, 4),
                "adp_ci": [round(lo, 4), round(hi, 4)],
            }
        return out


def run_bidding(
    variant: str,
    opponent: str,
    deals: int,
    seed: int = 0,
    *,
    on_deal: Callable[[int], None] | None = None,
) -> BiddingReport:
    """Real bidding on the same deals: the measured seat (``deal % 3``) is played by the
    bot (the other two by the opponent), then by the opponent (the other two by bots)."""
    rules = check_request(variant, opponent, deals)
    room = eval_room(rules)
    report = BiddingReport(variant, opponent, deals, seed)
    for deal in range(deals):
        hand_seed = deal_seed(seed, deal)
        seat = deal % 3
        for who in ("bot", "opponent"):
            players: list[Player] = []
            for s in range(3):
                mine = (s == seat) == (who == "bot")
                if mine:
                    players.append(Bot(seed))
                else:
                    players.append(make_opponent(opponent, random.Random(f"{seed}/{deal}/B/{s}")))
            hand = Hand()
            _execute(hand, StartHand(f"eval-bid-{deal}-{who}", rules, room, SEATS, hand_seed))
            state = _play_out(hand, players)
            ledger = state.ledger
            report.points[who].append(float(ledger.deltas[seat]) if ledger is not None else 0.0)
            if state.landlord == seat:
                report.landlord[who] += 1
                report.landlord_wins[who] += state.winner is Side.LANDLORD
        if on_deal is not None:
            on_deal(deal + 1)
    return report
