"""Who may call what: every RPC of the suite and the identities allowed to call it.

A caller's identity is the name in its client certificate's URI SAN
(``spiffe://ddz/<name>``, ``ddz.adapters.security.certs``): a service's name, or ``operator``
for the project's tools. The internal services refuse a connection without a
certificate of the suite's CA in the TLS handshake; the interceptor of
``ddz.adapters.rpc.grpc_server`` then lets a call through only when its caller is in the
RPC's row (least privilege), and refuses any other with PERMISSION_DENIED. An RPC
without a row is refused to everyone (a unit test keeps the table equal to the protos).

The table service faces players: its listener asks no client certificate (grpcio
offers a server either "require and verify" or "do not ask"), so its calls are open to
any TLS client and its bearer tokens decide (``ddz.access.seat_gate``; an operator's
tools carry an operator token). Health and reflection answer any caller that got
through the handshake.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from ddz.config.security import OPERATOR

CONSOLE = "console"
"""The dispute desk (services/console): reads hands, verdicts and ledgers for staff, holds
no signing key, publishes nothing, calls no RPC that acts for a seat."""

PLAYER_FACING: frozenset[str] = frozenset({"table"})
"""Services whose listener takes TLS clients without a client certificate."""

TABLE_FRONTS: frozenset[str] = frozenset({"play"})
"""Services that relay players' calls to the table, each with the player's own token
(services/play: gRPC-Web for browsers). They need no right of their own: the table's
tokens decide, as for any player."""


@dataclass(frozen=True, slots=True)
class Right:
    """The identities that may call one RPC (``anyone``: every caller the listener
    let in), and why."""

    callers: frozenset[str]
    why: str
    anyone: bool = False

    def allows(self, identity: str | None) -> bool:
        return self.anyone or (identity is not None and identity in self.callers)


def only(*callers: str, why: str) -> Right:
    return Right(frozenset(callers), why)


def anyone(why: str) -> Right:
    return Right(frozenset(), why, anyone=True)


TOKENS = anyone("the table's bearer tokens decide (ddz.access.seat_gate)")
OPEN = anyone("tells nothing about a hand: any caller the listener let in")

RIGHTS: Mapping[str, Right] = MappingProxyType({
    "ddz.v1.DealerService/Deal": only(
        "table", why="deals a table's hand: the table service alone seats players"),
    "ddz.v1.DealerService/CancelDeal": only(
        "table", why="calls off a table's deal before the table withdraws the hand"),
    "ddz.v1.DealerService/GetSeed": only(
        "rules", why="a hand's seed is every seat's cards: the rules rebuild a hand from it"),
    "ddz.v1.RulesService/Decide": only(
        "table", "bot", why="acts for a seat: the table for people, the bot for bot seats"),
    "ddz.v1.RulesService/DecideBatch": only(
        "table", "bot", why="Decide, batched (the bot sends its moves this way)"),
    "ddz.v1.RulesService/GetPublicState": only(
        OPERATOR, why="a hand's public state, for the operator's tools"),
    "ddz.v1.BotService/Suggest": only(
        "table", why="a move for a seat, from the seat's cards: the table's hints"),
    "ddz.v1.BotService/GetStats": only(OPERATOR, why="the bot's counters, for ddz bench"),
    "ddz.v1.SettlementService/GetBalance": only(
        "table", OPERATOR, CONSOLE,
        why="the table checks a room's minimum balance; tools and the desk show balances"),
    "ddz.v1.SettlementService/GetLedger": only(
        OPERATOR, why="a hand's settlement, for the tools (simulate, audit)"),
    "ddz.v1.SettlementService/ListLedgers": only(
        OPERATOR, CONSOLE, why="a player's ledgers, for tools and the desk's player page"),
    "ddz.v1.RecorderService/ReadStream": only(
        OPERATOR, CONSOLE, why="a stream's events hold every seat's cards: the operator's "
        "tools, and the desk, which shows a hand's cards only once it has ended"),
    "ddz.v1.RecorderService/ReadAll": only(OPERATOR, why="every event: the operator's tools"),
    "ddz.v1.AuditService/AuditHand": only(
        OPERATOR, CONSOLE, why="audits read every card: operators, and the desk's verdicts"),
    "ddz.v1.AuditService/AuditAll": only(OPERATOR, why="audits read every card: operators"),
    "ddz.v1.TableService/OpenTable": TOKENS,
    "ddz.v1.TableService/GetTable": TOKENS,
    "ddz.v1.TableService/StartHand": TOKENS,
    "ddz.v1.TableService/Bid": TOKENS,
    "ddz.v1.TableService/ShowCards": TOKENS,
    "ddz.v1.TableService/Play": TOKENS,
    "ddz.v1.TableService/Pass": TOKENS,
    "ddz.v1.TableService/GetView": TOKENS,
    "ddz.v1.TableService/WatchHand": TOKENS,
    "ddz.v1.TableService/Suggest": TOKENS,
    "ddz.v1.TableService/Hint": TOKENS,
    "ddz.v1.TableService/Resume": TOKENS,
    "ddz.v1.TableService/ListRooms": TOKENS,
    "ddz.v1.TableService/JoinRoom": TOKENS,
    "ddz.v1.TableService/LeaveRoom": TOKENS,
    "ddz.v1.TableService/NextHand": TOKENS,
    "ddz.v1.TableService/RefreshSeatToken": TOKENS,
    "ddz.v1.TableService/GetHandEvidence": TOKENS,
    "ddz.v1.DeskService/FindHands": only(
        CONSOLE, OPERATOR, why="hand summaries (players, times, outcomes): the desk's search"),
    "ddz.v1.DeskService/GetHandSummary": only(CONSOLE, OPERATOR, why="one hand's summary"),
    "ddz.v1.DeskService/LogAccess": only(
        CONSOLE, why="the desk appends who opened which hand or player page"),
    "ddz.v1.DeskService/GetEvidence": only(
        CONSOLE, OPERATOR, "table", why="a finished hand's evidence file, for the player "
        "(public keys): the desk's staff, and the table for the players who sat in it"),
    "ddz.v1.DeskService/ListTables": only(
        CONSOLE, OPERATOR, why="open tables (room, rules, who sits; no card): the live tables"),
    "ddz.v1.DeskService/ListAccess": only(
        CONSOLE, OPERATOR, why="the desk's access log, for auditors and the operator"),
    "ddz.v1.DeskService/OpenSession": only(CONSOLE, why="the desk opens a session at sign-in"),
    "ddz.v1.DeskService/CheckSession": only(
        CONSOLE, why="the desk looks its session up on every page"),
    "ddz.v1.DeskService/EndSessions": only(
        CONSOLE, OPERATOR, why="sign-out, and the operator ending a staff member's sessions"),
    "grpc.health.v1.Health/Check": OPEN,
    "grpc.health.v1.Health/List": OPEN,
    "grpc.health.v1.Health/Watch": OPEN,
    "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo": OPEN,
})  # fmt: skip
"""Every RPC a server of the suite serves, by full name (``package.Service/Method``)."""

NO_RIGHT = Right(frozenset(), "not in ddz.access.rights.RIGHTS: refused to everyone")


def right_of(method: str) -> Right:
    """The row of ``method`` (``/package.Service/Method``, as gRPC names it)."""
    return RIGHTS.get(method.lstrip("/"), NO_RIGHT)
