"""Prepare what the services need before they start, as ``ddz up`` does on one machine.

    python deploy/prepare.py init       # DDZ_DATA_DIR: `ddz init`, and the recorder's audit key
    python deploy/prepare.py migrate    # DDZ_DATABASE_URL: the store's and the services' tables
    python deploy/prepare.py stream     # DDZ_NATS_URL: the DDZ stream, as the provision user

Docker Compose runs ``init migrate`` in its one-shot ``init`` service and ``stream`` in
``provision`` (docker-compose.yml). For Kubernetes an operator runs ``init`` once on their
own machine and makes the Secrets from that directory (docs/OPERATIONS.md, "Deploying");
the Jobs of deploy/k8s run ``migrate`` and ``stream``. Every step is the project's own
code and keeps what is already there (keys, certificates and seeds are made only where
missing; the stream keeps an operator's replicas and limits), so running it again is safe.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence

import nats.errors
from ddz.adapters.messaging import nats_auth
from ddz.adapters.service_db import migrate
from ddz.adapters.store.keys import ensure_signing_key
from ddz.config import Settings
from ddz.entrypoints import cli


def init(settings: Settings) -> None:
    """``ddz init`` (token keys, the CA and every identity's certificate, the NATS users
    and their seeds), then the recorder's Ed25519 audit key, which the recorder would
    otherwise make at its first start: made here, it can go into a Secret beforehand."""
    if cli.main(["init"]) != 0:
        raise ValueError("ddz init failed")
    ensure_signing_key(settings.keys.audit_signing_key_path, settings.keys.audit_public_keys_path)


def stream(settings: Settings) -> None:
    """The ``DDZ`` stream with ``DDZ_STREAM_REPLICAS`` and the retention limits, made by
    the ``provision`` user (its seed: ``<data dir>/nats/provision.nk``)."""
    asyncio.run(nats_auth.provision_stream(settings.bus))


def migrate_tables(settings: Settings) -> None:
    """The store's and the services' tables, created or upgraded once."""
    migrate(settings.store, settings.data_dir)


STEPS: dict[str, Callable[[Settings], None]] = {
    "init": init,
    "migrate": migrate_tables,
    "stream": stream,
}


def main(argv: Sequence[str] | None = None) -> int:
    steps = list(sys.argv[1:] if argv is None else argv)
    if not steps or any(step not in STEPS for step in steps):
        print(f"usage: python deploy/prepare.py {{{','.join(STEPS)}}}...", file=sys.stderr)
        return 2
    try:
        settings = Settings.from_env()
        for step in steps:
            STEPS[step](settings)
            print(f"ddz: prepare {step}: done", flush=True)
    except (ValueError, OSError, nats.errors.Error) as exc:  # bad setting, no server: one line
        print(f"ddz: prepare: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
