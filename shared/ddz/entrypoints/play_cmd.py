"""``ddz play``: play Dou Dizhu in the terminal against bots or other people.

    ddz play [--room R] [--name NAME] [--table-address HOST:PORT] [--token TOKEN]

Talks to the table service like any client (gRPC, a token in the metadata). Without
``--table-address`` it uses the suite at the configured address (``DDZ_TABLE_PORT``);
when nothing answers there it starts a local stack for the session (NATS and the six
services, data in ``DDZ_DATA_DIR``) and stops it on exit -- for two people at one table,
run ``ddz up`` first so both ``ddz play`` find the same suite. The player's login is a
player token (a JWT) that ``ddz play`` signs as the operator's login, with the login key
(``DDZ_LOGIN_KEY``, default ``<data dir>/keys/login.key``, made on first use and its public
key published in the JWKS the table service reads: a local stack and ``ddz play`` agree
by themselves); ``--token`` gives one issued elsewhere (the operator's own login).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import getpass
import re
import sys
from collections.abc import Iterator

from ddz.access.tokens import player_token
from ddz.config import Settings
from ddz.domain import ids
from ddz.entrypoints.running_suite import running_stack


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "play",
        help="play at a table in the terminal (against bots or people)",
        description="Join a room of the table service, get matched (bots fill empty seats "
        "after the room's wait) and play: type bids and plays in card notation, ? for a "
        "hint, next for another hand, quit to leave. Starts a local stack when no table "
        "service answers.",
    )
    parser.add_argument("--room", help="the room to join (default: choose from the list)")
    parser.add_argument("--name", help="your player id (default: your user name)")
    parser.add_argument("--table-address", metavar="HOST:PORT", help="the table service")
    parser.add_argument("--token", help="a player token from the operator's login")
    parser.set_defaults(handler=run)


def player_name(given: str | None) -> str:
    if given is not None:
        name = given
    else:
        try:
            name = re.sub(r"[^A-Za-z0-9_-]", "-", getpass.getuser())[:64] or "player"
        except (KeyError, OSError):
            name = "player"
    if not ids.is_name(name):
        raise ValueError(f"--name must be {ids.NAME_RULE}, got {name!r}")
    if name.startswith("bot-"):
        raise ValueError("--name must not start with 'bot-' (the bots' names)")
    return name


def check_address(address: str) -> str:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--table-address must be HOST:PORT, got {address!r}")
    return address


@contextlib.contextmanager
def table_service(settings: Settings, address: str | None) -> Iterator[tuple[Settings, str]]:
    """The settings and table address to use: the one given, the configured suite when it
    answers, else a local stack started here for the session."""
    if address is not None:
        yield settings, address
        return
    with running_stack(settings) as live:
        yield live, live.network.address("table")


def run(args: argparse.Namespace) -> int:
    name = player_name(args.name)
    address = check_address(args.table_address) if args.table_address else None
    settings = Settings.from_env()
    with table_service(settings, address) as (live, target):
        token = args.token or player_token(live.keys, name)
        return asyncio.run(_play(live, target, name, token, args.room))


async def _play(settings: Settings, address: str, name: str, token: str, room: str | None) -> int:
    import grpc

    from ddz.client.app import PlayApp
    from ddz.client.session import Session, refusal
    from ddz.entrypoints.simulate_cmd import SUITE_FAILED

    session = Session(settings.calling, address, token)
    try:
        return await PlayApp(session, name, room_id=room, input_fd=sys.stdin.fileno()).run()
    except grpc.aio.AioRpcError as exc:
        # The channel waits for a table service that is down (up to DDZ_RPC_TIMEOUT):
        # one that never answers ends in a deadline.
        if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            print(f"ddz: error: no table service answers at {address} "
                  f"({exc.code().name})", file=sys.stderr)  # fmt: skip
            return SUITE_FAILED
        raise ValueError(refusal(exc)) from None
    finally:
        await session.close()
