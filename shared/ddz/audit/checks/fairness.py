"""Checks 4 and 5: the deal was fair. The revealed seed is the one committed to before
the deal, and every random outcome of the hand is what ``ddz-shuffle-v1`` derives from
it (docs/SHUFFLE.md section 6)."""

from __future__ import annotations

from ddz.audit.checks import describe
from ddz.audit.checks.context import Audit, CheckFailed
from ddz.audit.checks.replay import start_command
from ddz.audit.checks.results import COMMITMENT, DEAL
from ddz.domain.cards import Rank
from ddz.domain.hand import HandState, decide
from ddz.domain.hand.events import CardsDealt, Redealt, SeedRevealed, WildcardDrawn
from ddz.domain.shuffle import SEED_BYTES, commitment, deal, draw_wildcard
from ddz.domain.shuffle import master_seed as mix_seeds
from ddz.domain.shuffle import round_seed as round_key

# --- 4. the commitment --------------------------------------------------------------------


def check_commitment(audit: Audit) -> None:
    started = audit.started
    assert started is not None
    first = next((a for a in audit.decoded if isinstance(a.event, SeedRevealed)), None)
    if first is None:  # pragma: no cover - the signature step stops hands without one
        raise CheckFailed(COMMITMENT, "no seed was revealed")
    assert isinstance(first.event, SeedRevealed)
    try:
        seed = bytes.fromhex(first.event.seed)
    except ValueError:
        raise CheckFailed(
            COMMITMENT, f"event #{first.version}: the revealed seed is not hex"
        ) from None
    if len(seed) != SEED_BYTES:
        raise CheckFailed(
            COMMITMENT,
            f"event #{first.version}: the revealed seed has {len(seed)} bytes, not {SEED_BYTES}",
        )
    if commitment(seed) != started.commitment:
        raise CheckFailed(
            COMMITMENT,
            f"event #{first.version}: sha256 of the revealed seed is {commitment(seed)[:16]}…, "
            f"but the hand committed to {started.commitment[:16]}… before the deal",
        )
    audit.seed = seed
    audit.master = mix_seeds(seed, [bytes.fromhex(c) for c in started.client_seeds])
    audit.ok(COMMITMENT, f"sha256(seed) = {started.commitment[:16]}… as committed at #1")


# --- 5. the deal ---------------------------------------------------------------------------


def check_deal(audit: Audit) -> None:
    started = audit.started
    assert started is not None
    rules = started.rules
    round_no = -1
    redealt: int | None = None
    drawn: list[Rank] = []
    rounds = draws = 0
    for audited in audit.decoded:
        event = audited.event
        if type(event) not in _DEAL_EVENTS:  # most events are bids and plays
            continue
        where = f"event #{audited.version}"
        if isinstance(event, Redealt):
            if event.round != round_no + 1:
                raise CheckFailed(
                    DEAL, f"{where}: re-deal of round {event.round} after round {round_no}"
                )
            key_commitment = commitment(round_key(audit.master, event.round))
            if event.commitment != key_commitment:
                raise CheckFailed(
                    DEAL,
                    f"{where}: round {event.round}'s commitment {event.commitment[:16]}… is not "
                    f"sha256 of its key from the seed ({key_commitment[:16]}…)",
                )
            redealt = event.round
        elif isinstance(event, CardsDealt):
            expected_round = round_no + 1
            if event.round != expected_round or (expected_round > 0 and redealt != event.round):
                raise CheckFailed(DEAL, f"{where}: deal of round {event.round} out of order")
            round_no, drawn = event.round, []
            _check_round(audit, event, where)
            rounds += 1
        elif isinstance(event, WildcardDrawn):
            if round_no < 0:
                raise CheckFailed(DEAL, f"{where}: a wildcard drawn before any deal")
            draws_of = rules.wildcard_draws
            if not 0 <= event.index < len(draws_of) or draws_of[event.index] != event.when:
                raise CheckFailed(
                    DEAL, f"{where}: the rule set has no wildcard draw {event.index} {event.when}"
                )
            rank = draw_wildcard(audit.master, round_no, event.index, drawn)
            if rank != event.rank:
                raise CheckFailed(
                    DEAL,
                    f"{where}: wildcard draw {event.index} of round {round_no} is "
                    f"{rank.symbol} from the seed, recorded {event.rank.symbol}",
                )
            drawn.append(event.rank)
            draws += 1
    if rounds == 0:
        raise CheckFailed(DEAL, "no cards were dealt")
    audit.ok(
        DEAL,
        f"{rounds} deal round(s) and {draws} wildcard draw(s) re-derived from the seed",
    )


_DEAL_EVENTS = frozenset({Redealt, CardsDealt, WildcardDrawn})


def _expected_round(audit: Audit, round_no: int) -> CardsDealt:
    """Round ``round_no`` as ``ddz-shuffle-v1`` deals it from the revealed seed.

    Round 0 is taken from the hand aggregate's own start (``StartHand`` with the seed:
    HandStarted, then the deal by ``shuffle.deal``), kept for the decisions check so the
    first decision is not decided twice; a re-deal's round comes from ``shuffle.deal``."""
    started = audit.started
    assert started is not None
    if round_no == 0:
        try:
            decision = decide(HandState(), start_command(started, audit.seed), audit.seed)
        except Exception:  # a record the aggregate cannot even start: decisions will say
            decision = None
        if isinstance(decision, list):
            audit.start_decision = decision
            dealt = next((e for e in decision if isinstance(e, CardsDealt)), None)
            if dealt is not None:
                return dealt
    derived = deal(started.rules, audit.master, round_no)
    golden = derived.golden_card is not None
    return CardsDealt(
        round_no,
        derived.hands,
        derived.bottom,
        derived.golden_card,
        derived.golden_position,
        derived.first_bidder_drawn if golden else None,
        derived.first_bidder_drawn if started.first_bidder is None else started.first_bidder,
    )


def _check_round(audit: Audit, event: CardsDealt, where: str) -> None:
    expected = _expected_round(audit, event.round)
    if tuple(event.hands) != expected.hands:
        seat = next(s for s in range(3) if event.hands[s] != expected.hands[s])
        raise CheckFailed(
            DEAL,
            f"{where}: seat {seat}'s cards in round {event.round} are not what the seed deals "
            f"(recorded {describe.ranks(event.hands[seat])}, "
            f"from the seed {describe.ranks(expected.hands[seat])})",
        )
    if tuple(event.bottom) != expected.bottom:
        raise CheckFailed(
            DEAL, f"{where}: the bottom cards of round {event.round} are not the seed's"
        )
    golden = (expected.golden_card, expected.golden_position)
    if (event.golden_card, event.golden_position) != golden:
        raise CheckFailed(
            DEAL, f"{where}: the golden card of round {event.round} is not the seed's"
        )
    if (event.golden_receiver, event.first_bidder) != (
        expected.golden_receiver,
        expected.first_bidder,
    ):
        raise CheckFailed(
            DEAL,
            f"{where}: round {event.round}'s first bidder is seat {event.first_bidder}, "
            f"the seed and the table say seat {expected.first_bidder}",
        )
