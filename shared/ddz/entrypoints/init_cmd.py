"""``ddz init``: prepare a data directory for services started one by one.

    ddz init

Makes, where missing, everything ``ddz up`` makes at start, so that ``ddz serve NAME``
(or ``python -m services.NAME``) with the same ``DDZ_DATA_DIR`` finds it: the token
keys (``ddz.access.token_keys``), the local CA and a certificate per service and for
the operator's tools (``ddz.adapters.security.certs``), an nkey per NATS user and the
nats-server authorization file (``ddz.adapters.messaging.nats_auth``), the event producers' and
the recorder's signing keys. Existing files are kept;
running it again changes nothing (a certificate about to expire is issued again).
"""

from __future__ import annotations

import argparse

from ddz.config import Settings


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "init",
        help="make the keys, TLS certificates and NATS users of a data dir (kept if there)",
        description="Prepare DDZ_DATA_DIR for services started alone (ddz serve NAME): "
        "token keys, a local CA with a certificate per service and for the operator, "
        "NATS nkeys and the nats-server authorization file, the producers' event signing "
        "keys and the recorder's audit signing key with their public keyrings (what "
        "`ddz keys export` publishes). Existing files are kept.",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from ddz.access.token_keys import ensure_keys
    from ddz.adapters.files.data_files import ensure_dir
    from ddz.adapters.messaging import nats_auth
    from ddz.adapters.security.certs import IDENTITIES, ensure_certificates, suite_hosts
    from ddz.adapters.security.event_signing import ensure_event_keys
    from ddz.adapters.store.keys import ensure_signing_key

    settings = Settings.from_env()
    ensure_dir(settings.data_dir)
    ensure_keys(settings.keys)
    files = ensure_certificates(
        settings.data_dir, hosts=suite_hosts(settings.network, settings.table.table_advertise)
    )
    nats_config = nats_auth.write_config(settings.data_dir)
    # The producers' and the recorder's signing keys, which the services would make at
    # their start: made here, a data dir copied to several hosts gives them all the same.
    ensure_event_keys(settings.keys)
    ensure_signing_key(settings.keys.audit_signing_key_path, settings.keys.audit_public_keys_path)
    print(f"ddz: data dir {settings.data_dir} is ready")
    print(f"  TLS CA           {files.ca_cert}  (its key: {files.ca_key})")
    print(f"  certificates     {files.tls_dir}/{{{','.join(IDENTITIES)}}}.crt and .key")
    print(f"  NATS users       {nats_config.parent}/  (nats-server -c: {nats_config})")
    print(f"  token keys       {settings.data_dir / 'keys'}/")
    print(
        f"  event keys       {settings.keys.event_signing_key_path('{dealer,rules,table}')}  "
        f"(public: {settings.keys.event_keyring_path})"
    )
    print(
        f"  audit key        {settings.keys.audit_signing_key_path}  "
        f"(public: {settings.keys.audit_public_keys_path})"
    )
    return 0
