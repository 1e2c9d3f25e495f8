"""``ddz settle``: one JSON hand outcome on stdin -> its ledger as JSON (RULES.md §10).

For support staff settling a disputed hand by hand. The input schema is the typed model
below (``OutcomeInput``, documented in ``docs/CLI.md``, "ddz settle"): pydantic reads the
JSON into it, refusing unknown fields and wrong types; what is left to this module is
reading the facts in the game's terms (bombs from cards, shows, springs) and
``ddz.domain.settlement`` works out the money. Bad input is one ``ddz: error: ...``
line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from ddz.domain.cards import NUM_RANKS, Rank, parse_ranks
from ddz.domain.multipliers import (
    REASONS,
    Factor,
    MultiplierBreakdown,
    Side,
    bomb_detail,
    bomb_tier_index,
    grab_factor,
    initial_factor,
    show_factor,
    spring_factor,
)
from ddz.domain.readings import BombClass, ComboType
from ddz.domain.ruleset import RuleSet, Scoring, ruleset_for
from ddz.domain.settlement import BeanEscapeRule, HandOutcome, RoomSettings, settle

MAX_GRABS = 100  # a hand has a few grabs; this keeps input small
BOMB_TYPES = {t.value: t for t in (ComboType.BOMB, ComboType.SKY_BOMB, ComboType.ROCKET)}
_RULE, _ROOM = BeanEscapeRule(), RoomSettings()


class OutcomeError(ValueError):
    """The JSON does not describe a hand outcome."""


# --- the input schema -------------------------------------------------------------------


class _Input(BaseModel):
    # Strict: a "3" is not a number and a 1 is not true; JSON keys not listed are refused.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class BeanEscapeInput(_Input):
    threshold: int = _RULE.threshold
    landlord_floor: int = _RULE.landlord_floor
    landlord_scale: int = _RULE.landlord_scale
    farmer_floor: int = _RULE.farmer_floor
    farmer_scale: int = _RULE.farmer_scale


Ratio = str | int | float  # "0.05", "1/20", 0.05 or 1: RoomSettings reads each exactly


class RoomInput(_Input):
    """The room settings (``RoomSettings``); each absent one is the room's default."""

    initial_multiplier: int = _ROOM.initial_multiplier
    rake: Ratio = str(_ROOM.rake)
    cap: int | None = _ROOM.cap
    coefficient: int = _ROOM.coefficient
    fee: int = _ROOM.fee
    wildcard_coefficient: Ratio = str(_ROOM.wildcard_coefficient)
    hand_cap: int = _ROOM.hand_cap
    min_balance: int = _ROOM.min_balance
    escape_penalty: int = _ROOM.escape_penalty
    bean_escape: BeanEscapeInput = BeanEscapeInput()
    bean_rounding: str = _ROOM.bean_rounding

    def settings(self) -> RoomSettings:
        fields = self.model_dump()
        fields["bean_escape"] = BeanEscapeRule(**fields["bean_escape"])
        return RoomSettings(**fields)


class FactorInput(_Input):
    """One factor of a recorded multiplier breakdown."""

    reason: str
    factor: int
    seat: int | None = None
    event: int | None = None
    detail: str = ""


class BombInput(_Input):
    """A bomb-class play by kind; its factor comes from the variant's bomb ladder (§9)."""

    type: Literal["bomb", "sky_bomb", "rocket"]
    size: int | None = None
    bomb_class: BombClass | None = None
    main: str | None = None
    seat: int | None = None
    event: int | None = None


class ShowInput(_Input):
    """One player's show (§6): when, and how many cards they held then."""

    when: str
    cards_held: int | None = None
    seat: int | None = None


Bomb = str | BombInput  # a bomb as cards ("7777", "BR", "3335" with wild) or by kind


class OutcomeInput(_Input):
    """One hand outcome, as ``ddz settle`` reads it (docs/CLI.md)."""

    variant: str = Field(description="classic, ct, laizi or tiandi")
    scoring: Scoring | None = None
    room: RoomInput = RoomInput()
    landlord: int = Field(description="the landlord's seat, 0..2")
    winner: Side | None = None
    base: int = Field(description="the call score, 1 or more")
    multiplier: tuple[FactorInput, ...] | None = None
    bombs: tuple[Bomb, ...] = ()
    grabs: int = Field(0, ge=0, le=MAX_GRABS)
    shows: tuple[int | ShowInput, ...] = ()
    spring: bool = False
    anti_spring: bool = False
    balances: tuple[int, int, int] | None = None
    escapee: int | None = None
    wildcard_room: bool | None = None
    wild: str | tuple[str, ...] | None = None
    escape_bombs: tuple[Bomb, ...] | None = None
    escape_multiplier: tuple[FactorInput, ...] | None = None


FACT_KEYS = ("bombs", "grabs", "shows", "spring", "anti_spring")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "settle",
        help="settle one hand: JSON outcome on stdin, ledger JSON on stdout (§10)",
        description=(
            "Read one JSON hand outcome on stdin and print its ledger: "
            '{"deltas": [d0, d1, d2], "system": s, "multiplier": m, "lines": [...]}. '
            "The input schema is in docs/CLI.md."
        ),
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    ledger = settle(outcome_from_json(sys.stdin.read()))
    print(json.dumps(ledger.to_json(), ensure_ascii=False))
    return 0


# --- reading the outcome ------------------------------------------------------------------


def outcome_from_json(text: str | bytes) -> HandOutcome:
    """Build a ``HandOutcome`` from the ``ddz settle`` input (docs/CLI.md)."""
    try:
        given = OutcomeInput.model_validate_json(text)
    except ValidationError as exc:
        raise OutcomeError(_first_problem(exc)) from None
    rules = ruleset_for(given.variant)
    room = given.room.settings()
    multiplier = _multiplier(given, rules, room)
    escape_multiplier = None
    if given.escape_multiplier is not None:
        escape_multiplier = _with_initial(
            _explicit(given.escape_multiplier, "escape_multiplier"), room
        )
    elif given.escape_bombs is not None:
        held = _bombs(given.escape_bombs, rules, _wild(given.wild))
        escape_multiplier = MultiplierBreakdown(multiplier.factors + held)
    # A wildcard variant's rooms are wildcard rooms (癞子场) unless told otherwise.
    wildcard_room = given.wildcard_room
    return HandOutcome(
        scoring=given.scoring or rules.scoring,
        room=room,
        landlord=given.landlord,
        base=given.base,
        multiplier=multiplier,
        winner=given.winner,
        wildcard_room=rules.wildcard_count > 0 if wildcard_room is None else wildcard_room,
        balances=given.balances,
        escapee=given.escapee,
        escape_multiplier=escape_multiplier,
    )


def _first_problem(exc: ValidationError) -> str:
    """The first thing wrong with the input, in one line (pydantic's own report is a
    paragraph): of the first field with a problem, the most specific one. A value that
    fits none of a field's forms (a bomb as cards or as an object) names every form."""
    errors = exc.errors(include_url=False)
    field = errors[0]["loc"][:1]
    depth = max(len(e["loc"]) for e in errors if e["loc"][:1] == field)
    first = next(e for e in errors if e["loc"][:1] == field and len(e["loc"]) == depth)
    where, last = _where(first["loc"]), first["loc"][-1] if first["loc"] else None
    if first["type"] == "json_invalid":
        return f"input is not JSON: {first['msg'].removeprefix('Invalid JSON: ')}"
    if first["type"] == "missing" and isinstance(last, int):
        return f"{_where(first['loc'][:-1])}: item [{last}] is missing"
    if first["type"] == "missing":
        return f"missing field {where!r}{_description(first)}"
    if first["type"] == "extra_forbidden":
        name = ".".join(filter(None, (_where(first["loc"][:-1]), str(last))))
        return f"unknown field {name!r} (docs/CLI.md lists the fields)"
    same = [e["msg"] for e in errors if _where(e["loc"]) == where and len(e["loc"]) == depth]
    said = " or ".join(dict.fromkeys(m[:1].lower() + m[1:] for m in same))
    return f"{where or 'the hand outcome'}: {said}, got {json.dumps(first['input'])}"


_NAMES = {
    name for model in (OutcomeInput, RoomInput, BeanEscapeInput, FactorInput, BombInput,
                       ShowInput) for name in model.model_fields
}  # fmt: skip


def _where(loc: tuple[int | str, ...]) -> str:
    """``bombs[0].type``: an error's place, without pydantic's names of union forms."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _NAMES:
            out += f".{part}" if out else part
    return out


def _description(error: ErrorDetails) -> str:
    field = OutcomeInput.model_fields.get(str(error["loc"][-1])) if error["loc"] else None
    return f" ({field.description})" if field is not None and field.description else ""


def _multiplier(given: OutcomeInput, rules: RuleSet, room: RoomSettings) -> MultiplierBreakdown:
    if given.multiplier is not None:
        facts = [k for k in FACT_KEYS if k in given.model_fields_set and getattr(given, k)]
        if facts:
            raise OutcomeError(
                f"give either 'multiplier' or the facts ({', '.join(FACT_KEYS)}), not both "
                f"('{facts[0]}' was given too)"
            )
        return _with_initial(_explicit(given.multiplier, "multiplier"), room)
    factors: list[Factor] = [initial_factor(room.initial_multiplier)]
    factors += [grab_factor(rules) for _ in range(given.grabs)]
    factors += _shows(given.shows, rules)
    factors += _bombs(given.bombs, rules, _wild(given.wild))
    if given.spring and given.winner == Side.FARMERS:
        raise OutcomeError("spring means the landlord won (§8), but winner is 'farmers'")
    if given.anti_spring and given.winner == Side.LANDLORD:
        raise OutcomeError("anti_spring means the farmers won (§8), but winner is 'landlord'")
    if given.spring:
        factors.append(spring_factor(rules))
    if given.anti_spring:
        factors.append(spring_factor(rules, anti=True))
    return MultiplierBreakdown(tuple(factors))


def _with_initial(breakdown: MultiplierBreakdown, room: RoomSettings) -> MultiplierBreakdown:
    """An explicit breakdown without an "initial" factor is played at the room's."""
    if any(f.reason == "initial" for f in breakdown.factors):
        return breakdown
    return MultiplierBreakdown((initial_factor(room.initial_multiplier), *breakdown.factors))


def _explicit(given: tuple[FactorInput, ...], name: str) -> MultiplierBreakdown:
    for entry in given:
        if entry.reason not in REASONS:
            raise OutcomeError(
                f"unknown {name} reason {entry.reason!r} (expected one of {sorted(REASONS)})"
            )
    return MultiplierBreakdown(
        tuple(Factor(e.reason, e.factor, e.seat, e.event, e.detail) for e in given)
    )


def _shows(given: tuple[int | ShowInput, ...], rules: RuleSet) -> list[Factor]:
    """Each entry is one player's show; a player's show counts once, at its largest
    factor (§6), so entries with the same seat keep only the largest."""
    anonymous: list[Factor] = []
    by_seat: dict[int, Factor] = {}
    for item in given:
        if isinstance(item, ShowInput):
            seat = item.seat
            factor = show_factor(rules, item.when, item.cards_held, seat)
        else:
            seat = None
            factor = Factor("show_cards", item, detail="show")
        if seat is None:
            anonymous.append(factor)
        elif seat not in by_seat or factor.factor > by_seat[seat].factor:
            by_seat[seat] = factor
    return anonymous + [by_seat[s] for s in sorted(by_seat)]


def _wild(given: str | tuple[str, ...] | None) -> frozenset[Rank]:
    if given is None:
        return frozenset()
    ranks = frozenset(Rank.from_symbol(r) for r in ((given,) if isinstance(given, str) else given))
    if any(r.is_joker for r in ranks):
        raise OutcomeError("a joker cannot be a wildcard rank (§5)")
    return ranks


def _bombs(given: tuple[Bomb, ...], rules: RuleSet, wild: frozenset[Rank]) -> tuple[Factor, ...]:
    return tuple(_bomb(item, rules, wild) for item in given)


def _bomb(item: Bomb, rules: RuleSet, wild: frozenset[Rank]) -> Factor:
    if isinstance(item, str):
        kind, size, bomb_class, main = _bomb_from_cards(item, rules, wild)
        seat = event = None
    else:
        kind, bomb_class = BOMB_TYPES[item.type], item.bomb_class
        size = _first_size(rules, kind, bomb_class) if item.size is None else item.size
        main = "" if item.main is None else Rank.from_symbol(item.main).symbol
        seat, event = item.seat, item.event
    tier = rules.bomb_ladder[bomb_tier_index(rules, kind, size, bomb_class)]
    detail = bomb_detail(kind, size, bomb_class, main)
    return Factor(kind.value, tier.multiplier, seat, event, detail)


def _first_size(rules: RuleSet, kind: ComboType, bomb_class: BombClass | None) -> int:
    for tier in rules.bomb_ladder:
        if tier.type == kind and tier.bomb_class in (None, bomb_class):
            return tier.size
    if bomb_class is None and any(t.type == kind for t in rules.bomb_ladder):
        classes = ", ".join(sorted({t.bomb_class.value for t in rules.bomb_ladder if t.bomb_class}))
        raise OutcomeError(f"a {kind.value} in {rules.name} needs its bomb_class ({classes})")
    made = f"{bomb_class.value} " if bomb_class is not None else ""
    raise OutcomeError(f"no {made}{kind.value} in {rules.name}'s bomb ladder (§4)")


def _bomb_from_cards(
    text: str, rules: RuleSet, wild: frozenset[Rank]
) -> tuple[ComboType, int, BombClass | None, str]:
    """Read a bomb-class play from rank notation (§4, §5): ``"7777"``, ``"BR"``,
    ``"888888"``, or with ``wild`` ranks ``"3335"`` (soft), ``"5555"`` (pure)."""
    counts = parse_ranks(text)
    size = sum(counts)
    for rank, (n, most) in enumerate(zip(counts, rules.max_copies, strict=True)):
        if n > most:
            raise OutcomeError(
                f"{text!r}: {rules.name}'s deck has only {most} cards of rank {Rank(rank).symbol}"
            )
    jokers = counts[Rank.BLACK_JOKER] + counts[Rank.RED_JOKER]
    if jokers:
        if jokers != size or counts[Rank.BLACK_JOKER] != counts[Rank.RED_JOKER]:
            raise OutcomeError(f"{text!r} is not a bomb: jokers only make a rocket (§4)")
        return ComboType.ROCKET, size, None, ""
    natural = [r for r in range(NUM_RANKS) if counts[r] and Rank(r) not in wild]
    wild_used = [r for r in range(NUM_RANKS) if counts[r] and Rank(r) in wild]
    if len(natural) > 1 or (not natural and not wild_used):
        raise OutcomeError(f"{text!r} is not a bomb: a bomb is cards of one rank (§4)")
    if natural:
        main = Rank(natural[0])
        bomb_class = BombClass.SOFT if wild_used else BombClass.HARD
    elif len(wild_used) == 1:
        main, bomb_class = Rank(wild_used[0]), BombClass.PURE
    elif len(wild_used) == 2 and size == 4:
        main, bomb_class = Rank(max(wild_used)), BombClass.MIXED
    else:
        # §5: any other play made only of wildcards of two ranks reads by its own ranks.
        raise OutcomeError(f"{text!r} is not a bomb: wildcards of two ranks are read as such (§5)")
    # A sky bomb is the ladder's name for 6 of a kind (ct); otherwise it is a bomb.
    for kind in (ComboType.BOMB, ComboType.SKY_BOMB):
        for tier in rules.bomb_ladder:
            if tier.type == kind and tier.size == size and tier.bomb_class in (None, bomb_class):
                return kind, size, bomb_class if rules.wildcard_count else None, main.symbol
    raise OutcomeError(f"{text!r} is not a bomb in {rules.name} (§4)")
