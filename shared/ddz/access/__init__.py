"""Access: who is calling, and what they may do. Every check the suite makes of a
caller is in this package or named here, in the order a call meets it.

1. **The connection** (TLS everywhere). An internal service (dealer, rules, bot,
   settlement, recorder) refuses, in the handshake, a client without a certificate of
   the suite's CA; the player-facing table service asks for none
   (``rights.PLAYER_FACING``). Certificates and the CA: ``ddz.adapters.security.certs``;
   the client side presents its service's certificate (``ddz.adapters.rpc.grpc_client``).
2. **The caller's identity** -- services and the operator's tools. ``identity``:
   ``peer_identity`` reads the name in the call's own client certificate
   (``spiffe://ddz/<name>``): a service's name, ``operator`` or ``console``.
3. **The caller's right to the RPC.** ``rights``: ``RIGHTS``, one row per RPC of the
   suite, the identities that may call it. The interceptor of
   ``ddz.adapters.rpc.grpc_server`` looks the row up (``right_of``) before the handler
   runs and refuses any other caller PERMISSION_DENIED (reason ``PERMISSION_DENIED``);
   an RPC without a row is refused to everyone. The table's RPCs are open to anyone the
   listener let in: its bearer tokens decide (4, 5).
4. **The bearer token** -- players, seats and the operator at the table. The table's
   servicer reads ``authorization: Bearer <token>`` (``tokens.bearer``). ``tokens``:
   what the tokens are and ``verify``: seat tokens (``ddz1``, HMAC under the table's
   seat key) and login tokens (player and operator JWTs, EdDSA under the login's public
   keys); ``token_keys``: those keys' files. ``table_tokens.SignedTokens`` is the
   table's ``Tokens`` port over them (services/table/app.py passes it in): a valid
   token becomes a ``callers.Caller``, any other a ``ValueError`` saying why.
5. **The seat.** ``seat_gate.Gate``, called by the table's use cases: no token or a
   bad one is refused UNAUTHENTICATED; a valid one that does not give the seat, the
   table or an operator-only call is refused PERMISSION_DENIED (another seat's token, a
   seat its player has left...). A player never acts for, or reads, another's seat.
6. **Fronts and the desk.** The play gateway (``services/play/adapters/gateway.py``) checks
   nothing: it relays each browser call to the table with the caller's own token
   (``rights.TABLE_FRONTS``). The dispute desk (``services/console``) takes a staff
   token once, at sign-in (``staff_tokens.verify_staff``: the login's public keys,
   audience ``ddz-console``, a ``callers.Role``), then knows the staff member by a
   session cookie checked on every page (``services/console/use_cases/session.py``); it calls
   the recorder and the settlement as ``console`` (2-3).

Not calls, so checked elsewhere: who may publish or read which events on NATS
(``ddz.adapters.messaging.nats_auth``: a NATS user per service, its subjects), which
service signed an event (``ddz.adapters.security.event_signing``), and the dealer's
refusal to take a deal's terms from its caller rather than the table's stream
(``services/dealer``).

Who makes the credentials: the operator's login signs player, operator and staff
tokens (``tokens.issue``, ``operator_token``, ``player_token``,
``staff_tokens.issue_staff``; the ``ddz token`` command); the table signs seat tokens
(``table_tokens``); ``ddz init`` makes the keys and certificates. A client carries its
token on every call with ``ddz.adapters.rpc.bearer.bearer_channel``. No secret --
token, key, nonce -- is in a ``repr``, a log line or an error message.

Where this package sits: among the adapters (the adapters' layers contract of
pyproject.toml lists it under ``rpc``, whose server and clients read ``identity`` and
``rights``, and over ``security`` and ``files``, whose certificates and key files it
reads). It is not under ``ddz/adapters/`` because the use cases import two of its
modules, ``callers`` and ``seat_gate``, and use cases import no adapter: those two
import neither gRPC, nor a key, nor an adapter (contracts "The seat gate and the
callers' words are plain code").
"""
