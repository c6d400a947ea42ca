"""Which events of a run over binlog files are printed: ``mysqlbinlog``'s selection options.

:class:`Selection` holds the options, :class:`Selector` applies them to the decoded events of
the files in order (every event is fed to it, so table maps and GTIDs before the window are
known).  Each option means what it means to ``mariadb-binlog`` / ``mysqlbinlog``
(``client/mysqlbinlog.cc``, ``process_event``)::

    --start-position N    events of the FIRST file whose offset is >= N (inner events of a
                          TRANSACTION_PAYLOAD share its offset)
    --stop-position N     reading stops at the first event of the LAST file whose offset is >= N
    --start-datetime T    nothing before the first event whose header time is >= T; from there
                          on everything (a later event with an earlier time is kept, as the tools
                          do); FORMAT_DESCRIPTION events are exempt
    --stop-datetime T     reading stops at the first event whose header time is >= T
    --database D          rows of tables of D (by their TABLE_MAP), statements whose default
                          database is D (transaction keywords BEGIN/COMMIT/ROLLBACK/SAVEPOINT/XA
                          always pass); other events pass
    --table T             rows of tables named T (any database unless --database says one);
                          other events pass
    --include-gtids SET   only the transactions whose GTID is in SET (events outside any
                          transaction, such as FORMAT_DESCRIPTION or ROTATE, pass)
    --exclude-gtids SET   every transaction except those whose GTID is in SET

Names are compared exactly (case-sensitive), like the tools' ``strcmp``.  One difference: with
``--database``/``--table`` the tools hold an ANNOTATE_ROWS event back and print it only with a
table map they keep; here it passes like any other event (the rows and statements selected are
the same).  Times are the event
header's seconds since the epoch; :func:`parse_datetime` reads ``YYYY-MM-DD[ HH:MM:SS]`` as UTC
(the tools read it in the machine's local zone) or with an explicit ``+hh:mm``/``Z`` offset.

GTID sets (:func:`parse_gtid_set`) take MySQL's syntax, ``uuid:1-5:7,uuid2[:tag]:3`` (a tag
applies to the intervals after it), and MariaDB GTIDs ``domain-server-seq`` (that one
transaction) or ``domain-server-first-last`` (a range of sequence numbers), comma-separated, in
any mix.  A transaction is the GTID event and what follows it up to its end: the XID, a
COMMIT/ROLLBACK statement, an XA PREPARE, or (a MariaDB standalone GTID, a MySQL DDL) the one
statement of the group.  An anonymous transaction (MySQL ``ANONYMOUS_GTID``) is in no set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum
from typing import Final

from binlog_core.constants import GTID_EVENTS, EventType
from binlog_core.decoder import DecodedEvent
from binlog_core.events.gtid import MariaDBGtidEvent, MariaDBGtidFlags
from binlog_core.events.query import QueryEvent, StatementKind
from binlog_core.rows import RowsEvent
from binlog_core.table_map import TableMap

# -- GTID sets ------------------------------------------------------------------------------

Interval = tuple[int, int]
"""Inclusive ``(first, last)`` sequence numbers."""

_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_INTERVAL = re.compile(r"([0-9]+)(?:-([0-9]+))?")
_MARIADB = re.compile(r"([0-9]+)-([0-9]+)-([0-9]+)(?:-([0-9]+))?")


class GtidSyntaxError(ValueError):
    """A GTID set that is neither MySQL's ``uuid:interval`` syntax nor MariaDB's ``domain-server-seq``."""


def _canonical_uuid(text: str) -> str:
    digits = text.replace("-", "").lower()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def _interval(text: str, element: str) -> Interval:
    match = _INTERVAL.fullmatch(text)
    if match is None:
        raise GtidSyntaxError(f"{text!r} in {element!r} is neither an interval (N or N-M) nor a tag")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if first < 1 or last < first:
        raise GtidSyntaxError(f"interval {text!r} in {element!r} is empty or starts below 1")
    return first, last


@dataclass(frozen=True, slots=True)
class GtidSet:
    """A set of GTIDs: MySQL ``(uuid, tag)`` and MariaDB ``(domain, server)`` keys with their intervals.

    >>> s = parse_gtid_set("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7, 0-1-100-200")
    >>> ("3e11fa47-71ca-11e1-9e33-c80aa9429562:7" in s, "0-1-150" in s, "0-2-150" in s, None in s)
    (True, True, False, False)
    """

    mysql: dict[tuple[str, str], tuple[Interval, ...]] = field(default_factory=dict)
    mariadb: dict[tuple[int, int], tuple[Interval, ...]] = field(default_factory=dict)
    text: str = ""

    def __contains__(self, gtid: object) -> bool:
        if not isinstance(gtid, str):
            return False  # an anonymous transaction
        intervals: tuple[Interval, ...] | None
        number: int
        if ":" in gtid:
            uuid, _, rest = gtid.partition(":")
            tag, _, gno = rest.rpartition(":")
            intervals = self.mysql.get((uuid.lower(), tag))
            number = int(gno) if gno.isdigit() else -1
        else:
            parts = gtid.split("-")
            if len(parts) != 3 or not all(p.isdigit() for p in parts):
                return False
            intervals = self.mariadb.get((int(parts[0]), int(parts[1])))
            number = int(parts[2])
        return intervals is not None and any(first <= number <= last for first, last in intervals)


def parse_gtid_set(text: str) -> GtidSet:
    """Parse a MySQL GTID set and/or MariaDB GTIDs (see the module doc); raise :class:`GtidSyntaxError`."""
    mysql: dict[tuple[str, str], list[Interval]] = {}
    mariadb: dict[tuple[int, int], list[Interval]] = {}
    elements = [e.strip() for e in text.replace("\n", ",").split(",")]
    if not any(elements):
        raise GtidSyntaxError("empty GTID set")
    for element in elements:
        if not element:
            continue
        maria = _MARIADB.fullmatch(element)
        if maria is not None:
            domain, server, first = int(maria.group(1)), int(maria.group(2)), int(maria.group(3))
            last = int(maria.group(4)) if maria.group(4) is not None else first
            if last < first:
                raise GtidSyntaxError(f"MariaDB range {element!r} is empty")
            mariadb.setdefault((domain, server), []).append((first, last))
            continue
        head, _, rest = element.partition(":")
        if _UUID.fullmatch(head) is None or not rest:
            raise GtidSyntaxError(
                f"{element!r} is neither uuid:interval[:interval...] (MySQL) nor domain-server-seq (MariaDB)"
            )
        uuid = _canonical_uuid(head)
        tag = ""
        for raw in rest.split(":"):
            part = raw.strip()
            if _TAG.fullmatch(part) is not None:
                tag = part.lower()
                continue
            mysql.setdefault((uuid, tag), []).append(_interval(part, element))
    return GtidSet(
        {k: tuple(sorted(v)) for k, v in mysql.items()},
        {k: tuple(sorted(v)) for k, v in mariadb.items()},
        text,
    )


# -- date and time --------------------------------------------------------------------------


def parse_datetime(text: str) -> int:
    """``--start-datetime``/``--stop-datetime``: seconds since the epoch (naive times are UTC).

    >>> parse_datetime("2023-11-14 22:13:20"), parse_datetime("2023-11-14T23:13:20+01:00")
    (1700000000, 1700000000)
    """
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not a date and time (YYYY-MM-DD[ HH:MM:SS[+hh:mm]])") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() // 1)


# -- the selection --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Selection:
    """The selection options of one run (``None``: the option is not given)."""

    start_position: int | None = None
    stop_position: int | None = None
    start_datetime: int | None = None
    stop_datetime: int | None = None
    database: str | None = None
    table: str | None = None
    include_gtids: GtidSet | None = None
    exclude_gtids: GtidSet | None = None

    @property
    def filters_gtids(self) -> bool:
        """``--include-gtids`` or ``--exclude-gtids`` is given."""
        return self.include_gtids is not None or self.exclude_gtids is not None

    def gtid_selected(self, gtid: str | None) -> bool:
        """Whether a transaction with this GTID (``None``: anonymous) is selected."""
        if self.include_gtids is not None and gtid not in self.include_gtids:
            return False
        return not (self.exclude_gtids is not None and gtid in self.exclude_gtids)


_FORMAT_DESCRIPTION: Final = int(EventType.FORMAT_DESCRIPTION)
_GTID_EVENTS: Final = frozenset(int(t) for t in GTID_EVENTS)
_GROUP_ENDS: Final = frozenset({int(EventType.XID), int(EventType.XA_PREPARE)})
_CONTROL: Final = frozenset(
    {
        int(t)
        for t in (
            EventType.FORMAT_DESCRIPTION,
            EventType.START_V3,
            EventType.ROTATE,
            EventType.STOP,
            EventType.INCIDENT,
            EventType.HEARTBEAT,
            EventType.HEARTBEAT_V2,
            EventType.IGNORABLE,
            EventType.PREVIOUS_GTIDS,
            EventType.GTID_LIST,
            EventType.BINLOG_CHECKPOINT,
            EventType.START_ENCRYPTION,
        )
    }
)
"""Events that belong to no transaction: never filtered by GTID (``shall_skip_gtids``)."""

_TRANSACTION_KEYWORDS: Final = frozenset(
    {StatementKind.BEGIN, StatementKind.COMMIT, StatementKind.ROLLBACK, StatementKind.SAVEPOINT, StatementKind.XA}
)
"""Statements ``--database`` never filters (``Query_log_event::is_trans_keyword``)."""


def ends_group(query: QueryEvent) -> bool:
    """A COMMIT or ROLLBACK statement (``XA COMMIT``/``XA ROLLBACK`` too) ends its transaction."""
    if query.kind in (StatementKind.COMMIT, StatementKind.ROLLBACK):
        return True
    if query.kind != StatementKind.XA or not isinstance(query.statement, str):
        return False
    words = query.statement.split(None, 2)
    return len(words) > 1 and words[1].upper() in ("COMMIT", "ROLLBACK")


class Verdict(Enum):
    """What happens to one event."""

    KEEP = "keep"
    SKIP = "skip"
    STOP = "stop"
    """This event and everything after it, in every file, is outside the selection."""


class Selector:
    """Applies a :class:`Selection` to the events of several files read in order.

    Call :meth:`begin_file` before the events of each file, then :meth:`verdict` for every
    decoded event of it, in file order::

        selector = Selector(selection, num_files=len(paths))
        for index, path in enumerate(paths):
            selector.begin_file(index)
            for item in decode_file(path):
                verdict = selector.verdict(item)
    """

    def __init__(self, selection: Selection, num_files: int) -> None:
        self.selection = selection
        self.num_files = num_files
        self.file_index = -1
        self.started = selection.start_datetime is None
        self.stopped = False
        self._ignored_tables: set[int] = set()
        self._group_selected = True  # the transaction being read passes the GTID options
        self._in_group = False
        self._standalone = False

    def begin_file(self, index: int) -> None:
        """The events that follow belong to the ``index``-th file of the run (0-based)."""
        self.file_index = index
        self._ignored_tables = set()

    def verdict(self, item: DecodedEvent) -> Verdict:
        """Whether ``item`` is selected; :attr:`Verdict.STOP` ends the run."""
        if self.stopped:
            return Verdict.STOP
        event = item.event
        selection = self.selection
        type_code = event.type_code
        timestamp = event.header.timestamp
        if selection.stop_datetime is not None and timestamp >= selection.stop_datetime:
            self.stopped = True
            return Verdict.STOP
        last_file = self.file_index == self.num_files - 1
        if selection.stop_position is not None and last_file and event.offset >= selection.stop_position:
            self.stopped = True
            return Verdict.STOP
        in_window = self._in_window(item, type_code, timestamp)
        gtid_selected = self._gtid_selected(item, type_code)
        filtered = self._filtered(item)
        return Verdict.KEEP if in_window and gtid_selected and not filtered else Verdict.SKIP

    def _in_window(self, item: DecodedEvent, type_code: int, timestamp: int) -> bool:
        selection = self.selection
        if (
            selection.start_position is not None
            and self.file_index == 0
            and item.event.offset < selection.start_position
        ):
            return False
        if type_code == _FORMAT_DESCRIPTION:
            return True
        if not self.started:
            if selection.start_datetime is not None and timestamp < selection.start_datetime:
                return False
            self.started = True  # from the first event at or after the start time on: everything
        return True

    def _gtid_selected(self, item: DecodedEvent, type_code: int) -> bool:
        """Track transactions; whether the one ``item`` belongs to passes the GTID options."""
        if type_code in _CONTROL:
            return True
        if type_code in _GTID_EVENTS:
            gtid = getattr(item.body, "gtid", None)
            self._group_selected = self.selection.gtid_selected(gtid if isinstance(gtid, str) else None)
            self._in_group = True
            self._standalone = isinstance(item.body, MariaDBGtidEvent) and bool(
                item.body.flags & MariaDBGtidFlags.STANDALONE
            )
            return self._group_selected or not self.selection.filters_gtids
        selected = self._group_selected or not self.selection.filters_gtids
        if not self._in_group:
            return True
        body = item.body
        if type_code in _GROUP_ENDS or (
            isinstance(body, QueryEvent)
            and (ends_group(body) or (self._standalone and body.kind != StatementKind.BEGIN))
        ):
            self._in_group = False
            self._group_selected = True
        return selected

    def _filtered(self, item: DecodedEvent) -> bool:
        """``--database``/``--table``: whether the event is left out by name."""
        selection = self.selection
        body = item.body
        if isinstance(body, TableMap):
            ignored = (selection.database is not None and body.schema != selection.database) or (
                selection.table is not None and body.table != selection.table
            )
            if ignored:
                self._ignored_tables.add(body.table_id)
            else:
                self._ignored_tables.discard(body.table_id)
            return ignored
        if isinstance(body, RowsEvent):
            ignored = body.table_id in self._ignored_tables
            if body.statement_end:
                self._ignored_tables = set()
            return ignored
        if selection.database is None:
            return False
        if isinstance(body, QueryEvent):
            return body.kind not in _TRANSACTION_KEYWORDS and body.schema != selection.database
        schema = getattr(body, "schema", None)
        return isinstance(schema, str) and schema != selection.database


__all__ = [
    "GtidSet",
    "GtidSyntaxError",
    "Selection",
    "Selector",
    "Verdict",
    "ends_group",
    "parse_datetime",
    "parse_gtid_set",
]
