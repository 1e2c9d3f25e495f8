"""What a player types in ``ddz play``, read in the hand's phase."""

from __future__ import annotations

from ddz.client.commands import Typed, hint_to_type, read


def test_bids() -> None:
    assert read("2", bidding=True) == Typed("bid", action="call", score=2)
    assert read(" pass ", bidding=True) == Typed("bid", action="pass")
    assert read("p", bidding=True) == Typed("bid", action="pass")
    assert read("GRAB", bidding=True) == Typed("bid", action="grab")
    assert read("call", bidding=True) == Typed("bid", action="call")
    assert read("7", bidding=True).kind == "error"  # type: ignore[union-attr]
    assert read("q", bidding=True) == Typed("quit")


def test_plays_in_card_notation() -> None:
    assert read("10jqka", bidding=False) == Typed("play", cards="TJQKA")
    assert read("4 3 3 3", bidding=False) == Typed("play", cards="3334")
    assert read("2", bidding=False) == Typed("play", cards="2")  # a two, not a bid
    assert read("q", bidding=False) == Typed("play", cards="Q")  # a queen, not quit
    assert read("p", bidding=False) == Typed("pass")
    bad = read("33x", bidding=False)
    assert bad is not None and bad.kind == "error" and "not a play" in bad.error


def test_any_time_and_after_the_hand() -> None:
    for phase in (True, False):
        assert read("?", bidding=phase) == Typed("hint")
        assert read("hint", bidding=phase) == Typed("hint")
        assert read("quit", bidding=phase) == Typed("quit")
        assert read("show", bidding=phase) == Typed("show")
        assert read("   ", bidding=phase) is None
    assert read("n", bidding=False, over=True) == Typed("next")
    assert read("q", bidding=False, over=True) == Typed("quit")
    assert read("evidence", bidding=False, over=True) == Typed("evidence")
    assert read("33", bidding=False, over=True).kind == "error"  # type: ignore[union-attr]


def test_what_to_type_for_a_hint() -> None:
    assert hint_to_type("play 33344456 (plane_singles)") == "33344456"
    assert hint_to_type("call 2") == "2"
    assert hint_to_type("grab") == "grab"
    assert hint_to_type("pass") == "pass"
    assert hint_to_type("show cards") == "show"
