"""Naming and parsing the event subjects of the ``DDZ`` stream over ``ddz.v1.>``.

Subjects (versioned; one token per level, no dots inside tokens):

    ddz.v1.<category>.<bucket>.<id>.<EventType>           public (hand, table, room)
    ddz.v1.internal.<category>.<bucket>.<id>.<EventType>  every seat's cards (cards_dealt)

e.g. ``ddz.v1.hand.17.<hand_id>.play_made``. Stream ids are ``<category>-<id>``
(``hand-7f3a…``, ``table-12``); ``subject_for`` maps one to the other. The bucket,
``crc32(id) % BUCKETS``, lets a consumer take a share of the streams by subject alone
(``bucket_filters``): the server sends an instance only the events of the hands it
plays, rather than every event for it to skip.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

# The stream ids and buckets are plain values the use cases read too; named here as well,
# since every subject carries them.
from ddz.application.streams import BUCKETS as BUCKETS
from ddz.application.streams import bucket_of as bucket_of
from ddz.application.streams import partition_of as partition_of
from ddz.application.streams import stream_parts as stream_parts

STREAM_NAME = "DDZ"
SUBJECT_ROOT = "ddz.v1"
ALL_SUBJECTS = f"{SUBJECT_ROOT}.>"
INTERNAL = "internal"

NO_EVENTS = f"{SUBJECT_ROOT}.{INTERNAL}.none"
"""A subject no event is published on: the filter of a consumer that wants no bucket
now (a consumer must filter on something)."""

_TOKEN = re.compile(r"[A-Za-z0-9_-]+")


def stream_id_for(category: str, entity_id: str) -> str:
    stream_id = f"{category}-{entity_id}"
    stream_parts(stream_id)
    return stream_id


def subject_for(stream_id: str, event_type: str, internal: bool = False) -> str:
    """The subject an event of ``stream_id`` is published on."""
    if not _TOKEN.fullmatch(event_type):
        raise ValueError(f"event type {event_type!r} is not a valid subject token")
    return f"{stream_filter(stream_id, internal)[:-1]}{event_type}"


def stream_filter(stream_id: str, internal: bool = False) -> str:
    """The subject filter of every public (or internal) event of one stream."""
    category, entity_id = stream_parts(stream_id)
    return f"{_prefix(internal)}.{category}.{bucket_of(entity_id)}.{entity_id}.*"


def category_filter(category: str, internal: bool = False, event_type: str = "*") -> str:
    """The subject filter of every public (or internal) event of a category, or of its
    events of one type."""
    return f"{_prefix(internal)}.{category}.*.*.{event_type}"


def bucket_filters(category: str, buckets: Iterable[int]) -> list[str]:
    """The subject filters of every event, public and internal, of the streams of
    ``category`` in ``buckets`` (``[NO_EVENTS]`` for none)."""
    filters = [
        f"{_prefix(internal)}.{category}.{bucket}.*.*"
        for bucket in sorted(set(buckets))
        for internal in (False, True)
    ]
    return filters or [NO_EVENTS]


def _prefix(internal: bool) -> str:
    return f"{SUBJECT_ROOT}.{INTERNAL}" if internal else SUBJECT_ROOT


@dataclass(frozen=True, slots=True)
class SubjectParts:
    stream_id: str
    event_type: str
    internal: bool


class SubjectTokens(NamedTuple):
    category: str
    bucket: str
    entity_id: str
    event_type: str
    internal: bool


def split_subject(subject: str) -> SubjectTokens | None:
    """The tokens of an event subject (``ddz.v1[.internal].<category>.<bucket>.<id>.<type>``),
    None if it is not one. Unchecked (the bucket is taken as it is): cheap enough for
    every message a consumer or the metrics see; ``parse_subject`` checks it."""
    tokens = subject.split(".")
    internal = len(tokens) == 7 and tokens[2] == INTERNAL
    if internal:
        del tokens[2]
    if len(tokens) != 6 or f"{tokens[0]}.{tokens[1]}" != SUBJECT_ROOT:
        return None
    return SubjectTokens(tokens[2], tokens[3], tokens[4], tokens[5], internal)


def parse_subject(subject: str) -> SubjectParts:
    """Inverse of ``subject_for``."""
    parts = split_subject(subject)
    if parts is None:
        raise ValueError(f"not a ddz event subject: {subject!r}")
    if parts.bucket != str(bucket_of(parts.entity_id)):
        raise ValueError(
            f"not a ddz event subject (bucket {parts.bucket} of {parts.entity_id}): {subject!r}"
        )
    return SubjectParts(
        stream_id_for(parts.category, parts.entity_id), parts.event_type, parts.internal
    )
