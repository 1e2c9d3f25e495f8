"""The ``PlayerView`` message a seat is sent (``view_to_pb``): its own cards and turn,
no other seat's hidden cards, whatever order the three seats' views of one position are
built in (the part every seat sees alike is encoded once per position and shared)."""

from __future__ import annotations

import random
from itertools import accumulate

import pytest
from ddz.adapters.codec import views
from ddz.adapters.codec.values import card_from_pb
from ddz.domain.cards import Card, format_counts
from ddz.domain.hand import HandState, Phase, evolve, view_for
from ddz.domain.players import RandomPlayer
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI
from ddz.domain.selfplay import play_hand
from ddz.domain.settlement import RoomSettings
from ddz.v1 import table_pb2
from hand_kit import hidden_from


def positions(rules, seed: int) -> list[HandState]:
    """Every state of a random hand with shown cards (§6), one per event."""
    players = [RandomPlayer(random.Random(seed * 3 + i), show_rate=0.3) for i in range(3)]
    events, _ = play_hand(rules, RoomSettings(), players, bytes([seed]) * 32, hand_id=f"w{seed}")
    return list(accumulate(events, evolve, initial=HandState()))[1:]


def cards_on_the_wire(message: table_pb2.PlayerView) -> set[Card]:
    """Every card anywhere in the message, found by walking its fields."""
    found: set[Card] = set()

    def walk(node) -> None:
        for field, value in node.ListFields():
            if field.message_type is None:
                continue
            items = value if field.is_repeated else [value]
            for item in items:
                if field.message_type.name == "Card":
                    found.add(card_from_pb(item))
                else:
                    walk(item)

    walk(message)
    return found


@pytest.mark.parametrize("rules", [CLASSIC, CT, LAIZI, TIANDI], ids=lambda r: r.name)
def test_each_seat_is_sent_its_own_cards_and_turn_and_nothing_hidden(rules) -> None:
    views.forget_encodings()
    for seed in range(3):
        for version, state in enumerate(positions(rules, seed), 1):
            for seat in (2, 0, 1):  # another seat's view is built first, then this one
                view = view_for(state, seat)
                message = views.view_to_pb(view, version=version, table_id="t", now=9.0)
                assert message.seat == seat and message.version == version
                assert tuple(card_from_pb(c) for c in message.cards) == state.cards[seat]
                assert message.cards_text == format_counts(state.counts[seat])
                assert message.my_turn == (state.turn == seat)
                assert message.card_counts == [len(cards) for cards in state.cards]
                if state.phase is not Phase.ENDED:  # the cards left are shown at the end
                    leaked = cards_on_the_wire(message) & hidden_from(state, seat)
                    assert not leaked, f"seat {seat} is sent {sorted(map(str, leaked))}"


@pytest.mark.parametrize("rules", [CLASSIC, LAIZI], ids=lambda r: r.name)
def test_a_view_is_the_same_message_whether_its_position_was_encoded_before(rules) -> None:
    states = positions(rules, 7)
    first_seen = {}
    views.forget_encodings()
    for version, state in enumerate(states, 1):
        for seat in range(3):
            view = view_for(state, seat)
            first_seen[version, seat] = views.view_to_pb(view, version=version, now=1.0)
    views.forget_encodings()
    for version, state in reversed(list(enumerate(states, 1))):
        for seat in (1, 2, 0):
            view = view_for(state, seat)
            again = views.view_to_pb(view, version=version, now=1.0)
            assert again == first_seen[version, seat], (version, seat)


def test_a_position_encoded_for_one_state_is_not_used_for_another() -> None:
    """The same hand id and version from a state that is not the one encoded (its log
    is another object, as when a hand is folded again): encoded anew from its own."""
    views.forget_encodings()
    states = positions(CLASSIC, 3)
    earlier, later = states[5], states[20]
    encoded = views.view_to_pb(view_for(earlier, 0), version=21, now=1.0)
    message = views.view_to_pb(view_for(later, 1), version=21, now=1.0)
    assert message.passes == later.passes
    assert list(message.plays_made) == list(later.plays_made)
    assert message != encoded
