"""``ddz settle``: one JSON hand outcome on stdin -> its ledger as JSON (RULES.md §10).

For support staff settling a disputed hand by hand. The input schema is documented
in ``docs/CLI.md`` ("ddz settle"). Bad input is one ``ddz: error: ...`` line, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

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

TOP_KEYS = frozenset(
    {
        "variant",
        "scoring",
        "room",
        "landlord",
        "winner",
        "base",
        "multiplier",
        "bombs",
        "grabs",
        "shows",
        "spring",
        "anti_spring",
        "balances",
        "escapee",
        "wildcard_room",
        "wild",
        "escape_bombs",
        "escape_multiplier",
    }
)
FACT_KEYS = ("bombs", "grabs", "shows", "spring", "anti_spring")
MAX_GRABS = 100
BOMB_TYPES = {t.value: t for t in (ComboType.BOMB, ComboType.SKY_BOMB, ComboType.ROCKET)}


class OutcomeError(ValueError):
    """The JSON does not describe a hand outcome."""


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
    text = sys.stdin.read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OutcomeError(f"input is not JSON: {exc}") from None
    ledger = settle(outcome_from_json(data))
    print(json.dumps(ledger.to_json(), ensure_ascii=False))
    return 0


# --- reading the outcome ------------------------------------------------------------------


def outcome_from_json(data: object) -> HandOutcome:
    """Build a ``HandOutcome`` from the ``ddz settle`` input schema (docs/CLI.md)."""
    obj = _object(data, "the hand outcome")
    unknown = sorted(set(obj) - TOP_KEYS)
    if unknown:
        raise OutcomeError(f"unknown field {unknown[0]!r} (expected some of {sorted(TOP_KEYS)})")
    if "variant" not in obj:
        raise OutcomeError("missing field 'variant' (classic, ct, laizi or tiandi)")
    rules = ruleset_for(_str(obj["variant"], "variant"))
    scoring = rules.scoring
    if obj.get("scoring") is not None:
        name = _str(obj["scoring"], "scoring")
        try:
            scoring = Scoring(name)
        except ValueError:
            options = ", ".join(s.value for s in Scoring)
            raise OutcomeError(f"unknown scoring {name!r} (expected one of {options})") from None
    room = _room(obj.get("room", {}))
    winner = _winner(obj.get("winner"))
    multiplier = _multiplier(obj, rules, room, winner)
    escape_multiplier = None
    if obj.get("escape_multiplier") is not None:
        escape_multiplier = _with_initial(
            _explicit(obj["escape_multiplier"], "escape_multiplier"), room
        )
    elif obj.get("escape_bombs") is not None:
        wild = _wild(obj.get("wild"))
        held = _bombs(obj["escape_bombs"], rules, wild, "escape_bombs")
        escape_multiplier = MultiplierBreakdown(multiplier.factors + held)
    balances = None
    if obj.get("balances") is not None:
        raw = obj["balances"]
        if not isinstance(raw, list) or len(raw) != 3:
            raise OutcomeError("balances must be a list of 3 whole numbers")
        values = [_int(b, "balances") for b in raw]
        balances = (values[0], values[1], values[2])
    return HandOutcome(
        scoring=scoring,
        room=room,
        landlord=_required_int(obj, "landlord"),
        base=_required_int(obj, "base"),
        multiplier=multiplier,
        winner=winner,
        # A wildcard variant's rooms are wildcard rooms (癞子场) unless told otherwise.
        wildcard_room=_bool(obj.get("wildcard_room", rules.wildcard_count > 0), "wildcard_room"),
        balances=balances,
        escapee=None if obj.get("escapee") is None else _int(obj["escapee"], "escapee"),
        escape_multiplier=escape_multiplier,
    )


def _room(data: object) -> RoomSettings:
    obj = dict(_object(data, "room"))
    names = {f.name for f in fields(RoomSettings)}
    unknown = sorted(set(obj) - names)
    if unknown:
        raise OutcomeError(
            f"unknown room setting {unknown[0]!r} (expected some of {sorted(names)})"
        )
    if "bean_escape" in obj:
        escape = _object(obj["bean_escape"], "room.bean_escape")
        rule_names = {f.name for f in fields(BeanEscapeRule)}
        bad = sorted(set(escape) - rule_names)
        if bad:
            raise OutcomeError(f"unknown room.bean_escape setting {bad[0]!r}")
        obj["bean_escape"] = BeanEscapeRule(
            **{k: _int(v, f"room.bean_escape.{k}") for k, v in escape.items()}
        )
    for key in ("initial_multiplier", "coefficient", "fee", "hand_cap", "min_balance"):
        if key in obj:
            obj[key] = _int(obj[key], f"room.{key}")
    if obj.get("cap") is not None:
        obj["cap"] = _int(obj["cap"], "room.cap")
    if "escape_penalty" in obj:
        obj["escape_penalty"] = _int(obj["escape_penalty"], "room.escape_penalty")
    # rake and wildcard_coefficient: RoomSettings reads "0.05", "1/20", 0.05 or 1 exactly.
    return RoomSettings(**obj)


def _winner(value: object) -> Side | None:
    if value is None:
        return None
    try:
        return Side(_str(value, "winner"))
    except ValueError:
        raise OutcomeError(f"winner must be 'landlord', 'farmers' or null, got {value!r}") from None


def _multiplier(
    obj: Mapping[str, Any], rules: RuleSet, room: RoomSettings, winner: Side | None
) -> MultiplierBreakdown:
    if obj.get("multiplier") is not None:
        given = [k for k in FACT_KEYS if obj.get(k) not in (None, False, 0, [])]
        if given:
            raise OutcomeError(
                f"give either 'multiplier' or the facts ({', '.join(FACT_KEYS)}), not both "
                f"('{given[0]}' was given too)"
            )
        return _with_initial(_explicit(obj["multiplier"], "multiplier"), room)
    factors: list[Factor] = [initial_factor(room.initial_multiplier)]
    grabs = _int(obj.get("grabs", 0), "grabs")
    if not 0 <= grabs <= MAX_GRABS:  # a hand has a few grabs; this keeps input small
        raise OutcomeError(f"grabs must be 0..{MAX_GRABS}, got {grabs}")
    factors += [grab_factor(rules) for _ in range(grabs)]
    factors += _shows(obj.get("shows", []), rules)
    factors += _bombs(obj.get("bombs", []), rules, _wild(obj.get("wild")), "bombs")
    spring = _bool(obj.get("spring", False), "spring")
    anti = _bool(obj.get("anti_spring", False), "anti_spring")
    if spring and winner == Side.FARMERS:
        raise OutcomeError("spring means the landlord won (§8), but winner is 'farmers'")
    if anti and winner == Side.LANDLORD:
        raise OutcomeError("anti_spring means the farmers won (§8), but winner is 'landlord'")
    if spring:
        factors.append(spring_factor(rules))
    if anti:
        factors.append(spring_factor(rules, anti=True))
    return MultiplierBreakdown(tuple(factors))


def _with_initial(breakdown: MultiplierBreakdown, room: RoomSettings) -> MultiplierBreakdown:
    """An explicit breakdown without an "initial" factor is played at the room's."""
    if any(f.reason == "initial" for f in breakdown.factors):
        return breakdown
    return MultiplierBreakdown((initial_factor(room.initial_multiplier), *breakdown.factors))


def _explicit(data: object, name: str) -> MultiplierBreakdown:
    if not isinstance(data, list):
        raise OutcomeError(f"{name} must be a list of {{reason, factor}} objects")
    factors = []
    for item in data:
        entry = _object(item, f"a {name} entry")
        reason = _str(entry.get("reason"), f"{name} reason")
        if reason not in REASONS:
            raise OutcomeError(
                f"unknown {name} reason {reason!r} (expected one of {sorted(REASONS)})"
            )
        factors.append(
            Factor(
                reason,
                _required_int(entry, "factor"),
                None if entry.get("seat") is None else _int(entry["seat"], f"{name} seat"),
                None if entry.get("event") is None else _int(entry["event"], f"{name} event"),
                _str(entry.get("detail", ""), f"{name} detail"),
            )
        )
    return MultiplierBreakdown(tuple(factors))


def _shows(data: object, rules: RuleSet) -> list[Factor]:
    """Each entry is one player's show; a player's show counts once, at its largest
    factor (§6), so entries with the same seat keep only the largest."""
    if not isinstance(data, list):
        raise OutcomeError("shows must be a list of factors or {when, cards_held} objects")
    anonymous: list[Factor] = []
    by_seat: dict[int, Factor] = {}
    for item in data:
        if isinstance(item, dict):
            seat = None if item.get("seat") is None else _int(item["seat"], "shows seat")
            unknown = sorted(set(item) - {"when", "cards_held", "seat"})
            if unknown:
                raise OutcomeError(f"unknown shows field {unknown[0]!r}")
            held = item.get("cards_held")
            factor = show_factor(
                rules,
                _str(item.get("when"), "shows when"),
                None if held is None else _int(held, "shows cards_held"),
                seat,
            )
        else:
            seat = None
            factor = Factor("show_cards", _int(item, "shows"), detail="show")
        if seat is None:
            anonymous.append(factor)
        elif seat not in by_seat or factor.factor > by_seat[seat].factor:
            by_seat[seat] = factor
    return anonymous + [by_seat[s] for s in sorted(by_seat)]


def _wild(data: object) -> frozenset[Rank]:
    if data is None:
        return frozenset()
    if isinstance(data, str):
        data = [data]
    if not isinstance(data, list):
        raise OutcomeError('wild must be a rank or a list of ranks, e.g. ["7"]')
    ranks = frozenset(Rank.from_symbol(_str(r, "wild")) for r in data)
    if any(r.is_joker for r in ranks):
        raise OutcomeError("a joker cannot be a wildcard rank (§5)")
    return ranks


def _bombs(data: object, rules: RuleSet, wild: frozenset[Rank], name: str) -> tuple[Factor, ...]:
    if not isinstance(data, list):
        raise OutcomeError(f"{name} must be a list of bombs (objects or card strings)")
    return tuple(_bomb(item, rules, wild, name) for item in data)


def _bomb(item: object, rules: RuleSet, wild: frozenset[Rank], name: str) -> Factor:
    seat = event = None
    main = ""
    if isinstance(item, str):
        kind, size, bomb_class, main = _bomb_from_cards(item, rules, wild)
    else:
        entry = _object(item, f"a {name} entry")
        unknown = sorted(set(entry) - {"type", "size", "bomb_class", "main", "seat", "event"})
        if unknown:
            raise OutcomeError(f"unknown {name} field {unknown[0]!r}")
        type_name = _str(entry.get("type"), f"{name} type")
        if type_name not in BOMB_TYPES:
            raise OutcomeError(
                f"{name} type must be one of {', '.join(BOMB_TYPES)}, got {type_name!r}"
            )
        kind = BOMB_TYPES[type_name]
        bomb_class = None
        if entry.get("bomb_class") is not None:
            try:
                bomb_class = BombClass(_str(entry["bomb_class"], f"{name} bomb_class"))
            except ValueError:
                options = ", ".join(c.value for c in BombClass)
                raise OutcomeError(f"{name} bomb_class must be one of {options}") from None
        if entry.get("size") is None:
            size = _first_size(rules, kind, bomb_class)
        else:
            size = _int(entry["size"], f"{name} size")
        if entry.get("main") is not None:
            main = Rank.from_symbol(_str(entry["main"], f"{name} main")).symbol
        seat = None if entry.get("seat") is None else _int(entry["seat"], f"{name} seat")
        event = None if entry.get("event") is None else _int(entry["event"], f"{name} event")
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


# --- small typed readers --------------------------------------------------------------------


def _object(value: object, what: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise OutcomeError(f"{what} must be a JSON object")
    return value


def _str(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise OutcomeError(f"{name} must be a string, got {json.dumps(value)}")
    return value


def _int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise OutcomeError(f"{name} must be a whole number, got {json.dumps(value)}")
    return value


def _bool(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise OutcomeError(f"{name} must be true or false, got {json.dumps(value)}")
    return value


def _required_int(obj: Mapping[str, Any], key: str) -> int:
    if obj.get(key) is None:
        raise OutcomeError(f"missing field {key!r}")
    return _int(obj[key], key)
