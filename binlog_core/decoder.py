"""Decoding a whole file: framing, one decoder per event type, table maps in force, row changes.

:class:`BinlogDecoder` is the state one file needs while its events are read in order:
the TABLE_MAPs in force (table ids mean something only inside one file, and a mapping
ends with the statement: the rows event flagged STMT_END), the plans bound to them, and the
GTID of the transaction being read.  :func:`decode_file` runs framing and decoding together::

    for item in decode_file("mysql-bin.000042"):
        for change in item.rows:
            print(change.op, change.schema, change.table, change.after)

Problems that spoil one event (a checksum mismatch, an undecodable body, a rows event whose
table id has no TABLE_MAP, a TRANSACTION_PAYLOAD whose events cannot all be unpacked) are
attached to that event's :class:`DecodedEvent` and reading goes on; problems that make the
rest of the file unreadable are raised after everything before them has been yielded.
Everything that can be decoded is: a rows event with a row that cannot be read keeps the rows
before it, with the error among its problems (the rows after it cannot be framed); a damaged
compressed transaction keeps the inner events before the damage.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import FrozenInstanceError, dataclass, field
from typing import BinaryIO

from binlog_core.columns import DecodeOptions
from binlog_core.constants import EventType, event_type_name
from binlog_core.errors import BinlogError, UnknownTableIdError, as_event_problem
from binlog_core.event import Event, FormatDescription, checksum_error
from binlog_core.events import DECODERS, body_warnings, decode_body
from binlog_core.framing import iter_events
from binlog_core.rows import ROWS_KINDS, Row, RowPair, RowsEvent, TablePlan, decode_rows, decode_rows_header
from binlog_core.sequence import FileSequence, Place
from binlog_core.table_map import TableMap, decode_table_map

_PLAN_CACHE_LIMIT = 4096
"""Distinct TABLE_MAP bodies whose decoded maps and plans are kept for reuse."""


class _ChangeContext:
    """What every row change of one rows event shares (one object per event, not per row)."""

    __slots__ = ("event_type", "file", "gtid", "inner_index", "offset", "op", "server_id", "table_map", "timestamp")

    def __init__(
        self,
        file: str,
        offset: int,
        inner_index: int | None,
        event_type: str,
        gtid: str | None,
        timestamp: int,
        server_id: int,
        table_map: TableMap,
        op: str,
    ) -> None:
        self.file = file
        self.offset = offset
        self.inner_index = inner_index
        self.event_type = event_type
        self.gtid = gtid
        self.timestamp = timestamp
        self.server_id = server_id
        self.table_map = table_map
        self.op = op


_ROW_CHANGE_FIELDS = (
    "file",
    "offset",
    "inner_index",
    "row_index",
    "event_type",
    "gtid",
    "timestamp",
    "server_id",
    "table_map",
    "op",
    "before",
    "after",
)


class RowChange:
    """One row changed by a rows event, with everything needed to place and name it.

    Immutable, compared and hashed by its fields like a frozen dataclass.  The fields every row
    of one event shares live in one object the rows of that event point to, so a row change
    costs one small object.
    """

    __slots__ = ("_ctx", "after", "before", "row_index")

    def __init__(
        self,
        file: str,
        offset: int,
        inner_index: int | None,
        row_index: int,
        event_type: str,
        gtid: str | None,
        timestamp: int,
        server_id: int,
        table_map: TableMap,
        op: str,  # insert | update | delete
        before: Row | None,
        after: Row | None,
    ) -> None:
        self._ctx: _ChangeContext
        self.row_index: int
        self.before: Row | None
        self.after: Row | None
        ctx = _ChangeContext(file, offset, inner_index, event_type, gtid, timestamp, server_id, table_map, op)
        _set_ctx(self, ctx)
        _set_row_index(self, row_index)
        _set_before(self, before)
        _set_after(self, after)

    @property
    def file(self) -> str:
        """Base name of the binlog file."""
        return self._ctx.file

    @property
    def offset(self) -> int:
        """Offset of the rows event in the file."""
        return self._ctx.offset

    @property
    def inner_index(self) -> int | None:
        """Index inside a TRANSACTION_PAYLOAD (``None`` outside one)."""
        return self._ctx.inner_index

    @property
    def event_type(self) -> str:
        """Name of the rows event type, e.g. ``WRITE_ROWS``."""
        return self._ctx.event_type

    @property
    def gtid(self) -> str | None:
        """GTID of the transaction, when the file has one."""
        return self._ctx.gtid

    @property
    def timestamp(self) -> int:
        """The rows event's header timestamp."""
        return self._ctx.timestamp

    @property
    def server_id(self) -> int:
        """The rows event's header server id."""
        return self._ctx.server_id

    @property
    def table_map(self) -> TableMap:
        """The TABLE_MAP in force for this row."""
        return self._ctx.table_map

    @property
    def op(self) -> str:
        """``insert``, ``update`` or ``delete``."""
        return self._ctx.op

    @property
    def schema(self) -> str:
        """Database name."""
        return self._ctx.table_map.schema

    @property
    def table(self) -> str:
        """Table name."""
        return self._ctx.table_map.table

    @property
    def table_id(self) -> int:
        """Table id, meaningful inside this file only."""
        return self._ctx.table_map.table_id

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in _ROW_CHANGE_FIELDS)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in _ROW_CHANGE_FIELDS)
        return f"RowChange({inner})"

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[type[RowChange], tuple[object, ...]]:
        return RowChange, self._fields()


_set_ctx = vars(RowChange)["_ctx"].__set__
_set_row_index = vars(RowChange)["row_index"].__set__
_set_before = vars(RowChange)["before"].__set__
_set_after = vars(RowChange)["after"].__set__
"""The slots' own setters: they write past the frozen ``__setattr__``."""


def _row_changes(ctx: _ChangeContext, pairs: list[RowPair]) -> list[RowChange]:
    """One :class:`RowChange` per (before, after) pair, sharing ``ctx``; no per-row ``__init__``."""
    new = object.__new__
    changes: list[RowChange] = []
    append = changes.append
    for index, (before, after) in enumerate(pairs):
        change = new(RowChange)
        _set_ctx(change, ctx)
        _set_row_index(change, index)
        _set_before(change, before)
        _set_after(change, after)
        append(change)
    return changes


@dataclass(slots=True)
class DecodedEvent:
    """One event with its typed body, the row changes it holds, and what was wrong with it.

    A problem of severity ``error`` means the event was not decoded completely: ``body`` is
    ``None`` when even its fixed part did not decode; a rows event keeps its header and the
    rows read before the row that failed.  ``place`` is what the order of the file tells about
    the event (:class:`binlog_core.sequence.Place`: its transaction, the map in force).
    """

    event: Event
    body: object | None
    rows: list[RowChange] = field(default_factory=list)
    problems: list[BinlogError] = field(default_factory=list)
    place: Place | None = None


@dataclass(frozen=True, slots=True)
class MappedTable:
    """A decoded TABLE_MAP in force: the map, its plan, and where the map event is."""

    table_map: TableMap
    plan: TablePlan
    offset: int
    inner_index: int | None


_new = object.__new__
_set_map = vars(MappedTable)["table_map"].__set__
_set_plan = vars(MappedTable)["plan"].__set__
_set_map_offset = vars(MappedTable)["offset"].__set__
_set_map_inner = vars(MappedTable)["inner_index"].__set__

_TABLE_MAP = int(EventType.TABLE_MAP)
_PLAIN_BODIES = frozenset({int(EventType.ANNOTATE_ROWS), int(EventType.ROWS_QUERY), int(EventType.XID)})
"""Frequent events whose bodies carry no GTID, status variables or state: no checks after decoding."""


class BinlogDecoder:
    """Decodes the events of one file in order (create one per file).

    Which TABLE_MAP a rows event reads with, and which transaction each event belongs to, come
    from :class:`binlog_core.sequence.FileSequence`: the decoder keeps the decoded map and its
    plan on the sequence's :class:`~binlog_core.sequence.MapForce` (``payload``).
    """

    def __init__(self, options: DecodeOptions | None = None) -> None:
        self.options = options or DecodeOptions()
        self.sequence = FileSequence(track_shapes=False)
        self._fde: FormatDescription | None = None
        self._plans: dict[bytes, tuple[TableMap, TablePlan]] = {}

    @property
    def gtid(self) -> str | None:
        """The GTID of the transaction being read (the last GTID event's)."""
        return self.sequence.gtid

    @property
    def in_force(self) -> dict[int, MappedTable]:
        """Table id -> the decoded TABLE_MAP in force (maps in force that did not decode are left out)."""
        return {
            table_id: mapped.payload
            for table_id, mapped in self.sequence.in_force.items()
            if isinstance(mapped.payload, MappedTable)
        }

    def decode(self, event: Event) -> DecodedEvent:
        """Decode one event, updating the state the following events are read with."""
        if event.fde is not self._fde:
            self._fde = event.fde
            self._plans.clear()
        if event.checksum_ok is False:
            return DecodedEvent(event, None, problems=[checksum_error(event)], place=self.sequence.step(event))
        type_code = event.type_code
        if type_code in ROWS_KINDS:
            return self._rows(event)
        if type_code == _TABLE_MAP:
            return self._table_map(event)
        try:
            body = DECODERS[type_code](event) if type_code in _PLAIN_BODIES else decode_body(event)
        except BinlogError as exc:
            place = self.sequence.step(event)
            return DecodedEvent(event, None, problems=[event.locate(as_event_problem(exc))], place=place)
        place = self.sequence.step(event, body)
        if type_code in _PLAIN_BODIES:
            return DecodedEvent(event, body, place=place)
        return DecodedEvent(event, body, problems=body_warnings(event, body), place=place)

    def _table_map(self, event: Event) -> DecodedEvent:
        cached = self._plans.get(event.body)
        if cached is None:
            try:
                table_map = decode_table_map(event.body, event.fde)
            except BinlogError as exc:
                place = self.sequence.step(event)
                return DecodedEvent(event, None, problems=[event.locate(as_event_problem(exc))], place=place)
            if len(self._plans) >= _PLAN_CACHE_LIMIT:
                self._plans.clear()
            cached = self._plans[event.body] = (table_map, TablePlan(table_map, self.options, event.fde))
        table_map, plan = cached
        place = self.sequence.step(event, table_map)
        force = place.map
        if force is not None:
            mapped = _new(MappedTable)  # MappedTable(...) without the frozen dataclass's per-field __setattr__
            _set_map(mapped, table_map)
            _set_plan(mapped, plan)
            _set_map_offset(mapped, event.offset)
            _set_map_inner(mapped, event.inner_index)
            force.payload = mapped
        if table_map.unknown_optional:  # reported on every map event, the cached ones too
            return DecodedEvent(event, table_map, problems=body_warnings(event, table_map), place=place)
        return DecodedEvent(event, table_map, place=place)

    def _rows(self, event: Event) -> DecodedEvent:
        try:
            header = decode_rows_header(event.body, event.type_code, event.fde)
        except BinlogError as exc:
            place = self.sequence.step(event)
            return DecodedEvent(event, None, problems=[event.locate(as_event_problem(exc))], place=place)
        place = self.sequence.step(event, header)
        force = place.map
        mapped = force.payload if force is not None else None
        if not isinstance(mapped, MappedTable):
            missing = event.locate(UnknownTableIdError(_no_map(header.table_id, place)))
            return DecodedEvent(event, None, problems=[missing], place=place)
        problems: list[BinlogError] = []
        pairs = decode_rows(header, mapped.plan, problems)
        h = event.header
        ctx = _ChangeContext(
            event.file,
            event.offset,
            event.inner_index,
            event_type_name(h.type_code),
            place.gtid,
            h.timestamp,
            h.server_id,
            mapped.table_map,
            header.kind.op,
        )
        changes = _row_changes(ctx, pairs)
        for problem in problems:
            event.locate(problem)
        return DecodedEvent(event, header, changes, problems, place)


def _no_map(table_id: int, place: Place) -> str:
    """Why a rows event has no decoded map to read with."""
    if place.map is None:
        return f"table id {table_id} has no TABLE_MAP in force in this file"
    inner = "" if place.map.inner_index is None else f"#{place.map.inner_index}"
    return f"table id {table_id}: the TABLE_MAP in force (at {place.map.offset}{inner}) did not decode"


def decode_stream(
    stream: BinaryIO,
    name: str,
    *,
    options: DecodeOptions | None = None,
    verify_checksums: bool = True,
) -> Iterator[DecodedEvent]:
    """Frame and decode every event of a binlog stream (see :func:`decode_file`)."""
    decoder = BinlogDecoder(options)
    decode = decoder.decode
    try:
        for event in iter_events(stream, name, verify_checksums=verify_checksums):
            yield decode(event)
    finally:
        decoder.sequence.finish()


def decode_file(
    path: str | os.PathLike[str],
    *,
    options: DecodeOptions | None = None,
    verify_checksums: bool = True,
) -> Iterator[DecodedEvent]:
    """Frame and decode every event of the binlog file at ``path``, in file order.

    Per-event problems ride on each :class:`DecodedEvent`; a fatal problem (truncated file,
    not a binlog, encrypted remainder, ...) is raised after every event before it.  When the
    walk ends (or stops), what the file left open is closed (:meth:`FileSequence.finish`): a
    transaction without an end keeps ``end_offset = None``.
    """
    name = os.path.basename(os.fspath(path))
    decoder = BinlogDecoder(options)
    decode = decoder.decode  # decode_stream inlined: one generator less per event
    try:
        with open(path, "rb") as stream:
            for event in iter_events(stream, name, verify_checksums=verify_checksums):
                yield decode(event)
    finally:
        decoder.sequence.finish()


__all__ = ["BinlogDecoder", "DecodedEvent", "MappedTable", "RowChange", "RowsEvent", "decode_file", "decode_stream"]
