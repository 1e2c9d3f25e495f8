"""``ddz audit`` with evidence files (``ddz.audit.evidence.file``):

    ddz audit --bundle FILE [--keys KEYRING] [--json]   # verify a file: no store, no secret
    ddz audit HAND_ID --export-bundle FILE              # write a hand's evidence file

Exit codes: 0 every check holds (with ``--keys``: and every signer is in the published
keyring; without it the output says only internal consistency was checked), 1 a check
failed (named on the last line), 2 bad input (no such file, a keyring that is not one,
an unknown hand, a hand still in play).
"""

from __future__ import annotations

import json
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from ddz.adapters.store import SqlEventStore
from ddz.adapters.store.keys import Keyring
from ddz.audit.evidence.file import (
    CONSISTENCY_ONLY,
    NotEvidence,
    build_evidence,
    signer_lines,
    verify_evidence,
)
from ddz.audit.evidence.published import BadKeyring, PublishedKeys, read_published
from ddz.entrypoints.cli import UsageError


def _styled(line: str) -> str:
    text = escape(line)
    if line.startswith("  ✓") or line.startswith("Verdict: CLEAN"):
        return f"[green]{text}[/]"
    if line.startswith(("  ✗", "Verdict:")) or "check failed" in line:
        return f"[bold red]{text}[/]"
    return text


def verify_bundle(path: str, keyring: str | None, as_json: bool) -> int:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise UsageError(f"cannot read the evidence file {path}: {exc.strerror}") from None
    published: PublishedKeys | None = None
    if keyring is not None:
        try:
            published = read_published(Path(keyring))
        except BadKeyring as exc:
            raise UsageError(str(exc)) from None
    report = verify_evidence(data, published)
    if as_json:
        out = report.to_json()
        out["transcript"] = list(report.lines)
        print(json.dumps(out, ensure_ascii=False))
        return 1 if report.failure else 0
    console = Console(highlight=False, soft_wrap=True)
    for line in report.lines:
        console.print(_styled(line))
    console.print(f"Evidence file {escape(path)}:")
    for check in report.checks:
        mark = "✓" if check.passed else "✗"
        console.print(_styled(f"  {mark} {check.name}: {check.detail}"))
    if report.failure is None and not report.keyring_checked:
        console.print(f"[yellow]{escape(CONSISTENCY_ONLY)}:[/]")
        for line in signer_lines(report):
            console.print(f"  {escape(line)}")
    elif report.keyring_checked:
        console.print(f"signers checked against the published keyring {escape(str(keyring))}:")
        for line in signer_lines(report):
            console.print(f"  {escape(line)}")
    last = f"{report.hand_id or path}: {report.message}"
    console.print(f"[bold red]{escape(last)}[/]" if report.failure else escape(last))
    return 1 if report.failure else 0


def export_bundle(store: SqlEventStore, keys: Keyring, hand_id: str, path: str) -> int:
    try:
        evidence = build_evidence(store, hand_id, keys)
    except NotEvidence as exc:
        raise UsageError(str(exc)) from None
    try:
        Path(path).write_bytes(evidence.to_bytes())
    except OSError as exc:
        raise UsageError(f"cannot write the evidence file {path}: {exc.strerror}") from None
    report = evidence.report
    console = Console(highlight=False, soft_wrap=True)
    console.print(
        f"wrote the evidence file of hand {escape(evidence.hand_id)} to {escape(path)} "
        f"({report.event_count} events, {len(evidence.document['keys'])} signing key(s)); "
        f"verify it with: ddz audit --bundle {escape(path)} --keys KEYRING "
        "(KEYRING: `ddz keys export`)"
    )
    last = f"{report.hand_id}: {report.message}"
    console.print(escape(last) if report.clean else f"[bold red]{escape(last)}[/]")
    return 0 if report.clean else 1
