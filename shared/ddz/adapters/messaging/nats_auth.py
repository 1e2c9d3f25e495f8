"""Who may do what on the stack's own nats-server: one NATS user per service.

``ddz up`` gives every service an nkey of its own (an Ed25519 seed in
``<data dir>/nats/<name>.nk``, 0600; the server holds only the public keys) and writes
``<data dir>/nats/auth.conf``: each user allowed only the subjects its service needs.
Only the dealer and the rules service publish hand events; only the services that must
see every card (rules, bot, table, recorder) may read ``ddz.v1.internal.>``; settlement
and the recorder only consume; the table service publishes only its own streams. A
connection without a known key is refused. docs/SECURITY.md ("NATS") has the table.

nkeys rather than passwords: the server's configuration holds no secret, each seed
never leaves its service's file, and a seed proves itself by signing the server's nonce
(nothing replayable crosses the wire).

JetStream's API is plain subjects (``$JS.API.<verb>.<stream>[.<consumer>]``), so a
user is allowed the verbs it uses on the ``DDZ`` stream and its own durable consumers
only; stream create/update belong to the ``provision`` user alone (the stack makes the
stream before the services start). Each user's inboxes carry its name
(``_INBOX.<name>.>``): none can read another's replies.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nkeys

from ddz.adapters.files.data_files import REMAKE, BadFile, read_bytes
from ddz.adapters.messaging.bus import EventBus
from ddz.adapters.messaging.lease import BUCKET as LEASE_BUCKET
from ddz.adapters.messaging.lease import lease_bucket
from ddz.adapters.messaging.room_queue import BUCKET as ROOM_QUEUE_BUCKET
from ddz.adapters.messaging.room_queue import room_queue_bucket
from ddz.adapters.messaging.subjects import INTERNAL, STREAM_NAME, SUBJECT_ROOT, category_filter
from ddz.config.bus import BusSettings
from ddz.domain.hand.events import HandSettled, HandStarted

PROVISION = "provision"
"""The identity that makes and changes the stream: the stack (``ddz up``) alone."""
TOOLS = "ddz"
"""The user of the ``ddz`` tools that read the stream."""
NATS_DIR = "nats"
CONFIG_FILE = "auth.conf"
SEED_BYTES = 36  # two prefix bytes, the 32-byte Ed25519 seed, a two-byte checksum
SEED_FIX = REMAKE

_HAND = f"{SUBJECT_ROOT}.hand.>"
_INTERNAL_HAND = f"{SUBJECT_ROOT}.{INTERNAL}.hand.>"
_INTERNAL = f"{SUBJECT_ROOT}.{INTERNAL}.>"
_TABLE = f"{SUBJECT_ROOT}.table.>"
_HAND_SETTLED = category_filter("hand", event_type=HandSettled.TYPE)
_HAND_STARTED = category_filter("hand", event_type=HandStarted.TYPE)
_API = f"$JS.API.{{verb}}.{STREAM_NAME}"


@dataclass(frozen=True, slots=True)
class Role:
    """What one service's user may do: the subjects it publishes and subscribes to,
    its durable consumers, the stored messages it reads, and whether it makes consumers
    of its own without a name (a scan)."""

    publish: tuple[str, ...] = ()
    subscribe: tuple[str, ...] = ()
    durables: tuple[str, ...] = ()
    reads_messages: bool = False
    """It reads stored messages by number, or the next one on a filter
    (``STREAM.MSG.GET``): the request names its subject in its body, where no permission
    looks, so it reaches every subject of the stream. Only a user that sees every card
    (``sees_cards``) may make it."""
    reads_last: tuple[str, ...] = ()
    """Subjects (filters) whose last stored message it reads, each by
    ``$JS.API.DIRECT.GET.DDZ.<subject>``: the subject is in the request's own subject,
    so the server refuses any other (and a body that would name one)."""
    scans: bool = False
    pinned: str = ""
    """The one filter its durables may have (empty: any): they are made only on
    ``$JS.API.CONSUMER.CREATE.DDZ.<durable>.<filter>``, which the server checks against
    the consumer's configuration, so no other events can be delivered to it."""
    leases: str = ""
    """The first token of the instance leases it may hold (``ddz.adapters.messaging.lease``, keys
    ``<leases>`` and ``<leases>.…`` of the bucket the ``provision`` user makes); empty:
    none."""
    buckets: tuple[str, ...] = ()
    """KV buckets of its own it reads and writes whole (the ``provision`` user makes
    them): the table's room queues."""
    observes: bool = False
    """It may read every consumer's state (``CONSUMER.LIST``/``INFO``: their lag), and
    change none: ``ddz status``."""


ROLES: Mapping[str, Role] = {
    "dealer": Role(publish=(_HAND, _INTERNAL_HAND), reads_messages=True),
    "rules": Role(publish=(_HAND, _INTERNAL_HAND), subscribe=(_INTERNAL,), reads_messages=True),
    # The bot's partitions (``bot-<i>-of-<n>``) and its scans of started hands name
    # their consumers at run time: its consumer verbs take any name (it reads every
    # card already; docs/SECURITY.md says what that leaves open).
    "bot": Role(
        subscribe=(_INTERNAL,), durables=("*",), reads_messages=True, scans=True, leases="bot"
    ),
    "table": Role(
        publish=(_TABLE,),
        subscribe=(_INTERNAL,),
        durables=("table",),
        reads_messages=True,
        leases="table",
        buckets=(ROOM_QUEUE_BUCKET,),
    ),
    # ``last_started`` reads one stored message (the hand's ``hand_started``), by a
    # direct get of that subject: never the cards, which a message get would reach.
    "settlement": Role(durables=("settlement",), reads_last=(_HAND_STARTED,), pinned=_HAND_SETTLED),
    "recorder": Role(subscribe=(_INTERNAL,), durables=("recorder",), leases="recorder"),
    # The operator's own tools that look at the stream (``ddz`` checks, the end-to-end
    # tests): they read whole hands, cards included (as ``ddz audit`` does from the
    # store), and publish nothing.
    TOOLS: Role(subscribe=(_INTERNAL,), reads_messages=True, observes=True),
}


def sees_cards(name: str) -> bool:
    """Whether user ``name`` may read ``ddz.v1.internal.>`` (every seat's cards): it
    subscribes to it, or writes the cards there itself (the dealer deals them)."""
    role = ROLES[name]
    return _INTERNAL in role.subscribe or _INTERNAL_HAND in role.publish


def nats_dir(data_dir: Path) -> Path:
    return data_dir / NATS_DIR


def seed_path(data_dir: Path, name: str) -> Path:
    """Where ``name``'s nkey seed lives (``ddz serve NAME`` looks here too)."""
    return nats_dir(data_dir) / f"{name}.nk"


def inbox_prefix(name: str) -> str:
    return f"_INBOX.{name}"


def permissions(name: str) -> dict[str, dict[str, list[str]]]:
    """The nats-server ``permissions`` block of user ``name`` (a service or
    ``PROVISION``): allow lists only, so whatever is not listed is refused."""
    inbox = f"{inbox_prefix(name)}.>"
    if name == PROVISION:
        return {"publish": {"allow": ["$JS.API.>"]}, "subscribe": {"allow": [inbox]}}
    role = ROLES[name]
    publish = [*role.publish, _API.format(verb="STREAM.INFO")]
    if role.reads_messages:
        if not sees_cards(name):  # a message get reaches the cards: none for such a user
            raise ValueError(f"{name} may not read every card, so no STREAM.MSG.GET")
        publish.append(_API.format(verb="STREAM.MSG.GET"))
    publish += [f"{_API.format(verb='DIRECT.GET')}.{subject}" for subject in role.reads_last]
    for durable in role.durables:
        consumer = f"{STREAM_NAME}.{durable}"
        publish += [
            f"$JS.API.CONSUMER.{verb}.{consumer}" for verb in ("INFO", "DELETE", "MSG.NEXT")
        ]
        if role.pinned:
            publish.append(f"$JS.API.CONSUMER.CREATE.{consumer}.{role.pinned}")
        else:  # any filter: the name alone, with a filter, or the older durable form
            publish += [f"$JS.API.CONSUMER.CREATE.{consumer}",
                        f"$JS.API.CONSUMER.CREATE.{consumer}.>",
                        f"$JS.API.CONSUMER.DURABLE.CREATE.{consumer}"]  # fmt: skip
        publish.append(f"$JS.ACK.{consumer}.>")
    if role.observes:
        publish += [_API.format(verb="CONSUMER.LIST"), _API.format(verb="CONSUMER.NAMES"),
                    _API.format(verb="CONSUMER.INFO") + ".*"]  # fmt: skip
    if role.scans:
        publish.append(_API.format(verb="CONSUMER.CREATE"))  # a consumer the server names
    if role.leases:
        leases = f"KV_{LEASE_BUCKET}"
        publish += [f"$KV.{LEASE_BUCKET}.{role.leases}", f"$KV.{LEASE_BUCKET}.{role.leases}.>",
                    f"$JS.API.STREAM.INFO.{leases}", f"$JS.API.STREAM.MSG.GET.{leases}",
                    f"$JS.API.DIRECT.GET.{leases}", f"$JS.API.DIRECT.GET.{leases}.>"]  # fmt: skip
    for bucket in role.buckets:
        stream = f"KV_{bucket}"
        publish += [f"$KV.{bucket}.>", f"$JS.API.STREAM.INFO.{stream}",
                    f"$JS.API.STREAM.MSG.GET.{stream}", f"$JS.API.DIRECT.GET.{stream}",
                    f"$JS.API.DIRECT.GET.{stream}.>"]  # fmt: skip
    return {"publish": {"allow": publish}, "subscribe": {"allow": [*role.subscribe, inbox]}}


def ensure_seed(data_dir: Path, name: str) -> str:
    """``name``'s user public key, its seed file made first if missing (0600)."""
    path = seed_path(data_dir, name)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o700)
        raw = os.urandom(32)  # an Ed25519 seed is 32 random bytes
        seed = nkeys.encode_seed(raw, nkeys.PREFIX_BYTE_USER)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(seed + b"\n")
    public: bytes = load_seed(path).public_key
    return public.decode("ascii")


def load_seed(path: Path) -> nkeys.KeyPair:
    """The nkey user of the seed file at ``path``; ``BadFile`` unless it is one whole
    user seed (its checksum right: nkeys itself reads a damaged seed as another key)."""
    text = read_bytes(path, "NATS nkey seed").strip()
    try:
        raw = base64.b32decode(text + b"=" * (-len(text) % 8))
    except (binascii.Error, ValueError):
        raw = b""
    whole = len(raw) == SEED_BYTES and nkeys.crc16_checksum(raw[:-2]) == raw[-2:]
    if not whole or not text.startswith(b"SU"):
        raise BadFile(path, "not a NATS user nkey seed (or a damaged one)", SEED_FIX)
    try:
        return nkeys.from_seed(bytearray(text))
    except nkeys.NkeysError:
        raise BadFile(path, "not a NATS user nkey seed", SEED_FIX) from None


def write_config(
    data_dir: Path, names: Iterable[str] = (*ROLES, PROVISION), *, sync_interval: str = ""
) -> Path:
    """The ``authorization`` configuration of the stack's nats-server, with a user for
    each of ``names`` (seeds made where missing), and JetStream's ``sync_interval`` when
    one is given (``DDZ_NATS_SYNC``). Written anew at each start, so the permissions are
    always this code's."""
    users = [{"nkey": ensure_seed(data_dir, name), "permissions": permissions(name)}
             for name in names]  # fmt: skip
    path = nats_dir(data_dir) / CONFIG_FILE
    text = f"authorization: {json.dumps({'users': users}, indent=2)}\n"
    if sync_interval:
        text += f"jetstream {{\n  sync_interval: {json.dumps(sync_interval)}\n}}\n"
    path.write_text(text, encoding="utf-8")
    return path


def service_env(data_dir: Path, name: str) -> dict[str, str]:
    """The variables that make service ``name`` connect as its own user."""
    return {"DDZ_NATS_NKEY_SEED": str(seed_path(data_dir, name))}


def connect_options(settings: BusSettings, name: str) -> dict[str, Any]:
    """nats-py ``connect`` options for ``name`` (a service or tool) from the settings:
    a creds file (``DDZ_NATS_CREDS``, an operator's ``nsc`` user), else an nkey seed
    file (``DDZ_NATS_NKEY_SEED``), else user and password, else the seed ``ddz up``
    made for ``name`` in the data directory when there is one, else none (a server
    without authorization, as the tests start). TLS when a CA or a client certificate
    is set. An authenticated user's inboxes are ``_INBOX.<name>.>``, as its
    permissions allow."""
    options: dict[str, Any] = {}
    fallback = seed_path(settings.data_dir, name)
    if settings.nats_creds_file is not None:
        options["user_credentials"] = str(settings.nats_creds_file)
    elif settings.nats_nkey_seed_file is not None:
        options["nkeys_seed"] = str(settings.nats_nkey_seed_file)
    elif settings.nats_user:
        options["user"] = settings.nats_user
        options["password"] = settings.nats_password
    elif fallback.is_file():
        options["nkeys_seed"] = str(fallback)
    if options:
        options["inbox_prefix"] = inbox_prefix(name)
    tls = tls_context(settings)
    if tls is not None:
        options["tls"] = tls
    return options


def tls_context(settings: BusSettings) -> ssl.SSLContext | None:
    """The client TLS context for NATS (``DDZ_NATS_CA``, ``DDZ_NATS_CERT`` and
    ``DDZ_NATS_KEY``), or None when none of them is set."""
    if not (settings.nats_ca_file or settings.nats_cert_file):
        return None
    cafile = str(settings.nats_ca_file) if settings.nats_ca_file else None
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cafile)
    if settings.nats_cert_file is not None:
        key = str(settings.nats_key_file) if settings.nats_key_file else None
        context.load_cert_chain(str(settings.nats_cert_file), key)
    return context


async def provision_stream(settings: BusSettings) -> None:
    """Make (or fit) the ``DDZ`` stream as the ``provision`` user, with the settings'
    replicas and limits, the bucket of instance leases and that of the room queues: the
    services' users may only look at them (and write their own leases, and the table
    service its queues)."""
    seed = seed_path(settings.data_dir, PROVISION)
    bus = await EventBus.connect(
        settings.nats_url,
        name=PROVISION,
        nkeys_seed=str(seed),
        inbox_prefix=inbox_prefix(PROVISION),
        max_reconnect_attempts=0,
    )
    try:
        await bus.ensure_stream(
            replicas=settings.stream_replicas,
            max_age=settings.stream_max_age,
            max_bytes=settings.stream_max_bytes,
        )
        await lease_bucket(bus, settings.stream_replicas)  # the instances' leases
        await room_queue_bucket(bus, settings.stream_replicas)  # the table's room queues
    finally:
        await bus.close()
