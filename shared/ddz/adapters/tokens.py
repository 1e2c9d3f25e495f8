"""Who is calling: signed bearer tokens, and channels that carry one.

A token is ``ddz1.<claims>.<signature>``: ``<claims>`` is the base64url (no padding) of
a compact JSON object, ``<signature>`` the base64url of
``HMAC-SHA256(key, "ddz1." + <claims>)``. Claims:

``kind``
    ``"seat"`` -- issued by the table service on ``JoinRoom``: one player at one seat
    of one table (``player``, ``table``, ``seat``); signed with the table key.
    ``"player"`` -- the operator's own login vouches for a player (``player``); signed
    with the operator key. It lets that player join rooms and act for the seats they
    hold.
    ``"operator"`` -- the operator's tools (bot tables, simulate, bench, support); signed
    with the operator key; may do everything, including open tables and act or read
    for any seat.
``player`` the player id; ``exp`` expiry (Unix seconds); ``nonce`` 16 random bytes
(hex), so no two tokens are alike.

Keys: ``DDZ_TABLE_TOKEN_KEY`` and ``DDZ_OPERATOR_KEY``; when empty, each is derived from
the audit key (``DDZ_AUDIT_KEY`` or ``<data dir>/audit.key``) as
``HMAC-SHA256(audit key, "ddz.v1/table-token-key")`` resp. ``".../operator-key"``, so
a local stack and the ``ddz`` tools on the same machine agree without setup.

Calls send the token as gRPC metadata ``authorization: Bearer <token>``
(``bearer_channel`` does it for every call of a channel).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import grpc

from ddz.adapters.grpc_client import channel_options
from ddz.config import Settings

PREFIX = "ddz1"
AUTH_HEADER = "authorization"
SCHEME = "Bearer"
MAX_TOKEN_CHARS = 2048
Kind = Literal["seat", "player", "operator"]
KINDS: tuple[Kind, ...] = ("seat", "player", "operator")

SEAT_TOKEN_TTL = 12 * 3600
"""Seconds a seat token lasts: longer than any sitting; leaving revokes it sooner."""
TOOL_TOKEN_TTL = 24 * 3600
"""Seconds the tokens the ``ddz`` tools sign for themselves last."""


class TokenError(ValueError):
    """A token that is not valid: malformed, signed with another key, or expired."""


@dataclass(frozen=True, slots=True)
class Claims:
    kind: Kind
    player: str
    expires: int
    nonce: str = field(repr=False)  # what makes the token one of a kind; no log needs it
    table: str = ""
    seat: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "player": self.player, "exp": self.expires,
                               "nonce": self.nonce}  # fmt: skip
        if self.kind == "seat":
            out["table"] = self.table
            out["seat"] = self.seat
        return out


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, signed: str) -> bytes:
    return hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest()


def sign(claims: Claims, key: bytes) -> str:
    if not key:
        raise ValueError("a token needs a signing key")
    body = _b64(json.dumps(claims.to_json(), separators=(",", ":"), sort_keys=True).encode())
    signed = f"{PREFIX}.{body}"
    return f"{signed}.{_b64(_mac(key, signed))}"


def new_claims(
    kind: Kind, player: str, ttl: float, *, table: str = "", seat: int | None = None,
    now: float | None = None,
) -> Claims:  # fmt: skip
    issued = time.time() if now is None else now
    return Claims(kind, player, int(issued + ttl), secrets.token_hex(16), table, seat)


_BASE64URL = re.compile(r"[A-Za-z0-9_-]{2,}")
"""Unpadded base64url, as ``sign`` writes it (one character alone encodes nothing)."""

_CLAIM_TYPES: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {"kind": (str,), "player": (str,), "exp": (int,), "nonce": (str,), "table": (str,),
     "seat": (int, type(None))}
)  # fmt: skip
"""Each claim a token may carry and the JSON types it may have (``bool`` is no number)."""
_REQUIRED = frozenset({"kind", "player", "exp", "nonce"})


def verify(token: str, keys: Mapping[Kind, bytes], *, now: float | None = None) -> Claims:
    """The claims of a valid token; ``TokenError`` saying why it is not.

    Whatever a caller sends, the answer is the claims or a ``TokenError``: the shape
    is checked first (length, ASCII, three parts, base64url), then the signature under
    each key, and only a signed body is decoded (so no JSON of a stranger's is parsed).
    """
    if not isinstance(token, str):
        raise TokenError("not a token: a token is text")
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenError("token too long")
    if not token.isascii() or not token.isprintable():
        raise TokenError("malformed token: not printable ASCII")
    parts = token.split(".")
    if len(parts) != 3 or parts[0] != PREFIX:
        raise TokenError(f"not a {PREFIX} token")
    _, body, signature = parts
    if not (_BASE64URL.fullmatch(body) and _BASE64URL.fullmatch(signature)):
        raise TokenError("malformed token: not base64url")
    signed = f"{PREFIX}.{body}"
    signed_by = {
        key
        for key in set(keys.values())
        if key and hmac.compare_digest(signature, _b64(_mac(key, signed)))
    }
    if not signed_by:
        raise TokenError("bad token signature")
    claims = _claims(body)
    # A seat token signed with the operator key (or the reverse) is no token of ours.
    if keys.get(claims.kind) not in signed_by:
        raise TokenError("bad token signature")
    if claims.expires <= (time.time() if now is None else now):
        raise TokenError("token expired")
    return claims


def _claims(body: str) -> Claims:
    """The claims of a signed body: a flat JSON object of ``_CLAIM_TYPES``."""
    try:
        raw = json.loads(_unb64(body).decode("utf-8"))
    except (ValueError, RecursionError):  # bad base64, UTF-8 or JSON are ValueErrors
        raise TokenError("malformed token claims") from None
    if not isinstance(raw, dict) or not _REQUIRED <= raw.keys() <= _CLAIM_TYPES.keys():
        raise TokenError("malformed token claims")
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, _CLAIM_TYPES[name]):
            raise TokenError(f"malformed token claims: {name}")
    if raw["kind"] not in KINDS:
        raise TokenError("malformed token: unknown kind")
    return Claims(
        kind=raw["kind"],
        player=raw["player"],
        expires=raw["exp"],
        nonce=raw["nonce"],
        table=raw.get("table", ""),
        seat=raw.get("seat"),
    )


# --- keys ------------------------------------------------------------------------------------


def _derived(settings: Settings, label: bytes) -> bytes:
    return hmac.new(settings.require_audit_key(), label, hashlib.sha256).hexdigest().encode()


def table_token_key(settings: Settings) -> bytes:
    """The key of seat tokens: ``DDZ_TABLE_TOKEN_KEY``, else derived from the audit key."""
    return settings.table_token_key or _derived(settings, b"ddz.v1/table-token-key")


def operator_key(settings: Settings) -> bytes:
    """The key of player and operator tokens: ``DDZ_OPERATOR_KEY``, else derived."""
    return settings.operator_key or _derived(settings, b"ddz.v1/operator-key")


def verification_keys(settings: Settings) -> dict[Kind, bytes]:
    operator = operator_key(settings)
    return {"seat": table_token_key(settings), "player": operator, "operator": operator}


def operator_token(settings: Settings, name: str = "operator", ttl: float = TOOL_TOKEN_TTL) -> str:
    """A token for the operator's tools (may do everything)."""
    return sign(new_claims("operator", name, ttl), operator_key(settings))


def player_token(settings: Settings, player_id: str, ttl: float = TOOL_TOKEN_TTL) -> str:
    """What the operator's login hands a player: their id, vouched for."""
    return sign(new_claims("player", player_id, ttl), operator_key(settings))


def bearer(metadata: Sequence[tuple[str, str | bytes]] | None) -> str | None:
    """The token of ``authorization: Bearer <token>`` in call metadata (None: none)."""
    for key, value in metadata or ():
        if key.lower() != AUTH_HEADER:
            continue
        text = value.decode("ascii", "replace") if isinstance(value, bytes) else value
        scheme, _, token = text.strip().partition(" ")
        if scheme.lower() == SCHEME.lower() and token.strip():
            return token.strip()
        return ""  # present but not a bearer token: invalid, not missing
    return None


# --- channels that carry a token ---------------------------------------------------------------


def _with_token(details: Any, token: str, timeout: float | None) -> Any:
    metadata = [(k, v) for k, v in (details.metadata or ()) if k != AUTH_HEADER]
    metadata.append((AUTH_HEADER, f"{SCHEME} {token}"))
    changes: dict[str, Any] = {"metadata": grpc.aio.Metadata(*metadata)}
    if timeout is not None and details.timeout is None:
        changes["timeout"] = timeout
    return details._replace(**changes)


class _UnaryBearer(grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    def __init__(self, token: Callable[[], str], timeout: float) -> None:
        self.token = token
        self.timeout = timeout

    async def intercept_unary_unary(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        return await continuation(_with_token(details, self.token(), self.timeout), request)


class _StreamBearer(grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    def __init__(self, token: Callable[[], str]) -> None:
        self.token = token

    async def intercept_unary_stream(
        self, continuation: Callable[[Any, Any], Any], details: Any, request: Any
    ) -> Any:
        return await continuation(_with_token(details, self.token(), None), request)


def bearer_channel(
    settings: Settings,
    token: str | Callable[[], str],
    service: str | None = "table",
    *,
    target: str | None = None,
) -> grpc.aio.Channel:
    """An insecure channel whose every call carries ``token`` (or what ``token()``
    returns at call time: a client whose seat token changes), with the suite's default
    deadline on unary calls (``DDZ_RPC_TIMEOUT``); streams choose their own."""
    if target is None:
        if service is None:
            raise ValueError("bearer_channel needs a service name or a target")
        target = settings.address(service)
    current: Callable[[], str] = token if callable(token) else (lambda: token)
    return grpc.aio.insecure_channel(
        target,
        options=channel_options(settings),
        interceptors=[_UnaryBearer(current, settings.rpc_timeout), _StreamBearer(current)],
    )
