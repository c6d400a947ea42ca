"""A binlog cut inside any event: every event before the cut decodes exactly as in the whole
file, then decoding raises TRUNCATED naming the file and the offset of the event that was cut.

For each source (every fixture variant's files, the misc file, chosen corpus files) one event of
each type -- the one that starts earliest in its file; every event of the misc file -- is cut
after each of its bytes but the last: the file then ends 1 to ``event_size - 1`` bytes into the
event (header, post-header, body or checksum).  The cut file is decoded from memory; nothing after the cut is read.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from binlog_core.decoder import DecodedEvent
from binlog_core.errors import BinlogError, TruncatedError
from tests.binlog_core.real_events import (
    CORPUS_SOURCES,
    FIXTURE_SOURCES,
    RealEvent,
    all_corpus_events,
    all_fixture_events,
    corpus_events,
    decode_bytes,
    file_bytes,
    fixture_events,
    framed_events,
)
from tests.harness.corpus import CORPUS, corpus_files

Outcome = tuple[object, ...]

EVERY_BYTE_UP_TO = 4096
"""Events up to this size are cut after every byte."""

LARGE_EVENT_EDGE = 2048
LARGE_EVENT_STRIDE = 61
"""Larger events (the 128 KiB and 17 KiB blocks of a 4.1 LOAD DATA) are cut after every byte of
their first and last 2 KiB, where every field is, and every 61st byte of the opaque block between."""


def outcome(item: DecodedEvent) -> Outcome:
    """All that decoding said about one event, comparable between two decodes."""
    e = item.event
    problems = [(p.code, p.file, p.offset, p.inner_index, p.event_type, p.path, p.message) for p in item.problems]
    return (e.offset, e.inner_index, e.header, e.body, e.fde, e.checksum_ok, item.body, item.rows, problems)


def decode_until_error(data: bytes, name: str) -> tuple[list[Outcome], BinlogError | None]:
    """The outcome of every event decoded, and the error that stopped decoding (if any)."""
    outcomes: list[Outcome] = []
    try:
        for item in decode_bytes(data, name):
            outcomes.append(outcome(item))
    except BinlogError as exc:
        return outcomes, exc
    return outcomes, None


@functools.cache
def whole_file(path: Path) -> tuple[Outcome, ...]:
    """What decoding the uncut file says, event by event (up to its fatal error, if any)."""
    outcomes, _ = decode_until_error(file_bytes(path), path.name)
    return tuple(outcomes)


def decoded_before(event: RealEvent) -> list[Outcome]:
    """The uncut file's outcomes of the events before ``event`` (with those packed inside them)."""
    return [o for o in whole_file(event.path) if isinstance(o[0], int) and o[0] < event.offset]


def cut_lengths(event: RealEvent) -> list[int]:
    """File lengths that end inside ``event``: from its first byte to all but its last."""
    inside = range(event.offset + 1, event.end)
    if event.size <= EVERY_BYTE_UP_TO:
        return list(inside)
    head = inside[:LARGE_EVENT_EDGE]
    tail = inside[-LARGE_EVENT_EDGE:]
    middle = inside[LARGE_EVENT_EDGE:-LARGE_EVENT_EDGE:LARGE_EVENT_STRIDE]
    return [*head, *middle, *tail]


def cut_failures(event: RealEvent) -> list[str]:
    """How cutting ``event`` anywhere fails the specification (empty when it holds)."""
    data = file_bytes(event.path)
    expected = decoded_before(event)
    failures: list[str] = []
    for length in cut_lengths(event):
        where = f"{event} cut after {length - event.offset} of {event.size} bytes"
        try:
            got, error = decode_until_error(data[:length], event.name)
        except Exception as exc:  # any other exception is the failure this test looks for
            failures.append(f"{where}: {type(exc).__name__}: {exc}")
            continue
        if got != expected:
            failures.append(f"{where}: {len(got)} events decoded, not the {len(expected)} before the cut as uncut")
        elif not isinstance(error, TruncatedError):
            failures.append(f"{where}: raised {error!r}, not TRUNCATED")
        elif (error.code, error.file, error.offset) != ("TRUNCATED", event.name, event.offset):
            failures.append(f"{where}: {error} does not name {event.name} at {event.offset}")
    return failures


def assert_every_cut_truncates(events: tuple[RealEvent, ...]) -> None:
    failures = [failure for event in events for failure in cut_failures(event)]
    assert failures == [], f"{len(failures)} failing cuts:\n" + "\n".join(failures[:40])


@pytest.mark.parametrize("source", FIXTURE_SOURCES)
def test_a_fixture_binlog_cut_inside_any_event_decodes_what_precedes_then_raises_truncated(source: str) -> None:
    assert_every_cut_truncates(fixture_events(source))


@pytest.mark.corpus
@pytest.mark.parametrize("relative", CORPUS_SOURCES)
def test_a_corpus_binlog_cut_inside_any_event_decodes_what_precedes_then_raises_truncated(relative: str) -> None:
    assert_every_cut_truncates(corpus_events(relative))


@pytest.mark.parametrize("source", FIXTURE_SOURCES)
def test_a_fixture_binlog_cut_between_two_events_decodes_every_event_before_the_cut(source: str) -> None:
    for event in fixture_events(source)[1:]:
        got, error = decode_until_error(file_bytes(event.path)[: event.offset], event.name)
        assert error is None, f"{event}: {error}"
        assert got == decoded_before(event), str(event)


@pytest.mark.corpus
def test_the_cut_events_cover_every_event_type_of_the_corpus_and_the_fixtures() -> None:
    in_sources = {event.type_name for event in all_fixture_events() + all_corpus_events()}
    everywhere = {event.type_name for path in _all_binlogs() for event in framed_events(path)}
    assert everywhere - in_sources == set()


def _all_binlogs() -> list[Path]:
    fixtures = [path for paths in FIXTURE_SOURCES.values() for path in paths]
    return fixtures + [CORPUS / relative for relative in corpus_files()]
