"""``ddz audit`` and ``ddz rebuild``: check hands in the event store.

    ddz audit HAND_ID [--at N] [--json]
    ddz audit HAND_ID --export-bundle FILE
    ddz audit --bundle FILE [--keys KEYRING] [--json]   (ddz.entrypoints.evidence_cmd)
    ddz audit --all [--json] [--workers K] [--limit N] [--incomplete-after SECONDS]
    ddz rebuild [--json]

The store is the one of the settings (``DDZ_DATABASE_URL``, else the SQLite file in
``DDZ_DATA_DIR``); the head signatures are checked with the public keyring
(``DDZ_AUDIT_PUBLIC_KEYS``, else ``<data dir>/keys/audit-public.json``) and, for hands
signed before Ed25519, the operator's HMAC key when it is there (``DDZ_AUDIT_KEY``, else
``<data dir>/audit.key``; ``--public-only`` ignores it). Exit codes: 0 every check holds
(``rebuild``: no difference), 1 a check failed (named on the last line) or the hand is
incomplete (``--all``: any hand failed; incomplete ones are counted and the stale ones
listed) (``rebuild``: differences), 2 bad input (unknown hand, no key, no store).
What each check proves: docs/AUDIT.md.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ddz.adapters.runtime import stack_file
from ddz.adapters.store import SqlEventStore, create_store
from ddz.adapters.store.keys import Keyring
from ddz.audit import NoSuchEvent, audit_hand
from ddz.audit.account.report import AuditReport
from ddz.audit.evidence.keys import NoAuditKeys, auditor_keyring
from ddz.audit.store.bulk import DEFAULT_INCOMPLETE_AFTER, AllReport, audit_all, default_workers
from ddz.audit.store.rebuild import (
    NoProjection,
    compare,
    live_balances,
    rebuild_balances,
    settled_hands,
)
from ddz.audit.store.source import load_hand
from ddz.config import Settings
from ddz.entrypoints.arguments import whole
from ddz.entrypoints.cli import UsageError
from ddz.entrypoints.evidence_cmd import export_bundle, verify_bundle
from ddz.entrypoints.progress import Progress, add_quiet

MAX_WORKERS = 64


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit = subparsers.add_parser(
        "audit",
        help="verify a hand (or every hand) in the event store, or a hand's evidence file",
        description="Verify a hand from its stored events, in order: the hash chain and "
        "head signature, the seed commitment and the deal, every bid and play re-run "
        "through the rules, the multiplier and the settlement. Prints a transcript and "
        "the verdict; exit 0 when every check holds, 1 naming the first that fails. "
        "--export-bundle writes the hand's evidence file; --bundle verifies one with no "
        "store, no network and no secret (--keys: against the published keyring).",
    )
    audit.add_argument("hand_id", nargs="?", help="the hand's id (with or without 'hand-')")
    audit.add_argument("--at", metavar="N", help="show the table as it stood after event N")
    audit.add_argument("--all", action="store_true", help="audit every hand in the store")
    audit.add_argument("--workers", metavar="K", help="processes for --all (default: cores)")
    audit.add_argument("--limit", metavar="N", help="--all: only the oldest N hands")
    audit.add_argument(
        "--incomplete-after",
        metavar="SECONDS",
        help="--all: list hands incomplete this long after their last event "
        f"(default {DEFAULT_INCOMPLETE_AFTER:.0f})",
    )
    audit.add_argument(
        "--public-only",
        action="store_true",
        help="verify with the public keyring alone, never an HMAC key",
    )
    audit.add_argument(
        "--export-bundle",
        metavar="FILE",
        help="write the hand's evidence file (events, signatures, public keys, transcript) to FILE",
    )
    audit.add_argument(
        "--bundle",
        metavar="FILE",
        help="verify an evidence file alone: no store, no network, no secret",
    )
    audit.add_argument(
        "--keys",
        metavar="KEYRING",
        help="--bundle: check the file's signers against this published keyring "
        "(`ddz keys export`)",
    )
    audit.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(audit)
    audit.set_defaults(handler=run_audit)

    rebuild = subparsers.add_parser(
        "rebuild",
        help="rebuild the balances from events and compare with the live projection",
        description="Rebuild every player's balance from the HandSettled events alone and "
        "compare it with the settlement service's live balances; exit 1 on any difference.",
    )
    rebuild.add_argument("--json", action="store_true", help="print one JSON object")
    add_quiet(rebuild)
    rebuild.set_defaults(handler=run_rebuild)


# --- shared --------------------------------------------------------------------------------


def _optional_whole(text: str | None, name: str, high: int) -> int | None:
    return None if text is None else whole(text, name, high)


def audit_keys(settings: Settings, *, public_only: bool = False) -> Keyring:
    """The public keyring and, for older hands, the HMAC key (``ddz.audit.evidence.keys``)."""
    try:
        return auditor_keyring(settings.keys, public_only=public_only)
    except (NoAuditKeys, ValueError) as exc:
        raise UsageError(str(exc)) from None


def _where(settings: Settings) -> str:
    return sa.make_url(settings.store.database_url).render_as_string(hide_password=True)


def open_store(settings: Settings) -> SqlEventStore:
    """The event store of the settings, which must exist already (never created here)."""
    url = sa.make_url(settings.store.database_url)
    database = url.database or ""
    on_disk = url.get_backend_name() == "sqlite" and database not in ("", ":memory:")
    if on_disk and not Path(database).is_file():
        raise UsageError(f"no event store at {_where(settings)} (set DDZ_DATABASE_URL)")
    store = create_store(settings.store.database_url)
    try:
        store.max_position()
    except sa.exc.SQLAlchemyError as exc:
        store.close()
        reason = str(exc.orig if isinstance(exc, sa.exc.DBAPIError) else exc).splitlines()[0]
        raise UsageError(f"cannot read the event store at {_where(settings)}: {reason}") from None
    return store


# --- ddz audit -----------------------------------------------------------------------------


def run_audit(args: argparse.Namespace) -> int:
    if args.bundle is not None:
        others = (args.hand_id, args.at, args.workers, args.limit, args.incomplete_after,
                  args.export_bundle)  # fmt: skip
        if args.all or args.public_only or any(o is not None for o in others):
            raise UsageError("--bundle FILE goes alone (with --keys KEYRING and --json)")
        return verify_bundle(args.bundle, args.keys, args.json)
    if args.keys is not None:
        raise UsageError("--keys KEYRING goes with --bundle FILE")
    settings = stack_file.found(Settings.from_env())
    if args.export_bundle is not None:
        if args.hand_id is None or args.all or args.at is not None or args.json:
            raise UsageError("--export-bundle FILE goes with one HAND_ID")
        store = open_store(settings)
        try:
            keys = audit_keys(settings, public_only=True)
            return export_bundle(store, keys, args.hand_id, args.export_bundle)
        finally:
            store.close()
    if args.all == (args.hand_id is not None):
        raise UsageError("give one HAND_ID, or --all")
    if args.all and args.at is not None:
        raise UsageError("--at needs one HAND_ID, not --all")
    if not args.all and (
        args.workers is not None or args.limit is not None or args.incomplete_after is not None
    ):
        raise UsageError("--workers, --limit and --incomplete-after go with --all")
    at = _optional_whole(args.at, "--at", 10**9)
    workers = _optional_whole(args.workers, "--workers", MAX_WORKERS) or default_workers()
    limit = _optional_whole(args.limit, "--limit", 10**9)
    stale_after = (
        None
        if args.incomplete_after is None
        else whole(args.incomplete_after, "--incomplete-after", 10**9, low=0)
    )
    keys = audit_keys(settings, public_only=args.public_only)
    if args.all:
        after = DEFAULT_INCOMPLETE_AFTER if stale_after is None else float(stale_after)
        return _audit_all(settings, keys, workers, limit, after, args.json, args.quiet)
    return _audit_one(settings, keys, args.hand_id, at, args.json)


def _audit_one(
    settings: Settings, keys: Keyring, hand_id: str, at: int | None, as_json: bool
) -> int:
    store = open_store(settings)
    try:
        record = load_hand(store, hand_id)
    finally:
        store.close()
    if record is None:
        raise UsageError(f"no hand {hand_id!r} in the event store at {_where(settings)}")
    report = audit_hand(record.events, keys, record.signatures)
    table = None
    if at is not None:
        try:
            table = report.state_at(at)
        except NoSuchEvent as exc:
            raise UsageError(str(exc)) from None
    if as_json:
        out: dict[str, Any] = report.to_json(with_transcript=table is None)
        if table is not None:
            out["at"] = table.to_json()
        print(json.dumps(out, ensure_ascii=False))
    else:
        console = Console(highlight=False, soft_wrap=True)
        if table is None:
            for line in report.transcript():
                console.print(_styled(line))
        else:
            for line in table.lines():
                console.print(escape(line))
            console.print(_styled(f"Verdict: {report.verdict.value.upper()}"))
        console.print(_styled(_last_line(report)))
    return 0 if report.clean else 1


def _last_line(report: AuditReport) -> str:
    return f"{report.hand_id}: {report.message}"


def _styled(line: str) -> str:
    text = escape(line)
    if line.startswith("Verdict: CLEAN") or line.startswith("  ✓"):
        return f"[green]{text}[/]"
    if line.startswith(("Verdict:", "  ✗")) or "check failed" in line or "incomplete:" in line:
        return f"[bold red]{text}[/]"
    if "REFUSED" in line:
        return f"[yellow]{text}[/]"
    if line.startswith("#"):
        number, _, rest = text.partition(" ")
        return f"[dim]{number}[/] {rest}"
    return text


def _audit_all(
    settings: Settings,
    keys: Keyring,
    workers: int,
    limit: int | None,
    incomplete_after: float,
    as_json: bool,
    quiet: bool = False,
) -> int:
    open_store(settings).close()  # one clear error before any worker starts
    with Progress("ddz audit --all", quiet=quiet) as progress:
        progress.stage("auditing")
        report = audit_all(
            settings.store.database_url, keys, workers=workers, limit=limit,
            on_progress=progress.update, incomplete_after=incomplete_after,
        )  # fmt: skip
    if as_json:
        print(json.dumps(report.to_json(), ensure_ascii=False))
    else:
        _print_all(report)
    return 0 if report.failed == 0 else 1


def _print_all(report: AllReport) -> None:
    console = Console(highlight=False, soft_wrap=True)
    table = Table(title="ddz audit --all", show_header=True)
    table.add_column("hands", justify="right")
    table.add_column("clean", justify="right")
    table.add_column("failed", justify="right")
    table.add_column("incomplete", justify="right")
    table.add_column("hands/s", justify="right")
    table.add_row(
        str(report.hands), str(report.clean), str(report.failed), str(report.incomplete),
        f"{report.hands_per_s:,.0f}",
    )  # fmt: skip
    console.print(table)
    rules = ", ".join(f"{name or '?'} {n}" for name, n in sorted(report.by_rules.items()))
    console.print(
        f"{report.events:,} events in {report.seconds:.2f} s with {report.workers} worker(s); "
        f"by rule set: {rules or 'none'}"
    )
    failed = {name: n for name, n in report.failed_by_check.items() if n}
    if failed:
        console.print(
            "[bold red]failed by check:[/] "
            + ", ".join(f"{name} {n}" for name, n in failed.items())
        )
        for verdict in report.failures[:20]:
            console.print(f"  {escape(verdict.hand_id)}: {escape(verdict.message)}")
        if report.failed > 20:
            console.print(f"  … and {report.failed - 20} more (--json lists up to 1000)")
    else:
        console.print("[green]every finished hand audits clean[/]")
    if report.stale:
        console.print(
            f"[yellow]{len(report.stale)} hand(s) incomplete for more than "
            f"{report.incomplete_after:.0f} s:[/]"
        )
        for verdict in report.stale[:20]:
            console.print(f"  {escape(verdict.hand_id)}: {escape(verdict.message)}")


# --- ddz rebuild ---------------------------------------------------------------------------


def run_rebuild(args: argparse.Namespace) -> int:
    settings = stack_file.found(Settings.from_env())
    store = open_store(settings)
    try:
        with Progress("ddz rebuild", quiet=args.quiet) as progress:
            progress.stage("reading settled hands")
            settled = []
            for hand in settled_hands(store.engine):
                settled.append(hand)
                progress.advance()
        rebuilt = rebuild_balances(settled)
        try:
            live = live_balances(store.engine)
        except NoProjection as exc:
            raise UsageError(f"{exc} at {_where(settings)}") from None
    finally:
        store.close()
    differences = compare(rebuilt, live)
    if args.json:
        print(
            json.dumps(
                {
                    "players": len(set(rebuilt) | set(live)),
                    "hands": len(settled),
                    "matches": not differences,
                    "differences": [d.to_json() for d in differences],
                }
            )
        )
    else:
        console = Console(highlight=False, soft_wrap=True)
        console.print(
            f"rebuilt {len(rebuilt)} player balance(s) from {len(settled)} HandSettled events; "
            f"live projection has {len(live)}"
        )
        if differences:
            table = Table(title="differences (rebuilt from events vs live)")
            for column in ("player", "rebuilt", "live", "rebuilt hands", "live hands"):
                table.add_column(column, justify="left" if column == "player" else "right")
            for d in differences:
                row = d.to_json()
                table.add_row(
                    escape(d.player_id),
                    *("—" if row[k] is None else str(row[k])
                      for k in ("rebuilt", "live", "rebuilt_hands", "live_hands")),
                )  # fmt: skip
            console.print(table)
            console.print(f"[bold red]{len(differences)} difference(s)[/]")
        else:
            console.print("[green]the live balances equal the balances rebuilt from events[/]")
    return 1 if differences else 0
