"""``ddz desk``: the dispute desk's sessions, from the operator's side.

    ddz desk end-sessions STAFF [--json]   # end every open desk session of one staff member

The sessions are rows of the services' database (``desk_sessions``, which every console
instance reads through the recorder), so this ends them for every instance at once, in
the browser that holds the cookie and in any copy of it; the staff member's next page
asks them to sign in again. It does not revoke their staff token: until that expires
(12 h by default) it signs in again, so rotate the login key (``ddz keys``) to stop that.
Exit codes: 0 done (also when nothing was open), 2 bad input or no store.
"""

from __future__ import annotations

import argparse
import json

import sqlalchemy as sa

from ddz.adapters.runtime import stack_file
from ddz.adapters.service_db.desk_sessions import DeskSessions
from ddz.config import Settings
from ddz.domain import ids
from ddz.entrypoints.audit_cmd import open_store
from ddz.entrypoints.cli import UsageError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "desk",
        help="the dispute desk's sessions: end a staff member's",
        description="The dispute desk, from the operator's side.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    end = actions.add_parser(
        "end-sessions",
        help="end every open desk session of one staff member, on every console instance",
        description="End every open desk session of STAFF (their next page asks them to sign "
        "in again). Their staff token stays valid until it expires.",
    )
    end.add_argument("staff", metavar="STAFF", help="the staff member (a staff token's name)")
    end.add_argument("--json", action="store_true", help='print {"staff": ..., "ended": N}')
    end.set_defaults(handler=run_end_sessions)


def run_end_sessions(args: argparse.Namespace) -> int:
    staff = args.staff
    if not ids.is_staff_name(staff):
        raise UsageError(f"STAFF must be a staff name: {ids.STAFF_RULE}")
    settings = stack_file.found(Settings.from_env())
    store = open_store(settings)
    try:
        ended = DeskSessions(store.engine).end_staff(staff)
    except sa.exc.SQLAlchemyError:
        raise UsageError(
            "this store has no desk sessions yet: start the suite once (ddz up) to upgrade it"
        ) from None
    finally:
        store.close()
    if args.json:
        print(json.dumps({"staff": staff, "ended": ended}))
    elif ended:
        print(f"ended {ended} desk session(s) of {staff}: their next page asks them to sign in")
    else:
        print(f"{staff} has no open desk session")
    return 0
