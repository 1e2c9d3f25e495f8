"""Checks of command-line values shared by the commands: one wording for every command."""

from __future__ import annotations

from ddz.domain.ruleset import VARIANTS


def whole(text: str, name: str, high: int, low: int = 1) -> int:
    """``text`` as a whole number in ``low..high``; a ``ValueError`` naming ``name``
    (the CLI prints it as one line, exit code 2) otherwise."""
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, got {text!r}") from None
    if not low <= value <= high:
        raise ValueError(f"{name} must be {low}..{high}, got {value}")
    return value


def check_variant(variant: str) -> str:
    """``variant`` if it names a rule set shipped with the platform."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r} (expected one of {', '.join(VARIANTS)})")
    return variant
