"""What a player types, read in the hand's phase (pure: no I/O).

bidding   1 / 2 / 3      call that score (call-score rooms, §6)
          call / grab    call or grab the landlord (grab rooms; "call" in a call-score
                         room calls the lowest score allowed)
          pass / p       no bid
playing   33344456       a play in rank notation (§1: 3..9 T J Q K A 2 B R, 10 = T)
          pass / p       follow with nothing
any time  hint / ?       ask for a suggestion      show    show your hand (§6)
          resume         end auto-play (托管): play your own turns again
          help / h       what to type               quit (q, but not while playing:
                                                    there q is a queen)
after     next / n       another hand at this table
          evidence       save the hand's evidence file here (ddz audit --bundle checks it)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from ddz.domain.cards import CardNotationError, format_counts, parse_ranks

Kind = Literal[
    "bid", "play", "pass", "show", "hint", "help", "quit", "next", "resume", "evidence", "error"
]

BID_WORDS = {"1": 1, "2": 2, "3": 3}


@dataclass(frozen=True, slots=True)
class Typed:
    kind: Kind
    action: str = ""  # bids: "pass", "call", "grab"
    score: int = 0  # bids: 1..3 (0: the lowest allowed, or none)
    cards: str = ""  # plays: canonical rank notation
    error: str = ""


def read(line: str, *, bidding: bool, over: bool = False) -> Typed | None:
    """The player's line as a command (None for an empty line)."""
    text = line.strip().lower()
    if not text:
        return None
    # While playing, "q" is a queen (§1 notation); "quit" always quits.
    if text in ("quit", "exit") or (text == "q" and (bidding or over)):
        return Typed("quit")
    if text in ("help", "h"):
        return Typed("help")
    if text in ("hint", "?"):
        return Typed("hint")
    if text in ("next", "n", "again", "another"):
        return Typed("next")
    if text == "evidence":
        return Typed("evidence")
    if over:
        return Typed("error", error="the hand is over: type 'next' for another, 'evidence' to save "
                     "its evidence file, 'quit' to stop")  # fmt: skip
    if text == "resume":
        return Typed("resume")
    if text in ("show", "show cards"):
        return Typed("show")
    if bidding:
        if text in ("pass", "p"):
            return Typed("bid", action="pass")
        if text in BID_WORDS:
            return Typed("bid", action="call", score=BID_WORDS[text])
        if text in ("call", "grab"):
            return Typed("bid", action=text)
        return Typed("error", error=f"{line.strip()!r}: bid with pass, 1, 2, 3, call or grab")
    if text in ("pass", "p"):
        return Typed("pass")
    try:
        counts = parse_ranks(text)
    except CardNotationError as exc:
        return Typed("error", error=f"{line.strip()!r} is not a play: {exc}")
    return Typed("play", cards=format_counts(counts))


HELP = (
    "bidding: pass (p), 1 / 2 / 3, call, grab   playing: cards like 33344456 or 10JQKA, "
    "pass (p)   any time: hint (?), show, resume (end auto-play), help (h), quit   "
    "after a hand: next (n), evidence (save the hand's evidence file), quit (q)"
)


def hint_to_type(text: str) -> str:
    """What to type for a suggested move's text (``"play 334455 (pair_chain)"`` ->
    ``"334455"``, ``"call 2"`` -> ``"2"``, ``"show cards"`` -> ``"show"``)."""
    words = text.split()
    if not words:
        return ""
    if words[0] == "play" and len(words) > 1:
        return words[1]
    if words[0] == "call" and len(words) > 1:
        return words[1]
    if words[0] == "show":
        return "show"
    return words[0]
