"""Who is calling: bearer tokens (a channel that carries one: ``ddz.adapters.rpc.bearer``).

Each token is signed by the one party that vouches for it, with a key of its own
(``ddz.access.token_keys``):

Login tokens -- ``player`` and ``operator`` -- are JWTs (RFC 7519) the operator's login
signs with its Ed25519 private key (``alg: EdDSA``, the key's ``kid`` in the header).
Claims: ``iss`` ``"ddz-login"``, ``aud`` ``"ddz-table"``, ``sub`` the player (or the
operator tool's name), ``kind`` ``"player"`` or ``"operator"``, ``iat``, ``exp``, ``jti``.
``player`` lets that player join rooms and act for the seats they hold; ``operator``
may do everything (open tables, act or read for any seat). The table service verifies
them with the login's PUBLIC keys only (a JWKS file, keys by ``kid``), the algorithm
pinned to EdDSA, so no key it holds can make one.

Seat tokens are ``ddz1.<claims>.<signature>``, issued by the table service on
``JoinRoom``: one player at one seat of one table. ``<claims>`` is the base64url (no
padding) of a compact JSON object (``kind`` ``"seat"``, ``player``, ``table``, ``seat``,
``exp``, ``nonce``), ``<signature>`` the base64url of ``HMAC-SHA256(seat key, "ddz1." +
<claims>)``. HMAC, not a key pair: the table service alone mints AND checks them, so a
public key would serve nobody, and a key it alone holds can make only its own seat
tokens -- a ``ddz1`` token of any other kind is refused, and a login token verifies
only under the login's Ed25519 keys. HMAC also costs little on every call.

Seat tokens are short-lived (``DDZ_SEAT_TOKEN_TTL``, 15 minutes by default): a client
exchanges its seat token for a new one (``RefreshSeatToken``) before it expires
(``refresh_delay``). A token is not revoked by a list: the table service refuses the
seat tokens of a seat its player has left and of a table it no longer holds, and both
facts are on the table's stream (``player_left``, ``table_closed``), so a restarted
service refuses the same tokens.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import jwt

from ddz.access.token_keys import LoginKey, LoginKeys, login_jwks_path, login_key
from ddz.access.token_keys import table_token_key as table_token_key  # re-exported
from ddz.config.security import KeySettings
from ddz.domain import ids

PREFIX = "ddz1"
AUTH_HEADER = "authorization"
SCHEME = "Bearer"
MAX_TOKEN_CHARS = 2048
Kind = Literal["seat", "player", "operator"]
KINDS: tuple[Kind, ...] = ("seat", "player", "operator")
LOGIN_KINDS: tuple[Kind, ...] = ("player", "operator")
"""The kinds only the operator's login signs."""

ISSUER = "ddz-login"
AUDIENCE = "ddz-table"
ALGORITHMS = ["EdDSA"]
"""Pinned: the algorithm never comes from the token (no ``none``, no HS256 under a public key)."""
REQUIRED_CLAIMS = ["iss", "aud", "sub", "kind", "iat", "exp", "jti"]

SEAT_TOKEN_TTL = 15 * 60
"""Seconds a seat token lasts by default (``DDZ_SEAT_TOKEN_TTL``): short, so a token
that got away is soon worthless; its holder refreshes it (RefreshSeatToken) while it
sits, and leaving the seat revokes it sooner (the table's stream records the leave)."""
REFRESH_MARGIN = 0.25
"""A client refreshes its seat token once less than this share of its life is left."""
TOOL_TOKEN_TTL = 24 * 3600
"""Seconds the tokens the ``ddz`` tools sign for themselves last."""


def refresh_delay(expires: float, received: float, now: float | None = None) -> float:
    """Seconds from ``now`` until a client that ``received`` a seat token expiring at
    ``expires`` (Unix seconds) refreshes it: once ``REFRESH_MARGIN`` of its life is left,
    measured on the client's own clock (a clock that is off shortens the life it sees,
    never makes the client refresh late)."""
    at = expires - REFRESH_MARGIN * max(0.0, expires - received)
    return max(0.0, at - (time.time() if now is None else now))


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


@dataclass(frozen=True, slots=True)
class TokenKeys:
    """What the table service checks tokens with: its seat key (which also signs seat
    tokens) and the login's public keys. Nothing here can sign a login token."""

    seat: bytes = field(repr=False)
    login: LoginKeys


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _mac(key: bytes, signed: str) -> bytes:
    return hmac.new(key, signed.encode("ascii"), hashlib.sha256).digest()


def sign(claims: Claims, key: bytes) -> str:
    """A seat token (``ddz1``) of ``claims``, signed with the seat key ``key``."""
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


def issue(key: LoginKey, kind: Kind, subject: str, ttl: float) -> str:
    """A login token (JWT, EdDSA) of ``kind`` for ``subject``: what the login signs."""
    if kind not in LOGIN_KINDS:
        raise ValueError(f"the login signs player and operator tokens, not {kind!r}")
    issued = int(time.time())
    claims = {
        "iss": ISSUER, "aud": AUDIENCE, "sub": subject, "kind": kind, "iat": issued,
        "exp": issued + int(ttl), "jti": secrets.token_hex(16),
    }  # fmt: skip
    return jwt.encode(claims, key.private, algorithm="EdDSA", headers={"kid": key.kid})


_BASE64URL = re.compile(r"[A-Za-z0-9_-]{2,}")
"""Unpadded base64url, as ``sign`` writes it (one character alone encodes nothing)."""

_CLAIM_TYPES: Mapping[str, tuple[type, ...]] = MappingProxyType(
    {"kind": (str,), "player": (str,), "exp": (int,), "nonce": (str,), "table": (str,),
     "seat": (int, type(None))}
)  # fmt: skip
"""Each claim a seat token may carry and the JSON types it may have (``bool`` is no number)."""
_REQUIRED = frozenset({"kind", "player", "exp", "nonce"})


def verify(token: str, keys: TokenKeys) -> Claims:
    """The claims of a valid token; ``TokenError`` saying why it is not.

    Whatever a caller sends, the answer is the claims or a ``TokenError``: the shape
    is checked first (length, ASCII, three parts, base64url), then the signature, and
    only a signed body is decoded (so no claims of a stranger's are parsed; a JWT's
    header is, to find its ``kid``).
    """
    if not isinstance(token, str):
        raise TokenError("not a token: a token is text")
    if len(token) > MAX_TOKEN_CHARS:
        raise TokenError("token too long")
    if not token.isascii() or not token.isprintable():
        raise TokenError("malformed token: not printable ASCII")
    parts = token.split(".")
    if len(parts) != 3:
        raise TokenError(f"not a {PREFIX} token nor a JWT")
    if not all(_BASE64URL.fullmatch(part) for part in parts[1:]) or not (
        parts[0] == PREFIX or _BASE64URL.fullmatch(parts[0])
    ):
        raise TokenError("malformed token: not base64url")
    if parts[0] == PREFIX:
        return _seat_claims(parts[1], parts[2], keys.seat)
    return _login_claims(token, keys.login)


def _seat_claims(body: str, signature: str, key: bytes) -> Claims:
    signed = f"{PREFIX}.{body}"
    if not key or not hmac.compare_digest(signature, _b64(_mac(key, signed))):
        raise TokenError("bad token signature")
    claims = _claims(body)
    if claims.kind != "seat":  # the table's key makes seat tokens, nothing more
        raise TokenError(f"bad token signature: the table signs no {claims.kind} tokens")
    if claims.expires <= time.time():
        raise TokenError("token expired")
    return claims


def _login_claims(token: str, login: LoginKeys) -> Claims:
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except (jwt.PyJWTError, ValueError, RecursionError):
        raise TokenError("malformed token: not a JWT") from None
    if not isinstance(kid, str) or not kid:
        raise TokenError("malformed token: a JWT without a key id (kid)")
    public = login.get(kid)
    if public is None:
        raise TokenError("bad token signature: unknown login key (kid)")
    try:
        raw = jwt.decode(
            token,
            public,
            algorithms=ALGORITHMS,
            audience=AUDIENCE,
            issuer=ISSUER,
            options={"require": REQUIRED_CLAIMS},
        )
    except jwt.ExpiredSignatureError:
        raise TokenError("token expired") from None
    except jwt.InvalidSignatureError:
        raise TokenError("bad token signature") from None
    except jwt.InvalidAlgorithmError:
        raise TokenError("bad token signature: login tokens are EdDSA") from None
    except jwt.DecodeError:  # the header was read above: the payload is no JSON object
        raise TokenError("malformed token claims") from None
    except jwt.PyJWTError as exc:
        raise TokenError(f"invalid login token: {exc}") from None
    except (ValueError, TypeError, RecursionError):
        raise TokenError("malformed token claims") from None
    return _login(raw)


def _login(raw: Mapping[str, Any]) -> Claims:
    kind, subject, expires, jti = raw["kind"], raw["sub"], raw["exp"], raw["jti"]
    if kind not in LOGIN_KINDS:
        raise TokenError("malformed token: a login token is a player or operator token")
    if not isinstance(subject, str) or not isinstance(jti, str):
        raise TokenError("malformed token claims: sub and jti are text")
    if kind == "player" and not ids.is_name(subject):
        raise TokenError(f"a player token's subject is a player id ({ids.NAME_RULE})")
    if isinstance(expires, bool) or not isinstance(expires, int):
        raise TokenError("malformed token claims: exp")
    return Claims(kind=kind, player=subject, expires=expires, nonce=jti)


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


def verification_keys(settings: KeySettings) -> TokenKeys:
    """What the table service holds: its seat key and the login's public keys."""
    return TokenKeys(table_token_key(settings), LoginKeys(login_jwks_path(settings)))


def operator_token(
    settings: KeySettings, name: str = "operator", ttl: float = TOOL_TOKEN_TTL
) -> str:
    """A token for the operator's tools (may do everything), signed as the login."""
    return issue(login_key(settings), "operator", name, ttl)


def player_token(settings: KeySettings, player_id: str, ttl: float = TOOL_TOKEN_TTL) -> str:
    """What the operator's login hands a player: their id, vouched for."""
    return issue(login_key(settings), "player", player_id, ttl)


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
