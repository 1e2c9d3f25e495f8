"""Staff tokens: who may open the dispute desk (the ``console`` service), and as what.

A staff token is a JWT the operator's login signs like a player's (EdDSA, the login key's
``kid`` in the header; ``ddz.adapters.security.tokens``), with its own audience and kind so the two
never stand in for each other: ``aud`` ``"ddz-console"``, ``kind`` ``"staff"``, ``sub`` the
staff member, ``role`` one of ``ROLES``. The table refuses it (wrong audience, and a kind
it does not know); the console refuses player and operator tokens (their audience is the
table's). The console checks it once, at sign-in, with the login's PUBLIC keys only.

Roles: ``support`` finds hands and players, reads timelines and verdicts, hands out
evidence files; ``auditor`` does that and reads the desk's access log.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

import jwt

from ddz.adapters.security.token_keys import LoginKey, LoginKeys
from ddz.application.staff import ROLES, Role
from ddz.domain import ids

ISSUER = "ddz-login"  # as ddz.adapters.security.tokens: the same login signs both
ALGORITHMS = ["EdDSA"]  # pinned: the algorithm never comes from the token
MAX_TOKEN_CHARS = 2048


class TokenError(ValueError):
    """Not a valid staff token; the message says why, in a staff member's words."""


STAFF_AUDIENCE = "ddz-console"
STAFF_KIND = "staff"
STAFF_TOKEN_TTL = 12 * 3600
"""Seconds a staff token lasts by default: a working day. Signing in exchanges it for a
short session (``DDZ_CONSOLE_SESSION_TTL``)."""
REQUIRED = ["iss", "aud", "sub", "kind", "iat", "exp", "jti"]
"""As a player's token (so the audience is what tells one from the other); ``role`` is
checked after."""


@dataclass(frozen=True, slots=True)
class StaffClaims:
    name: str
    role: Role
    expires: int


def issue_staff(key: LoginKey, name: str, role: str, ttl: float = STAFF_TOKEN_TTL) -> str:
    """A staff token for ``name`` as ``role``, signed as the login."""
    if role not in ROLES:
        raise ValueError(f"a staff role is one of {', '.join(ROLES)}, got {role!r}")
    if not ids.is_staff_name(name):
        raise ValueError(f"a staff name is {ids.STAFF_RULE}")
    issued = int(time.time())
    claims = {
        "iss": ISSUER, "aud": STAFF_AUDIENCE, "sub": name, "kind": STAFF_KIND, "role": role,
        "iat": issued, "exp": issued + int(ttl), "jti": secrets.token_hex(16),
    }  # fmt: skip
    return jwt.encode(claims, key.private, algorithm="EdDSA", headers={"kid": key.kid})


def verify_staff(token: str, login: LoginKeys) -> StaffClaims:
    """The claims of a valid staff token; ``TokenError`` saying, in a staff member's
    words, why this one is not (a player's token, expired, another key...)."""
    token = token.strip()
    if not token:
        raise TokenError("no token: paste the staff token `ddz token staff NAME` printed")
    if len(token) > MAX_TOKEN_CHARS or not token.isascii() or not token.isprintable():
        raise TokenError("not a staff token")
    try:
        kid = jwt.get_unverified_header(token).get("kid")
    except (jwt.PyJWTError, ValueError, RecursionError):
        raise TokenError("not a staff token (not a JWT)") from None
    public = login.get(kid) if isinstance(kid, str) and kid else None
    if public is None:
        raise TokenError("not signed by this operator's login (unknown key id)")
    try:
        raw = jwt.decode(
            token, public, algorithms=ALGORITHMS, audience=STAFF_AUDIENCE, issuer=ISSUER,
            options={"require": REQUIRED},
        )  # fmt: skip
    except jwt.ExpiredSignatureError:
        raise TokenError("this staff token has expired: ask for a new one") from None
    except jwt.InvalidAudienceError:
        raise TokenError(
            "a player's or operator's token does not open the desk: sign in with a staff token"
        ) from None
    except jwt.MissingRequiredClaimError as exc:
        raise TokenError(f"not a staff token (no {exc.claim} claim)") from None
    except jwt.PyJWTError:
        raise TokenError("bad token signature") from None
    except (ValueError, TypeError, RecursionError):
        raise TokenError("malformed token claims") from None
    name, role, expires = raw["sub"], raw.get("role"), raw["exp"]
    if raw["kind"] != STAFF_KIND or role not in ROLES or not isinstance(name, str):
        raise TokenError("not a staff token")
    if not ids.is_staff_name(name):
        raise TokenError(f"not a staff token: a staff name is {ids.STAFF_RULE}")
    if isinstance(expires, bool) or not isinstance(expires, int):
        raise TokenError("malformed token claims: exp")
    return StaffClaims(name=name, role=role, expires=expires)
