"""The domain <-> protobuf codec (events on the wire, ``ddz.adapters.codec``).

Every event type and every command must survive the trip to bytes and back
unchanged, for every variant's rule set (every RULES.md Decision is a RuleSet field,
so a replay needs all of them), and stored bytes that are not a valid event must be
refused with ``CodecError`` rather than decoded into something half-filled.
"""

from __future__ import annotations

import dataclasses
import random
from fractions import Fraction

import pytest
from ddz.adapters import codec
from ddz.adapters.codec import CodecError, MalformedCards
from ddz.domain.cards import Rank, parse_ranks
from ddz.domain.hand import (
    EVENT_TYPES,
    Bid,
    BidAction,
    CommandRejected,
    Disconnect,
    DisconnectReason,
    Escape,
    Event,
    Hand,
    Pass,
    Play,
    Reconnect,
    Recorded,
    Rejection,
    RejectReason,
    Resume,
    SeatCommand,
    SeatInfo,
    ShowCards,
    StartHand,
    TimeOut,
    hand_events,
    replay,
)
from ddz.domain.hand.events import CardsDealt, PlayMade
from ddz.domain.players import RandomPlayer
from ddz.domain.readings import BombClass, ComboType, Reading
from ddz.domain.ruleset import (
    CLASSIC,
    CT,
    LAIZI,
    TIANDI,
    VARIANTS,
    AllPass,
    Bidding,
    BombLimits,
    BombTier,
    KickerRules,
    RuleSet,
    Scoring,
    WildcardDraw,
)
from ddz.domain.selfplay import play_hand
from ddz.domain.settlement import BeanEscapeRule, RoomSettings
from ddz.v1 import hand_events_pb2 as pb
from ddz.v1 import rules_pb2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SEED = bytes(range(32))
SEATS = (SeatInfo("p0"), SeatInfo("p1", is_bot=True), SeatInfo("p2"))
BEAN_ROOM = RoomSettings(initial_multiplier=2, coefficient=10, fee=5, min_balance=100)


def round_trip(event: Recorded) -> Recorded:
    return codec.decode_event(*codec.encode_event(event))


def selfplayed(rules: RuleSet, seed: int, room: RoomSettings | None = None) -> list[Event]:
    rng = random.Random(seed)
    players = [RandomPlayer(rng, show_rate=0.2) for _ in range(3)]
    balances = (5000, 5000, 5000) if rules.scoring is Scoring.BEANS else None
    events, _ = play_hand(
        rules, room or RoomSettings(), players, bytes([seed % 256]) * 32, balances=balances
    )
    return events


def people_events(rules: RuleSet) -> list[Event]:
    """A hand with a disconnect, a reconnect, a timed-out turn into auto-play and a
    resume, and (bean rooms) an escape."""
    balances = (5000, 5000, 5000) if rules.scoring is Scoring.BEANS else None
    room = BEAN_ROOM if rules.scoring is Scoring.BEANS else RoomSettings()
    hand = Hand()
    hand.execute(StartHand("h", rules, room, SEATS, SEED, balances=balances, first_bidder=0))
    for command in (
        Disconnect(1, DisconnectReason.CONNECTION_LOST),
        Reconnect(1),
        TimeOut(0, 1_800_000_000_000, 20.0, 1),
        Bid(0, BidAction.PASS, 0, by_bot=True),
        Resume(0),
        Escape(2),
    ):
        assert not isinstance(hand.execute(command), Rejection), command
    return hand.events


def rejections() -> list[CommandRejected]:
    declared = Reading(ComboType.SOLO_CHAIN, Rank.SEVEN, 5, 5, substitutes=(Rank.FIVE,))
    return [
        CommandRejected(Bid.call(0, 3), RejectReason.NOT_YOUR_TURN, "not your turn", "r1"),
        CommandRejected(Bid.grab(1), RejectReason.WRONG_PHASE, "not now"),
        CommandRejected(Bid.pass_(2), RejectReason.WRONG_PHASE, "not now"),
        CommandRejected(ShowCards(0, 4), RejectReason.NOT_ALLOWED, "no show cards"),
        CommandRejected(ShowCards(1), RejectReason.ALREADY_SHOWN, "shown"),
        CommandRejected(Play(1, parse_ranks("34567")), RejectReason.DOES_NOT_BEAT, "low"),
        CommandRejected(
            Play(2, parse_ranks("3467A"), declared), RejectReason.NOT_A_COMBINATION, "x"
        ),
        CommandRejected(Pass(0), RejectReason.LEADER_CANNOT_PASS, "lead"),
        CommandRejected(Disconnect(7), RejectReason.UNKNOWN_SEAT, "no seat 7"),
        CommandRejected(Reconnect(1), RejectReason.NOT_ALLOWED, "not disconnected"),
        CommandRejected(Escape(0), RejectReason.WRONG_PHASE, "ended"),
        CommandRejected(TimeOut(1, 1_800_000_000_000, 2.5, 2), RejectReason.NOT_ALLOWED, "bot"),
        CommandRejected(Resume(2), RejectReason.NOT_ALLOWED, "not in auto-play"),
        CommandRejected(Pass(1, by_bot=True), RejectReason.NOT_YOUR_TURN, "clock runs"),
    ]


# --- every event type ----------------------------------------------------------------------


def test_samples_cover_every_event_type_and_command_rejected() -> None:
    """The samples below must reach every type, or the round trips prove too little."""
    seen = {e.TYPE for rules in VARIANTS.values() for e in people_events(rules)}
    seen |= {
        e.TYPE for rules in VARIANTS.values() for seed in range(8) for e in selfplayed(rules, seed)
    }
    seen |= {e.TYPE for e in rejections()}
    assert seen == set(EVENT_TYPES) | {CommandRejected.TYPE}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_event_of_selfplayed_hands_round_trips(variant: str) -> None:
    rules = VARIANTS[variant]
    events = [e for seed in range(6) for e in selfplayed(rules, seed)] + people_events(rules)
    for event in events:
        assert round_trip(event) == event
    # Readings keep their bomb-ladder tier (not part of equality, but used by §9).
    for event in events:
        decoded = round_trip(event)
        if hasattr(event, "reading"):
            assert decoded.reading.tier == event.reading.tier  # type: ignore[union-attr]


def test_command_rejected_round_trips_with_its_command() -> None:
    for rejected in rejections():
        assert round_trip(rejected) == rejected


def test_replay_of_decoded_events_is_the_live_state() -> None:
    for rules in VARIANTS.values():
        events = selfplayed(rules, 3)
        decoded = [round_trip(e) for e in events]
        assert replay(hand_events(decoded)) == replay(events)


def test_hand_events_leaves_out_rejections() -> None:
    events = selfplayed(CLASSIC, 1)
    mixed: list[Recorded] = [events[0], *rejections(), *events[1:]]
    assert hand_events(mixed) == events


def test_only_the_deal_is_hidden() -> None:
    assert {CardsDealt.TYPE} == codec.HIDDEN_TYPES


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(sorted(VARIANTS)),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_hypothesis_random_hands_round_trip(variant: str, seed: int) -> None:
    """Any self-played hand: each event, through bytes and an envelope, comes back equal."""
    events = selfplayed(VARIANTS[variant], seed)
    for version, event in enumerate(events, start=1):
        data = codec.envelope_for("hand-h", version, event, "cause", "hand-h", "test")
        envelope, decoded = codec.decode_envelope(data)
        assert decoded == event
        assert (envelope.stream_version, envelope.type) == (version, event.TYPE)


# --- rule sets and rooms ---------------------------------------------------------------------


@pytest.mark.parametrize("rules", [CLASSIC, CT, LAIZI, TIANDI], ids=lambda r: r.name)
def test_every_variant_rule_set_round_trips(rules: RuleSet) -> None:
    assert codec.ruleset_from_pb(codec.ruleset_to_pb(rules)) == rules


def test_a_custom_rule_set_with_every_field_changed_round_trips() -> None:
    custom = RuleSet(
        name="house",
        rank_copies=5,
        joker_copies=3,
        hand_size=20,
        bottom_size=5,
        combo_types=frozenset({ComboType.SINGLE, ComboType.BOMB, ComboType.ROCKET}),
        min_solo_chain=6,
        min_pair_chain=4,
        min_triple_chain=3,
        kickers=KickerRules(True, True, True),
        bomb_ladder=(
            BombTier(ComboType.BOMB, 4, BombClass.SOFT, 3),
            BombTier(ComboType.ROCKET, 2, None, 5),
        ),
        wildcard_draws=(WildcardDraw.AFTER_LANDLORD, WildcardDraw.BEFORE_BIDDING),
        golden_card=False,
        bidding=Bidding.GRAB,
        all_pass=AllPass.FIRST_BIDDER_LANDLORD,
        show_cards=True,
        bomb_limits=BombLimits(landlord=3, turn_never_came=None, by_call=((3, None),), passed=0),
        spring_multiplier=3,
        grab_multiplier=4,
        show_card_factors=(("after_deal", 3), ("before_deal", 7)),
        show_during_deal_late=2,
        scoring=Scoring.CT_POINTS,
    )
    defaults = RuleSet(name="default")
    changed = [
        f.name
        for f in dataclasses.fields(RuleSet)
        if getattr(custom, f.name) == getattr(defaults, f.name)
    ]
    assert changed == [], "every field differs from the default, so each one is really carried"
    assert codec.ruleset_from_pb(codec.ruleset_to_pb(custom)) == custom


def test_rule_set_message_has_a_field_for_every_rule_set_field() -> None:
    """A field added to RuleSet (a new Decision) must reach the wire too."""
    proto_fields = set(pb.RuleSet.DESCRIPTOR.fields_by_name)
    assert {f.name for f in dataclasses.fields(RuleSet)} == proto_fields
    room_fields = set(pb.RoomSettings.DESCRIPTOR.fields_by_name)
    assert {f.name for f in dataclasses.fields(RoomSettings)} == room_fields


def test_room_settings_round_trip_with_exact_fractions() -> None:
    for room in (
        RoomSettings(),
        RoomSettings(rake=Fraction(1, 20), cap=500, escape_penalty=12),
        RoomSettings(
            initial_multiplier=3,
            coefficient=10,
            fee=5,
            wildcard_coefficient=Fraction(1, 3),
            hand_cap=8000,
            min_balance=1000,
            bean_escape=BeanEscapeRule(11, 21, 5, 9, 3),
        ),
    ):
        assert codec.room_from_pb(codec.room_to_pb(room)) == room
    assert codec.room_to_pb(RoomSettings(rake=Fraction(1, 20))).rake == pb.Fraction(
        numerator=1, denominator=20
    )


# --- commands ---------------------------------------------------------------------------------

COMMANDS = [
    Bid.call(0, 2),
    Bid.call(1),
    Bid.grab(2),
    Bid.pass_(0),
    ShowCards(1),
    ShowCards(2, cards_held=8),
    Play(0, parse_ranks("33344456")),
    Play(1, parse_ranks("6789T"), Reading(ComboType.SOLO_CHAIN, Rank.TEN, 5, 5)),
    Pass(2),
    Disconnect(0),
    Reconnect(1),
    Escape(2),
]


@pytest.mark.parametrize("command", COMMANDS, ids=repr)
def test_commands_round_trip_through_a_decide_request(command: SeatCommand) -> None:
    request = rules_pb2.DecideRequest(hand_id="h", seat=command.seat)
    codec.set_command(request, command)
    decoded = rules_pb2.DecideRequest.FromString(request.SerializeToString())
    assert codec.command_from_pb(decoded.seat, decoded) == command
    assert decoded.WhichOneof("command") == codec.command_type(command)


def test_card_text_is_parsed_in_any_order_and_with_10() -> None:
    request = rules_pb2.DecideRequest(seat=0, play=pb.PlayCommand(cards="10 9 8 J Q"))
    assert codec.command_from_pb(0, request) == Play(0, parse_ranks("89TJQ"))


@pytest.mark.parametrize("text", ["33X", "3" * 300, "S3", "1"])
def test_malformed_cards_are_refused(text: str) -> None:
    request = rules_pb2.DecideRequest(seat=0, play=pb.PlayCommand(cards=text))
    with pytest.raises(MalformedCards):
        codec.command_from_pb(0, request)


def test_a_request_without_a_command_or_bid_action_is_refused() -> None:
    with pytest.raises(CodecError, match="no command"):
        codec.command_from_pb(0, rules_pb2.DecideRequest(hand_id="h"))
    with pytest.raises(CodecError, match="action"):
        codec.command_from_pb(0, rules_pb2.DecideRequest(bid=pb.BidCommand(score=2)))


def test_start_hand_is_not_a_seat_command() -> None:
    with pytest.raises(CodecError):
        codec.command_to_pb(StartHand("h", CLASSIC, RoomSettings(), SEATS, SEED))  # type: ignore[arg-type]


# --- the envelope and bad bytes ----------------------------------------------------------------


def test_envelope_carries_every_field() -> None:
    event = selfplayed(CLASSIC, 2)[0]
    data = codec.envelope_for("hand-h", 1, event, "cause-1", "corr-1", "dealer@x:1", event_id="e-1")
    envelope, decoded = codec.decode_envelope(data)
    assert decoded == event
    assert envelope.event_id == "e-1"
    assert (envelope.stream_id, envelope.stream_version) == ("hand-h", 1)
    assert (envelope.type, envelope.type_version) == ("hand_started", 1)
    assert (envelope.causation_id, envelope.correlation_id) == ("cause-1", "corr-1")
    assert envelope.producer == "dealer@x:1"
    assert envelope.content_type == "application/x-protobuf; messageType=ddz.v1.HandStarted"
    assert envelope.occurred_at.seconds > 0
    fresh = codec.parse_envelope(codec.envelope_for("hand-h", 1, event, "c", "c", "p"))
    assert fresh.event_id and fresh.event_id != "e-1"


def test_unknown_type_wrong_version_and_garbage_are_codec_errors() -> None:
    type_, version, payload = codec.encode_event(selfplayed(CLASSIC, 2)[0])
    with pytest.raises(CodecError, match="unknown event type"):
        codec.decode_event("cards_played", 1, payload)
    with pytest.raises(CodecError, match="v2"):
        codec.decode_event(type_, version + 1, payload)
    with pytest.raises(CodecError):
        codec.decode_event(type_, version, b"\xff\xff\xff")
    with pytest.raises(CodecError):
        codec.parse_envelope(b"\x0a\xff")


def test_values_outside_the_domain_are_codec_errors() -> None:
    bad_rank = pb.WildcardDrawn(index=0, when=pb.WILDCARD_DRAW_AFTER_LANDLORD, rank=99)
    with pytest.raises(CodecError):
        codec.decode_event("wildcard_drawn", 1, bad_rank.SerializeToString())
    unspecified = pb.WildcardDrawn(index=0, when=pb.WILDCARD_DRAW_AFTER_LANDLORD)
    with pytest.raises(CodecError):
        codec.decode_event("wildcard_drawn", 1, unspecified.SerializeToString())
    with pytest.raises(CodecError, match="seat"):
        codec.decode_event("passed", 1, pb.Passed(seat=3).SerializeToString())
    with pytest.raises(CodecError, match="three"):
        codec.decode_event("hand_settled", 1, pb.HandSettled().SerializeToString())
    rejected = pb.CommandRejected(seat=0, command_type="play", reason="no_such_reason",
                                  play=pb.PlayCommand(cards="3"))  # fmt: skip
    with pytest.raises(CodecError, match="reason"):
        codec.decode_event("command_rejected", 1, rejected.SerializeToString())
    mismatched = pb.CommandRejected(seat=0, command_type="bid", reason="wrong_phase",
                                    play=pb.PlayCommand(cards="3"))  # fmt: skip
    with pytest.raises(CodecError):
        codec.decode_event("command_rejected", 1, mismatched.SerializeToString())


def test_decoding_the_same_bytes_again_gives_equal_values_and_bad_bytes_still_fail() -> None:
    # Cards, rule sets, rooms, readings and breakdowns are decoded once per encoding and
    # then shared: a second decode must still be the event, and bytes that differ only
    # in a bad value must still be refused after the good ones were decoded.
    for variant in sorted(VARIANTS):
        events = selfplayed(VARIANTS[variant], 5)
        for event in events:
            encoded = codec.encode_event(event)
            assert codec.decode_event(*encoded) == event
            assert codec.decode_event(*encoded) == event
    play = next(e for e in selfplayed(CLASSIC, 5) if isinstance(e, PlayMade))
    message = codec.event_to_pb(play)
    message.cards[0].rank = 99
    with pytest.raises(CodecError):
        codec.decode_event("play_made", 1, message.SerializeToString())
    message = codec.event_to_pb(play)
    message.reading.type = 99
    with pytest.raises(CodecError):
        codec.decode_event("play_made", 1, message.SerializeToString())
    started = codec.event_to_pb(selfplayed(CLASSIC, 5)[0])
    started.rules.bidding = 99
    with pytest.raises(CodecError):
        codec.decode_event("hand_started", 1, started.SerializeToString())


def test_bid_actions_and_ranks_map_one_to_one() -> None:
    for action in BidAction:
        request = rules_pb2.DecideRequest(seat=0)
        codec.set_command(request, Bid(0, action, 0))
        assert codec.command_from_pb(0, request) == Bid(0, action, 0)
    assert [codec.rank_from_pb(codec.rank_to_pb(r)) for r in Rank] == list(Rank)
    assert codec.rank_to_pb(Rank.THREE) == pb.RANK_THREE


def test_an_empty_play_in_a_request_is_malformed_cards_but_a_stored_one_still_decodes() -> None:
    from ddz.application.errors import Reason

    empty = rules_pb2.DecideRequest(seat=1, play=pb.PlayCommand(cards=""))
    with pytest.raises(MalformedCards, match="no cards given") as refused:
        codec.command_from_request(1, empty)
    assert refused.value.reason is Reason.MALFORMED_CARDS
    # Decoding what is stored never changes: the same empty play, recorded as refused.
    assert codec.command_from_pb(1, empty) == Play(1, (0,) * 15)
    stored = CommandRejected(Play(1, (0,) * 15), RejectReason.NOT_A_COMBINATION, "x", "r")
    assert round_trip(stored) == stored
    # Any other command is command_from_pb's.
    for command in (Bid.call(0, 2), ShowCards(2, 4), Play(0, parse_ranks("33")), Pass(1)):
        request = rules_pb2.DecideRequest(seat=command.seat)
        codec.set_command(request, command)
        assert codec.command_from_request(command.seat, request) == command
    with pytest.raises(MalformedCards):
        codec.command_from_request(0, rules_pb2.DecideRequest(play=pb.PlayCommand(cards="3X")))
    with pytest.raises(CodecError):
        codec.command_from_request(0, rules_pb2.DecideRequest())


def test_play_counts_parses_card_text_and_refuses_a_play_of_no_cards() -> None:
    assert codec.play_counts("334") == parse_ranks("334")
    assert codec.play_counts("JQKA2") == parse_ranks("JQKA2")
    for text in ("", "3Z", "3" * 300):
        with pytest.raises(MalformedCards):
            codec.play_counts(text)
    with pytest.raises(MalformedCards, match="no cards given: to pass, send pass"):
        codec.play_counts("")


def test_hand_events_leaves_out_what_was_refused() -> None:
    events = selfplayed(CLASSIC, 3)
    assert hand_events([*events, rejections()[0]]) == events


def test_public_state_shows_counts_not_cards_at_every_step() -> None:
    from ddz.adapters.codec.views import PHASES, public_state_to_pb
    from ddz.domain.hand import Phase, evolve
    from ddz.domain.hand.state import NO_ONE, HandState

    assert set(PHASES) == set(Phase)
    events = selfplayed(CLASSIC, 7)
    state = HandState()
    empty = public_state_to_pb("h", state, 0)
    assert empty.phase == rules_pb2.HAND_PHASE_NOT_STARTED
    assert not empty.HasField("rules") and not empty.HasField("turn")
    for version, event in enumerate(events, start=1):
        state = evolve(state, event)
        msg = public_state_to_pb("h", state, version)
        assert msg.hand_id == "h" and msg.version == version
        assert msg.phase == PHASES[state.phase]
        assert list(msg.card_counts) == [len(cards) for cards in state.cards]
        assert not hasattr(msg, "cards")
        assert msg.HasField("rules") == (state.phase is not Phase.NOT_STARTED)
        assert msg.HasField("turn") == (state.turn != NO_ONE)
        assert msg.HasField("landlord") == (state.landlord is not None)
        assert msg.HasField("trick") == (state.trick is not None)
        assert codec.multiplier_from_pb(msg.multiplier) == state.multiplier
        assert [codec.seat_from_pb(s) for s in msg.seats] == list(state.seats)
    assert msg.phase == rules_pb2.HAND_PHASE_ENDED
    assert codec.ruleset_from_pb(msg.rules) == CLASSIC


def test_settled_hands_and_balances_map_to_the_settlement_messages() -> None:
    from ddz.domain.balances import Balance, SettledHand
    from ddz.domain.hand.events import HandSettled

    settled = next(e for e in selfplayed(CLASSIC, 5) if isinstance(e, HandSettled))
    _type, _version, payload = codec.encode_event(settled)
    row = SettledHand(
        id=1,
        hand_id="h",
        event_id="e",
        landlord=settled.landlord,
        base=settled.base,
        payload=payload,
        players=("a", "b", "c"),
        deltas=settled.ledger.deltas,
    )
    hand = codec.settled_hand_to_pb(row)
    assert (hand.hand_id, hand.event_id, list(hand.players)) == ("h", "e", ["a", "b", "c"])
    assert (hand.landlord, hand.base) == (settled.landlord, settled.base)
    assert codec.ledger_from_pb(hand.ledger) == settled.ledger
    assert codec.multiplier_from_pb(hand.multiplier) == settled.multiplier
    mine = codec.player_ledger_to_pb(row, "c")
    assert (mine.seat, mine.delta, mine.hand) == (2, settled.ledger.deltas[2], hand)
    balance = codec.balance_to_pb(Balance("a", 120, 3))
    assert (balance.player_id, balance.balance, balance.hands) == ("a", 120, 3)
