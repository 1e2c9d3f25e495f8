"""RLCard's rule-based Dou Dizhu agent (``doudizhu-rule-v1``) as a player of this project.

The agent (``rlcard.models.doudizhu_rule_models.DouDizhuRuleAgentV1``, rlcard 1.2.0,
an optional dependency) reads RLCard's raw observation: ``current_hand`` (rank string,
sorted low to high: ``3..9TJQKA2BR``), ``trace`` (``(seat, action)`` pairs of this
hand's plays and passes, ``"pass"`` for a pass), ``actions`` (the legal action strings,
with ``"pass"`` when passing is allowed), ``landlord`` and ``self``. This adapter builds
exactly that from a ``PlayerView`` and maps the agent's answer back to a legal ``Move``
(its strings are rank multisets; the reading is the legal one of those cards).

RLCard's agent picks at random (``np.random.choice``) when it has no rule for a spot;
the adapter seeds NumPy's generator before each decision, from its own ``rng``, so a
run is reproducible. It plays classic only: RLCard knows no other variant.
RLCard has no bidding agent; for bidding the adapter calls by RLCard's own
``get_landlord_score`` (the score its dealer once used to pick the landlord).
"""

from __future__ import annotations

import random
from typing import Any

from ddz.domain.cards import card_counts, format_counts, parse_ranks
from ddz.domain.hand.commands import Bid, BidAction, Command, Pass
from ddz.domain.hand.events import Passed, PlayMade
from ddz.domain.hand.state import Phase
from ddz.domain.hand.view import PlayerView
from ddz.domain.players import play_of
from ddz.domain.ruleset import CLASSIC, Bidding

CALL_AT = ((10, 3), (7, 2), (4, 1))  # RLCard landlord score -> call score


class RLCardUnavailable(RuntimeError):
    """rlcard (an optional dependency of the harness) is not installed."""


def load_rlcard() -> tuple[Any, Any, Any]:
    try:
        import numpy as np
        from rlcard.games.doudizhu.utils import get_landlord_score
        from rlcard.models.doudizhu_rule_models import DouDizhuRuleAgentV1
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise RLCardUnavailable(
            "the rlcard-rule opponent needs rlcard==1.2.0 (pip install 'ddz[peers]')"
        ) from exc
    return DouDizhuRuleAgentV1, get_landlord_score, np


def raw_observation(view: PlayerView) -> dict[str, Any]:
    """RLCard's raw observation of this seat, from the view alone."""
    trace: list[tuple[int, str]] = []
    for event in view.history:
        if isinstance(event, PlayMade):
            trace.append((event.seat, format_counts(card_counts(event.cards))))
        elif isinstance(event, Passed):
            trace.append((event.seat, "pass"))
    actions = list(dict.fromkeys(format_counts(m.cards) for m in view.legal_moves()))
    if view.can_pass:
        actions.append("pass")
    return {
        "current_hand": format_counts(view.counts),
        "trace": trace,
        "actions": actions,
        "landlord": view.landlord,
        "self": view.seat,
    }


class RLCardRulePlayer:
    """Plays a seat with RLCard's rule agent (classic only)."""

    def __init__(self, rng: random.Random) -> None:
        agent_cls, self._landlord_score, self._np = load_rlcard()
        self.agent = agent_cls()
        self.rng = rng

    def act(self, view: PlayerView) -> Command:
        if view.rules != CLASSIC:
            raise ValueError("the rlcard-rule opponent plays classic only")
        if view.phase is Phase.BIDDING:
            return self._bid(view)
        obs = raw_observation(view)
        self._np.random.seed(self.rng.randrange(2**32))
        action = self.agent.step({"raw_obs": obs})
        if action == "pass":
            return Pass(view.seat)
        cards = parse_ranks(action)
        options = [m for m in view.legal_moves() if m.cards == cards]
        if not options:  # never expected: the agent only returns listed actions
            raise RuntimeError(f"rlcard-rule chose {action!r}, not a legal play here")
        if view.trick is not None:
            same = [m for m in options if m.reading.type is view.trick.reading.type]
            options = same or options
        return play_of(view.seat, options[0])

    def _bid(self, view: PlayerView) -> Bid:
        score = self._landlord_score(format_counts(view.counts))
        seat = view.seat
        if view.rules.bidding is Bidding.CALL_SCORE:
            highest = max((b.score for b in view.bids), default=0)
            want = next((s for at, s in CALL_AT if score >= at), 0)
            return Bid.call(seat, want) if want > highest else Bid.pass_(seat)
        if score < CALL_AT[-1][0]:
            return Bid.pass_(seat)
        called = any(b.action is BidAction.CALL for b in view.bids)
        return Bid.grab(seat) if called else Bid.call(seat)
