"""Undo SQL for transactions the lakehouse holds: ``binlog-lakehouse flashback``.

The same statements as ``binlog-dump --flashback`` writes from the files
(:class:`binlog_core.script.Flashback`), made from the lake: the selected transactions' rows
events are read back from bronze with the TABLE_MAP in force for each (silver ``table_maps``,
completed with the schema history's names as gold decoded them) and decoded again by
``binlog_core``, so every value is the decoder's own and every literal is written by
:mod:`binlog_core.sql`. Then, where the files could not undo a change because an image is partial
(``binlog_row_image`` MINIMAL or NOBLOB), the lake's history completes it: a before image from
the version of the row that change closed, an after image from the version it opened
(``binlog_history.<table>``, which the current stage builds). What neither holds stays unknown,
and the undo is refused naming the row and the columns (nothing is guessed)::

    selection = Selection(gtids=("0-1-41", "0-1-42"))
    count = write_flashback(execute, storage, selection, out)

A selection is a set of GTIDs, a range of binlog positions of one server (``--from``/``--to``:
the transactions that open at or after the first and before the second), or a range of commit
times (``--since``/``--until``); ``--server`` keeps one server's. Transactions are undone newest
first, each between BEGIN and COMMIT. Refused: a selection that spans servers (no order between
them is known), and one with a DDL statement or statement-based DML of its server between its
first and last row change (silver ``ddl_events``), as ``binlog-dump --flashback`` refuses them.
Statements run through either query engine (``execute``), no Spark session needed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TextIO

from binlog_core.columns import ABSENT, DecodeOptions
from binlog_core.constants import event_type_name
from binlog_core.decoder import RowChange
from binlog_core.errors import BinlogError, IrreversibleStatementError
from binlog_core.event import FormatDescription
from binlog_core.rows import Row, RowsFlag, TablePlan, UndecodedText, decode_rows, decode_rows_header
from binlog_core.script import Flashback
from binlog_core.table_map import Column, TableMap
from conf.models import StorageSettings
from pipelines.gold.decode import HISTORY_FIELDS, table_map_of
from pipelines.gold.names import gold_table_name
from pipelines.gold.types import RAW_SUFFIX, column_kind, conversion_of
from pipelines.query.asof import AsOfError, Point
from pipelines.query.engine import StatementError

Execute = Callable[[str], Any]
"""A query engine's statement runner: ``statement -> Result`` (``.arrow()``) or None."""

Place = tuple[str, int, int, int]
"""``(file, offset, inner index or -1, row index)``: one row change."""


class FlashbackError(AsOfError):
    """A selection that cannot be undone as asked (nothing selected, several servers): one line."""


@dataclass(frozen=True)
class Selection:
    """Which transactions to undo: GTIDs, a position range of one server, or a commit-time range."""

    gtids: tuple[str, ...] = ()
    start: str | None = None
    """``FILE:OFFSET``: transactions that open at or after it."""
    stop: str | None = None
    """``FILE:OFFSET``: transactions that open before it."""
    since: str | None = None
    """A commit time: transactions committed at or after it."""
    until: str | None = None
    """A commit time: transactions committed before it."""
    server: str | None = None

    def where(self) -> str:
        """The SQL condition on ``binlog_gold.changes`` that finds the candidate row changes."""
        terms = []
        if self.gtids:
            terms.append(f"gtid IN ({', '.join(_literal(g) for g in self.gtids)})")
        if self.since is not None:
            terms.append(f"commit_timestamp >= TIMESTAMP {_literal(self.since)}")
        if self.until is not None:
            terms.append(f"commit_timestamp < TIMESTAMP {_literal(self.until)}")
        if self.server is not None:
            terms.append(f"(server = {_literal(self.server)} OR server LIKE {_literal('%/' + self.server)})")
        return " AND ".join(terms) or "TRUE"

    def bounds(self) -> tuple[Point | None, Point | None]:
        """The position range, when one is given."""
        start = None if self.start is None else Point.parse_position(self.start, self.server)
        stop = None if self.stop is None else Point.parse_position(self.stop, self.server)
        return start, stop


def _literal(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _in(values: Iterable[object]) -> str:
    return ", ".join(_literal(v) if isinstance(v, str) else str(v) for v in sorted(set(values), key=str))


def _rows(execute: Execute, statement: str) -> list[dict[str, Any]]:
    result = execute(statement)
    return [] if result is None else result.arrow().to_pylist()


def _mapping(value: Any) -> dict[Any, Any]:
    """A map value as an engine hands it over (a dict, or a list of pairs)."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    return {k: v for k, v in value}


_SEQUENCE = re.compile(r"\.(\d+)$")


def _sequence(file_name: str) -> int:
    found = _SEQUENCE.search(file_name)
    return -1 if found is None else int(found.group(1))


@dataclass
class _Transaction:
    server: str
    file: str
    file_name: str
    start: tuple[int, int, int]
    """``(file sequence, offset, inner index or -1)`` where it opens."""
    gtid: str | None
    places: set[Place]

    @property
    def label(self) -> str:
        where = f"{self.file_name}:{self.start[1]}"
        return f"GTID {self.gtid} at {where}" if self.gtid else where


def _transactions(execute: Execute, storage: StorageSettings, selection: Selection) -> list[_Transaction]:
    """The selected transactions of one server, in binlog order, with the row changes they hold."""
    rows = _rows(
        execute,
        "SELECT server, file, file_name, offset, inner_index, row_index, trx_offset, trx_inner_index, gtid "
        f"FROM {storage.gold_database}.changes WHERE {selection.where()}",
    )
    start, stop = selection.bounds()
    found: dict[tuple[str, str, int, int], _Transaction] = {}
    for row in rows:
        opened = row["trx_offset"] if row["trx_offset"] is not None else row["offset"]
        inner = row["trx_inner_index"] if row["trx_offset"] is not None else row["inner_index"]
        at = (_sequence(row["file_name"]), int(opened), -1 if inner is None else int(inner))
        if (start is not None and at[:2] < (start.sequence, start.offset)) or (
            stop is not None and at[:2] >= (stop.sequence, stop.offset)
        ):
            continue
        key = (row["server"], row["file"], at[1], at[2])
        transaction = found.setdefault(
            key, _Transaction(row["server"], row["file"], row["file_name"], at, row["gtid"], set())
        )
        inner_index = -1 if row["inner_index"] is None else int(row["inner_index"])
        transaction.places.add((row["file"], int(row["offset"]), inner_index, int(row["row_index"])))
    servers = {t.server for t in found.values()}
    if not found:
        raise FlashbackError("no row change of the selected transactions in the lakehouse")
    if len(servers) > 1:
        raise FlashbackError(
            f"the selected transactions are of {len(servers)} servers ({', '.join(sorted(servers))}); "
            "give --server to undo one server's"
        )
    return sorted(found.values(), key=lambda t: t.start)


def _check_statements(execute: Execute, storage: StorageSettings, transactions: list[_Transaction]) -> None:
    """Refuse a selection that spans a DDL statement or statement-based DML of its server (the row
    images cannot undo it), naming the first one."""
    first = transactions[0].start
    last = max((_sequence(file), offset) for t in transactions for file, offset, _, _ in t.places)
    rows = _rows(
        execute,
        f"SELECT file, offset, inner_index, event_type_name, statement FROM {storage.silver_database}.ddl_events "
        f"WHERE server = {_literal(transactions[0].server)} AND kind IN ('DDL', 'DML')",
    )
    within = sorted(
        ((_sequence(row["file"]), row["offset"]), row)
        for row in rows
        if first[:2] < (_sequence(row["file"]), row["offset"]) < last
    )
    if within:
        row = within[0][1]
        text = " ".join(str(row["statement"]).split())[:300]
        raise IrreversibleStatementError(
            f"{text!r} lies inside the selection; a flashback from row images cannot undo it "
            "(narrow the selection to the transactions after it)"
        ).locate(
            file=row["file"], offset=row["offset"], inner_index=row["inner_index"], event_type=row["event_type_name"]
        )


@dataclass
class _Event:
    """A rows event read back from bronze, with its table map."""

    file: str
    offset: int
    inner_index: int | None
    type_code: int
    timestamp: int
    server_id: int
    gtid: str | None
    body: bytes
    table_map: TableMap
    fde: FormatDescription


def _events(execute: Execute, storage: StorageSettings, transactions: list[_Transaction]) -> list[_Event]:
    """The rows events holding the selected row changes, each with its TABLE_MAP and FORMAT_DESCRIPTION."""
    wanted = {(file, offset, inner) for t in transactions for file, offset, inner, _ in t.places}
    files = {file for file, _, _ in wanted}
    offsets = {offset for _, offset, _ in wanted}
    events = [
        row
        for row in _rows(
            execute,
            "SELECT file, offset, inner_index, event_type, timestamp, server_id, gtid, fde_offset, map_offset, "
            f"map_inner_index, body FROM {storage.bronze_database}.binlog_events "
            f"WHERE file IN ({_in(files)}) AND offset IN ({_in(offsets)})",
        )
        if (row["file"], row["offset"], -1 if row["inner_index"] is None else row["inner_index"]) in wanted
    ]
    map_offsets = {row["map_offset"] for row in events}
    maps = {
        (row["file"], row["offset"], row["inner_index"]): row
        for row in _rows(
            execute,
            "SELECT file, offset, inner_index, body, fde_offset, resolved_columns "
            f"FROM {storage.silver_database}.table_maps "
            f"WHERE file IN ({_in(files)}) AND offset IN ({_in(map_offsets)})",
        )
    }
    descriptions = {
        row["file"]: {int(k): v for k, v in _mapping(row["format_descriptions"]).items()}
        for row in _rows(
            execute,
            f"SELECT file, format_descriptions FROM {storage.bronze_database}.binlog_files "
            f"WHERE file IN ({_in(files)})",
        )
    }
    out = []
    for row in events:
        found = maps[(row["file"], row["map_offset"], row["map_inner_index"])]
        fde_text = descriptions[row["file"]][row["fde_offset"]]
        history = found["resolved_columns"]
        table_map = table_map_of(
            bytes(found["body"]),
            descriptions[found["file"]][found["fde_offset"]],
            None if history is None else [{name: c[name] for name in HISTORY_FIELDS} for c in history],
        )
        out.append(
            _Event(
                row["file"],
                row["offset"],
                row["inner_index"],
                row["event_type"],
                row["timestamp"],
                row["server_id"],
                row["gtid"],
                bytes(row["body"]),
                table_map,
                FormatDescription.from_json(fde_text),
            )
        )
    return out


def _changes(event: _Event, options: DecodeOptions) -> tuple[list[RowChange], bool]:
    """The row changes of one rows event (the decoder's values), and its NO_FOREIGN_KEY_CHECKS flag."""
    header = decode_rows_header(event.body, event.type_code, event.fde)
    problems: list[BinlogError] = []
    pairs = decode_rows(header, TablePlan(event.table_map, options, event.fde), problems)
    errors = [p for p in problems if p.severity == "error"]
    if errors:
        raise errors[0].locate(file=event.file, offset=event.offset, inner_index=event.inner_index)
    name = event_type_name(event.type_code)
    changes = [
        RowChange(
            event.file,
            event.offset,
            event.inner_index,
            index,
            name,
            event.gtid,
            event.timestamp,
            event.server_id,
            event.table_map,
            header.kind.op,
            before,
            after,
        )
        for index, (before, after) in enumerate(pairs)
    ]
    return changes, bool(header.flags & RowsFlag.NO_FOREIGN_KEY_CHECKS)


# -- completing partial images from the history ------------------------------------------------


def _temporal_text(value: datetime, fsp: int) -> str:
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    return text + f".{value.microsecond:06d}"[: fsp + 1] if fsp else text


def _same(value: Any, _raw: Any, _column: Column) -> Any:
    return value


def _decimal(value: Any, _raw: Any, _column: Column) -> Any:
    return format(value, "f") if isinstance(value, Decimal) else value


def _bit(value: Any, _raw: Any, _column: Column) -> Any:
    return int(value) & ((1 << 64) - 1)


def _label(value: Any, _raw: Any, column: Column) -> Any:
    labels = column.enum_values if column.enum_values is not None else column.set_values
    return value if labels is not None else int(value)


def _vector(value: Any, _raw: Any, _column: Column) -> Any:
    return tuple(value)


def _moment(value: Any, raw: Any, column: Column) -> Any:
    """TIMESTAMP and DATETIME: the decoder's text (zero dates from ``__raw``)."""
    if value is None:
        return raw if raw is not None else ABSENT
    return _temporal_text(value.replace(tzinfo=None), column.fsp)


def _date(value: Any, raw: Any, _column: Column) -> Any:
    if value is None:
        return raw if raw is not None else ABSENT
    return value.isoformat() if isinstance(value, date) else value


def _text(value: Any, raw: Any, _column: Column) -> Any:
    """Text: its string; bytes that did not decode were kept in ``__raw``."""
    if value is None and raw is not None:
        return UndecodedText(raw)
    return value


def _json(value: Any, raw: Any, _column: Column) -> Any:
    """JSON: its text; a partial update (``__raw``) is not a document."""
    return ABSENT if value is None and raw is not None else value


DECODER_VALUES: dict[str, Callable[[Any, Any, Column], Any]] = {
    "int": _same,
    "float": _same,
    "double": _same,
    "time": _same,
    "year": _same,
    "binary": _same,
    "decimal": _decimal,
    "bit": _bit,
    "enum": _label,
    "set": _label,
    "vector": _vector,
    "timestamp": _moment,
    "datetime": _moment,
    "date": _date,
    "text": _text,
    "json": _json,
}
"""Gold conversion -> how a history value (and its ``__raw`` companion) becomes the decoder's value
again: the inverse of :data:`pipelines.gold.decode.CONVERTERS`. A conversion missing here (``other``:
values kept as their text) is not restored."""


def _restored(version: Mapping[str, Any], column: Column) -> Any:
    """A column's value as the decoder gives it, from a history version (``ABSENT``: not restorable)."""
    name = column.display_name
    if name not in version:
        return ABSENT
    value, raw = version[name], version.get(name + RAW_SUFFIX)
    if value is None and raw is None:
        return None
    restore = DECODER_VALUES.get(conversion_of(column_kind(column)))
    return ABSENT if restore is None else restore(value, raw, column)


def _completed(image: Row | None, version: Mapping[str, Any] | None, columns: Sequence[Column]) -> Row | None:
    if image is None or version is None or ABSENT not in image:
        return image
    return tuple(
        _restored(version, column) if value is ABSENT else value for value, column in zip(image, columns, strict=True)
    )


def _partial(change: RowChange) -> bool:
    return any(image is not None and ABSENT in image for image in (change.before, change.after))


def _history_versions(
    execute: Execute, storage: StorageSettings, server: str, table: str, places: set[Place]
) -> tuple[dict[Place, dict[str, Any]], dict[Place, dict[str, Any]]]:
    """The versions of ``table`` the changes at ``places`` closed and opened, by place."""
    files = {file for file, _, _, _ in places}
    try:
        rows = _rows(
            execute,
            f"SELECT * FROM {storage.history_database}.{table} WHERE _server = {_literal(server)} "
            f"AND (_valid_to_file IN ({_in(files)}) OR _valid_from_file IN ({_in(files)}))",
        )
    except StatementError:  # no history table: the images stay as the files hold them
        return {}, {}

    def place(row: Mapping[str, Any], side: str) -> Place:
        inner = row[f"_{side}_inner_index"]
        return (row[f"_{side}_file"], row[f"_{side}_offset"], -1 if inner is None else inner, row[f"_{side}_row_index"])

    closed = {place(row, "valid_to"): row for row in rows if row["_valid_to_file"] is not None}
    opened = {place(row, "valid_from"): row for row in rows}
    return closed, opened


def _complete(execute: Execute, storage: StorageSettings, server: str, changes: list[RowChange]) -> list[RowChange]:
    """The changes, their partial images completed from the lake's history where it holds them."""
    partial: dict[str, set[Place]] = defaultdict(set)
    for change in changes:
        if _partial(change):
            table = gold_table_name(change.table_map.schema, change.table_map.table)
            partial[table].add(_place(change))
    if not partial:
        return changes
    closed: dict[Place, dict[str, Any]] = {}
    opened: dict[Place, dict[str, Any]] = {}
    for table, places in partial.items():
        before, after = _history_versions(execute, storage, server, table, places)
        closed |= before
        opened |= after
    return [_completed_change(change, closed, opened) if _partial(change) else change for change in changes]


def _completed_change(
    change: RowChange, closed: Mapping[Place, Mapping[str, Any]], opened: Mapping[Place, Mapping[str, Any]]
) -> RowChange:
    """One change with its absent columns filled from the versions it closed and opened."""
    at, columns = _place(change), change.table_map.columns
    return RowChange(
        change.file,
        change.offset,
        change.inner_index,
        change.row_index,
        change.event_type,
        change.gtid,
        change.timestamp,
        change.server_id,
        change.table_map,
        change.op,
        _completed(change.before, closed.get(at), columns),
        _completed(change.after, opened.get(at), columns),
    )


def _place(change: RowChange) -> Place:
    return (change.file, change.offset, -1 if change.inner_index is None else change.inner_index, change.row_index)


def write_flashback(
    execute: Execute, storage: StorageSettings, selection: Selection, out: TextIO, options: DecodeOptions
) -> int:
    """Write the undo script of the selected transactions to ``out``; the number of transactions.

    Raises :class:`FlashbackError` for a selection that finds nothing or spans servers, and
    :class:`binlog_core.errors.SqlError` (``PartialImageError`` naming the rows and columns, ...)
    for a change that cannot be undone: then nothing is written.
    """
    transactions = _transactions(execute, storage, selection)
    _check_statements(execute, storage, transactions)
    server = transactions[0].server
    events = _events(execute, storage, transactions)
    by_event: dict[tuple[str, int, int], tuple[list[RowChange], bool]] = {}
    for event in events:
        found, unchecked = _changes(event, options)
        key = (event.file, event.offset, -1 if event.inner_index is None else event.inner_index)
        by_event[key] = (_complete(execute, storage, server, found), unchecked)
    flashback = Flashback(text_codec=options.default_charset)
    for transaction in transactions:
        changes: list[RowChange] = []
        unchecked = False
        for key in sorted({p[:3] for p in transaction.places}):
            found, flag = by_event[key]
            changes += [c for c in found if _place(c) in transaction.places]
            unchecked |= flag
        flashback.transaction(transaction.label, changes, no_foreign_key_checks=unchecked)
    return flashback.write(out)


__all__ = ["DECODER_VALUES", "FlashbackError", "Selection", "write_flashback"]
