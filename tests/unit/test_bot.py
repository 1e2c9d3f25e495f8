"""The strong player: it decides from a ``PlayerView`` only, the same seed gives
the same decisions, and every decision it makes is legal in all four variants,
wildcard readings (§3, §5) and ct's bomb limits (§7) included."""

from __future__ import annotations

import dataclasses
import inspect
import random
import typing

import pytest
from ddz.bot import Bot, Budget
from ddz.bot.situation import situation_of
from ddz.domain.cards import Card, Rank, parse_ranks
from ddz.domain.hand import (
    Command,
    Hand,
    Pass,
    Phase,
    Play,
    PlayerView,
    Rejection,
    StartHand,
    view_for,
)
from ddz.domain.hand.events import CardsShown, HandEnded, PlayMade
from ddz.domain.players import GreedyPlayer, RandomPlayer
from ddz.domain.ruleset import CLASSIC, CT, LAIZI, TIANDI, RuleSet
from ddz.domain.selfplay import SEATS as SELFPLAY_SEATS
from ddz.domain.selfplay import hand_seed, play_hand, run_seed
from ddz.domain.settlement import RoomSettings
from hand_kit import cards_in, ok, rigged

VARIANTS = (CLASSIC, CT, LAIZI, TIANDI)
FAST = Budget(iterations=1500, samples=6, max_cards=12, max_ms=None)


def deal_texts(rules: RuleSet, seed: int) -> list[str]:
    """A random full deal as rank notation: three hands, then the bottom."""
    deck = [Rank(r).symbol for r in range(15) for _ in range(rules.max_copies[r])]
    random.Random(seed).shuffle(deck)
    n = rules.hand_size
    parts = [deck[i * n : (i + 1) * n] for i in range(3)] + [deck[3 * n :]]
    return ["".join(p) for p in parts]


# -- the player-view boundary -----------------------------------------------------------


def test_bot_takes_a_player_view_and_nothing_else() -> None:
    for method in (Bot.act, Bot.decide, Bot.suggest):
        hints = typing.get_type_hints(method)
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        assert params == ["view"]
        assert hints["view"] is PlayerView


def test_the_view_type_has_no_field_for_other_seats_hidden_cards() -> None:
    """Card-holding fields of the view are this seat's cards and public ones only."""
    card_fields = {
        f.name
        for f in dataclasses.fields(PlayerView)
        if "Card" in str(f.type) or f.name == "history"
    }
    assert card_fields <= {"cards", "bottom", "golden_card", "shown", "history"}


class _Inspected:
    """Hands the bot its view, after checking that the view shows no hidden card."""

    def __init__(self, bot: Bot, hand: list[Hand]) -> None:
        self.bot = bot
        self.hand = hand
        self.views = 0

    def act(self, view: PlayerView) -> Command:
        state = self.hand[0].state
        visible = set(state.cards[view.seat]) | {c for e in view.history for c in _played(e)}
        if state.landlord is not None:
            visible |= set(state.bottom)
        visible |= {c for s in state.shown for c in state.cards[s.seat]}
        if state.golden_card is not None:
            visible.add(state.golden_card)
        assert cards_in(view) <= visible
        assert not any(e.HIDDEN for e in view.history)
        self.views += 1
        return self.bot.act(view)


def _played(event: object) -> tuple[Card, ...]:
    if isinstance(event, PlayMade):
        return event.cards
    if isinstance(event, CardsShown | HandEnded):
        return tuple(c for hand in getattr(event, "final_hands", ()) for c in hand) + tuple(
            getattr(event, "cards", ())
        )
    return ()


@pytest.mark.parametrize("rules", VARIANTS, ids=lambda r: r.name)
def test_every_view_the_bot_gets_holds_only_its_own_and_public_cards(rules: RuleSet) -> None:
    views = 0
    for i in range(3):
        holder: list[Hand] = []
        seats = [_Inspected(Bot(i, budget=FAST), holder) for _ in range(3)]
        hand = Hand()
        holder.append(hand)
        start = StartHand(f"v{i}", rules, RoomSettings(), SELFPLAY_SEATS, bytes([i]) * 32)
        ok(hand, start)
        while hand.state.phase is not Phase.ENDED:
            seat = hand.state.turn
            ok(hand, seats[seat].act(view_for(hand.state, seat)))
        views += sum(s.views for s in seats)
    assert views > 30  # bids, shows and plays, in three hands


@pytest.mark.parametrize("deal", [1, 2, 3])
def test_decisions_depend_only_on_what_the_seat_sees(deal: int) -> None:
    """Two deals that differ only in the hidden hands (seats 1 and 2 swapped) look the
    same to the landlord at seat 0, so it plays the same in both."""
    own, one, two, bottom = deal_texts(CLASSIC, deal)
    a = rigged(CLASSIC, [own, one, two], bottom, landlord=0)
    b = rigged(CLASSIC, [own, two, one], bottom, landlord=0)
    bot = Bot(5, budget=FAST)
    seen = 0
    while a.state.phase is Phase.PLAYING and a.state.turn == 0 and seen < 6:
        va, vb = view_for(a.state, 0), view_for(b.state, 0)
        assert va == vb
        ca, cb = bot.act(va), bot.act(vb)
        assert ca == cb
        seen += 1
        ok(a, ca)
        ok(b, cb)
        for hand in (a, b):  # the others pass, so the bot keeps the lead
            for seat in (1, 2):
                if hand.state.phase is Phase.PLAYING:
                    ok(hand, Pass(seat))
    assert seen >= 3


def test_situation_counts_cards_from_the_view() -> None:
    """Unseen pool = deck - own hand - every card played; the landlord keeps the bottom."""
    hand = rigged(
        CLASSIC,
        ["3333456789TJQK", "44556677889TJQK", "56789TTJJQQKKA"],
        "9A2",
        landlord=1,
    )
    ok(hand, Play(1, parse_ranks("44")))
    sit = situation_of(view_for(hand.state, 2))
    assert sum(sit.pool) == 54 - 14 - 2  # seat 2's own 14 cards and the pair of 4s
    assert sit.pool[Rank.FOUR] == 4 - 2 and sit.pool[Rank.THREE] == 4
    assert sit.landlord_bottom == parse_ranks("9A2")
    assert sit.counts == (14, 16, 14)
    assert sit.partner() == 0 and sit.enemies() == (1,)


# -- determinism --------------------------------------------------------------------------


def _events(rules: RuleSet, seed: int, hands: int) -> list[object]:
    out: list[object] = []
    master = run_seed(f"bot-determinism-{rules.name}")
    for i in range(hands):
        bots = [Bot(seed, budget=FAST) for _ in range(3)]
        events, _ = play_hand(rules, RoomSettings(), bots, hand_seed(master, i), hand_id=f"d{i}")
        out.extend(events)
    return out


@pytest.mark.parametrize("rules", VARIANTS, ids=lambda r: r.name)
def test_same_seed_same_hands(rules: RuleSet) -> None:
    assert _events(rules, 11, 3) == _events(rules, 11, 3)


@pytest.mark.parametrize("rules", [CLASSIC, TIANDI], ids=lambda r: r.name)
def test_a_bot_with_a_history_decides_like_a_fresh_one(rules: RuleSet) -> None:
    """Caches only make the bot faster: a bot that has played other hands first (as a
    service's long-lived bot has) plays a hand exactly as a fresh bot does."""
    master = run_seed(f"bot-history-{rules.name}")
    warm = Bot(4)
    for i in range(3):
        play_hand(rules, RoomSettings(), [warm] * 3, hand_seed(master, 100 + i), hand_id=f"w{i}")
    for i in range(2):
        seed = hand_seed(master, i)
        fresh_events, _ = play_hand(rules, RoomSettings(), [Bot(4)] * 3, seed, hand_id=f"h{i}")
        warm_events, _ = play_hand(rules, RoomSettings(), [warm] * 3, seed, hand_id=f"h{i}")
        assert warm_events == fresh_events


def test_decisions_are_deterministic_for_one_view() -> None:
    own, one, two, bottom = deal_texts(LAIZI, 4)
    hand = rigged(LAIZI, [own, one, two], bottom, landlord=0, wild=[Rank.SEVEN])
    view = view_for(hand.state, 0)
    assert Bot(3).act(view) == Bot(3).act(view) == Bot(3).suggest(view)


def test_the_time_cap_bounds_the_search() -> None:
    """The worst case is bounded by a configurable budget (``DDZ_BOT_MAX_MS``).
    In this endgame (found by trying random small deals) the search changes the
    landlord's lead. A cap that has always passed stops the search after its first
    sampled deal, before any result counts: the bot then plays its policy's move, exactly
    as a bot with no search at all does."""
    hand = rigged(CLASSIC, ["35589", "Q44", "267"], "", landlord=0)
    view = view_for(hand.state, 0)
    full = Budget(max_ms=None)
    searched = Bot(12, budget=full).act(view)
    unsearched = Bot(12, budget=dataclasses.replace(full, iterations=0)).act(view)
    capped = Bot(12, budget=dataclasses.replace(full, max_ms=1e-9)).act(view)
    assert searched != unsearched
    assert capped == unsearched


# -- legality over many hands ---------------------------------------------------------------


def _seats(seed: int, i: int) -> list[object]:
    """Two bots and one greedy player (a random one every fourth hand), seats rotating."""
    rng = random.Random(f"{seed}/{i}")
    other = RandomPlayer(rng, show_rate=0.05) if i % 4 == 0 else GreedyPlayer(rng)
    seats = [Bot(seed, budget=FAST), Bot(seed + 1, budget=FAST), other]
    k = i % 3
    return seats[k:] + seats[:k]


@pytest.mark.parametrize(
    ("rules", "hands"),
    [(CLASSIC, 200), (CT, 120), (LAIZI, 150), (TIANDI, 100)],
    ids=lambda x: x.name if isinstance(x, RuleSet) else str(x),
)
def test_every_decision_is_accepted(rules: RuleSet, hands: int) -> None:
    """Real bidding, grabs, shows and play; ``play_hand`` raises on any rejected command.
    Wildcard plays carry their declared reading; ct bombs stay within each allowance."""
    master = run_seed(f"bot-legal-{rules.name}")
    wild_plays = bombs_at_limit = 0
    for i in range(hands):
        players = _seats(7, i)
        events, state = play_hand(
            rules,
            RoomSettings(),
            players,
            hand_seed(master, i),  # type: ignore[arg-type]
            hand_id=f"legal-{i}",
        )
        assert state.phase is Phase.ENDED and state.ledger is not None
        for event in events:
            if isinstance(event, PlayMade) and event.reading.substitutes:
                wild_plays += 1
        limits = state.bomb_limits
        for seat in range(3):
            limit = limits[seat]
            if limit is not None:
                assert state.bombs_made[seat] <= limit
                bombs_at_limit += state.bombs_made[seat] == limit
    if rules.wildcard_count:
        assert wild_plays > 0  # the bot (and others) did play wildcards as other ranks
    if rules.bomb_limits is not None:
        assert bombs_at_limit > 0


@pytest.mark.parametrize(("allowance", "bombs"), [(0, False), (1, True)])
def test_farmer_bombs_only_within_its_allowance(allowance: int, bombs: bool) -> None:
    """§7: the landlord leads a single and holds one card; the farmer after the passing
    partner bombs to stop it, unless its allowance is spent (then it may only pass)."""
    hand = rigged(CT, ["33334", "9T", "56"], "", landlord=1, bomb_limits=(allowance, None, 1))
    ok(hand, Play(1, parse_ranks("9")))
    ok(hand, Pass(2))
    view = view_for(hand.state, 0)
    assert view.bombs_left[0] == allowance
    command = Bot(1, budget=FAST).act(view)
    assert not isinstance(hand.execute(command), Rejection)
    assert isinstance(command, Play) == bombs
    if bombs:
        assert isinstance(command, Play) and command.cards == parse_ranks("3333")


def test_wildcard_play_is_declared_and_accepted() -> None:
    """With K wild, ``3456K`` goes out as the chain ``34567``; the play names its reading."""
    hand = rigged(LAIZI, ["3456K", "TTJJQQ", "889"], "", landlord=0, wild=[Rank.KING])
    command = Bot(2, budget=FAST).act(view_for(hand.state, 0))
    assert isinstance(command, Play) and command.declared is not None
    assert command.declared.substitutes == (Rank.SEVEN,)
    assert not isinstance(hand.execute(command), Rejection)
    assert hand.state.phase is Phase.ENDED


# -- a few plays the bot must find ----------------------------------------------------------


def test_goes_out_in_one_play_when_it_can() -> None:
    hand = rigged(CLASSIC, ["33344456", "789TJQKA2BR", "456789TJQKA"], "", landlord=0)
    command = Bot(0).act(view_for(hand.state, 0))
    assert isinstance(command, Play) and command.cards == parse_ranks("33344456")


def test_farmer_does_not_bomb_a_partner() -> None:
    """Seat 1 (farmer) tops the landlord's 4 with a K; its partner, seat 2, holds only a
    bomb that beats it: the bot lets the partner's play stand."""
    hand = rigged(CLASSIC, ["456789TJQKA2BR", "KKAA22", "3333QQ"], "", landlord=0)
    ok(hand, Play(0, parse_ranks("4")))
    ok(hand, Play(1, parse_ranks("K")))
    command = Bot(0).act(view_for(hand.state, 2))
    assert isinstance(command, Pass)


def test_landlord_bombs_a_farmer_about_to_go_out() -> None:
    """A farmer tops the landlord with its second-last card; passing loses, the bomb
    and then the 6 win (no farmer can beat a 6 with a 4 or a 3)."""
    hand = rigged(CLASSIC, ["555569", "4", "A3"], "", landlord=0)
    ok(hand, Play(0, parse_ranks("9")))
    ok(hand, Pass(1))
    ok(hand, Play(2, parse_ranks("A")))
    command = Bot(0, budget=FAST).act(view_for(hand.state, 0))
    assert isinstance(command, Play) and command.cards == parse_ranks("5555")


@pytest.mark.parametrize("seat", [0, 1, 2])
def test_suggest_gives_a_legal_hint_for_any_seat(seat: int) -> None:
    own, one, two, bottom = deal_texts(TIANDI, 8)
    hand = rigged(TIANDI, [own, one, two], bottom, landlord=seat, wild=[Rank.NINE, Rank.FOUR])
    ok(hand, Play(seat, view_for(hand.state, seat).legal_moves()[0].cards))
    turn = hand.state.turn
    hint = Bot(9).suggest(view_for(hand.state, turn))
    assert not isinstance(hand.execute(hint), Rejection)
