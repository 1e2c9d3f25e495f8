"""Every relative link in README.md and docs/*.md reaches a file that exists, and every
`#anchor` a heading of the page it names. Sections move between documents (a superseded
benchmark round goes to docs/BENCHMARKS_HISTORY.md, a fact told twice is told once and
linked): a link left pointing at the old place is caught here, not by a reader.

Anchors follow GitHub's rules: the heading's text lower-cased, every character that is not
a letter, a digit, a space, a hyphen or an underscore dropped, spaces made hyphens; a
heading met again on the same page gets -1, -2, ... Headings and links inside fenced code
blocks and inline code are not headings or links.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) or ![alt](target); the target ends at the first space (a title may follow).
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.I)


def _prose_lines(text: str) -> list[str]:
    """The page's lines outside fenced code blocks."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(line)
    return lines


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link shows its text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    found = set()
    for line in _prose_lines(text):
        match = HEADING.match(line)
        if match is None:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[tuple[int, str]]:
    """(line number, target) of every link outside code."""
    found = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        bare = INLINE_CODE.sub("", line)
        found += [(number, target) for target in INLINE_LINK.findall(bare)]
        definition = REFERENCE_DEFINITION.match(bare)
        if definition:
            found.append((number, definition.group(1)))
    return found


def broken_links(page: Path, text: str | None = None) -> list[str]:
    """Each link of ``page`` that reaches nothing, with why."""
    text = page.read_text() if text is None else text
    problems = []
    for number, target in links(text):
        if not target or EXTERNAL.match(target):
            continue
        path_part, _, anchor = target.partition("#")
        goal = (page.parent / unquote(path_part)).resolve() if path_part else page
        where = f"{page.relative_to(ROOT)}:{number}: {target}"
        if not goal.exists():
            problems.append(f"{where}: no file {goal}")
            continue
        if anchor and goal.suffix == ".md":
            goal_text = text if goal == page else goal.read_text()
            if unquote(anchor).lower() not in anchors(goal_text):
                problems.append(f"{where}: no heading with the anchor #{anchor} in {goal.name}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_a_heading(page: Path) -> None:
    problems = broken_links(page)
    assert not problems, "links that reach nothing:\n" + "\n".join(problems)


def test_the_pages_link_to_each_other() -> None:
    # The check is only worth something while the pages use links: a page set that lost
    # them all (say, written back as "see X, section Y") would pass it trivially.
    targets = [target for page in PAGES for _, target in links(page.read_text())]
    assert sum("#" in t and not EXTERNAL.match(t) for t in targets) >= 20, targets


def test_anchors_follow_githubs_rules() -> None:
    text = (
        "# Benchmarks\n"
        "## A crowd at human pace (`ddz bench crowd`)\n"
        "## Chaos: kill -9 of every service and of nats-server\n"
        "## The recorder's write path\n"
        "## Metrics\n## Metrics\n"
        "```\n# not a heading\n```\n"
    )
    assert anchors(text) == {
        "benchmarks",
        "a-crowd-at-human-pace-ddz-bench-crowd",
        "chaos-kill--9-of-every-service-and-of-nats-server",
        "the-recorders-write-path",
        "metrics",
        "metrics-1",
    }


def test_a_broken_link_or_anchor_is_caught() -> None:
    page = ROOT / "docs" / "DECISIONS.md"
    text = (
        "[a heading that is there](BENCHMARKS.md#rules-engine)\n"
        "[a heading that moved](BENCHMARKS.md#no-such-section)\n"
        "[a file that is gone](NO_SUCH_PAGE.md)\n"
        "[a heading of this page](#no-such-heading-here)\n"
        "`[in code](NOT_A_LINK.md)`\n"
        "```\n[in a fence](NOT_A_LINK_EITHER.md)\n```\n"
        "[a source file](../shared/ddz/__init__.py) and [a site](https://nats.io)\n"
    )
    problems = broken_links(page, text)
    assert [p.split(": ")[1] for p in problems] == [
        "BENCHMARKS.md#no-such-section",
        "NO_SUCH_PAGE.md",
        "#no-such-heading-here",
    ], problems
