"""Who is calling: the suite's identity of a gRPC caller, read from the client
certificate of the call's own TLS connection (``spiffe://ddz/<name>``). The server's
interceptor (``ddz.adapters.rpc.grpc_server``) authorizes each call by it against the
rights table (``rights``)."""

from __future__ import annotations

import functools
from typing import Any

import grpc

from ddz.config.security import SPIFFE_PREFIX

SAN = "x509_subject_alternative_name"
"""The auth property gRPC names a TLS peer by when its certificate has alternative names
(else its common name, which names no identity of the suite)."""
IDENTITIES_KEPT = 256
"""Distinct certificates whose identity is kept parsed (the suite's services and tools
are a dozen; a stranger's many certificates only push each other out)."""


def peer_identity(context: grpc.aio.ServicerContext[Any, Any]) -> str | None:
    """The caller's name from its client certificate's URI SAN (``spiffe://ddz/<name>``),
    or None: no certificate (a player at the table), or none of the suite's.

    Read on every call from the call's own TLS connection (gRPC's peer identity property:
    the certificate's subject alternative names), so no caller can ride on another's
    identity; only the parse is kept, by those names (``_identity_of``). The whole auth
    context (``auth_context()``: every property, the PEM certificate included) cost
    about 18 µs a call, the identity property alone about 1.3 µs."""
    if context.peer_identity_key() != SAN:  # no certificate, or one without names
        return None
    names = context.peer_identities()
    return _identity_of(tuple(names)) if names else None


@functools.lru_cache(maxsize=IDENTITIES_KEPT)
def _identity_of(names: tuple[bytes, ...]) -> str | None:
    for uri in names:
        text = uri.decode("utf-8", "replace")
        if text.startswith(SPIFFE_PREFIX):
            return text[len(SPIFFE_PREFIX) :]
    return None
