"""Progress off a terminal (``ddz.entrypoints.progress``): a plain line every interval
while the work goes on, a last one when it ends, none when quiet or when the run was
shorter than one interval; and ``ddz selfplay``'s wiring of it as a user runs it."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
import threading

from ddz.entrypoints.progress import Progress

LINE = re.compile(r"^ddz test: classic: playing: (\d+)/40 hands \(\d+%\), \d+ s(, done)?$")


def lines_while_working(*, quiet: bool, every: float, work_s: float) -> list[str]:
    out = io.StringIO()  # not a terminal
    step = threading.Event()
    with Progress("ddz test", quiet=quiet, every=every, stream=out) as progress:
        progress.stage("classic: playing", total=40)
        for _ in range(40):
            progress.advance()
            step.wait(work_s / 40)
    return out.getvalue().splitlines()


def test_a_long_run_prints_a_line_every_interval_and_one_at_the_end() -> None:
    lines = lines_while_working(quiet=False, every=0.05, work_s=1.0)
    assert len(lines) >= 3, lines
    matches = [LINE.match(line) for line in lines]
    assert all(matches), lines
    counts = [int(m[1]) for m in matches if m]
    assert counts == sorted(counts) and counts[-1] == 40  # it moves on, to the end
    assert lines[-1].endswith(", done") and not any(line.endswith("done") for line in lines[:-1])


def test_quiet_and_short_runs_print_nothing() -> None:
    assert lines_while_working(quiet=True, every=0.05, work_s=0.5) == []
    assert lines_while_working(quiet=False, every=60.0, work_s=0.1) == []


def test_selfplay_keeps_stdout_for_the_json_and_quiet_silences_stderr() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ddz.entrypoints.cli", "selfplay", "--hands", "5", "--seed",
         "p", "--json", "--quiet"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hands"] == 5 and done.stderr == ""


def test_describe_changes_the_words_not_the_count() -> None:
    out = io.StringIO()
    with Progress("ddz test", every=60, stream=out) as progress:
        progress.stage("300 people playing: 0/300 seated", total=120, unit="s")
        progress.update(30)
        progress.describe("300 people playing: 298/300 seated, 12 hands ended")
        line = progress.line()
    assert line.startswith("ddz test: 300 people playing: 298/300 seated, 12 hands ended: ")
    assert "30/120 s (25%)" in line
