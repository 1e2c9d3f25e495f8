"""One rounding rule, said alike by the settlement, the audit's written-out arithmetic and
the docs (RULES.md §10: "fractions rounded down, per player, remainder to the system";
docs/RULE_DECISIONS.md §10.3 "Beans, rounding"), one test per variant with the scoring it
uses. Every figure below is worked out here by hand, from the worked example of the docs.

Hands recorded before the rule was a room setting replay under the rule they were
settled under (``two_shares``): their events carry no ``bean_rounding``.
"""

from __future__ import annotations

from fractions import Fraction

from ddz.adapters import codec
from ddz.audit.account.arithmetic import explain
from ddz.domain.multipliers import Factor, MultiplierBreakdown, Side
from ddz.domain.ruleset import VARIANTS
from ddz.domain.settlement import (
    PER_PLAYER,
    TWO_SHARES,
    HandOutcome,
    Ledger,
    RoomSettings,
    settle,
)
from ddz.v1 import hand_events_pb2, table_pb2

from services.table.adapters.translate import table_spec

NAMES = ("mei", "jun", "ling")


def _times(n: int) -> MultiplierBreakdown:
    return MultiplierBreakdown((Factor("initial", 1), Factor("grab", n)))


def _outcome(variant: str, room: RoomSettings, winner: Side, *, base: int = 1,
             multiplier: int = 6) -> HandOutcome:  # fmt: skip
    rules = VARIANTS[variant]
    return HandOutcome(
        rules.scoring, room, landlord=0, base=base, multiplier=_times(multiplier),
        winner=winner, wildcard_room=rules.wildcard_count > 0,
    )  # fmt: skip


def _settled(outcome: HandOutcome) -> tuple[Ledger, str]:
    """The ledger and its arithmetic as the transcript prints it, which must end in the
    ledger's own figures."""
    ledger = settle(outcome)
    arithmetic = explain(outcome, ledger, NAMES)
    assert [t.total for t in arithmetic.totals] == [*ledger.deltas, ledger.system]
    assert sum(ledger.deltas) + ledger.system == 0  # §10: nothing created or lost
    return ledger, "\n".join(arithmetic.lines())


# --- §10.3 beans: laizi and tiandi -------------------------------------------------------

# The worked example of docs/RULE_DECISIONS.md §10.3: a wildcard room, base 1, multiplier
# ×6, N = 5, A = 2. The landlord's X = 1 × 6 × 2 × 1/4 = 3, X·N = 15 (odd); a farmer's
# X = 1.5, X·N = 7.5, rounded down 7.
EXAMPLE = RoomSettings(coefficient=5, fee=2)


def test_laizi_farmers_win_an_odd_x_n_the_landlord_pays_it_whole_the_odd_bean_to_the_system() -> (
    None
):
    """§10.3 "each loser pays X·N + A": the landlord pays 15 + 2; "each winner receives
    X·N − A", rounded down per player (§10): each farmer 7 − 2; the bean neither farmer
    can take and the three fees to the system: 1 + 6."""
    ledger, text = _settled(_outcome("laizi", EXAMPLE, Side.FARMERS))
    assert ledger.deltas == (-17, 5, 5) and ledger.system == 7
    assert "the landlord's ⌊15⌋ = 15, a farmer's ⌊7.5⌋ = 7" in text
    assert "the landlord pays 15; each farmer receives 7; the odd 1 to the system" in text
    assert "seat 0 mei: -15 loss -2 fee = -17" in text
    assert "system: +1 rounding +2 fee +2 fee +2 fee = +7" in text


def test_laizi_landlord_wins_an_odd_x_n_receives_what_the_farmers_paid() -> None:
    """§10.3 with §10's rounding: each farmer pays ⌊7.5⌋ + 2; the landlord receives what
    the losers paid, 14 (the 15th bean was paid by nobody: "the winners share only what
    the losers actually paid"), − 2."""
    ledger, text = _settled(_outcome("laizi", EXAMPLE, Side.LANDLORD))
    assert ledger.deltas == (12, -9, -9) and ledger.system == 6
    assert "each farmer pays 7; the landlord receives what they paid, 14" in text


def test_tiandi_landlord_loses_x_n_of_1_and_pays_1_not_0() -> None:
    """§10.3 at the smallest odd X·N: base 1, ×2 in a wildcard room: the landlord's X =
    1 × 2 × 2 × 1/4 = 1, N = 1: the landlord pays 1; a farmer's X·N = 0.5 rounds down to
    0; the bean goes to the system. The transcript says what the ledger moves."""
    ledger, text = _settled(
        _outcome("tiandi", RoomSettings(coefficient=1), Side.FARMERS, multiplier=2)
    )
    assert ledger.deltas == (-1, 0, 0) and ledger.system == 1
    assert "the landlord pays 1; each farmer receives 0; the odd 1 to the system" in text
    assert "the landlord pays 0" not in text


def test_a_hand_recorded_before_the_setting_replays_under_two_shares() -> None:
    """A HandStarted written before ``bean_rounding`` existed carries none: it reads as
    ``two_shares``, the rule it was settled under (the landlord moved 2 × ⌊7.5⌋ = 14 both
    ways), so its audit stays clean; today's rooms record ``per_player``."""
    room = codec.room_to_pb(EXAMPLE)
    assert room.bean_rounding == PER_PLAYER
    room.ClearField("bean_rounding")
    old = codec.room_from_pb(hand_events_pb2.RoomSettings.FromString(room.SerializeToString()))
    assert old.bean_rounding == TWO_SHARES
    ledger, text = _settled(_outcome("laizi", old, Side.FARMERS))
    assert ledger.deltas == (-16, 5, 5) and ledger.system == 6
    assert "two_shares rounding" in text and "the landlord pays 14; each farmer receives 7" in text
    assert codec.room_from_pb(codec.room_to_pb(EXAMPLE)).bean_rounding == PER_PLAYER


def test_a_table_opened_without_the_setting_gets_todays_rounding() -> None:
    """An operator's OpenTableRequest from a client that predates the field leaves it
    empty: that is today's default, not the recorded hands' old rule."""
    request = table_pb2.OpenTableRequest(variant="laizi", room=codec.room_to_pb(EXAMPLE))
    request.room.ClearField("bean_rounding")
    spec = table_spec(request)
    assert spec.room is not None and spec.room.bean_rounding == PER_PLAYER


# --- §10.1 classic and §10.2 ct: points, nothing to round but the ct cap and rake ---------


def test_classic_an_odd_bm_moves_whole_shares() -> None:
    """§10.1: bm = 1 × 3 = 3; the landlord loses 2·bm = 6, each farmer +3: no fraction."""
    ledger, text = _settled(_outcome("classic", RoomSettings(), Side.FARMERS, multiplier=3))
    assert ledger.deltas == (-6, 3, 3) and ledger.system == 0
    assert "seat 0 mei: -6 loss = -6" in text


def test_ct_an_odd_cap_and_the_rake_round_down_per_player() -> None:
    """§10.2: bm = 1 × 64 = 64, 2·bm = 128 over the cap 101: the side moves 2 × ⌊101 / 2⌋
    = 100, each farmer 50 (docs/RULE_DECISIONS.md §10.2); the rake 1/20 on the landlord's
    capped gain 100 is 5."""
    room = RoomSettings(cap=101, rake=Fraction(1, 20))
    ledger, text = _settled(_outcome("ct", room, Side.LANDLORD, multiplier=64))
    assert ledger.deltas == (95, -50, -50) and ledger.system == 5
    assert "101 // 2 = 50" in text
