"""One way to print a command's figures for people: a two-column rich table."""

from __future__ import annotations

from collections.abc import Iterable


def print_figures(title: str, rows: Iterable[tuple[str, str]]) -> None:
    """``rows`` of (figure, value), printed as a table titled ``title`` on stdout."""
    from rich.console import Console  # imported here: --json runs never need rich
    from rich.table import Table

    table = Table(title=title)
    table.add_column("figure")
    table.add_column("value", justify="right")
    for name, value in rows:
        table.add_row(name, value)
    Console().print(table)
