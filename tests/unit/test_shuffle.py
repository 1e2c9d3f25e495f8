"""ddz-shuffle-v1 (docs/SHUFFLE.md; RULES.md §1, §2, §5; commit-reveal).

``_reference_*`` below is a second implementation written from docs/SHUFFLE.md alone
(no import from ddz.domain.shuffle), so that the module and the document are checked
against each other, and the document's test vector against both.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections import Counter
from pathlib import Path

import pytest
from ddz.domain.cards import Card, Rank
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI
from ddz.domain.shuffle import (
    DrawStream,
    canonical_deck,
    commitment,
    deal,
    draw_wildcard,
    master_seed,
    round_seed,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "SHUFFLE.md"

# --- the reference implementation, from the document ------------------------------------


def _ref_deck(copies: int, jokers: int) -> list[str]:
    suits = ["S", "H", "C", "D", "*", "S'"][:copies]
    cards = []
    for rank in "3456789TJQKA2":
        for s in suits:
            cards.append(s[0] + rank + s[1:])
    for joker in "BR":
        cards += [joker, joker + "'"][:jokers]
    return cards


def _ref_stream(key: bytes, label: str):
    counter = 0
    while True:
        block = hmac.new(key, label.encode() + b"\0" + counter.to_bytes(8, "big"), hashlib.sha256)
        digest = block.digest()
        for k in range(0, 32, 4):
            yield int.from_bytes(digest[k : k + 4], "big")
        counter += 1


def _ref_below(words, n: int) -> int:
    limit = 2**32 - 2**32 % n
    for u in words:
        if u < limit:
            return u % n
    raise AssertionError


def _ref_master(server: bytes, clients: list[bytes]) -> bytes:
    msg = b"ddz-shuffle-v1/master"
    for c in sorted(clients):
        msg += len(c).to_bytes(4, "big") + c
    return hmac.new(server, msg, hashlib.sha256).digest()


def _ref_round(master: bytes, r: int) -> bytes:
    return hmac.new(
        master, b"ddz-shuffle-v1/round/" + r.to_bytes(4, "big"), hashlib.sha256
    ).digest()


def _ref_deal(server: bytes, clients: list[bytes], r: int, copies: int, jokers: int, hand: int):
    key = _ref_round(_ref_master(server, clients), r)
    deck = _ref_deck(copies, jokers)
    words = _ref_stream(key, "deck")
    for i in range(len(deck) - 1, 0, -1):
        j = _ref_below(words, i + 1)
        deck[i], deck[j] = deck[j], deck[i]
    golden = _ref_below(_ref_stream(key, "golden"), 3 * hand)
    return key, deck, golden


def _ref_wild(server: bytes, clients: list[bytes], r: int, index: int, taken: list[str]) -> str:
    key = _ref_round(_ref_master(server, clients), r)
    candidates = [x for x in "3456789TJQKA2" if x not in taken]
    return candidates[_ref_below(_ref_stream(key, f"wildcard/{index}"), len(candidates))]


SERVER = bytes(range(32))
CLIENTS = [b"alice", b"bob"]


def _doc_vector() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("## Test vector", 1)[1]
    return dict(re.findall(r"^- `([a-z_0-9]+)`: `([^`]*)`", block, flags=re.M))


# --- tests -----------------------------------------------------------------------------


def test_commitment_is_sha256_hex_of_the_seed() -> None:
    assert commitment(b"\x00" * 32) == hashlib.sha256(b"\x00" * 32).hexdigest()


@pytest.mark.parametrize("rules", [CLASSIC, CT, LAIZI, TIANDI], ids=lambda r: r.name)
def test_deck_sizes_and_identities_section_1(rules) -> None:
    """§1: 54 cards (classic/laizi/tiandi), ct 82: six copies of 3..2, B B' R R'."""
    deck = canonical_deck(rules)
    assert len(deck) == rules.deck_size == len(set(deck))
    per_rank = Counter(card.rank for card in deck)
    assert all(per_rank[r] == rules.rank_copies for r in Rank if not r.is_joker)
    assert per_rank[Rank.BLACK_JOKER] == per_rank[Rank.RED_JOKER] == rules.joker_copies
    assert [str(c) for c in deck] == _ref_deck(rules.rank_copies, rules.joker_copies)


def test_ct_deck_has_red_star_and_second_spade_section_1() -> None:
    names = {str(c) for c in canonical_deck(CT)}
    assert {"S7", "H7", "C7", "D7", "*7", "S7'", "B", "B'", "R", "R'"} <= names
    assert len(canonical_deck(CT)) == 82


@pytest.mark.parametrize("rules", [CLASSIC, CT], ids=lambda r: r.name)
@pytest.mark.parametrize("r", [0, 3])
def test_module_matches_the_reference_implementation(rules, r) -> None:
    key, ref_deck, ref_golden = _ref_deal(
        SERVER, CLIENTS, r, rules.rank_copies, rules.joker_copies, rules.hand_size
    )
    dealt = deal(rules, master_seed(SERVER, CLIENTS), r)
    assert [str(c) for c in dealt.deck] == ref_deck
    assert dealt.golden_position == ref_golden
    assert dealt.commitment == hashlib.sha256(key).hexdigest()
    n = 3 * rules.hand_size
    for seat in range(3):
        assert sorted(str(c) for c in dealt.hands[seat]) == sorted(ref_deck[seat:n:3])
    assert [str(c) for c in dealt.bottom] == ref_deck[n:]


def test_deal_sizes_section_1() -> None:
    """§1: 17/17/17 + 3; ct 26/26/26 + 4."""
    for rules, hand, bottom in ((CLASSIC, 17, 3), (CT, 26, 4), (LAIZI, 17, 3), (TIANDI, 17, 3)):
        dealt = deal(rules, master_seed(SERVER), 0)
        assert [len(h) for h in dealt.hands] == [hand] * 3
        assert len(dealt.bottom) == bottom
        every = [c for h in dealt.hands for c in h] + list(dealt.bottom)
        assert sorted(every) == sorted(canonical_deck(rules))


def test_golden_card_is_dealt_and_its_receiver_bids_first_section_2() -> None:
    for r in range(20):
        dealt = deal(CLASSIC, master_seed(SERVER), r)
        assert dealt.golden_card is not None and dealt.golden_position is not None
        assert dealt.golden_card in dealt.hands[dealt.first_bidder_drawn]
        assert dealt.deck[dealt.golden_position] == dealt.golden_card


def test_client_seeds_change_the_deal_and_their_order_does_not() -> None:
    base = deal(CLASSIC, master_seed(SERVER), 0).deck
    mixed = deal(CLASSIC, master_seed(SERVER, [b"a", b"b"]), 0).deck
    swapped = deal(CLASSIC, master_seed(SERVER, [b"b", b"a"]), 0).deck
    assert mixed == swapped != base
    # length prefixes keep ("ab",) and ("a", "b") apart
    assert master_seed(SERVER, [b"ab"]) != master_seed(SERVER, [b"a", b"b"])


def test_rounds_are_independent_deals() -> None:
    master = master_seed(SERVER)
    assert round_seed(master, 0) != round_seed(master, 1)
    assert deal(CLASSIC, master, 0).deck != deal(CLASSIC, master, 1).deck


def test_wildcard_draws_section_5() -> None:
    """§5: a rank 3..2; tiandi's earth differs from its heaven."""
    master = master_seed(SERVER, CLIENTS)
    for r in range(30):
        heaven = draw_wildcard(master, r, 0)
        earth = draw_wildcard(master, r, 1, [heaven])
        assert heaven <= Rank.TWO and earth <= Rank.TWO and heaven != earth
        assert heaven.symbol == _ref_wild(SERVER, CLIENTS, r, 0, [])
        assert earth.symbol == _ref_wild(SERVER, CLIENTS, r, 1, [heaven.symbol])


def test_rejection_sampling_is_unbiased_and_in_range() -> None:
    stream = DrawStream(b"k" * 32, "test")
    seen = Counter(stream.below(3) for _ in range(6000))
    assert set(seen) == {0, 1, 2}
    assert all(1800 < n < 2200 for n in seen.values())
    with pytest.raises(ValueError):
        stream.below(0)


def test_shuffle_is_roughly_uniform_over_positions() -> None:
    """Each card lands in the first position about equally often (chi-square-ish bound)."""
    master = master_seed(SERVER)
    first = Counter(deal(CLASSIC, master, r).deck[0] for r in range(5400))
    assert len(first) == 54
    assert all(60 < n < 145 for n in first.values())  # expected 100


def test_document_test_vector() -> None:
    """docs/SHUFFLE.md's vector, checked against the reference and the module."""
    vector = _doc_vector()
    server = bytes.fromhex(vector["server_seed"])
    clients = [c.encode() for c in vector["client_seeds"].split(",")]
    assert vector["commitment"] == hashlib.sha256(server).hexdigest()
    master = master_seed(server, clients)
    assert master.hex() == vector["master"] == _ref_master(server, clients).hex()
    key, deck, golden = _ref_deal(server, clients, 0, 4, 1, 17)
    assert key.hex() == vector["round0_key"] == round_seed(master, 0).hex()
    assert " ".join(deck) == vector["classic_round0_deck"]
    assert str(golden) == vector["classic_round0_golden_position"]
    dealt = deal(CLASSIC, master, 0)
    assert " ".join(str(c) for c in dealt.deck) == vector["classic_round0_deck"]
    assert dealt.golden_position == int(vector["classic_round0_golden_position"])
    heaven = draw_wildcard(master, 0, 0)
    earth = draw_wildcard(master, 0, 1, [heaven])
    assert f"{heaven.symbol} {earth.symbol}" == vector["tiandi_round0_wildcards"]
    ct = deal(CT, master, 1)
    assert " ".join(str(c) for c in ct.deck[:12]) == vector["ct_round1_first12"]
    assert Card.parse(vector["classic_round0_golden_card"]) == dealt.golden_card
