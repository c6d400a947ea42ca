"""Frame one binlog file into bronze rows, recording on each event what only the order of the file tells.

Pure Python (no Spark): a Spark task calls :func:`frame_file` once per file and turns what it
yields into Arrow batches.  The walk streams -- memory holds a read chunk, the current event and
the events still waiting for a fact a later event gives (below), whatever the file size -- and
yields:

* one :class:`EventRow` per event (``binlog_events``); inner events of a TRANSACTION_PAYLOAD
  after their outer event;
* :class:`QuarantineRow` rows for each event whose checksum failed (the event is kept with
  ``checksum_ok = False``) or whose body has a problem, and for the error that stopped framing,
  if any (``quarantine``, ``stage = 'bronze'``). A file that ends inside an event (status
  ``truncated``: the server's active binlog, or a copy in progress) has everything before that
  event framed; its ``TRUNCATED`` row is a warning, not bad input, and is replaced when a later
  run continues the grown file. Bronze decodes the body of every event no later stage decodes
  (all but FORMAT_DESCRIPTION, TABLE_MAP, rows and QUERY-shaped events) and reports what
  :class:`binlog_core.decoder.BinlogDecoder` reports for it;
* last, one :class:`FileSummary` (``binlog_files``, with the facts the bronze gate checks).

**The order, recorded once.**  :class:`binlog_core.sequence.FileSequence` walks along and tells,
for every event, its transaction (where it opened, its GTID) and, for a rows event, the TABLE_MAP
in force (``map_offset``/``map_inner_index``).  What a later event tells -- where the transaction
ended, when it committed and its XID; where a TABLE_MAP's force ended and how many rows events
read with it -- is filled in before the row is yielded: an event waits in a
:class:`HeldRows` buffer until its transaction and (for a TABLE_MAP) its force have ended,
which is a few events in practice; a transaction of more than ``spill_bytes`` waits on local
disk, so memory stays bounded whatever it holds.

**Resuming a file that grew** (the server's active binlog): a walk ends with ``resume_offset`` =
the start of the transaction still open at its end, or the end of the last complete event when
none is; ``prefix_sha256`` is the SHA-256 of bytes ``[0, resume_offset)``.  A later walk given
that :class:`ResumePoint` hashes the prefix again and, when it matches, frames from
``resume_offset`` on (so the open transaction is framed whole, its end included); when it does
not, the file was rewritten and is framed again from the start.  Either way the rows are those a
single walk over the whole file yields from ``FileSummary.resumed_from`` on.  Reading stops at
``size`` when given: the length the file was listed with.

``content_sha256``, the file's identity: the SHA-256 of bytes ``[0, framed_until)``, everything
framed: a copy of a binlog under another name has the same.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import pairwise
from typing import Any, BinaryIO, NamedTuple

from binlog_core.constants import ChecksumAlg, EventType
from binlog_core.errors import (
    BinlogError,
    ChecksumMismatchError,
    EncryptedError,
    NotABinlogError,
    TruncatedError,
    as_event_problem,
)
from binlog_core.event import Event, FormatDescription, checksum_error
from binlog_core.events import QUERY_SHAPED, body_warnings, decode_body
from binlog_core.framing import find_transaction_start, iter_events
from binlog_core.rows import ROWS_KINDS
from binlog_core.sequence import FileSequence, MapForce, Transaction, table_shape
from pipelines.quality.rules import FIRST_OFFSETS

STAGE = "bronze"

COMPLETE = "complete"
TRUNCATED = "truncated"
CORRUPT = "corrupt"
ENCRYPTED = "encrypted"
NOT_A_BINLOG = "not_a_binlog"
EMPTY = "empty"
UNREADABLE = "unreadable"
DUPLICATE = "duplicate"
WARNING = "warning"
ERROR = "error"
"""Severities of quarantine rows: a warning loses nothing (see ``binlog_core.errors.BinlogError.severity``)."""
RESUMABLE_STATUSES = frozenset({COMPLETE, TRUNCATED})
"""Statuses after which a grown file can continue at ``resume_offset``."""

EMPTY_FILE = "EMPTY_FILE"
UNREADABLE_FILE = "UNREADABLE_FILE"
"""Quarantine codes of files that hold no events at all."""

MAGIC_LEN = 4

TABLE_ID_TYPES = frozenset({EventType.TABLE_MAP, *ROWS_KINDS})
"""Events whose post-header starts with a table id."""

DECODED_ELSEWHERE = frozenset({EventType.FORMAT_DESCRIPTION, *TABLE_ID_TYPES, *QUERY_SHAPED})
"""Bodies bronze does not decode: framing reads FORMAT_DESCRIPTION, silver decodes TABLE_MAP and
QUERY-shaped events, gold the rows events. Every other body is decoded here."""

EVENT_CLASS: dict[int, str] = {
    **{int(t): "rows" for t in ROWS_KINDS},
    int(EventType.TABLE_MAP): "table_map",
    **{int(t): "query" for t in QUERY_SHAPED},
}
"""``binlog_events.event_class`` by type code (``other`` for the rest): the partition each stage reads."""

_CHECKSUM_NAMES = {ChecksumAlg.OFF: "NONE", ChecksumAlg.CRC32: "CRC32", ChecksumAlg.UNDEF: "UNDEF"}

HASH_EVERY = 8 << 20
"""Bytes read but not yet hashed after which the prefix hash catches up (bounds what is kept)."""

PREFIX_READ = 8 << 20
"""Chunk size when only hashing the prefix before a resume point."""

SPILL_BYTES = 64 << 20
"""Bytes of event bodies held in memory before waiting events go to local disk."""

LOCATED_OFFSETS = FIRST_OFFSETS
"""Offsets a walk keeps of each located fact (``FileSummary.located``)."""


class EventRow(NamedTuple):
    """One ``binlog_events`` row (the columns of ``BINLOG_EVENTS``, in order, without ``run_id``)."""

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
    fde_offset: int
    gtid: str | None
    trx_offset: int | None
    trx_inner_index: int | None
    trx_end_offset: int | None
    trx_end_inner_index: int | None
    commit_timestamp: int | None  # microseconds since the epoch
    xid: int | None
    table_id: int | None
    statement_end: bool | None
    map_offset: int | None
    map_inner_index: int | None
    in_force_until: int | None
    in_force_until_inner_index: int | None
    ended_by: str | None
    rows_events: int | None
    shape_changed: bool | None
    body: bytes
    event_class: str


class QuarantineRow(NamedTuple):
    """One ``quarantine`` row (the columns of ``QUARANTINE``, in order, without ``run_id``)."""

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


COUNTERS = ("event_count", "rows_events", "offset_gaps", "checksum_failures", "unknown_events", "unmapped_rows_events")
"""Summary counters a resumed walk continues from (``binlog_files.resume_counts``)."""


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a grown file continues, and what its last summary said about what came before."""

    offset: int
    format_descriptions: dict[int, str]
    gtid: str | None
    prefix_sha256: str | None
    counts: dict[str, int]
    """:data:`COUNTERS` before ``offset``."""
    shapes: dict[str, str] = field(default_factory=dict)
    """The table shapes seen before ``offset`` (hex of ``FileSequence.shapes``)."""
    facts: dict[str, Any] = field(default_factory=dict)
    """``server_id``, ``server_version``, ``flavor``, ``binlog_version``, ``checksum_alg``,
    ``first_timestamp``, ``last_timestamp`` of the last summary."""


@dataclass(frozen=True, slots=True)
class Part:
    """A piece of one file that a task frames on its own: the events starting in ``[start, end)``.

    Pieces start at a transaction's GTID event (:func:`binlog_core.framing.find_transaction_start`),
    so a piece is a run of whole transactions; ``end`` None: the last piece, to the end of the file
    (it also hashes the bytes before it, for the file's ``content_sha256`` and resume point).  A
    piece after the first starts with the file's first FORMAT_DESCRIPTION (``format_description``,
    its JSON) and no table shapes; :func:`merge_parts` puts the pieces' summaries together.
    """

    start: int
    end: int | None
    format_description: str | None = None


@dataclass(slots=True)
class FileSummary:
    """One ``binlog_files`` row (see ``pipelines/tables.py``), plus where this walk started."""

    file: str
    file_name: str
    size: int
    modification_time: datetime | None
    status: str
    error_code: str | None = None
    error_message: str | None = None
    error_offset: int | None = None
    framed_until: int = 0
    resume_offset: int = 0
    resume_gtid: str | None = None
    resume_counts: dict[str, int] = field(default_factory=dict)
    resume_shapes: dict[str, str] = field(default_factory=dict)
    prefix_sha256: str | None = None
    content_sha256: str | None = None
    event_count: int = 0
    rows_events: int = 0
    server_id: int | None = None
    server_version: str | None = None
    flavor: str | None = None
    binlog_version: int | None = None
    checksum_alg: str | None = None
    first_timestamp: int | None = None
    last_timestamp: int | None = None
    format_descriptions: dict[int, str] = field(default_factory=dict)
    offset_gaps: int = 0
    checksum_failures: int = 0
    unknown_events: int = 0
    unmapped_rows_events: int = 0
    resumed_from: int = 0
    """Where this walk started: 0 (the start), or the resume offset when the prefix matched."""
    problems: dict[str, int] = field(default_factory=dict)
    """Quarantine rows this walk yielded, by ``"<code> <severity>"``."""
    located: dict[str, list[int]] = field(default_factory=dict)
    """The first :data:`LOCATED_OFFSETS` offsets of the events this walk framed that failed their
    checksum (``checksum_failures``), are of an unknown type (``unknown_events``) or start past where
    the previous one ended (``offset_gaps``): where the bronze gate's facts are."""
    part: str | None = None
    """A piece's own facts (:class:`PartFacts` as JSON) when this walk framed a :class:`Part`."""


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

    def length(self) -> int:
        """Read on to the end, keeping nothing, and return where it is (once hashing is finished)."""
        self._pending.clear()
        while data := self.raw.read(PREFIX_READ):
            self.pos += len(data)
        return self.pos

    def skip_hashing(self, until: int) -> bool:
        """Read and hash ``[pos, until)``; False when the stream ends first."""
        while self.pos < until:
            if not self.read(min(PREFIX_READ, until - self.pos)):
                self.hash_until(self.pos)
                return False
            self.hash_until(self.pos)
        return True


# -- events waiting for what later events tell ------------------------------------------------

_Held = tuple[tuple[Any, ...], Transaction | None, MapForce | None, bytes, str]
"""``(row up to shape_changed, without the deferred columns), its transaction, its own map force
(TABLE_MAP), body, event class)``."""

_TRX_OPEN = (None, None, None, None)
_MAP_OPEN = (None, None, None, None)


def _ready(held: _Held) -> bool:
    trx, force = held[1], held[2]
    return (trx is None or trx.closed) and (force is None or force.closed)


_event_row = tuple.__new__


def _row(held: _Held) -> EventRow:
    """The full row of a held event whose transaction and map force have ended."""
    fixed, trx, force, body, event_class = held
    ends = (
        _TRX_OPEN
        if trx is None or trx.end_offset is None
        else (trx.end_offset, trx.end_inner_index, trx.commit_us, trx.xid)
    )
    mapped = (
        _MAP_OPEN if force is None else (force.until_offset, force.until_inner_index, force.ended_by, force.rows_events)
    )
    return _event_row(EventRow, (*fixed[:16], *ends, *fixed[16:20], *mapped, fixed[20], body, event_class))


class HeldRows:
    """Events waiting, in file order, for their transaction and TABLE_MAP force to end.

    Rows leave in file order, as soon as the oldest waiting one is complete.  The queue is a
    head (rows read back from disk), segments on disk, and a tail in memory; beyond
    ``spill_bytes`` of bodies the tail goes to a new segment under ``spill_dir`` (pickled; the
    :class:`Transaction`/:class:`MapForce` objects the rows wait on stay in memory, by identity),
    so one huge transaction costs disk, not memory: at most one segment and the tail are read.
    """

    def __init__(self, spill_bytes: int = SPILL_BYTES, spill_dir: str | None = None) -> None:
        self.spill_bytes = spill_bytes
        self.spill_dir = spill_dir
        self.head: deque[_Held] = deque()
        self.segments: deque[str] = deque()
        self.tail: deque[_Held] = deque()
        self.tail_bytes = 0
        self.objects: dict[int, object] = {}

    def add(self, held: _Held) -> Iterable[EventRow]:
        """Hold ``held`` and return every row now complete, oldest first."""
        if self.head or self.segments:
            self._hold(held)
            return self.ready()  # read back from disk lazily
        if not self.tail and _ready(held):
            return (_row(held),)
        if self._hold(held):
            return self.ready()
        tail = self.tail
        if not _ready(tail[0]):
            return ()
        done = []
        while tail and _ready(tail[0]):
            first = tail.popleft()
            self.tail_bytes -= len(first[3])
            done.append(_row(first))
        return done

    def _hold(self, held: _Held) -> bool:
        """Queue ``held`` at the tail; True when that spilled the tail to disk."""
        self.tail.append(held)
        self.tail_bytes += len(held[3])
        if self.tail_bytes > self.spill_bytes:
            self._spill()
            return True
        return False

    def ready(self) -> Iterator[EventRow]:
        """Every row complete at the front of the queue, oldest first."""
        while True:
            if not self.head and self.segments:
                self.head.extend(self._load(self.segments.popleft()))
            queue = self.head if self.head else self.tail
            while queue and _ready(queue[0]):
                held = queue.popleft()
                if queue is self.tail:
                    self.tail_bytes -= len(held[3])
                yield _row(held)
            if queue or not (self.head or self.segments or self.tail) or queue is self.tail:
                return

    def _spill(self) -> None:
        stored = []
        for fixed, trx, force, body, event_class in self.tail:
            for obj in (trx, force):
                if obj is not None:
                    self.objects[id(obj)] = obj
            stored.append((fixed, _ref(trx), _ref(force), body, event_class))
        fd, path = tempfile.mkstemp(prefix="binlog-held-", suffix=".pickle", dir=self.spill_dir)
        with os.fdopen(fd, "wb") as out:
            pickle.dump(stored, out, protocol=pickle.HIGHEST_PROTOCOL)
        self.segments.append(path)
        self.tail.clear()
        self.tail_bytes = 0

    def _load(self, path: str) -> list[_Held]:
        with open(path, "rb") as source:
            stored = pickle.load(source)
        os.unlink(path)
        objects = self.objects
        loaded: list[_Held] = [
            (
                fixed,
                objects.get(trx) if trx is not None else None,
                objects.get(force) if force is not None else None,
                body,
                event_class,
            )  # type: ignore[misc]
            for fixed, trx, force, body, event_class in stored
        ]
        if not self.segments:  # nothing on disk refers to the objects any more
            self.objects = {}
        return loaded

    def close(self) -> None:
        """Remove spill files left by a walk that stopped early."""
        while self.segments:
            path = self.segments.popleft()
            if os.path.exists(path):
                os.unlink(path)


def _ref(obj: object | None) -> int | None:
    return None if obj is None else id(obj)


# -- the walk ------------------------------------------------------------------------------------


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


def file_problem(file: str, file_name: str, code: str, severity: str, message: str) -> QuarantineRow:
    """A quarantine row about a whole file (no event)."""
    return QuarantineRow(STAGE, file, file_name, None, None, None, code, severity, None, message, None)


def frame_file(
    open_stream: Callable[[], BinaryIO],
    file: str,
    file_name: str,
    *,
    resume: ResumePoint | None = None,
    verify_checksums: bool = True,
    size: int | None = None,
    modification_time: datetime | None = None,
    spill_bytes: int = SPILL_BYTES,
    spill_dir: str | None = None,
    part: Part | None = None,
) -> Iterator[Framed]:
    """Yield the bronze rows of one file: events and quarantine rows, then its :class:`FileSummary`.

    With ``part``, only the events of that piece of the file (see :class:`Part`; ``resume`` is
    not used), and a summary of the piece for :func:`merge_parts`.

    ``open_stream()`` opens the file from its start (again when a resume finds the prefix
    changed).  A file of ``size`` 0 is ``empty``; one that cannot be opened or read is
    ``unreadable`` (a quarantine row says why)::

        rows = list(frame_file(lambda: open(path, "rb"), uri, "mysql-bin.000001"))
        summary = rows[-1]   # FileSummary(status='complete', framed_until=..., ...)
    """
    summary = FileSummary(file, file_name, size or 0, modification_time, COMPLETE)  # size 0: read to the end
    if size == 0:
        summary.status = EMPTY
        summary.problems = {f"{EMPTY_FILE} {WARNING}": 1}
        yield file_problem(file, file_name, EMPTY_FILE, WARNING, f"{file_name} is empty (0 bytes): no binlog yet")
        yield summary
        return
    held = HeldRows(spill_bytes, spill_dir)
    try:
        if part is not None:
            with open_stream() as raw:
                yield from _part_walk(raw, summary, held, verify_checksums, part, size)
            return
        if resume is not None and resume.offset > MAGIC_LEN:
            with open_stream() as raw:
                reader = HashingReader(raw, size)
                if reader.skip_hashing(resume.offset) and _matches(reader, resume.prefix_sha256):
                    yield from _Walk(reader, summary, held, verify_checksums, resume).run()
                    return
            # the prefix changed: the file was rewritten, so it is framed again from the start
        with open_stream() as raw:
            yield from _Walk(HashingReader(raw, size), summary, held, verify_checksums, None).run()
    except OSError as exc:
        held.close()
        summary.status = UNREADABLE
        summary.error_code = UNREADABLE_FILE
        summary.error_message = f"{type(exc).__name__}: {exc}"
        summary.problems = {f"{UNREADABLE_FILE} {ERROR}": 1}
        yield file_problem(file, file_name, UNREADABLE_FILE, ERROR, f"{file_name} cannot be read: {exc}")
        yield summary
    finally:
        held.close()


def plan_parts(open_stream: Callable[[], BinaryIO], size: int, count: int) -> list[Part]:
    """Pieces of one file of ``size`` bytes that ``count`` tasks can frame side by side: about
    equal in size, each after the first starting at a transaction's GTID event; ``[]`` when the
    file is not cut (``count`` < 2, a file without CRC32 checksums or not a v4 binlog, no GTID
    event near the cuts, a file that cannot be read: one task frames it whole, and tells why).
    ``open_stream()`` opens the file seekable."""
    if count < 2:
        return []
    cuts: list[int] = []
    try:
        with open_stream() as stream:
            events = iter_events(stream, "", verify_checksums=False)
            first = next(events, None)
            if first is None or first.type_code != EventType.FORMAT_DESCRIPTION:
                return []
            fde = first.fde
            if fde.checksum_alg != ChecksumAlg.CRC32 or fde.type_permutation is not None:
                return []
            after_first = first.offset + first.header.event_size
            for i in range(1, count):
                at = find_transaction_start(stream, fde, max(after_first, size * i // count))
                if at is not None and at < size and (not cuts or at > cuts[-1]):
                    cuts.append(at)
    except (OSError, BinlogError, ValueError):
        return []
    bounds: list[int | None] = [0, *cuts, None]
    text = fde.to_json()
    return [Part(start, end, text) for start, end in pairwise(bounds) if start is not None] if cuts else []


def _part_walk(
    raw: BinaryIO, summary: FileSummary, held: HeldRows, verify_checksums: bool, part: Part, size: int | None
) -> Iterator[Framed]:
    """The walk over one :class:`Part` of a file, ``raw`` opened at its start."""
    start = part.start
    if start <= MAGIC_LEN:
        yield from _Walk(HashingReader(raw, part.end), summary, held, verify_checksums, None, part).run()
        return
    if part.end is None:  # the last piece: hashes the bytes before it, for the whole file's hashes
        reader = HashingReader(raw, size)
        if not reader.skip_hashing(start):
            summary.part = PartFacts(start, None, clean=False).to_json()  # the file is shorter now
            yield summary
            return
    else:
        raw.seek(start)
        reader = HashingReader(raw, part.end)
        reader.pos = reader.hashed = start
    at = ResumePoint(start, {MAGIC_LEN: part.format_description or ""}, None, None, {})
    yield from _Walk(reader, summary, held, verify_checksums, at, part).run()


@dataclass(slots=True)
class PartFacts:
    """What merging a piece's summary with the others' needs (``FileSummary.part``)."""

    start: int
    end: int | None
    clean: bool
    """No FORMAT_DESCRIPTION but the file's first (one would clear the table shapes a later piece
    is compared with), and a piece before the last ended exactly at ``end`` with no error and no
    map in force: the next piece starts in the state it assumed (a transaction still open closes
    without an end at the GTID event the next piece starts with, as in a single walk).  The last
    piece could also read the bytes before it."""
    end_shapes: dict[str, str] = field(default_factory=dict)
    """Each table's last shape in the piece (hex of ``FileSequence.shapes``)."""
    first_maps: dict[str, tuple[int, int | None, str]] = field(default_factory=dict)
    """Each table's first map in the piece: ``(offset, inner_index, shape digest)`` by table name (hex)."""

    def to_json(self) -> str:
        """As ``FileSummary.part``."""
        return json.dumps(
            {
                "start": self.start,
                "end": self.end,
                "clean": self.clean,
                "end_shapes": self.end_shapes,
                "first_maps": self.first_maps,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> PartFacts:
        """From ``FileSummary.part``."""
        data = json.loads(text)
        maps = {name: (int(at[0]), at[1], str(at[2])) for name, at in data["first_maps"].items()}
        return cls(data["start"], data["end"], data["clean"], data["end_shapes"], maps)


def merge_parts(summaries: list[FileSummary]) -> tuple[FileSummary, list[tuple[int, int | None]]] | None:
    """One file's summary from the summaries of its pieces, as a single walk over the file gives it,
    and the TABLE_MAPs whose ``shape_changed`` a single walk would have said False (the first map of
    a table in a piece, with the shape the pieces before it ended with): ``(offset, inner_index)``.

    None when the pieces do not fit together (one that is not :attr:`PartFacts.clean`, a gap): the
    file is then framed again in one walk.
    """
    ordered = sorted(summaries, key=lambda s: PartFacts.from_json(s.part or "").start)
    facts = [PartFacts.from_json(s.part or "") for s in ordered]
    fits = all(a.end == b.start for a, b in pairwise(facts))
    if not facts or not fits or facts[0].start > MAGIC_LEN or facts[-1].end is not None:
        return None
    if not all(f.clean for f in facts):
        return None
    first, last = ordered[0], ordered[-1]
    merged = replace(last, resumed_from=0, part=None)
    before_last = {name: sum(getattr(s, name) for s in ordered[:-1]) for name in COUNTERS}
    for name in COUNTERS:
        setattr(merged, name, before_last[name] + getattr(last, name))
    merged.resume_counts = {name: before_last[name] + last.resume_counts.get(name, 0) for name in COUNTERS}
    for name in ("server_id", "server_version", "flavor", "binlog_version", "checksum_alg"):
        setattr(merged, name, getattr(first, name))
    firsts = [s.first_timestamp for s in ordered if s.first_timestamp is not None]
    lasts = [s.last_timestamp for s in ordered if s.last_timestamp is not None]
    merged.first_timestamp = min(firsts, default=None)
    merged.last_timestamp = max(lasts, default=None)
    merged.format_descriptions = {o: t for s in ordered for o, t in s.format_descriptions.items()}
    problems: Counter[str] = Counter()
    located: dict[str, set[int]] = {}
    for s in ordered:
        problems.update(s.problems)
        for fact, offsets in s.located.items():
            located.setdefault(fact, set()).update(offsets)
    merged.problems = dict(problems)
    merged.located = {fact: sorted(offsets)[:LOCATED_OFFSETS] for fact, offsets in located.items()}
    shapes: dict[str, str] = {}
    corrections: list[tuple[int, int | None]] = []
    for piece in facts[:-1]:
        corrections += [(o, i) for name, (o, i, digest) in piece.first_maps.items() if shapes.get(name) == digest]
        shapes.update(piece.end_shapes)
    corrections += [(o, i) for name, (o, i, digest) in facts[-1].first_maps.items() if shapes.get(name) == digest]
    merged.resume_shapes = {**shapes, **last.resume_shapes}
    return merged, corrections


def _locate(summary: FileSummary, fact: str, offset: int) -> None:
    """Keep ``offset`` among the first offsets of ``fact`` (events come in file order)."""
    at = summary.located.setdefault(fact, [])
    if len(at) < LOCATED_OFFSETS and (not at or at[-1] != offset):
        at.append(offset)


def _matches(reader: HashingReader, expected: str | None) -> bool:
    return expected is None or reader.sha.copy().hexdigest() == expected


class _Walk:
    """One walk over a file from its start or a resume point (see :func:`frame_file`)."""

    def __init__(
        self,
        reader: HashingReader,
        summary: FileSummary,
        held: HeldRows,
        verify_checksums: bool,
        resume: ResumePoint | None,
        part: Part | None = None,
    ) -> None:
        self.reader = reader
        self.part = part
        self.first_maps: dict[bytes, tuple[int, int | None, bytes]] | None = None if part is None else {}
        """A piece's first map of each table: ``(offset, inner_index, shape digest)`` by table name."""
        self.s = summary
        self.held = held
        self.verify_checksums = verify_checksums
        self.resume = resume
        self.start = resume.offset if resume is not None else 0
        self.sequence = FileSequence(
            resume.gtid if resume is not None else None,
            shapes=None if resume is None else {bytes.fromhex(k): bytes.fromhex(v) for k, v in resume.shapes.items()},
        )
        self.at_open: tuple[Transaction, str, dict[str, int], dict[bytes, bytes]] | None = None
        """The transaction opened last, the prefix hash, counters and table shapes where it opened."""
        self._shapes_seen: tuple[int, dict[bytes, bytes]] = (-1, {})

    def counts(self) -> dict[str, int]:
        """The counters so far (:data:`COUNTERS`)."""
        return {name: getattr(self.s, name) for name in COUNTERS}

    def run(self) -> Iterator[Framed]:
        s, resume = self.s, self.resume
        fde: FormatDescription | None = None
        fde_offset = MAGIC_LEN
        if resume is not None:
            s.format_descriptions = dict(resume.format_descriptions)
            for name, value in resume.facts.items():
                setattr(s, name, value)
            for name in COUNTERS:
                setattr(s, name, resume.counts.get(name, 0))
            s.resumed_from = resume.offset
            fde_offset = max((o for o in s.format_descriptions if o < resume.offset), default=-1)
            if fde_offset < 0:
                raise ValueError("resuming at an offset needs the FORMAT_DESCRIPTION in force there")
            fde = FormatDescription.from_json(s.format_descriptions[fde_offset])
        s.framed_until = self.start
        quarantined_at: tuple[int, int | None] | None = None
        failure: BinlogError | None = None
        last_fde: FormatDescription | None = fde
        expected = self.start if self.start > MAGIC_LEN else MAGIC_LEN
        events = iter_events(
            self.reader,  # type: ignore[arg-type]  # reads like a binary file
            s.file_name,
            start_offset=self.start if self.start > MAGIC_LEN else None,
            fde=fde,
            verify_checksums=self.verify_checksums,
        )
        sequence, held, reader, first_maps = self.sequence, self.held, self.reader, self.first_maps
        try:
            for ev in events:
                header = ev.header
                type_code = ev.type_code
                ev_fde = ev.fde
                if ev_fde is not last_fde:
                    last_fde = ev_fde
                    text = ev_fde.to_json()
                    if text != s.format_descriptions.get(fde_offset):
                        fde_offset = ev.offset
                        s.format_descriptions[fde_offset] = text
                checksum_ok = ev.checksum_ok
                problems: list[BinlogError] = []
                decoded: object = None
                if checksum_ok is False:
                    problems.append(checksum_error(ev))
                    quarantined_at = (ev.offset, ev.inner_index)
                    s.checksum_failures += 1
                    _locate(s, "checksum_failures", ev.offset)
                elif type_code not in DECODED_ELSEWHERE:
                    try:
                        decoded = decode_body(ev)
                    except BinlogError as exc:
                        problems.append(ev.locate(as_event_problem(exc)))
                    else:
                        problems += body_warnings(ev, decoded)
                place = sequence.step(ev, decoded)
                if place.shape_changed and first_maps is not None:
                    self._first_map(ev)
                trx = place.transaction
                if trx is not None and trx.start_offset == ev.offset and trx.start_inner_index is None:
                    self._transaction_opens(trx, ev.offset)
                force = place.map
                map_offset = map_inner = None
                own: MapForce | None = None
                if type_code == EventType.TABLE_MAP:
                    own = force
                elif type_code in ROWS_KINDS and checksum_ok is not False:
                    s.rows_events += 1
                    if force is not None:
                        map_offset, map_inner = force.offset, force.inner_index
                    else:
                        s.unmapped_rows_events += 1
                body = ev.body
                type_name = ev.type_name
                fixed = (
                    s.file,
                    s.file_name,
                    ev.offset,
                    ev.inner_index,
                    header.timestamp,
                    type_code,
                    type_name,
                    header.server_id,
                    header.event_size,
                    header.log_pos,
                    header.flags,
                    checksum_ok,
                    fde_offset,
                    place.gtid,
                    None if trx is None else trx.start_offset,
                    None if trx is None else trx.start_inner_index,
                    place.table_id,
                    place.statement_end,
                    map_offset,
                    map_inner,
                    place.shape_changed,
                )
                yield from held.add((fixed, trx, own, body, EVENT_CLASS.get(type_code, "other")))
                for problem in problems:
                    yield self._problem(quarantine_row(s.file, s.file_name, problem, body))
                self._count(ev, expected, type_name)
                if ev.inner_index is None:
                    expected = ev.offset + header.event_size
                    if ev.offset == MAGIC_LEN:
                        s.server_id, s.server_version = header.server_id, ev_fde.server_version
                        s.flavor, s.binlog_version = ev_fde.flavor.name.lower(), ev_fde.binlog_version
                        s.checksum_alg = _CHECKSUM_NAMES.get(ev_fde.checksum_alg, ev_fde.checksum_alg.name)
                    s.framed_until = expected
                    if reader.unhashed > HASH_EVERY:
                        reader.hash_until(expected)
        except BinlogError as exc:
            failure = exc
            if s.event_count == 0 and self.start <= MAGIC_LEN:
                s.framed_until = MAGIC_LEN if exc.offset is not None and exc.offset >= MAGIC_LEN else 0
            already = isinstance(exc, ChecksumMismatchError) and quarantined_at == (exc.offset, exc.inner_index)
            if not already:
                row = quarantine_row(s.file, s.file_name, exc.locate(file=s.file_name))
                yield self._problem(row._replace(severity=WARNING) if _status(exc) == TRUNCATED else row)
        open_trx = sequence.transaction
        part = None if self.part is None else self._part_facts(failure)
        sequence.finish()
        yield from held.ready()
        self._finish(failure, open_trx)
        if part is not None:
            s.part = part.to_json()
        yield s

    def _first_map(self, ev: Event) -> None:
        """Remember a piece's first map of its table."""
        shape = table_shape(ev.body, ev.fde.post_header_len(EventType.TABLE_MAP))
        if shape is not None and self.first_maps is not None and shape[0] not in self.first_maps:
            self.first_maps[shape[0]] = (ev.offset, ev.inner_index, shape[1])

    def _part_facts(self, failure: BinlogError | None) -> PartFacts:
        part, s, sequence = self.part, self.s, self.sequence
        assert part is not None and self.first_maps is not None
        clean = set(s.format_descriptions) == {MAGIC_LEN} and (
            part.end is None or (failure is None and not sequence.in_force and s.framed_until == part.end)
        )
        return PartFacts(
            part.start,
            part.end,
            clean,
            {k.hex(): v.hex() for k, v in sequence.shapes.items()},
            {k.hex(): (o, i, d.hex()) for k, (o, i, d) in self.first_maps.items()},
        )

    def _problem(self, row: QuarantineRow) -> QuarantineRow:
        key = f"{row.code} {row.severity}"
        self.s.problems[key] = self.s.problems.get(key, 0) + 1
        return row

    def _count(self, ev: Event, expected: int, type_name: str) -> None:
        s = self.s
        s.event_count += 1
        ts = ev.header.timestamp
        if ts:
            if s.first_timestamp is None or ts < s.first_timestamp:
                s.first_timestamp = ts
            if s.last_timestamp is None or ts > s.last_timestamp:
                s.last_timestamp = ts
        if type_name.startswith("UNKNOWN_"):
            s.unknown_events += 1
            _locate(s, "unknown_events", ev.offset)
        if ev.inner_index is None and ev.offset != expected:
            s.offset_gaps += 1
            _locate(s, "offset_gaps", ev.offset)

    def _transaction_opens(self, trx: Transaction, offset: int) -> None:
        """Remember the prefix hash and counters where ``trx`` opened: the resume point while it is open."""
        version = self.sequence.shapes_version
        if version != self._shapes_seen[0]:  # copied only when a shape changed
            self._shapes_seen = (version, self.sequence.shapes)
        self.at_open = (trx, self._prefix_hash(offset), self.counts(), self._shapes_seen[1])

    def _prefix_hash(self, end: int) -> str:
        """The SHA-256 of bytes ``[0, end)`` (``end`` at or after what is hashed already)."""
        reader = self.reader
        reader.hash_until(end)
        return reader.sha.copy().hexdigest()

    def _finish(self, failure: BinlogError | None, open_trx: Transaction | None) -> None:
        s = self.s
        s.status = _status(failure)
        if failure is not None:
            s.error_code, s.error_message, s.error_offset = failure.code, failure.message, failure.offset
        if open_trx is not None and self.at_open is not None and self.at_open[0] is open_trx:
            s.resume_offset = open_trx.start_offset
            s.prefix_sha256, s.resume_counts = self.at_open[1], self.at_open[2]
            s.resume_shapes = {k.hex(): v.hex() for k, v in self.at_open[3].items()}
            s.resume_gtid = None  # the transaction's own GTID event is read again
        else:
            s.resume_offset = s.framed_until
            s.prefix_sha256 = self._prefix_hash(s.framed_until)
            s.resume_counts = self.counts()
            s.resume_shapes = {k.hex(): v.hex() for k, v in self.sequence.shapes.items()}
            s.resume_gtid = self.sequence.gtid
        s.content_sha256 = self._prefix_hash(s.framed_until) if s.framed_until > MAGIC_LEN else None
        if s.size == 0:  # not listed with a size: the file's length
            s.size = self.reader.length()


__all__ = [
    "COMPLETE",
    "CORRUPT",
    "COUNTERS",
    "DUPLICATE",
    "EMPTY",
    "ENCRYPTED",
    "EVENT_CLASS",
    "NOT_A_BINLOG",
    "RESUMABLE_STATUSES",
    "TRUNCATED",
    "UNREADABLE",
    "EventRow",
    "FileSummary",
    "Framed",
    "HashingReader",
    "HeldRows",
    "Part",
    "PartFacts",
    "QuarantineRow",
    "ResumePoint",
    "file_problem",
    "frame_file",
    "merge_parts",
    "plan_parts",
]
