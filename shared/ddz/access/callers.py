"""Who a caller can be, in the words the use cases check: what a token says of its
holder (``Caller``: a seat, a player or the operator), the seat tokens a room hands out
(``SeatPass``), the port that reads and signs them (``Tokens``), and the roles of the
desk's staff (``Role``).

Plain values only: the table's and the console's use cases import them, so nothing
here imports gRPC, a key or an adapter (``tokens`` and ``staff_tokens`` do the crypto).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

CallerKind = Literal["seat", "player", "operator"]


@dataclass(frozen=True, slots=True)
class Caller:
    """Who a call's token says the caller is."""

    kind: CallerKind
    player_id: str
    table_id: str = ""
    seat: int | None = None

    @property
    def operator(self) -> bool:
        return self.kind == "operator"


@dataclass(frozen=True, slots=True)
class SeatPass:
    """A seat token and when it expires (Unix seconds)."""

    token: str = field(repr=False)
    expires: int


class Tokens(Protocol):
    """The table's tokens (``table_tokens.SignedTokens``; the unit tests' fakes)."""

    def caller(self, token: str) -> Caller:
        """Who the token is for; ``ValueError`` saying why it is not valid."""
        ...

    def seat_pass(self, player_id: str, table_id: str, seat: int) -> SeatPass: ...


Role = Literal["support", "auditor"]
ROLES: tuple[Role, ...] = ("support", "auditor")
"""The desk's staff roles (``staff_tokens``): ``support`` finds hands and players, reads
timelines and verdicts, hands out evidence files; ``auditor`` does that and reads the
desk's access log."""
