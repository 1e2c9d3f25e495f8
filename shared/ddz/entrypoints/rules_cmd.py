"""``ddz rules classify|beats|moves``: the rules engine for tools and other services.

JSON on stdout; ``--jsonl`` answers one JSON request per stdin line (schema in
``docs/CLI.md``, "ddz rules"). Bad input is one ``ddz: error: ...`` line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from typing import Any

from ddz.domain.cards import (
    RANK_SYMBOLS,
    CardNotationError,
    Rank,
    RankCounts,
    format_counts,
    parse_ranks,
)
from ddz.domain.classify import choose_reading, classify
from ddz.domain.moves import legal_moves
from ddz.domain.readings import Reading
from ddz.domain.ruleset import VARIANTS, RuleSet, ruleset_for
from ddz.entrypoints.cli import UsageError

OPS = ("classify", "beats", "moves")
REQUEST_KEYS = frozenset({"op", "cards", "over", "variant", "wild", "id"})


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--variant",
        choices=sorted(VARIANTS),
        default=argparse.SUPPRESS,
        help="rule set (default classic)",
    )
    common.add_argument(
        "--wild",
        action="append",
        metavar="R",
        default=argparse.SUPPRESS,
        help="a wildcard rank in force (repeat for tiandi's two)",
    )
    common.add_argument(
        "--jsonl",
        action="store_true",
        default=argparse.SUPPRESS,
        help="answer JSON requests, one per stdin line (see docs/CLI.md)",
    )
    parser = subparsers.add_parser(
        "rules",
        parents=[common],
        help="classify plays, compare them, list legal moves (§3-§5)",
        description=(
            "The rules engine as JSON. Cards in rank notation, any order, spaces ignored, "
            "10 for T: e.g. 33344456, 'B R', 10JQKA."
        ),
    )
    parser.set_defaults(handler=run, op=None)
    ops = parser.add_subparsers(dest="op", metavar="OP")
    specs = {
        "classify": ("every legal reading of CARDS", "CARDS"),
        "beats": ("does PLAY beat PREV (--over)?", "PLAY"),
        "moves": ("every legal play of HAND, leading or following --over", "HAND"),
    }
    for op, (text, metavar) in specs.items():
        sub = ops.add_parser(op, parents=[common], help=text, description=text)
        sub.add_argument("cards", nargs="*", metavar=metavar)
        if op != "classify":
            sub.add_argument("--over", metavar="PREV", default=None, help="the play to beat")
        sub.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    variant = getattr(args, "variant", "classic")
    wild = getattr(args, "wild", None) or []
    if getattr(args, "jsonl", False):
        return _run_jsonl(args.op, variant, wild)
    if args.op is None:
        raise UsageError("rules: give an operation (classify, beats, moves) or --jsonl")
    if not args.cards:
        raise UsageError(f"rules {args.op}: no cards given")
    request: dict[str, Any] = {"cards": "".join(args.cards)}
    if getattr(args, "over", None) is not None:
        request["over"] = args.over
    print(json.dumps(answer(args.op, request, variant, wild)))
    return 0


def _run_jsonl(default_op: str | None, variant: str, wild: list[str]) -> int:
    failed = False
    for line in sys.stdin:
        if not line.strip():
            continue
        request_id = None
        try:
            try:
                request = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"not JSON: {exc.msg}") from None
            if not isinstance(request, dict):
                raise UsageError("a request is a JSON object")
            request_id = request.get("id")
            unknown = set(request) - REQUEST_KEYS
            if unknown:
                raise UsageError(f"unknown request field(s): {', '.join(sorted(unknown))}")
            op = request.get("op", default_op)
            if op not in OPS:
                raise UsageError(f"op must be one of {', '.join(OPS)}, not {op!r}")
            result = answer(op, request, request.get("variant", variant), request.get("wild", wild))
        except (UsageError, ValueError) as exc:
            failed = True
            result = {"error": str(exc)}
        if request_id is not None:
            result = {"id": request_id, **result}
        print(json.dumps(result), flush=True)
    return 2 if failed else 0


# -- one request ------------------------------------------------------------------------


def answer(op: str, request: Mapping[str, Any], variant: Any, wild: Any) -> dict[str, Any]:
    """The JSON answer to one request (raises UsageError / ValueError on bad input)."""
    if not isinstance(variant, str):
        raise UsageError("variant must be a string")
    rules = ruleset_for(variant)
    wild_ranks = _wild(wild)
    as_json = _reading_json(rules)
    cards = _cards(request.get("cards"), rules, "cards")
    over_text = request.get("over")
    if op == "classify":
        if over_text is not None:
            raise UsageError("classify takes no 'over'")
        return {"readings": [as_json(r) for r in classify(cards, rules, wild_ranks)]}
    over = None
    if over_text is not None:
        prev = _cards(over_text, rules, "over")
        over = choose_reading(prev, rules, wild_ranks, None)
        if over is None:
            raise UsageError(f"--over {format_counts(prev) or '(empty)'} is not a combination")
    if op == "beats":
        if over is None:
            raise UsageError("beats needs the play to beat (--over / 'over')")
        taken = choose_reading(cards, rules, wild_ranks, over)
        return {"beats": taken is not None, "reading": as_json(taken) if taken else None}
    moves = legal_moves(cards, rules, wild_ranks, over)
    return {
        "moves": [
            {"cards": format_counts(move.cards), "reading": as_json(move.reading)} for move in moves
        ],
        "can_pass": over is not None,  # the leader cannot pass
    }


def _cards(text: Any, rules: RuleSet, field: str) -> RankCounts:
    if not isinstance(text, str):
        raise UsageError(f"'{field}' must be a string of cards, e.g. \"33344456\"")
    try:
        counts = parse_ranks(text)
    except CardNotationError as exc:
        raise UsageError(str(exc)) from None
    for rank, (n, most) in enumerate(zip(counts, rules.max_copies, strict=True)):
        if n > most:
            raise UsageError(
                f"{n} cards of rank {RANK_SYMBOLS[rank]}, but the {rules.name} deck has {most}"
            )
    return counts


def _wild(values: Any) -> frozenset[Rank]:
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise UsageError('wild must be a rank or a list of ranks, e.g. ["7", "9"]')
    ranks = set()
    for value in values:
        try:
            rank = Rank.from_symbol(value)
        except CardNotationError as exc:
            raise UsageError(f"wildcard: {exc}") from None
        if rank.is_joker:
            raise UsageError(f"a wildcard rank must be 3..2, not a joker ({value})")
        ranks.add(rank)
    return frozenset(ranks)


def _reading_json(rules: RuleSet) -> Any:
    """Readings as JSON; ``bomb_class`` only where the variant tells bomb makes apart."""
    with_class = any(tier.bomb_class is not None for tier in rules.bomb_ladder)

    def as_json(reading: Reading) -> dict[str, Any]:
        return reading.to_json(with_bomb_class=with_class)

    return as_json
