"""The suite's ids, one grammar each, always matched whole.

Player, table and room ids become parts of NATS subjects, of stream ids and of the desk's
addresses; a hand id is a stream's; a staff name is who the desk's access log says looked.
Every check here is a ``fullmatch``: ``re.match`` with ``$`` also accepts a value that ends
in a newline (``"carol\\n"``), which would then look like ``carol`` on a page and in a log.
"""

from __future__ import annotations

import re
from typing import TypeGuard

NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A player, table or room id: 1-64 letters, digits, '_' or '-'."""
HAND = re.compile(r"[A-Za-z0-9_-]{1,200}")
"""A hand id (the dealer's are 32 hex digits): what a ``hand-<id>`` stream id may hold."""
STAFF = re.compile(r"[A-Za-z0-9_.@+-]{1,200}")
"""A staff member's name, as a staff token's subject: letters, digits, '_', '.', '@', '+', '-'."""

NAME_RULE = "1-64 letters, digits, '_' or '-'"
HAND_RULE = "1-200 letters, digits, '_' or '-'"
STAFF_RULE = "1-200 letters, digits, '_', '.', '@', '+' or '-'"


def is_name(value: object) -> TypeGuard[str]:
    """A player, table or room id."""
    return isinstance(value, str) and NAME.fullmatch(value) is not None


def is_hand_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and HAND.fullmatch(value) is not None


def is_staff_name(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and STAFF.fullmatch(value) is not None
