"""Differential test against DouZero's move generator (douzero==1.1.0), leading.

DouZero (``douzero/env/move_generator.py``, ``MovesGener.gen_moves``) lists every play
a hand can lead. Its kicker rules are looser than RULES.md §3, which follows the national
rules as RLCard applies them; each such point is a named exception below that
recognises exactly that case, and only for plays that RLCard's own table of legal plays
(``CARD_TYPE``) does not hold either. Everything else must match play for play, as rank
multisets, on a few thousand seeded hands (full 17/20-card hands and parts of them).

DouZero's encoding: 3..14 for 3..A, 17 for 2 (so no chain reaches it), 20/30 jokers.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from ddz.domain.cards import NUM_RANKS, RANK_SYMBOLS, Rank, RankCounts, format_counts, parse_ranks
from ddz.domain.moves import legal_moves
from ddz.domain.ruleset import CLASSIC

from .deals import deals, sub_hand

pytestmark = pytest.mark.peers

SEED = 3_000
DEALS = 500  # 6 hands each: every seat's full hand and a part of it
SHOW = 5

DOUZERO_CODES = (3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17, 20, 30)  # indexed by Rank


def to_douzero(hand: str) -> list[int]:
    return [DOUZERO_CODES[RANK_SYMBOLS.index(symbol)] for symbol in hand]


def from_douzero(move: list[int]) -> str:
    counts = [0] * NUM_RANKS
    for code in move:
        counts[DOUZERO_CODES.index(code)] += 1
    return format_counts(tuple(counts))


def planes_with_single_wings(counts: RankCounts) -> list[tuple[int, int, RankCounts]]:
    """Every way to read ``counts`` as n >= 2 consecutive triples (3..A) plus n single
    wings: (lowest rank, n, the wings' counts)."""
    size = sum(counts)
    found = []
    for n in range(2, size // 4 + 1):
        if 4 * n != size:
            continue
        for low in range(Rank.ACE - n + 2):
            if all(counts[r] >= 3 for r in range(low, low + n)):
                wings = tuple(c - 3 if low <= r < low + n else c for r, c in enumerate(counts))
                found.append((low, n, wings))
    return found


# --- named exceptions: DouZero's kicker rules where RULES.md §3 says otherwise --------
# Each recognises (play counts) and applies only when RLCard's table of legal plays
# does not list the play either.


def jokers_together_as_kickers(counts: RankCounts) -> bool:
    """§3: "both jokers are never kickers together". DouZero draws kickers from all
    other cards with no joker check: ``gen_type_13_4_2`` (``select(cards_list, 2)``) and
    ``gen_type_11_serial_3_1`` (``select(new_cards, len(s3_set))``)."""
    both = counts[Rank.BLACK_JOKER] == 1 and counts[Rank.RED_JOKER] == 1
    four_two = sum(counts) == 6 and 4 in counts
    return both and (four_two or bool(planes_with_single_wings(counts)))


def four_as_plane_wings(counts: RankCounts) -> bool:
    """§3: "four of a kind is never used as kickers". ``gen_type_11_serial_3_1`` takes
    its n single wings from any other cards, so four of one rank can be four wings."""
    return any(4 in wings for _, _, wings in planes_with_single_wings(counts))


def triple_next_to_plane_as_wings(counts: RankCounts) -> bool:
    """§3: "plane wings may not hold a triple next to the plane ... but 222 may be
    wings" (``3334445556667779`` is illegal). ``gen_type_11_serial_3_1`` has no such
    check."""
    return any(
        any(wings[r] == 3 for r in (low - 1, low + n) if 0 <= r <= Rank.ACE)
        for low, n, wings in planes_with_single_wings(counts)
    )


DOUZERO_RULE_DIFFERENCES: dict[str, Callable[[RankCounts], bool]] = {
    "jokers_together_as_kickers": jokers_together_as_kickers,
    "four_as_plane_wings": four_as_plane_wings,
    "triple_next_to_plane_as_wings": triple_next_to_plane_as_wings,
}


def test_named_exceptions_recognise_their_rule_examples() -> None:
    """The exceptions catch the §3 examples and not the legal plays next to them."""
    assert jokers_together_as_kickers(parse_ranks("3333BR"))
    assert jokers_together_as_kickers(parse_ranks("333444BR"))
    assert not jokers_together_as_kickers(parse_ranks("3333B2"))
    assert four_as_plane_wings(parse_ranks("3334445556667777"))
    assert not four_as_plane_wings(parse_ranks("3334445556667779"))
    assert triple_next_to_plane_as_wings(parse_ranks("3334445556667779"))
    assert triple_next_to_plane_as_wings(parse_ranks("4445556667773339"))
    assert not triple_next_to_plane_as_wings(parse_ranks("3334445556668889"))
    assert not triple_next_to_plane_as_wings(parse_ranks("QQQKKKAAA222"))


def test_lead_plays_equal_douzero(
    douzero_env: SimpleNamespace, rlcard_doudizhu: SimpleNamespace
) -> None:
    """§3/§4 classic, leading: our plays equal DouZero's, but for its kicker rules."""
    rlcard_legal = rlcard_doudizhu.utils.CARD_TYPE[2]  # every legal play, as a string
    generator = douzero_env.generator.MovesGener
    rng = random.Random(SEED)
    hands = [
        h for seats in deals(rng, DEALS) for full in seats for h in (full, sub_hand(rng, full))
    ]
    tally: Counter[str] = Counter()
    differences: list[str] = []
    plays = 0
    for hand in hands:
        theirs = {from_douzero(move) for move in generator(to_douzero(hand)).gen_moves()}
        ours = {format_counts(move.cards) for move in legal_moves(parse_ranks(hand), CLASSIC)}
        plays += len(theirs)
        douzero_only = []
        for play in sorted(theirs - ours):
            names = [
                name
                for name, recognises in DOUZERO_RULE_DIFFERENCES.items()
                if play not in rlcard_legal and recognises(parse_ranks(play))
            ]
            if names:
                tally[names[0]] += 1
            else:
                douzero_only.append(play)
        ours_only = sorted(ours - theirs)
        if douzero_only or ours_only:
            differences.append(
                f"hand {hand}\n    only ours:    {ours_only[:12]}\n"
                f"    only DouZero: {douzero_only[:12]}"
            )
    print(
        f"\nDouZero differential: {len(hands)} hands led, {plays} DouZero plays compared; "
        f"named rule differences excused: {dict(tally) or 'none'}; "
        f"differing hands: {len(differences)}"
    )
    if differences:
        pytest.fail(
            f"{len(differences)} hands differ from DouZero; first {SHOW}:\n"
            + "\n".join(differences[:SHOW]),
            pytrace=False,
        )
