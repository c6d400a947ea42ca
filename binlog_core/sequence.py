"""What only the order of a file tells: the TABLE_MAP in force and the transaction of each event.

A binlog is a sequence.  Which TABLE_MAP a rows event reads with, which transaction an event
belongs to, which event ends that transaction and when it committed: each is known for free
while a file is walked once, in order, and nowhere else.  :class:`FileSequence` is that walk's
state, and the one definition of both rules, used by :class:`binlog_core.decoder.BinlogDecoder`
(the maps it decodes rows with), by the bronze stage (recorded on every event row) and by the
tests::

    sequence = FileSequence()
    for event in iter_events(stream, name):
        place = sequence.step(event)
        place.map          # rows events: the MapForce in force (None: no map), TABLE_MAP: its own
        place.transaction  # the Transaction the event belongs to (None: outside any)
    sequence.finish()      # the file ended: what is still open closes without an end

``Transaction`` and ``MapForce`` objects are filled in as the walk goes on: a transaction gets
its end (``end_offset``, ``commit_us``, ``xid``) when the event that ends it is stepped over, a
map its ``until_*``, ``ended_by`` and ``rows_events`` when its force ends.  ``closed`` says
both are final; a caller that needs them (bronze) holds an event until then.

**In force.**  A TABLE_MAP whose table id can be read (the post-header: ``table_id`` u48, u32
when the declared post-header length is 6) is in force for that id from its own position until,
whichever comes first: the next rows event flagged STMT_END (of any id; that event still reads
with it), the next TABLE_MAP of the same id (``replaced``), the next FORMAT_DESCRIPTION, or the
end of the file.  A rows event reads with the map in force for its id, if any.  Whether the
map's body decodes does not matter here: a rows event whose map does not decode cannot be
decoded either, and says so.

**Transactions.**  A transaction opens at a GTID event (MySQL GTID, ANONYMOUS_GTID,
GTID_TAGGED, MariaDB GTID), at ``BEGIN``/``START TRANSACTION``/``XA START`` (a ``BEGIN``
right after the GTID that opened a transaction continues it), or implicitly at a TABLE_MAP or
rows event met outside any transaction.  It ends at an XID event, an XA_PREPARE event, or a
QUERY whose statement is ``COMMIT``, ``ROLLBACK`` or ``XA`` other than ``XA START`` (``XA
END``); an opening event or the end of the file closes it without an end.  Statement kinds are
read by :func:`binlog_core.events.query.statement_kind`, whatever the rest of the QUERY holds.

**Commit time** (``commit_us``, microseconds since the epoch) of a transaction that ended: the
``immediate_commit_timestamp`` of its MySQL GTID event when the file has one, else the header
time of the event that ended it; ``None`` when the file holds no end for it.

Events whose checksum failed, and GTID or XID events whose bodies do not decode, change nothing.
The GTID an event carries (:attr:`Place.gtid`) is the last GTID event's (a FORMAT_DESCRIPTION
clears it), as the decoder always tracked it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from struct import Struct
from typing import Final, NamedTuple

from binlog_core.constants import GTID_EVENTS, EventType
from binlog_core.event import Event
from binlog_core.events.query import StatementKind, opens_transaction, statement_kind
from binlog_core.rows import ROWS_KINDS, RowsEvent
from binlog_core.table_map import TableMap

STMT_END_FLAG: Final = 0x1  # orig: Rows_log_event::STMT_END_F

STATEMENT_END: Final = "statement_end"
REPLACED: Final = "replaced"
FORMAT_DESCRIPTION: Final = "format_description"
"""``MapForce.ended_by`` values (``None``: in force until the end of the file)."""

_U16 = Struct("<H")
_U32 = Struct("<I")

_TABLE_MAP: Final = int(EventType.TABLE_MAP)
_FORMAT_DESCRIPTION: Final = int(EventType.FORMAT_DESCRIPTION)
_ROWS: Final = frozenset(int(t) for t in ROWS_KINDS)
_GTIDS: Final = frozenset(int(t) for t in GTID_EVENTS)
_XID: Final = int(EventType.XID)
_PAYLOAD: Final = int(EventType.TRANSACTION_PAYLOAD)
"""A compressed transaction's envelope: its inner events follow it, in it; it is no member of its own."""
_XA_PREPARE: Final = int(EventType.XA_PREPARE)
_QUERIES: Final = frozenset(int(t) for t in (EventType.QUERY, EventType.QUERY_COMPRESSED, EventType.EXECUTE_LOAD_QUERY))
_ENDING_KINDS: Final = frozenset({StatementKind.COMMIT, StatementKind.ROLLBACK, StatementKind.XA})
"""Statement kinds that end a transaction (an ``XA`` statement that does not open one: ``XA END``)."""


def read_table_id(body: bytes, type_code: int, post_header_len: int) -> tuple[int | None, bool | None]:
    """``(table_id, statement_end)`` from a TABLE_MAP or rows event's post-header.

    Layout (every rows version, compressed ones too, and TABLE_MAP)::

        table_id u48 (u32 when the post-header length is 6) | flags u16 | ...

    ``statement_end`` is None for TABLE_MAP; both are None when the body is too short.
    """
    id_len = 4 if post_header_len == 6 else 6
    if len(body) < id_len + 2:
        return None, None
    table_id = int.from_bytes(body[:id_len], "little") if id_len == 6 else _U32.unpack_from(body)[0]
    if type_code == _TABLE_MAP:
        return table_id, None
    return table_id, bool(_U16.unpack_from(body, id_len)[0] & STMT_END_FLAG)


def table_shape(body: bytes, post_header_len: int) -> tuple[bytes, bytes] | None:
    """``(name, digest)`` of a TABLE_MAP body: its schema and table name bytes, and a digest of
    everything after its table id and flags -- what :attr:`FileSequence.shapes` holds per table;
    None when the body is too short."""
    at = (4 if post_header_len == 6 else 6) + 2
    if len(body) <= at:
        return None
    schema_end = at + 1 + body[at]
    if len(body) <= schema_end + 1:
        return None
    table_end = schema_end + 2 + body[schema_end + 1]
    return body[at:table_end], hashlib.blake2b(body[at:], digest_size=12).digest()


class Transaction:
    """One transaction of a file: where it opened, its GTID, and (once known) where and when it ended."""

    __slots__ = (
        "closed",
        "commit_us",
        "end_inner_index",
        "end_offset",
        "gtid",
        "immediate_commit_us",
        "only_opener",
        "start_inner_index",
        "start_offset",
        "xid",
    )

    def __init__(self, offset: int, inner_index: int | None, gtid: str | None, immediate_commit_us: int | None):
        self.start_offset = offset
        self.start_inner_index = inner_index
        self.gtid = gtid
        self.immediate_commit_us = immediate_commit_us
        self.end_offset: int | None = None
        self.end_inner_index: int | None = None
        self.commit_us: int | None = None
        self.xid: int | None = None
        self.closed = False
        self.only_opener = True  # nothing but the opening event so far

    def __repr__(self) -> str:
        end = "open" if not self.closed else f"ends {self.end_offset}" if self.end_offset is not None else "no end"
        return f"Transaction({self.start_offset} {self.gtid} {end})"


class MapForce:
    """A TABLE_MAP in force: its position and table id, then where its force ended and its rows events.

    ``payload`` is free for the walker's own use (the decoder keeps the decoded map and plan there).
    """

    __slots__ = (
        "closed",
        "ended_by",
        "inner_index",
        "offset",
        "payload",
        "rows_events",
        "table_id",
        "until_inner_index",
        "until_offset",
    )

    def __init__(self, offset: int, inner_index: int | None, table_id: int) -> None:
        self.offset = offset
        self.inner_index = inner_index
        self.table_id = table_id
        self.until_offset: int | None = None
        self.until_inner_index: int | None = None
        self.ended_by: str | None = None
        self.rows_events = 0
        self.closed = False
        self.payload: object = None

    def end(self, offset: int | None, inner_index: int | None, why: str | None) -> None:
        """Its force ends at this position (None: the end of the file)."""
        self.until_offset = offset
        self.until_inner_index = inner_index
        self.ended_by = why
        self.closed = True

    def __repr__(self) -> str:
        return f"MapForce({self.offset} id {self.table_id} until {self.until_offset} {self.ended_by})"


class Place(NamedTuple):
    """What the order tells about one event (see the module doc)."""

    transaction: Transaction | None
    """The transaction the event belongs to (None: outside any)."""
    gtid: str | None
    """The GTID in force (the last GTID event's; a FORMAT_DESCRIPTION clears it)."""
    table_id: int | None = None
    """TABLE_MAP and rows events: the table id of the post-header (None when it cannot be read)."""
    statement_end: bool | None = None
    """Rows events: the STMT_END flag."""
    map: MapForce | None = None
    """Rows events: the map in force for their id (None: none is); TABLE_MAP: the map itself."""
    shape_changed: bool | None = None
    """TABLE_MAP: its body (past table id and flags) differs from the previous map of the same
    table in this file, or it is the table's first map here (None when shapes are not tracked)."""


_place = tuple.__new__
"""``Place`` from a tuple of all six fields, without ``NamedTuple.__new__``'s keyword handling."""


class FileSequence:
    """The state of one walk over one file, in order (see the module doc)."""

    def __init__(
        self, gtid: str | None = None, *, track_shapes: bool = True, shapes: dict[bytes, bytes] | None = None
    ) -> None:
        """``gtid`` and ``shapes``: the GTID in force and the table shapes seen (:attr:`shapes`) where
        the walk starts (a walk resumed inside a file); ``track_shapes``: tell ``Place.shape_changed``
        for TABLE_MAPs (else it stays None)."""
        self.in_force: dict[int, MapForce] = {}
        self.transaction: Transaction | None = None
        self.gtid = gtid
        self._shapes: dict[bytes, bytes] | None = (dict(shapes or {})) if track_shapes else None
        self.shapes_version = 0
        """Grows each time a table's shape changes (a cheap way to tell the shapes changed)."""
        self._handlers: dict[int, Callable[[Event, object], Place]] = {
            **dict.fromkeys(_ROWS, self._rows),
            _TABLE_MAP: self._table_map,
            **dict.fromkeys(_GTIDS, self._gtid),
            _XID: self._xid,
            **dict.fromkeys(_QUERIES, self._query),
            _XA_PREPARE: self._xa_prepare,
            _FORMAT_DESCRIPTION: self._format_description,
            _PAYLOAD: self._envelope,
        }

    @property
    def shapes(self) -> dict[bytes, bytes]:
        """The last shape seen of each table: its name bytes -> a digest of its map body past the
        table id and flags (what a walk resumed later starts from); a copy."""
        return dict(self._shapes or {})

    def step(self, event: Event, body: object = None) -> Place:
        """The place of ``event``, the next event of the file; updates the state.

        ``body``: the event's decoded body when the caller has it (a rows event's header, a
        TABLE_MAP, a GTID or XID body), saving the walk from reading it again; GTID and XID
        events are decoded here otherwise, and one whose body does not decode changes nothing.
        """
        if event.checksum_ok is False:
            return _place(Place, (self.transaction, self.gtid, None, None, None, None))
        handler = self._handlers.get(event.type_code)
        if handler is None:
            return self._member()
        return handler(event, body)

    def finish(self) -> None:
        """The file ended: the open transaction closes without an end, maps in force at the end of the file."""
        self._end_maps(None, None, None)
        self._close_open()

    # -- event kinds -------------------------------------------------------------------------

    def _member(self) -> Place:
        """An event that belongs to the open transaction, if any, and changes nothing."""
        trx = self.transaction
        if trx is not None:
            trx.only_opener = False
        return _place(Place, (trx, self.gtid, None, None, None, None))

    def _envelope(self, event: Event, body: object) -> Place:
        """A TRANSACTION_PAYLOAD belongs to the open transaction but is not content of it: the
        ``BEGIN`` packed inside, right after the GTID, continues the GTID's transaction."""
        return _place(Place, (self.transaction, self.gtid, None, None, None, None))

    def _implicit(self, event: Event) -> Transaction:
        """The open transaction; a TABLE_MAP or rows event outside any opens one."""
        trx = self.transaction
        if trx is None:
            trx = self.transaction = Transaction(event.offset, event.inner_index, self.gtid, None)
        trx.only_opener = False
        return trx

    def _rows(self, event: Event, body: object) -> Place:
        if isinstance(body, RowsEvent):
            table_id: int | None = body.table_id
            statement_end: bool | None = body.statement_end
        else:
            table_id, statement_end = read_table_id(
                event.body, event.type_code, event.fde.post_header_len(event.type_code)
            )
        trx = self._implicit(event)
        if table_id is None:
            return _place(Place, (trx, self.gtid, None, None, None, None))
        found = self.in_force.get(table_id)
        if found is not None:
            found.rows_events += 1
        if statement_end:
            self._end_maps(event.offset, event.inner_index, STATEMENT_END)
        return _place(Place, (trx, self.gtid, table_id, statement_end, found, None))

    def _table_map(self, event: Event, body: object) -> Place:
        shapes = self._shapes
        post_header_len = event.fde.post_header_len(_TABLE_MAP) if shapes is not None or body is None else 0
        table_id = (
            body.table_id if isinstance(body, TableMap) else read_table_id(event.body, _TABLE_MAP, post_header_len)[0]
        )
        trx = self._implicit(event)
        if table_id is None:
            return _place(Place, (trx, self.gtid, None, None, None, None))
        previous = self.in_force.get(table_id)
        if previous is not None:
            previous.end(event.offset, event.inner_index, REPLACED)
        mapped = self.in_force[table_id] = MapForce(event.offset, event.inner_index, table_id)
        changed: bool | None = None
        if shapes is not None:
            shape = table_shape(event.body, post_header_len)
            if shape is not None:
                names, digest = shape
                changed = shapes.get(names) != digest
                if changed:
                    shapes[names] = digest
                    self.shapes_version += 1
        return _place(Place, (trx, self.gtid, table_id, None, mapped, changed))

    def _gtid(self, event: Event, body: object) -> Place:
        if body is None:
            body = _decoded(event)
            if body is None:
                return self._member()
        gtid = getattr(body, "gtid", None)
        if isinstance(gtid, str) or event.type_code == EventType.ANONYMOUS_GTID:
            self.gtid = gtid
        self._close_open()
        immediate = getattr(body, "immediate_commit_timestamp", None)
        trx = self.transaction = Transaction(event.offset, event.inner_index, self.gtid, immediate)
        return _place(Place, (trx, self.gtid, None, None, None, None))

    def _xid(self, event: Event, body: object) -> Place:
        if body is None:
            body = _decoded(event)
            if body is None:
                return self._member()
        xid = getattr(body, "xid", None)
        trx = self._end(event, xid if isinstance(xid, int) else None)
        return _place(Place, (trx, self.gtid, None, None, None, None))

    def _xa_prepare(self, event: Event, body: object) -> Place:
        return _place(Place, (self._end(event, None), self.gtid, None, None, None, None))

    def _query(self, event: Event, body: object) -> Place:
        kind = statement_kind(event)
        if opens_transaction(kind, event):
            trx = self.transaction
            if trx is not None and trx.only_opener:  # BEGIN right after the GTID that opened it
                trx.only_opener = False
                return _place(Place, (trx, self.gtid, None, None, None, None))
            self._close_open()
            trx = self.transaction = Transaction(event.offset, event.inner_index, self.gtid, None)
            return _place(Place, (trx, self.gtid, None, None, None, None))
        if kind in _ENDING_KINDS:
            return _place(Place, (self._end(event, None), self.gtid, None, None, None, None))
        return self._member()

    def _format_description(self, event: Event, body: object) -> Place:
        self._end_maps(event.offset, event.inner_index, FORMAT_DESCRIPTION)
        self.gtid = None
        if self._shapes is not None:
            self._shapes.clear()
        return self._member()

    # -- state changes -------------------------------------------------------------------------

    def _close_open(self) -> None:
        """The open transaction, if any, closes without an end."""
        if self.transaction is not None:
            self.transaction.closed = True
            self.transaction = None

    def _end(self, event: Event, xid: int | None) -> Transaction | None:
        """``event`` ends the open transaction, if any; returns it."""
        trx = self.transaction
        if trx is None:
            return None
        trx.end_offset = event.offset
        trx.end_inner_index = event.inner_index
        immediate = trx.immediate_commit_us
        trx.commit_us = immediate if immediate is not None else event.header.timestamp * 1_000_000
        trx.xid = xid
        trx.closed = True
        self.transaction = None
        return trx

    def _end_maps(self, offset: int | None, inner_index: int | None, why: str | None) -> None:
        for mapped in self.in_force.values():
            mapped.end(offset, inner_index, why)
        self.in_force = {}


def _decoded(event: Event) -> object | None:
    """A GTID or XID body decoded here (None when it does not decode)."""
    from binlog_core.errors import BinlogError  # noqa: PLC0415
    from binlog_core.events import decode_body  # noqa: PLC0415 (binlog_core.events imports this module's peers)

    try:
        return decode_body(event)
    except BinlogError:
        return None


__all__ = [
    "FORMAT_DESCRIPTION",
    "REPLACED",
    "STATEMENT_END",
    "FileSequence",
    "MapForce",
    "Place",
    "Transaction",
    "read_table_id",
    "table_shape",
]
