"""``ddz keys export``: the operator's public keyring, for publishing.

    ddz keys export [--out FILE]

Prints (or writes to FILE) every public key a hand's record is signed under: the
recorder's head keys (``DDZ_AUDIT_PUBLIC_KEYS``, else ``<data dir>/keys/audit-public.json``)
and the producers' event keys (``DDZ_EVENT_KEYRING``, else
``<data dir>/keys/event-keyring.json``), each with its id, use, producer and fingerprint
(``ddz.audit.evidence.published``). Nothing secret: HMAC keys of older hands are never exported.
``ddz audit --bundle FILE --keys KEYRING`` checks an evidence file's signers against it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ddz.adapters.runtime import stack_file
from ddz.audit.evidence.keys import NoAuditKeys, auditor_keyring
from ddz.audit.evidence.published import EVENT, HEAD, published_keys
from ddz.config import Settings
from ddz.entrypoints.cli import UsageError


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    keys = subparsers.add_parser(
        "keys",
        help="the operator's public keys (export the keyring to publish)",
        description="Public keys the hands' records are signed under.",
    )
    actions = keys.add_subparsers(dest="action", required=True, metavar="ACTION")
    export = actions.add_parser(
        "export",
        help="print the public keyring (head and event keys, with fingerprints) to publish",
        description="Print the operator's public keyring: the recorder's head keys and the "
        "producers' event keys, each with its id and fingerprint. Publish it: "
        "`ddz audit --bundle FILE --keys KEYRING` checks an evidence file's signers "
        "against it. Nothing in it is secret.",
    )
    export.add_argument("--out", metavar="FILE", help="write it to FILE instead of stdout")
    export.set_defaults(handler=run_export)


def run_export(args: argparse.Namespace) -> int:
    settings = stack_file.found(Settings.from_env())
    try:
        keyring = auditor_keyring(settings.keys, public_only=True)
    except NoAuditKeys as exc:
        raise UsageError(f"{exc}; start the stack once (`ddz up`) to make the keys") from None
    published = published_keys(keyring)
    text = json.dumps(published.to_json(), indent=2) + "\n"
    heads = sum(k.use == HEAD for k in published.keys.values())
    events = sum(k.use == EVENT for k in published.keys.values())
    if args.out is None:
        sys.stdout.write(text)
    else:
        try:
            Path(args.out).write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"cannot write the keyring to {args.out}: {exc.strerror}") from None
    where = "" if args.out is None else f" to {args.out}"
    print(
        f"exported {heads} head key(s) and {events} event key(s){where}: publish this "
        "keyring where players and auditors can fetch it",
        file=sys.stderr,
    )
    return 0
