"""Specifications of the event bodies, one module per family, and the helpers they share.

Expected values come from real binlogs wherever one holds the event (the shared corpus, the
MariaDB fixtures, the small file of ``data``), cross-checked with ``mariadb-binlog -vv`` or the
file's own bytes; events no real file holds are built from the server's documented layout.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from binlog_core.constants import LOG_EVENT_HEADER_LEN
from binlog_core.event import Event, EventHeader, FormatDescription
from binlog_core.events import decode_body
from binlog_core.framing import open_events
from tests.harness.corpus import corpus_path
from tests.harness.mariadb_binlog import require_mariadb_binlog, run_dump


@functools.cache
def file_events(path: Path) -> tuple[Event, ...]:
    """Every event of a real binlog (those inside compressed transactions too), read once."""
    return tuple(open_events(path))


def event_at(path: Path, offset: int, inner_index: int | None = None) -> Event:
    """The event that starts at ``offset`` (``inner_index``: the one inside a compressed transaction)."""
    for event in file_events(path):
        if event.offset == offset and event.inner_index == inner_index:
            return event
    raise LookupError(f"no event at {path.name}@{offset}#{inner_index}")


def corpus_event(relative: str, offset: int, inner_index: int | None = None) -> Event:
    """An event of a corpus file."""
    return event_at(corpus_path(relative), offset, inner_index)


def body_at(path: Path, offset: int, inner_index: int | None = None) -> object:
    """The decoded body of the event at ``offset``."""
    return decode_body(event_at(path, offset, inner_index))


def description_of(path: Path) -> FormatDescription:
    """The FORMAT_DESCRIPTION in force at the start of a real binlog."""
    return file_events(path)[0].fde


def built_event(fde: FormatDescription, type_code: int, body: bytes, *, server_id: int = 1, log_pos: int = 0) -> Event:
    """An event whose body a test built, read with a real file's description (no checksum)."""
    header = EventHeader(0, type_code, server_id, LOG_EVENT_HEADER_LEN + len(body), log_pos, 0)
    return Event("built", 4, None, header, body, fde, None)


_AT_RE = re.compile(r"^# at (\d+)$")


@functools.cache
def printed_by_offset(path: Path) -> dict[int, tuple[str, ...]]:
    """What ``mariadb-binlog -vv`` prints for each event of ``path``, keyed by its ``# at`` offset.

    Lines are given to the latest ``# at`` line before them; the tool's exit status is not
    checked (it stops at events it cannot read, and every event before is still printed).
    """
    lines: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in run_dump(path, require_mariadb_binlog()).text.splitlines():
        at = _AT_RE.match(line)
        if at is not None:
            current = lines.setdefault(int(at[1]), [])
        elif current is not None:
            current.append(line)
    return {offset: tuple(printed) for offset, printed in lines.items()}


def printed_matches(path: Path, pattern: str) -> dict[int, tuple[str, ...]]:
    """For each event offset, the groups of the first line the tool printed there that ``pattern`` finds."""
    regex = re.compile(pattern)
    found: dict[int, tuple[str, ...]] = {}
    for offset, printed in printed_by_offset(path).items():
        for line in printed:
            match = regex.search(line)
            if match is not None:
                found[offset] = match.groups()
                break
    return found
