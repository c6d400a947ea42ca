"""Damaged real events: bytes flipped or overwritten anywhere in an event never crash the decoder.

An event of every type, taken from real binlogs (see :mod:`tests.binlog_core.real_events`), has
1 to 8 of its bytes flipped (one bit) or overwritten, in its header, post-header, body, checksum
or anywhere.  When the file has CRC32 checksums the event's checksum is, in half the examples,
recomputed over the damaged bytes, so that the body decoders read the damage instead of framing
rejecting the event.  The file up to a few events after the damaged one is decoded in memory.

The only outcomes allowed are success and :class:`binlog_core.errors.BinlogError` -- raised, or
reported on an event -- naming the file and an offset inside it: never ``struct.error``,
``IndexError``, ``KeyError``, ``UnicodeDecodeError``, ``ZeroDivisionError``, ``OverflowError``,
``RecursionError``, a hang, or memory sized by a damaged length.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlog_core.constants import CHECKSUM_LEN
from binlog_core.errors import ERROR_CODES, BinlogError
from tests.binlog_core.real_events import (
    RealEvent,
    all_corpus_events,
    all_fixture_events,
    decode_bytes,
    file_bytes,
    time_limit,
    with_checksum,
)

MAX_DAMAGED_BYTES = 8
DECODE_SECONDS = 10
"""Far more than decoding a few real events takes: beyond this the decoder is stuck."""
MAX_PEAK_BYTES = 64 << 20
"""Memory decoding may take: a damaged length must never size an allocation."""

POOLS = {"fixtures": all_fixture_events, "corpus": all_corpus_events}

REGIONS = ("header", "post-header", "body", "checksum", "anywhere")


def region(event: RealEvent, name: str) -> range:
    """The file offsets of one part of ``event`` (empty when the event has no such part)."""
    header_end = event.offset + event.header_len
    body_end = event.end - (CHECKSUM_LEN if event.checksummed else 0)
    post_header_end = min(header_end + event.post_header_len, body_end)
    return {
        "header": range(event.offset, header_end),
        "post-header": range(header_end, post_header_end),
        "body": range(post_header_end, body_end),
        "checksum": range(body_end, event.end),
        "anywhere": range(event.offset, event.end),
    }[name]


@st.composite
def damaged_files(draw: st.DrawFn, events: list[RealEvent]) -> tuple[RealEvent, bytes, str]:
    """A real event's file up to a few events after it, with 1..8 of the event's bytes altered."""
    event = draw(st.sampled_from(events))
    data = bytearray(file_bytes(event.path)[: event.tail_end])
    names = [name for name in REGIONS if region(event, name)]
    edits = []
    for _ in range(draw(st.integers(1, MAX_DAMAGED_BYTES))):
        where = draw(st.sampled_from(names))
        pos = draw(st.sampled_from(region(event, where)))
        if draw(st.booleans()):
            data[pos] ^= 1 << draw(st.integers(0, 7))
        else:
            data[pos] = draw(st.integers(0, 255))
        edits.append(f"{where} +{pos - event.offset}={data[pos]:02x}")
    if event.checksummed and draw(st.booleans()):
        with_checksum(event, data)
        edits.append("checksum recomputed")
    return event, bytes(data), ", ".join(edits)


def decode_problems(data: bytes, name: str) -> list[BinlogError]:
    """Every problem decoding reports: those on events, then the error that stopped it (if any)."""
    problems: list[BinlogError] = []
    try:
        for item in decode_bytes(data, name):
            problems.extend(item.problems)
    except BinlogError as exc:
        problems.append(exc)
    return problems


@pytest.fixture(scope="module")
def memory_tracing() -> Iterator[None]:
    tracemalloc.start()
    yield
    tracemalloc.stop()


@pytest.mark.parametrize("pool", [pytest.param("fixtures"), pytest.param("corpus", marks=pytest.mark.corpus)])
@settings(
    max_examples=400,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_damaged_real_events_decode_or_report_a_binlog_error_with_file_and_offset(
    pool: str, data: st.DataObject, memory_tracing: None
) -> None:
    event, damaged, edits = data.draw(damaged_files(POOLS[pool]()), label="damage")
    tracemalloc.reset_peak()
    with time_limit(DECODE_SECONDS):
        problems = decode_problems(damaged, event.name)  # anything but BinlogError fails the test
    _, peak = tracemalloc.get_traced_memory()
    where = f"{event}, {edits}"
    assert peak < MAX_PEAK_BYTES, f"{where}: decoding took {peak} bytes"
    for problem in problems:
        assert isinstance(problem, BinlogError), where
        assert ERROR_CODES[problem.code] is type(problem), where
        assert problem.file == event.name, f"{where}: {problem}"
        assert problem.offset is not None and 0 <= problem.offset <= len(damaged), f"{where}: {problem}"
