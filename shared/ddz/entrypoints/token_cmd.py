"""``ddz token``: sign a login token for local use, printed alone on stdout.

    ddz token staff NAME --role support|auditor   # the dispute desk's sign-in
    ddz token player NAME                          # an outside client, a script
    ddz token operator NAME                        # the operator's own tools

Tokens are signed with the login key of the data directory (``DDZ_LOGIN_KEY``, made by
``ddz init`` or ``ddz up``), as the operator's real login would; whoever holds one acts
as its subject until it expires, so treat the output as a password.
"""

from __future__ import annotations

import argparse
import sys

from ddz.adapters.security.staff_tokens import STAFF_TOKEN_TTL, issue_staff
from ddz.adapters.security.token_keys import login_key
from ddz.adapters.security.tokens import TOOL_TOKEN_TTL, operator_token, player_token
from ddz.application.staff import ROLES
from ddz.config import Settings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "token",
        help="print a signed staff, player or operator token",
        description="Print a token signed with the login key, on stdout alone.",
    )
    parser.add_argument("kind", choices=("staff", "player", "operator"), help="whose token")
    parser.add_argument("name", help="the staff member, player or tool it is for")
    parser.add_argument("--role", choices=ROLES, help="a staff token's role (required for staff)")
    parser.add_argument(
        "--ttl", type=float, default=None,
        help=f"seconds it lasts (staff: {STAFF_TOKEN_TTL}, others: {TOOL_TOKEN_TTL})",
    )  # fmt: skip
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = Settings.from_env()
    name = args.name.strip()
    if not name:
        raise ValueError("the token needs a name")
    if args.ttl is not None and not 0 < args.ttl <= 366 * 24 * 3600:
        raise ValueError("--ttl must be between 1 second and a year")
    if args.kind == "staff":
        if args.role is None:
            raise ValueError("a staff token needs --role support or --role auditor")
        token = issue_staff(login_key(settings), name, args.role, args.ttl or STAFF_TOKEN_TTL)
    elif args.role is not None:
        raise ValueError("--role is for staff tokens only")
    elif args.kind == "player":
        token = player_token(settings, name, args.ttl or TOOL_TOKEN_TTL)
    else:
        token = operator_token(settings, name, args.ttl or TOOL_TOKEN_TTL)
    sys.stdout.write(token + "\n")
    return 0
