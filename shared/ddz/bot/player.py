"""``Bot``: the strong player, with the same interface as ``ddz.domain.players``.

``Bot(seed).act(view)`` returns the command for the seat on turn, reading nothing
but the ``PlayerView`` it is given. Every decision draws its randomness from a
``random.Random`` seeded by (bot seed, hand id, seat, number of public events so
far), so a replayed hand gets exactly the same decisions, and search budgets count
iterations, not time (the wall-clock cap in ``Budget`` is only a safety net).
"""

from __future__ import annotations

import hashlib
import random
import time

from ddz.domain.hand.commands import Command, Pass, ShowCards
from ddz.domain.hand.state import Phase
from ddz.domain.hand.view import PlayerView
from ddz.domain.move import Move
from ddz.domain.players import play_of
from ddz.domain.ruleset import RuleSet

from .bidding import BidCurve, Bidder
from .endgame import Budget, Endgame
from .plan import Planner
from .policy import Policy, Weights
from .situation import situation_of


class Bot:
    """The strong player for every variant. ``act``/``decide`` play, ``suggest`` hints."""

    def __init__(
        self,
        seed: int | str | bytes = 0,
        *,
        budget: Budget = Budget(),
        weights: Weights | None = None,
        curve: BidCurve | None = None,
    ) -> None:
        self.seed = seed if isinstance(seed, bytes) else str(seed).encode()
        self.budget = budget
        self.weights = weights or Weights()
        self.bidder = Bidder(self.seed, curve)
        self._policies: dict[tuple[RuleSet, tuple[int, ...]], Policy] = {}

    # -- the Player interface ---------------------------------------------------------

    def act(self, view: PlayerView) -> Command:
        """The command for the seat on turn (``view.my_turn``)."""
        rng = self._rng(view)
        policy = self._policy(view)
        if view.phase is Phase.BIDDING:
            if view.can_show and self.bidder.show(view, policy.planner):
                return ShowCards(view.seat)
            return self.bidder.bid(view, policy.planner)
        if (
            view.can_show
            and view.landlord == view.seat
            and not any(view.plays_made)
            and self.bidder.show(view, policy.planner)
        ):
            return ShowCards(view.seat)
        move = self.choose_move(view, rng)
        return Pass(view.seat) if move is None else play_of(view.seat, move)

    decide = act

    def suggest(self, view: PlayerView) -> Command:
        """A hint for the seat on turn: what the bot would do in its place."""
        return self.act(view)

    # -- internals -----------------------------------------------------------------

    def choose_move(self, view: PlayerView, rng: random.Random) -> Move | None:
        listed: list[Move] | None = None

        def legal() -> list[Move]:
            nonlocal listed
            if listed is None:
                listed = view.legal_moves()
            return listed

        policy = self._policy(view)
        sit = situation_of(view)
        if sit.trick is not None and not legal():
            return None
        search = Endgame(policy, self.budget, rng, time.perf_counter())
        if search.applies(sit):
            found = search.choose(sit, legal)
            if found is not None:
                return found.move
        return policy.choose(sit, legal)

    def _policy(self, view: PlayerView) -> Policy:
        wild = tuple(sorted(int(r) for r in view.wild))
        key = (view.rules, wild)
        policy = self._policies.get(key)
        if policy is None:
            if len(self._policies) > 8:
                self._policies.clear()
            policy = Policy(Planner(view.rules, wild), self.weights)
            self._policies[key] = policy
        return policy

    def _rng(self, view: PlayerView) -> random.Random:
        digest = hashlib.sha256(
            b"|".join(
                (
                    self.seed,
                    view.hand_id.encode(),
                    str(view.seat).encode(),
                    str(len(view.history)).encode(),
                )
            )
        ).digest()
        return random.Random(int.from_bytes(digest[:8], "big"))
