"""The duplicate-deal harness: JSON contract, confidence intervals, and the
duplicate structure (each deal twice, the landlord's seat fixed, roles swapped)."""

from __future__ import annotations

import math

import pytest
from ddz.bot import eval as harness
from ddz.bot.eval import (
    EvalError,
    mean_ci,
    percentile,
    run_bidding,
    run_eval,
    wilson,
)
from ddz.bot.player import Bot
from ddz.domain.hand.state import HandState
from ddz.domain.ruleset import RuleSet

DEALS = 4


@pytest.fixture(scope="module")
def report() -> harness.EvalReport:
    return run_eval("classic", "random", DEALS, seed=3)


def test_json_contract(report: harness.EvalReport) -> None:
    data = report.to_json()
    for key in ("wp", "wp_ci", "adp", "deals", "decision_ms_p99"):
        assert key in data
    assert data["deals"] == DEALS
    assert data["games"] == 2 * DEALS
    assert set(data["roles"]) == {"landlord", "farmers"}
    assert data["decision_ms_p99"] > 0
    assert data["roles"]["landlord"]["games"] == data["roles"]["farmers"]["games"] == DEALS


def test_intervals_contain_their_estimates(report: harness.EvalReport) -> None:
    data = report.to_json()
    rows = [data, data["roles"]["landlord"], data["roles"]["farmers"]]
    for row in rows:
        lo, hi = row["wp_ci"]
        assert 0.0 <= lo <= row["wp"] <= hi <= 1.0
        lo, hi = row["adp_ci"]
        assert lo <= row["adp"] <= hi


def test_each_deal_is_played_twice_with_roles_swapped(monkeypatch: pytest.MonkeyPatch) -> None:
    played: list[tuple[bytes, int, tuple[bool, bool, bool]]] = []
    real = harness.play_fixed

    def spy(
        rules: RuleSet,
        room: object,
        players: list[object],
        seed: bytes,
        landlord: int,
        hand_id: str,
    ) -> HandState:
        bots = tuple(isinstance(p, harness.TimedBot) for p in players)
        played.append((seed, landlord, bots))  # type: ignore[arg-type]
        return real(rules, room, players, seed, landlord, hand_id)  # type: ignore[arg-type]

    monkeypatch.setattr(harness, "play_fixed", spy)
    out = run_eval("ct", "greedy", 3, seed=1)
    assert len(played) == 6
    for deal in range(3):
        (seed_a, land_a, bots_a), (seed_b, land_b, bots_b) = played[2 * deal : 2 * deal + 2]
        assert seed_a == seed_b and land_a == land_b == deal % 3  # same deal, same seat
        assert bots_a[land_a] and sum(bots_a) == 1  # bot is the landlord, alone
        assert not bots_b[land_b] and sum(bots_b) == 2  # bots are the two farmers
    assert len({p[0] for p in played}) == 3  # three different deals
    assert [g.bot_landlord for g in out.games] == [True, False] * 3


def test_same_seed_same_report() -> None:
    a = run_eval("laizi", "random", 2, seed=9).to_json()
    b = run_eval("laizi", "random", 2, seed=9).to_json()
    for key in ("wp", "adp", "roles"):
        assert a[key] == b[key]


def test_points_are_the_bot_sides_ledger() -> None:
    """Classic settlement (§10.1): the landlord moves 2*bm, so the bot side's points are
    +-2 x multiplier in either role (base 1 in the harness)."""
    out = run_eval("classic", "greedy", 3, seed=2)
    for game in out.games:
        assert abs(game.points) == 2 * game.multiplier
        assert (game.points > 0) == game.bot_won


def test_bad_requests() -> None:
    with pytest.raises(EvalError, match="classic only"):
        run_eval("ct", "rlcard-rule", 1)
    with pytest.raises(EvalError, match="unknown opponent"):
        run_eval("classic", "nobody", 1)
    with pytest.raises(ValueError, match="unknown variant"):
        run_eval("poker", "random", 1)
    with pytest.raises(EvalError, match="at least 1"):
        run_eval("classic", "random", 0)


@pytest.mark.peers
def test_rlcard_rule_opponent_plays_legal_classic() -> None:
    """The adapter's every answer maps to a move the hand accepts (``play_fixed`` raises
    on a rejected command), for the rlcard-rule seats in both roles."""
    pytest.importorskip("rlcard")
    out = run_eval("classic", "rlcard-rule", 2, seed=4)
    assert len(out.games) == 4


def test_bidding_report() -> None:
    out = run_bidding("classic", "greedy", 3, seed=5).to_json()
    for who in ("bot", "opponent"):
        row = out["seat"][who]
        assert 0.0 <= row["landlord_rate"] <= 1.0
        assert row["landlord_and_won_rate"] <= row["landlord_rate"]


def test_wilson_interval() -> None:
    lo, hi = wilson(7, 10)
    assert lo < 0.7 < hi
    assert math.isclose(wilson(0, 10)[0], 0.0, abs_tol=1e-12)
    assert math.isclose(wilson(10, 10)[1], 1.0)
    # textbook value: 7/10 -> [0.3968, 0.8922]
    assert math.isclose(lo, 0.3968, abs_tol=1e-3) and math.isclose(hi, 0.8922, abs_tol=1e-3)


def test_mean_interval_and_percentile() -> None:
    mean, lo, hi = mean_ci([1.0, 2.0, 3.0, 4.0])
    assert mean == 2.5 and lo < 2.5 < hi
    assert math.isclose(hi - mean, 1.959963984540054 * math.sqrt((5 / 3) / 4))
    assert percentile([float(i) for i in range(1, 101)], 99) == 99.0
    assert percentile([5.0], 99) == 5.0


def test_bot_factory_is_used() -> None:
    made: list[int] = []

    def factory(seed: int) -> Bot:
        made.append(seed)
        return Bot(seed)

    run_eval("classic", "random", 1, seed=8, bot_factory=factory)
    assert made == [8, 8]


@pytest.mark.peers
def test_rlcard_observation_is_in_rlcards_own_notation() -> None:
    """The adapter's observation uses RLCard's strings: every action is a key of RLCard's
    card-type table, the hand is sorted as RLCard sorts it, the trace is (seat, action)."""
    pytest.importorskip("rlcard")
    import random

    from ddz.bot.rlcard_peer import raw_observation
    from ddz.domain.hand import Bid, Hand, StartHand, view_for
    from ddz.domain.players import GreedyPlayer
    from ddz.domain.ruleset import CLASSIC
    from rlcard.games.doudizhu.utils import CARD_RANK_STR, CARD_TYPE

    hand = Hand()
    start = StartHand("o", CLASSIC, harness.eval_room(CLASSIC), harness.SEATS, b"o" * 32, 0)
    for command in (start, Bid.call(0, 1), Bid.pass_(1), Bid.pass_(2)):
        hand.execute(command)
    greedy = GreedyPlayer(random.Random(0))
    for _ in range(5):
        seat = hand.state.turn
        obs = raw_observation(view_for(hand.state, seat))
        assert obs["self"] == seat and obs["landlord"] == 0
        ranks = [CARD_RANK_STR.index(c) for c in obs["current_hand"]]
        assert ranks == sorted(ranks) and len(ranks) == len(hand.state.cards[seat])
        assert all(a == "pass" or a in CARD_TYPE[0] for a in obs["actions"])
        assert ("pass" in obs["actions"]) == (hand.state.trick is not None)
        hand.execute(greedy.act(view_for(hand.state, seat)))
    assert [s for s, _ in obs["trace"]] == [0, 1, 2, 0][: len(obs["trace"])]
