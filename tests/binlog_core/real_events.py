"""Real events to cut and to damage: where they sit in the binlogs real servers wrote.

Two kinds of source: the MariaDB fixture binlogs checked in with the tests (every variant's
files together, and the small file of ``events/data`` whose every event is taken), and a few
corpus files chosen for the event types and server generations only they hold (MySQL 8
compressed transactions, partial JSON updates and tagged GTIDs; MySQL 4.x v3 files with the
old LOAD DATA events; the 5.2 development tree's renumbered rows events; ...).

A :class:`RealEvent` says where one event lies in its file; the tests slice and alter the
file's bytes around it and decode the result in memory with
:func:`binlog_core.decoder.decode_stream`.
"""

from __future__ import annotations

import functools
import io
import signal
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from struct import Struct
from types import FrameType

from binlog_core.constants import CHECKSUM_LEN, LOG_EVENT_HEADER_LEN, EventType
from binlog_core.decoder import DecodedEvent, decode_stream
from binlog_core.errors import BinlogError
from binlog_core.event import CRC, Event, description_crc
from binlog_core.framing import open_events
from tests.fixtures.truth import FIXTURES, VARIANTS
from tests.harness.corpus import corpus_path

MISC = Path(__file__).resolve().parent / "events" / "data" / "mariadb-10.11-misc.binlog"
"""MariaDB 10.11: user variables of every type, LOAD DATA, XA, compressed statements and rows."""

FIXTURE_SOURCES: dict[str, tuple[Path, ...]] = {
    **{variant: tuple(sorted((FIXTURES / variant).glob("mysql-bin.[0-9]*"))) for variant in VARIANTS},
    "misc": (MISC,),
}
"""Fixture binlogs by source name: each variant's files in order, and the misc file."""

EVERY_EVENT_SOURCES = frozenset({"misc"})
"""Sources whose every event is taken, not only the first of each type."""

CORPUS_SOURCES: dict[str, str] = {
    "rust_mysql_common/transaction_compression.000001": "MySQL 8.0.32: zstd TRANSACTION_PAYLOAD, ANONYMOUS_GTID",
    "mysql-binlog-connector-rust/mysql-bin.000057": "MySQL 8.0.31: TRANSACTION_PAYLOAD after a GTID",
    "rust_mysql_common/json.binlog.000001": "MySQL 8.0.22: JSON rows, PARTIAL_UPDATE_ROWS",
    "rust_mysql_common/binlog_transaction_with_GTID_TAG.000001": "MySQL 9.6: GTID_TAGGED",
    "mysql-server/std_data/binlog_recovery/orphan_xa_prepare.000001": "MySQL 8.0.30: GTID, XA_PREPARE",
    "mysql-cdc-rs/5.7/14_user_var/log.bin": "MySQL 5.7: USER_VAR, INTVAR",
    "mysql-cdc-rs/5.7/13_rand/log.bin": "MySQL 5.7: RAND",
    "mysql-cdc-rs/5.7/30_write_rows_v2/log.bin": "MySQL 5.7: ROWS_QUERY, WRITE_ROWS v2",
    "mysql-cdc-rs/5.7/17_18_load/log.bin": "MySQL 5.7: BEGIN_LOAD_QUERY, EXECUTE_LOAD_QUERY",
    "mysql-binlog-connector-rust/mysql-bin.000080": "MySQL 5.7.40: DELETE_ROWS v2",
    "mysql-server/std_data/bug40482-bin.000001": "MySQL 5.1.30: INCIDENT",
    "mysql-binlog-connector-java/mysql-bin.aurora-padding": "Aurora 5.7: unknown event type 100",
    "mariadb-test-data/std_data/binlog_before_20574.bin": "MariaDB 10.2.28: START_ENCRYPTION",
    "mariadb-test-data/std_data/master-bin.000001": "MySQL 4.0.0, binlog v2: START_V3, STOP",
    "mariadb-test-data/std_data/bug47142_master-bin.000001": "MySQL 4.1.26, binlog v3: QUERY, ROTATE",
    "mariadb-test-data/suite/binlog/std_data/binlog_old_version_4_1.000001": (
        "MySQL 4.1.24, binlog v3: CREATE_FILE, APPEND_BLOCK, EXEC_LOAD"
    ),
    "mysql-server/std_data/binlog_transaction.000001": "MySQL 5.0.86: QUERY, XID",
    "mariadb-test-data/suite/binlog/std_data/bug32407.001": "MySQL 5.1.15: WRITE_ROWS_V0",
    "mysql-server/suite/binlog/std_data/ver_5_1-wl2325_r.001": "MySQL 5.2.2 development tree: renumbered *_ROWS_V0",
    "mysql-server/suite/binlog/std_data/update-full-row.binlog": "MySQL 5.1.37: *_ROWS_V1",
    "mariadb-test-data/std_data/mdev-4645-binlog_group_id_checksum.binlog": "MySQL 5.1.63-google: 31-byte headers",
    "mariadb-test-data/std_data/mariadb-5.5-binlog.000001": "MariaDB 5.5: checksum algorithm OFF",
    "rust_mysql_common/mariadb-bin.000001": "MariaDB 10.5: TABLE_MAP with optional metadata",
}
"""Corpus files (relative to the corpus) and what each brings."""


SIZE_AND_POS = Struct("<II")
"""``event_size`` and ``log_pos``, at bytes 9-16 of a v4 header."""

FOLLOWING_EVENTS = 3
"""Events after a picked one that :attr:`RealEvent.tail_end` takes in (damage can spread to them)."""


@dataclass(frozen=True)
class RealEvent:
    """Where one event of a real binlog lies: its file, byte range, type and framing."""

    source: str
    path: Path
    offset: int
    size: int
    type_name: str
    header_len: int
    post_header_len: int
    checksummed: bool
    tail_end: int
    """End of the few events that follow this one (its own end when it is the last)."""

    @property
    def name(self) -> str:
        """The file's base name, as the decoder reports it."""
        return self.path.name

    @property
    def end(self) -> int:
        """Offset just past the event."""
        return self.offset + self.size

    @property
    def is_description(self) -> bool:
        """FORMAT_DESCRIPTION, whose checksum the server computes with the in-use flag cleared."""
        return self.type_name == EventType.FORMAT_DESCRIPTION.name

    def __str__(self) -> str:
        return f"{self.path.parent.name}/{self.name}@{self.offset} {self.type_name}"


@functools.cache
def file_bytes(path: Path) -> bytes:
    """The whole file, read once per test session."""
    return path.read_bytes()


def framed_events(path: Path) -> Iterator[Event]:
    """The file's own events (not those inside a TRANSACTION_PAYLOAD), up to a fatal error."""
    try:
        yield from open_events(path, explode_payloads=False)
    except BinlogError:
        return


def _real_events(source: str, path: Path) -> list[RealEvent]:
    events = list(framed_events(path))
    ends = [event.end_offset for event in events]
    return [
        RealEvent(
            source=source,
            path=path,
            offset=event.offset,
            size=event.header.event_size,
            type_name=event.type_name,
            header_len=event.fde.header_length,
            post_header_len=event.fde.post_header_len(event.type_code),
            checksummed=event.fde.has_checksum,
            tail_end=ends[min(i + FOLLOWING_EVENTS, len(ends) - 1)],
        )
        for i, event in enumerate(events)
    ]


def pick_events(source: str, paths: tuple[Path, ...], *, every: bool = False) -> list[RealEvent]:
    """Of each event type in ``paths``, the event that starts earliest in its file (the fewest
    events to decode before it); with ``every``, every event in file order."""
    events = [event for path in paths for event in _real_events(source, path)]
    if every:
        return events
    picked: dict[str, RealEvent] = {}
    for event in events:
        earlier = picked.get(event.type_name)
        if earlier is None or event.offset < earlier.offset:
            picked[event.type_name] = event
    return sorted(picked.values(), key=lambda e: (e.offset, e.name))


@functools.cache
def fixture_events(source: str) -> tuple[RealEvent, ...]:
    """The events taken from one fixture source."""
    return tuple(pick_events(source, FIXTURE_SOURCES[source], every=source in EVERY_EVENT_SOURCES))


@functools.cache
def corpus_events(relative: str) -> tuple[RealEvent, ...]:
    """One event of each type of one corpus file (see :func:`pick_events`)."""
    return tuple(pick_events(relative, (corpus_path(relative),)))


def all_fixture_events() -> list[RealEvent]:
    """The events of every fixture source."""
    return [event for source in FIXTURE_SOURCES for event in fixture_events(source)]


def all_corpus_events() -> list[RealEvent]:
    """The events of every chosen corpus file."""
    return [event for relative in CORPUS_SOURCES for event in corpus_events(relative)]


def with_checksum(event: RealEvent, data: bytearray) -> None:
    """Store in ``data`` the CRC32 the server would write for the (altered) bytes of ``event``."""
    start, body_end = event.offset, event.end - CHECKSUM_LEN
    covered = bytes(data[start:body_end])
    crc = description_crc(covered) if event.is_description else zlib.crc32(covered)
    CRC.pack_into(data, body_end, crc)


def with_body(data: bytes, event: RealEvent, body: bytes) -> bytes:
    """The file ``data`` with the body of ``event`` (a v4 event) replaced by ``body``.

    The event's ``event_size`` and ``log_pos`` are rewritten and its CRC32 recomputed, as the
    server would have written the event; the events after it keep their bytes (their ``log_pos``
    is then stale, which framing does not read: it names events by the offsets it walks).
    """
    assert event.header_len == LOG_EVENT_HEADER_LEN
    size = event.header_len + len(body) + (CHECKSUM_LEN if event.checksummed else 0)
    header = bytearray(data[event.offset : event.offset + event.header_len])
    SIZE_AND_POS.pack_into(header, 9, size, event.offset + size)
    rewritten = bytearray(bytes(header) + body + bytes(CHECKSUM_LEN if event.checksummed else 0))
    if event.checksummed:
        CRC.pack_into(rewritten, size - CHECKSUM_LEN, zlib.crc32(rewritten[: size - CHECKSUM_LEN]))
    return data[: event.offset] + bytes(rewritten) + data[event.end :]


def decode_bytes(data: bytes, name: str) -> Iterator[DecodedEvent]:
    """Frame and decode a binlog held in memory, as :func:`binlog_core.decoder.decode_file` does a file."""
    return decode_stream(io.BytesIO(data), name)


class DecoderHang(Exception):
    """Decoding took longer than a :func:`time_limit` allowed."""


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`DecoderHang` in the block once ``seconds`` have passed (a stuck decoder fails
    its test instead of hanging the suite)."""

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise DecoderHang(f"decoding took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
