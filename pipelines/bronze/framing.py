"""Frame one binlog file into bronze rows: its events, a summary of the file, and what went wrong.

Pure Python (no Spark): a Spark task calls :func:`frame_file` once per file and turns what it
yields into Arrow batches.  The walk streams -- memory holds one read chunk and one event,
whatever the file size -- and yields, in this order:

* one :class:`EventRow` per event, in file order (``binlog_events``); inner events of a
  TRANSACTION_PAYLOAD follow their outer event;
* :class:`QuarantineRow` rows right after each event whose checksum failed (the event is kept
  with ``checksum_ok = False``) or whose body has a problem, and at the end for the error that
  stopped framing, if any (``quarantine``, ``stage = 'bronze'``). A file that ends inside an
  event (status ``truncated``: the server's active binlog, or a copy in progress) has everything
  before that event framed; its ``TRUNCATED`` row is a warning, not bad input, and is replaced
  when a later run continues the grown file from there. Bronze decodes the body of
  every event no later stage decodes (all but FORMAT_DESCRIPTION, TABLE_MAP, rows and
  QUERY-shaped events) and reports what :class:`binlog_core.decoder.BinlogDecoder` reports for
  it: damage (e.g. an INCIDENT number that does not exist) as an error, an unknown event type
  (kept as raw bytes) as a warning;
* last, one :class:`FileSummary` (``binlog_files``).

Row facts filled here (see ``pipelines/bronze/schema.py`` for the columns):

* ``gtid``: the GTID of the transaction the event belongs to, exactly as
  :class:`binlog_core.decoder.BinlogDecoder` tracks it: a GTID event (MariaDB GTID, MySQL
  GTID/ANONYMOUS_GTID/GTID_TAGGED) sets it, a FORMAT_DESCRIPTION clears it.  An event whose
  checksum failed changes nothing.
* ``table_id`` for TABLE_MAP and rows events, ``statement_end`` for rows events, read from the
  post-header (``table_id`` u48, or u32 when the declared post-header length is 6, then
  ``flags`` u16 whose bit 0 is STMT_END); left null when the checksum failed (the bytes are
  not trusted) or the body is too short to hold them.

Resuming a file that grew (the server's active binlog): pass ``start_offset`` (the previous
``framed_until``), the FORMAT_DESCRIPTION and GTID in force there, the previous
``prefix_sha256`` and the previous summary facts.  The prefix ``[0, start_offset)`` is read
and hashed first; when it no longer matches, the file was rewritten and is framed from the
start instead (``FileSummary.resumed_from`` says which happened).  Either way the rows are
those a single walk over the whole file yields from ``resumed_from`` on.

``prefix_sha256`` is the SHA-256 of bytes ``[0, framed_until)`` (``framed_until`` = end of the
last complete event; 4 when only the magic is readable, 0 when not even that).  It is
computed while the bytes stream past, so the file is read once (twice up to the resume point
when a rewrite is detected).  Reading stops at ``size`` when given: the length the file was
listed with, so bytes a server appends meanwhile wait for the next run.

``first_timestamp``/``last_timestamp`` are the smallest and largest non-zero header timestamps
of the file's events (header timestamps are not monotonic: events carry their statement's
start time); the FORMAT_DESCRIPTION facts come from the file's first event.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from struct import Struct
from typing import BinaryIO, NamedTuple

from binlog_core.constants import ChecksumAlg, EventType
from binlog_core.errors import (
    BinlogError,
    ChecksumMismatchError,
    EncryptedError,
    NotABinlogError,
    TruncatedError,
    as_event_problem,
)
from binlog_core.event import FormatDescription, checksum_error
from binlog_core.events import QUERY_SHAPED, body_warnings, decode_body
from binlog_core.framing import iter_events
from binlog_core.rows import ROWS_KINDS

STAGE = "bronze"

COMPLETE = "complete"
TRUNCATED = "truncated"
CORRUPT = "corrupt"
ENCRYPTED = "encrypted"
NOT_A_BINLOG = "not_a_binlog"
WARNING = "warning"
"""Severity of a quarantine row that loses nothing (see ``binlog_core.errors.BinlogError.severity``)."""
RESUMABLE_STATUSES = frozenset({COMPLETE, TRUNCATED})
"""Statuses after which a grown file can continue at ``framed_until``."""

MAGIC_LEN = 4

TABLE_ID_TYPES = frozenset({EventType.TABLE_MAP, *ROWS_KINDS})
"""Events whose post-header starts with a table id."""

DECODED_ELSEWHERE = frozenset({EventType.FORMAT_DESCRIPTION, *TABLE_ID_TYPES, *QUERY_SHAPED})
"""Bodies bronze does not decode: framing reads FORMAT_DESCRIPTION, silver decodes TABLE_MAP and
QUERY-shaped events, gold the rows events. Every other body is decoded here."""

STMT_END_FLAG = 0x1  # orig: Rows_log_event::STMT_END_F

_U16 = Struct("<H")
_U32 = Struct("<I")

_CHECKSUM_NAMES = {ChecksumAlg.OFF: "NONE", ChecksumAlg.CRC32: "CRC32", ChecksumAlg.UNDEF: "UNDEF"}

HASH_EVERY = 8 << 20
"""Bytes read but not yet hashed after which the prefix hash catches up (bounds what is kept)."""

PREFIX_READ = 8 << 20
"""Chunk size when only hashing the prefix before a resume point."""


class EventRow(NamedTuple):
    """One ``binlog_events`` row (the columns of ``BINLOG_EVENTS``, in order)."""

    file: str
    file_name: str
    offset: int
    inner_index: int | None
    timestamp: int
    event_type: int
    event_type_name: str
    server_id: int
    event_size: int
    log_pos: int
    flags: int
    checksum_ok: bool | None
    format_description: str
    gtid: str | None
    table_id: int | None
    statement_end: bool | None
    body: bytes


class QuarantineRow(NamedTuple):
    """One ``quarantine`` row (the columns of ``QUARANTINE``, in order)."""

    stage: str
    file: str
    file_name: str
    offset: int | None
    inner_index: int | None
    event_type_name: str | None
    code: str
    severity: str
    path: str | None
    message: str
    body: bytes | None


@dataclass(frozen=True, slots=True)
class FileFacts:
    """What a file's summary says about its start: carried over when a grown file is resumed."""

    event_count: int = 0
    server_id: int | None = None
    server_version: str | None = None
    flavor: str | None = None
    binlog_version: int | None = None
    checksum_alg: str | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class FileSummary:
    """One ``binlog_files`` row, plus where this walk started (``resumed_from``: 0 = the start)."""

    file: str
    file_name: str
    size: int
    modification_time: datetime | None
    status: str
    error_code: str | None
    error_message: str | None
    error_offset: int | None
    framed_until: int
    prefix_sha256: str
    event_count: int
    server_id: int | None
    server_version: str | None
    flavor: str | None
    binlog_version: int | None
    checksum_alg: str | None
    first_timestamp: int | None
    last_timestamp: int | None
    resumed_from: int

    def row(self) -> tuple[object, ...]:
        """The ``BINLOG_FILES`` columns, in order (``resumed_from`` left out)."""
        return (
            self.file,
            self.file_name,
            self.size,
            self.modification_time,
            self.status,
            self.error_code,
            self.error_message,
            self.error_offset,
            self.framed_until,
            self.prefix_sha256,
            self.event_count,
            self.server_id,
            self.server_version,
            self.flavor,
            self.binlog_version,
            self.checksum_alg,
            self.first_timestamp,
            self.last_timestamp,
        )

    @property
    def facts(self) -> FileFacts:
        """The facts a later resume carries over."""
        return FileFacts(
            self.event_count,
            self.server_id,
            self.server_version,
            self.flavor,
            self.binlog_version,
            self.checksum_alg,
            self.first_timestamp,
            self.last_timestamp,
        )


Framed = EventRow | QuarantineRow | FileSummary
"""What :func:`frame_file` yields."""


class HashingReader:
    """A read-only stream over ``raw`` that stops at ``limit`` and hashes a prefix of what it served.

    Bytes handed out are kept until :meth:`hash_until` has folded them into the SHA-256, so
    the hash can end exactly at an event boundary found later; callers advance the mark as
    events complete, which keeps at most a few chunks in memory.
    """

    def __init__(self, raw: BinaryIO, limit: int | None = None) -> None:
        self.raw = raw
        self.limit = limit
        self.pos = 0
        self.hashed = 0
        self.sha = hashlib.sha256()
        self._pending: deque[bytes | memoryview] = deque()

    def read(self, n: int = -1) -> bytes:
        """Up to ``n`` bytes (all that is left below the limit when ``n < 0``)."""
        if self.limit is not None:
            left = self.limit - self.pos
            n = left if n < 0 else min(n, left)
            if n <= 0:
                return b""
        data = self.raw.read(n)
        if data:
            self._pending.append(data)
            self.pos += len(data)
        return bytes(data)

    @property
    def unhashed(self) -> int:
        """Bytes served but not hashed yet."""
        return self.pos - self.hashed

    def hash_until(self, mark: int) -> None:
        """Fold the bytes served before ``mark`` (at most ``pos``) into the hash."""
        mark = min(mark, self.pos)
        pending = self._pending
        while self.hashed < mark:
            chunk = pending[0]
            take = mark - self.hashed
            if take >= len(chunk):
                self.sha.update(chunk)
                pending.popleft()
                self.hashed += len(chunk)
            else:
                view = memoryview(chunk)
                self.sha.update(view[:take])
                pending[0] = view[take:]
                self.hashed += take

    def skip_hashing(self, until: int) -> bool:
        """Read and hash ``[pos, until)``; False when the stream ends first."""
        while self.pos < until:
            if not self.read(min(PREFIX_READ, until - self.pos)):
                self.hash_until(self.pos)
                return False
            self.hash_until(self.pos)
        return True

    def length(self) -> int:
        """Read on to the end (or the limit), keeping nothing, and return where it is.

        Call it once hashing is finished: the bytes read here are never hashed.
        """
        self._pending.clear()
        while data := self.raw.read(PREFIX_READ if self.limit is None else min(PREFIX_READ, self.limit - self.pos)):
            self.pos += len(data)
        return self.pos


def read_table_id(body: bytes, type_code: int, fde: FormatDescription) -> tuple[int | None, bool | None]:
    """``(table_id, statement_end)`` from a TABLE_MAP or rows event's post-header.

    Layout (every rows version, compressed ones too, and TABLE_MAP)::

        table_id u48 (u32 when the post-header length is 6) | flags u16 | ...

    ``statement_end`` is None for TABLE_MAP; both are None when the body is too short.
    """
    id_len = 4 if fde.post_header_len(type_code) == 6 else 6
    if len(body) < id_len + 2:
        return None, None
    table_id = int.from_bytes(body[:id_len], "little") if id_len == 6 else _U32.unpack_from(body)[0]
    if type_code == EventType.TABLE_MAP:
        return table_id, None
    (flags,) = _U16.unpack_from(body, id_len)
    return table_id, bool(flags & STMT_END_FLAG)


def _status(exc: BinlogError | None) -> str:
    """The file status an error (or its absence) gives."""
    if exc is None:
        return COMPLETE
    if isinstance(exc, TruncatedError) and exc.inner_index is None:
        return TRUNCATED  # the file ends inside an event: a copy in progress or the active binlog
    if isinstance(exc, EncryptedError):
        return ENCRYPTED
    if isinstance(exc, NotABinlogError):
        return NOT_A_BINLOG
    return CORRUPT


def quarantine_row(file: str, file_name: str, exc: BinlogError, body: bytes | None = None) -> QuarantineRow:
    """The quarantine row of a bronze problem."""
    return QuarantineRow(
        STAGE,
        file,
        file_name,
        exc.offset,
        exc.inner_index,
        exc.event_type,
        exc.code,
        exc.severity,
        " -> ".join(exc.path) if exc.path else None,
        exc.message,
        body,
    )


def _decode_gtid(event_body: object, type_code: int) -> tuple[bool, str | None]:
    """Whether a decoded GTID-family body sets the transaction's GTID, and to what (as the decoder does)."""
    gtid = getattr(event_body, "gtid", None)
    if isinstance(gtid, str):
        return True, gtid
    return gtid is None and type_code == EventType.ANONYMOUS_GTID, None


def frame_file(
    open_stream: Callable[[], BinaryIO],
    file: str,
    file_name: str,
    start_offset: int = 0,
    fde_json: str | None = None,
    verify_checksums: bool = True,
    *,
    gtid: str | None = None,
    prefix_sha256: str | None = None,
    previous: FileFacts | None = None,
    size: int | None = None,
    modification_time: datetime | None = None,
) -> Iterator[Framed]:
    """Yield the bronze rows of one file: events and quarantine rows, then its :class:`FileSummary`.

    ``open_stream()`` opens the file from its start (it is called again when a resume finds
    the prefix changed).  With ``start_offset > 4`` the walk resumes there with the
    FORMAT_DESCRIPTION ``fde_json`` and transaction ``gtid`` in force, provided the first
    ``start_offset`` bytes still hash to ``prefix_sha256`` (when given)::

        rows = list(frame_file(lambda: open(path, "rb"), uri, "mysql-bin.000001"))
        summary = rows[-1]   # FileSummary(status='complete', framed_until=..., ...)
    """
    if start_offset > MAGIC_LEN:
        if fde_json is None:
            raise ValueError("resuming at an offset needs the FORMAT_DESCRIPTION in force there")
        with open_stream() as raw:
            reader = HashingReader(raw, size)
            if reader.skip_hashing(start_offset) and _matches(reader, prefix_sha256):
                yield from _walk(
                    reader, file, file_name, start_offset, fde_json, gtid, previous or FileFacts(),
                    verify_checksums, size, modification_time,
                )  # fmt: skip
                return
        # the prefix changed: the file was rewritten, so it is framed again from the start
    with open_stream() as raw:
        yield from _walk(
            HashingReader(raw, size), file, file_name, 0, None, None, FileFacts(), verify_checksums, size,
            modification_time,
        )  # fmt: skip


def _matches(reader: HashingReader, expected: str | None) -> bool:
    return expected is None or reader.sha.copy().hexdigest() == expected


def _walk(
    reader: HashingReader,
    file: str,
    file_name: str,
    start: int,
    fde_json: str | None,
    gtid: str | None,
    facts: FileFacts,
    verify_checksums: bool,
    size: int | None,
    modification_time: datetime | None,
) -> Iterator[Framed]:
    """Frame from ``start`` (the reader stands there) and yield rows, then the summary."""
    fde = FormatDescription.from_json(fde_json) if fde_json is not None else None
    last_fde: FormatDescription | None = None
    last_fde_json = ""
    event_count = facts.event_count
    first_ts = facts.first_timestamp
    last_ts = facts.last_timestamp
    server_id, server_version, flavor = facts.server_id, facts.server_version, facts.flavor
    binlog_version, checksum_alg = facts.binlog_version, facts.checksum_alg
    framed_until = start
    quarantined_at: tuple[int, int | None] | None = None
    failure: BinlogError | None = None
    events = iter_events(
        reader,  # type: ignore[arg-type]  # reads like a binary file
        file_name,
        start_offset=start if start > MAGIC_LEN else None,
        fde=fde,
        verify_checksums=verify_checksums,
    )
    try:
        for ev in events:
            header = ev.header
            type_code = header.type_code
            ev_fde = ev.fde
            if ev_fde is not last_fde:
                last_fde, last_fde_json = ev_fde, ev_fde.to_json()
            checksum_ok = ev.checksum_ok
            body = ev.body
            table_id: int | None = None
            statement_end: bool | None = None
            problems: list[BinlogError] = []
            if checksum_ok is not False:
                if type_code in TABLE_ID_TYPES:
                    table_id, statement_end = read_table_id(body, type_code, ev_fde)
                elif type_code == EventType.FORMAT_DESCRIPTION:
                    gtid = None
                elif type_code not in DECODED_ELSEWHERE:
                    try:
                        decoded = decode_body(ev)
                    except BinlogError as exc:
                        problems.append(ev.locate(as_event_problem(exc)))
                    else:
                        problems += body_warnings(ev, decoded)
                        sets, value = _decode_gtid(decoded, type_code)
                        if sets:
                            gtid = value
            else:
                problems.append(checksum_error(ev))
                quarantined_at = (ev.offset, ev.inner_index)
            yield EventRow(
                file,
                file_name,
                ev.offset,
                ev.inner_index,
                header.timestamp,
                type_code,
                ev.type_name,
                header.server_id,
                header.event_size,
                header.log_pos,
                header.flags,
                checksum_ok,
                last_fde_json,
                gtid,
                table_id,
                statement_end,
                body,
            )
            for problem in problems:
                yield quarantine_row(file, file_name, problem, body)
            event_count += 1
            ts = header.timestamp
            if ts:
                if first_ts is None or ts < first_ts:
                    first_ts = ts
                if last_ts is None or ts > last_ts:
                    last_ts = ts
            if ev.inner_index is None:
                if ev.offset == MAGIC_LEN:
                    server_id, server_version = header.server_id, ev_fde.server_version
                    flavor, binlog_version = ev_fde.flavor.name.lower(), ev_fde.binlog_version
                    checksum_alg = _CHECKSUM_NAMES.get(ev_fde.checksum_alg, ev_fde.checksum_alg.name)
                framed_until = ev.offset + header.event_size
                if reader.unhashed > HASH_EVERY:
                    reader.hash_until(framed_until)
    except BinlogError as exc:
        failure = exc
        if event_count == facts.event_count and start <= MAGIC_LEN:
            framed_until = MAGIC_LEN if exc.offset is not None and exc.offset >= MAGIC_LEN else 0
        already = isinstance(exc, ChecksumMismatchError) and quarantined_at == (exc.offset, exc.inner_index)
        if not already:
            row = quarantine_row(file, file_name, exc.locate(file=file_name))
            yield row._replace(severity=WARNING) if _status(exc) == TRUNCATED else row
    reader.hash_until(framed_until)
    digest = reader.sha.hexdigest()
    listed = size if size is not None else reader.length()
    yield FileSummary(
        file=file,
        file_name=file_name,
        size=listed,
        modification_time=modification_time,
        status=_status(failure),
        error_code=None if failure is None else failure.code,
        error_message=None if failure is None else failure.message,
        error_offset=None if failure is None else failure.offset,
        framed_until=framed_until,
        prefix_sha256=digest,
        event_count=event_count,
        server_id=server_id,
        server_version=server_version,
        flavor=flavor,
        binlog_version=binlog_version,
        checksum_alg=checksum_alg,
        first_timestamp=first_ts,
        last_timestamp=last_ts,
        resumed_from=start if start > MAGIC_LEN else 0,
    )


EVENT_COLUMNS = EventRow._fields
QUARANTINE_COLUMNS = QuarantineRow._fields
FILE_COLUMNS = tuple(name for name in FileSummary.__dataclass_fields__ if name != "resumed_from")

__all__ = [
    "COMPLETE",
    "CORRUPT",
    "ENCRYPTED",
    "EVENT_COLUMNS",
    "FILE_COLUMNS",
    "NOT_A_BINLOG",
    "QUARANTINE_COLUMNS",
    "RESUMABLE_STATUSES",
    "TRUNCATED",
    "EventRow",
    "FileFacts",
    "FileSummary",
    "Framed",
    "HashingReader",
    "QuarantineRow",
    "frame_file",
    "read_table_id",
]
