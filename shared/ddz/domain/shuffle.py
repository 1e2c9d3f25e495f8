"""``ddz-shuffle-v1``: the audited deal (RULES.md §1, §2, §5, §6; commit-reveal).

Everything random in a hand -- the deck order, the golden card, the wildcard ranks and
every re-deal -- is derived here, deterministically, from one server seed (32 bytes
from a CSPRNG, chosen by the dealer) and any client seeds the table collected. Before
the deal only ``commitment(seed)`` is published; when the hand ends the seed is
revealed and anyone can re-run these functions and compare. ``docs/SHUFFLE.md`` is the
specification an auditor reimplements; this module must stay byte-for-byte faithful
to it (a change is a new algorithm name, never an edit of this one).

No module-level randomness: every draw is a pure function of its inputs.
"""

from __future__ import annotations

import hashlib
import hmac
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache

from ddz.domain.cards import SUITED_RANKS, Card, Rank
from ddz.domain.ruleset import RuleSet

ALGORITHM = "ddz-shuffle-v1"
SEED_BYTES = 32

_PREFIX = ALGORITHM.encode("ascii")

# Within one rank 3..2 the copies are S, H, C, D, then ct's red star and second spade
# (§1); a rule set with ``rank_copies`` = k uses the first k.
_RANK_COPIES: tuple[tuple[str, int], ...] = (
    ("S", 0),
    ("H", 0),
    ("C", 0),
    ("D", 0),
    ("*", 0),
    ("S", 1),
)


def commitment(seed: bytes) -> str:
    """What is published before the deal: lowercase hex SHA-256 of the seed."""
    return hashlib.sha256(seed).hexdigest()


@cache
def canonical_deck(rules: RuleSet) -> tuple[Card, ...]:
    """The unshuffled deck: ranks low to high; within a rank S H C D * S'; jokers B B' R R'."""
    if not 1 <= rules.rank_copies <= len(_RANK_COPIES):
        raise ValueError(f"a deck holds 1..{len(_RANK_COPIES)} copies of a rank")
    cards = [
        Card(rank, suit, copy)
        for rank in SUITED_RANKS
        for suit, copy in _RANK_COPIES[: rules.rank_copies]
    ]
    for joker in (Rank.BLACK_JOKER, Rank.RED_JOKER):
        cards.extend(Card(joker, "", copy) for copy in range(rules.joker_copies))
    return tuple(cards)


def master_seed(server_seed: bytes, client_seeds: Iterable[bytes] = ()) -> bytes:
    """Mix the client seeds into the server seed (order-independent, unambiguous)."""
    message = bytearray(_PREFIX + b"/master")
    for client in sorted(client_seeds):
        message += len(client).to_bytes(4, "big") + client
    return hmac.digest(server_seed, bytes(message), "sha256")


def round_seed(master: bytes, round_no: int) -> bytes:
    """The key of deal round ``round_no`` (0 = first deal, 1.. = re-deals after all pass)."""
    return hmac.digest(master, _PREFIX + b"/round/" + round_no.to_bytes(4, "big"), "sha256")


class DrawStream:
    """HMAC-SHA256 in counter mode under one key and label, read as unbiased integers."""

    __slots__ = ("_words",)

    def __init__(self, key: bytes, label: str) -> None:
        self._words = _words(key, label.encode("ascii") + b"\x00")

    def below(self, n: int) -> int:
        """A uniform integer in ``[0, n)`` by rejection sampling (no modulo bias)."""
        if not 1 <= n <= 1 << 32:
            raise ValueError("n out of range")
        limit = (1 << 32) - (1 << 32) % n
        for value in self._words:
            if value < limit:
                return value % n
        raise AssertionError("unreachable: the stream is endless")  # pragma: no cover


_BLOCK_WORDS = struct.Struct(">8I")  # one HMAC-SHA256 block = eight big-endian words


def _words(key: bytes, label: bytes) -> Iterator[int]:
    """The stream's 32-bit words: block_i = HMAC(key, label || u64be(i)), i = 0, 1, ..."""
    counter = 0
    while True:
        block = hmac.digest(key, label + counter.to_bytes(8, "big"), "sha256")
        yield from _BLOCK_WORDS.unpack(block)
        counter += 1


def shuffle(cards: Sequence[Card], key: bytes) -> tuple[Card, ...]:
    """Fisher-Yates (Durstenfeld) from the last position down, stream label ``deck``."""
    return tuple(cards[i] for i in _shuffled_positions(len(cards), key))


def _shuffled_positions(n: int, key: bytes) -> list[int]:
    order = list(range(n))
    words = _words(key, b"deck\x00")
    two32 = 1 << 32
    for i in range(n - 1, 0, -1):
        # DrawStream.below(i + 1), inlined: this runs for every card of every deal
        limit = two32 - two32 % (i + 1)
        value = next(words)
        while value >= limit:
            value = next(words)
        j = value % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


@cache
def _deck_positions(rules: RuleSet) -> dict[Card, int]:
    return {card: i for i, card in enumerate(canonical_deck(rules))}


def in_deck_order(rules: RuleSet, cards: Iterable[Card]) -> tuple[Card, ...]:
    """Cards sorted as in the canonical deck: by rank, then S H C D * S' (a hand's order)."""
    return tuple(sorted(cards, key=_deck_positions(rules).__getitem__))


@dataclass(frozen=True, slots=True)
class Deal:
    """One deal round: who holds what, the bottom cards and the golden card (§1, §2)."""

    round: int
    commitment: str  # of this round's key
    deck: tuple[Card, ...]  # shuffled order; position p < 3*hand_size goes to seat p % 3
    hands: tuple[tuple[Card, ...], ...]
    bottom: tuple[Card, ...]
    golden_position: int | None
    golden_card: Card | None
    first_bidder_drawn: int  # golden card receiver, or the 'first-bidder' draw without one


def deal(rules: RuleSet, master: bytes, round_no: int) -> Deal:
    """Shuffle and deal round ``round_no``; the golden card is a dealt position (§2)."""
    key = round_seed(master, round_no)
    canonical = canonical_deck(rules)
    order = _shuffled_positions(len(canonical), key)
    deck = tuple(canonical[i] for i in order)
    dealt = 3 * rules.hand_size
    if dealt + rules.bottom_size != len(deck):
        raise ValueError("hand and bottom sizes do not add up to the deck")
    # a hand is kept in deck order (sorting positions is sorting the cards, and cheaper)
    hands = tuple(tuple(canonical[i] for i in sorted(order[seat:dealt:3])) for seat in range(3))
    bottom = deck[dealt:]
    if rules.golden_card:
        position = DrawStream(key, "golden").below(dealt)
        return Deal(
            round_no, commitment(key), deck, hands, bottom, position, deck[position], position % 3
        )
    first = DrawStream(key, "first-bidder").below(3)
    return Deal(round_no, commitment(key), deck, hands, bottom, None, None, first)


def draw_wildcard(master: bytes, round_no: int, index: int, taken: Iterable[Rank] = ()) -> Rank:
    """Wildcard draw ``index`` of a round (§5): a rank 3..2 not drawn before in the round."""
    candidates = [rank for rank in SUITED_RANKS if rank not in set(taken)]
    stream = DrawStream(round_seed(master, round_no), f"wildcard/{index}")
    return candidates[stream.below(len(candidates))]
