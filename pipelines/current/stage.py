"""The current stage: each gold change table replayed into its current state and its row history.

For every typed gold table ``<schema>__<table>`` the new files touch, ``CurrentStage.build``:

1. collects on the driver what the replay needs besides the rows (all small): the file sequence
   numbers (``binlog_files``), the DDL statements that act on the table's rows (silver
   ``ddl_events``: TRUNCATE, DROP TABLE, DROP DATABASE, CREATE, RENAME TABLE), and from silver's
   ``schema_history`` the primary key in force at each position and the defaults of columns
   ALTER TABLE added;
2. groups the table's changes by server -- with the changes of every table renamed into it, whose
   rows the RENAME carries over -- and replays each server's sequence in a Python worker
   (:func:`pipelines.current.replay.replay`), straight from and into typed Arrow: every version
   of every row, with the bounds that opened and closed it. A table whose rows the replay needs
   were all built by gold in the same run is read from gold's frames, still kept for this stage
   (``Context.handed``), not from the table just written;
3. writes ``binlog_history.<table>`` (every version) and ``binlog_current.<table>`` (the versions
   still open) from that one replay, by merge or overwrite (below).

A table that only ever received rows by RENAME (no row change names it) has its tables too, with
the columns of the tables renamed into it. The default ALTER TABLE ... ADD COLUMN writes into the
rows that existed before is known when it is a constant (a number or a string) or the statement's
time (``CURRENT_TIMESTAMP``, ``NOW(6)``: the QUERY event's time, with its microseconds where the
binlog has them; for a DATETIME, in the session time zone the event names); another expression
(``UUID()``), or a DATETIME's when the binlog does not name the time zone, leaves them NULL.

**Incremental.** When every file pending comes after every file already replayed of its server
(files arrive in their servers' order, none rebuilt), each server's replay starts at its first new
file: from the versions open there (read from the history tables: those opened before it and not
closed before it) and the steps from there on. Only the tables those steps touch are replayed, and
each is merged on its key (a version is identified by where it was opened): the new versions are
inserted, the old versions the steps closed are updated in history and deleted from current state.
Merging again what a killed run merged changes nothing, and the versions a continued replay gives
are those a replay from the start gives (``tests/pipelines/current/test_replay.py``), so the
tables are the same whether files came one at a time or all at once. Otherwise -- a file earlier
than one replayed, a file rebuilt, a table whose gold columns changed since its history was
written -- the table is replayed from the start and overwritten. Progress is recorded last.
Delta's change data feed is on for both tables: a merge records only the rows it changed.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import pyarrow as pa
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from pipelines.current.replay import (
    FILL,
    RENAME,
    RESETS,
    ROW_OPS,
    Position,
    Schema,
    SchemaHistory,
    Step,
    Version,
    replay,
)
from pipelines.gold.names import gold_table_name
from pipelines.gold.stage import GoldOutput
from pipelines.gold.types import ddl_kind, spark_type
from pipelines.progress import file_predicate
from pipelines.stage import Built, Context
from pipelines.storage import Lakehouse, Table, Write
from pipelines.tables import (
    CHANGE_FEED,
    CHANGES,
    CURRENT_META,
    DDL_EVENTS,
    HISTORY_META,
    SCHEMA_HISTORY,
    Layer,
    TableSpec,
    current_table,
    history_table,
)

CHANGE_COLUMNS = [
    "server",
    "schema_name",
    "table_name",
    "file",
    "offset",
    "inner_index",
    "row_index",
    "op",
    "gtid",
    "commit_timestamp",
    "before",
    "after",
    "absent_columns",
]
"""The gold columns the replay reads."""

CHANGE_DATA_FEED = {CHANGE_FEED: "true"}

ALTER = "alter"
"""The DDL object action of ALTER TABLE (silver ``ddl_events``)."""


@dataclass
class CurrentOutput(Built):
    """The history frame of each gold table replayed (persisted), with its two specs."""

    tables: dict[str, _Replayed] = field(default_factory=dict)
    progress: list[dict[str, Any]] = field(default_factory=list)


def _position(sequence: Any, file: str, offset: int, inner: Any, row: Any) -> Position:
    return (
        -1 if sequence is None else int(sequence),
        file,
        int(offset),
        -1 if inner is None else int(inner),
        -1 if row is None else int(row),
    )


@dataclass(frozen=True)
class _Known:
    """What the replay of one gold table knows beside its rows (collected on the driver)."""

    sequences: dict[str, int | None]
    ddl: dict[str, list[_Ddl]]
    """server -> the DDL statements that empty tables or rename them."""
    schemas: dict[str, dict[str, list[_Version]]]
    """server -> gold table -> its schema versions."""
    fills: dict[str, list[tuple[str, Position, dict[str, str]]]]
    """server -> (gold table, where ALTER TABLE added columns, their defaults' SQL text)."""
    names: dict[str, tuple[str, str]] = field(default_factory=dict)
    """gold table -> its schema and table name (as the schema history names it)."""


_DDL_COLUMNS = (
    "server",
    "file",
    "offset",
    "inner_index",
    "gtid",
    "commit_timestamp",
    "timestamp",
    "objects",
    "status_vars",
)
"""The ``ddl_events`` columns the replay's DDL steps are made from."""


def _acting_statements(ctx: Context) -> list[Row]:
    """The ``ddl_events`` rows whose objects a replay step acts on (few); small work reads the table on
    the driver (all of it is small then) instead of asking Spark."""
    acting = sorted({*RESETS, ALTER, "rename_from", "rename_to"})
    if ctx.lake.small_work():
        found = [Row(**row) for row in ctx.lake.rows(DDL_EVENTS, _DDL_COLUMNS)]
        return [row for row in found if any(o.action in acting for o in row.objects or [])]
    statements = ctx.lake.read(DDL_EVENTS).where(F.exists("objects", lambda o: o["action"].isin(*acting)))
    return statements.select(*_DDL_COLUMNS).collect()


def _ddl_steps(ctx: Context, sequences: dict[str, int | None]) -> dict[str, list[_Ddl]]:
    """server -> the DDL statements that empty, rename or alter tables, with the tables they act on
    (few: collected; an ALTER's commit is the time of the defaults it fills in).

    A RENAME TABLE of several pairs is one step per pair, in the statement's order (the index of
    the pair's new name is the last part of its position), so that ``a TO t, b TO a, t TO b`` swaps.
    A DDL statement commits as it is written: its header time where no end event says more."""
    if not ctx.lake.exists(DDL_EVENTS):
        return {}
    rows = _acting_statements(ctx)
    steps: dict[str, list[_Ddl]] = defaultdict(list)
    for row in rows:
        at = _position(sequences.get(row.file), row.file, row.offset, row.inner_index, None)
        status = row.status_vars or {}
        committed = row.commit_timestamp or datetime.fromtimestamp(row.timestamp)  # local, as Spark collects
        now = Now(row.timestamp * 1_000_000 + int(status.get("microseconds") or 0), status.get("time_zone"))
        source: Any = None
        for index, o in enumerate(row.objects):
            if o.action in RESETS or o.action == ALTER:
                steps[row.server].append(
                    _Ddl(
                        at,
                        o.action,
                        o.schema_name,
                        o.object_name,
                        row.gtid,
                        committed,
                        now=now,
                    )
                )
            elif o.action == "rename_from":
                source = o
            elif o.action == "rename_to" and source is not None:
                steps[row.server].append(
                    _Ddl(
                        (*at[:4], index),
                        RENAME,
                        source.schema_name,
                        source.object_name,
                        row.gtid,
                        committed,
                        (o.schema_name or source.schema_name, o.object_name),
                    )
                )
                source = None
    return steps


@dataclass(frozen=True)
class _Ddl:
    """A DDL statement that empties a table (or, for DROP DATABASE, every table of a database), or
    renames one (``target``: its new schema and name)."""

    position: Position
    action: str
    schema: str | None
    name: str
    gtid: str | None
    commit_timestamp: Any
    target: tuple[str, str] | None = None
    now: Now | None = None
    """The statement's time, what ``CURRENT_TIMESTAMP`` meant in it."""

    def acts_on(self, schema: str, table: str) -> bool:
        """Whether it acts on table ``schema.table``, names compared as gold table names compare them."""
        if self.action == "drop_database":
            return gold_table_name(self.name, table) == gold_table_name(schema, table)
        return self.schema is not None and gold_table_name(self.schema, self.name) == gold_table_name(schema, table)

    @property
    def source_table(self) -> str | None:
        """The gold table name of the table it acts on (None: a database)."""
        return (
            None if self.action == "drop_database" or self.schema is None else gold_table_name(self.schema, self.name)
        )

    @property
    def target_table(self) -> str | None:
        """A RENAME's new gold table name."""
        return None if self.target is None else gold_table_name(*self.target)


def _renamed_into(ddl: dict[str, list[_Ddl]]) -> dict[str, set[str]]:
    """gold table -> every table whose rows a RENAME (or a chain of them) may carry into it, itself included."""
    sources: dict[str, set[str]] = defaultdict(set)
    for steps in ddl.values():
        for step in steps:
            if step.action == RENAME and step.source_table and step.target_table:
                sources[step.target_table].add(step.source_table)
    lineage: dict[str, set[str]] = {}
    for name in sources:
        found, todo = {name}, [name]
        while todo:
            for source in sources.get(todo.pop(), ()):
                if source not in found:
                    found.add(source)
                    todo.append(source)
        lineage[name] = found
    return lineage


@dataclass(frozen=True)
class _Version:
    """A schema version of a table: where it starts, its primary key, its columns' defaults (SQL text),
    and, for a version DDL or a seed gave, its columns' names and DDL type text."""

    start: Position
    key: tuple[str, ...]
    defaults: dict[str, str]
    declared: tuple[tuple[str, str], ...] = ()

    def typed(self, types: dict[str, pa.DataType]) -> Schema:
        """The version with its constant defaults as values of the columns' types."""
        return Schema(self.start, self.key, typed_defaults(self.defaults, types))


def _schema_facts(ctx: Context, sequences: dict[str, int | None], ddl: dict[str, list[_Ddl]]) -> _Known:
    """From silver's schema history, per server: each gold table's schema versions (where each
    starts, its primary key, its defaults) and the defaults of the columns each ALTER TABLE added."""
    schemas: dict[str, dict[str, list[_Version]]] = defaultdict(lambda: defaultdict(list))
    fills: dict[str, list[tuple[str, Position, dict[str, str]]]] = defaultdict(list)
    names: dict[str, tuple[str, str]] = {}
    if not ctx.lake.exists(SCHEMA_HISTORY):
        return _Known(sequences, ddl, schemas, fills, names)
    wanted = [
        "server",
        "schema_name",
        "table_name",
        "version",
        "valid_from_sequence",
        "valid_from_file",
        "valid_from_offset",
        "valid_from_inner_index",
        "columns",
        "source",
        "statement",
    ]
    rows = [Row(**found) for found in ctx.lake.rows(SCHEMA_HISTORY, wanted)]  # small: read on the driver
    previous: dict[tuple[str, str], Any] = {}
    for row in sorted(rows, key=lambda r: (r.server, r.schema_name, r.table_name, r.version)):
        name = gold_table_name(row.schema_name, row.table_name)
        names.setdefault(name, (row.schema_name, row.table_name))
        at = (
            (-2, "", -1, -1, -1)
            if row.valid_from_file is None
            else _position(
                row.valid_from_sequence,
                row.valid_from_file,
                row.valid_from_offset or 0,
                row.valid_from_inner_index,
                None,
            )
        )
        columns = row.columns or []
        schemas[row.server][name].append(
            _Version(
                at,
                tuple(c.name for c in columns if c.primary_key),
                {c.name: c.default for c in columns if c.default is not None},
                tuple((c.name, c.type or "") for c in columns) if row.source in _DECLARING else (),
            )
        )
        before = previous.get((row.server, name))
        if _alters(row) and before is not None and before.columns is not None:
            had = {c.name.lower() for c in before.columns}
            added = {c.name: c.default for c in row.columns if c.name.lower() not in had and c.default is not None}
            if added:
                fills[row.server].append((name, at, added))
        previous[(row.server, name)] = row
    return _Known(sequences, ddl, schemas, fills, names)


_DECLARING = frozenset({"ddl", "seed"})
"""Schema-history sources whose columns carry their DDL type text."""


def _declared(name: str, image: StructType, known: _Known) -> StructType:
    """``image`` (gold table ``name``'s source columns) and, after them, the columns the table's
    latest DDL gives it that no row event has shown yet (an ADD COLUMN with no row change since),
    typed as gold will type them (:func:`pipelines.gold.types.ddl_kind`)."""
    have = {f.name.lower() for f in image.fields}
    extra: list[StructField] = []
    for tables in known.schemas.values():
        versions = tables.get(name)
        if not versions:
            continue
        for column, type_text in versions[-1].declared:
            if column.lower() not in have:
                have.add(column.lower())
                extra.append(StructField(column, spark_type(ddl_kind(type_text)), True))
    return StructType([*image.fields, *extra]) if extra else image


def _alters(version: Any) -> bool:
    """Whether a schema-history version is an ALTER TABLE's (which can add columns to existing rows)."""
    return (
        version.source == "ddl"
        and version.columns is not None
        and (version.statement or "").lstrip().upper().startswith("ALTER")
    )


_QUOTED = re.compile(r"^'((?:[^']|'')*)'$")
_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")


def typed_default(text: str, kind: pa.DataType) -> Any:
    """A column default's SQL text as the value of a field of type ``kind``; None when it is not a
    constant (an expression such as ``CURRENT_TIMESTAMP()``) or does not convert.

    >>> typed_default("'it''s'", pa.string()), typed_default("-7", pa.int32())
    ("it's", -7)
    """
    quoted = _QUOTED.match(text)
    if quoted is not None:
        literal = quoted.group(1).replace("''", "'")
    elif _NUMBER.match(text):
        literal = text
    else:
        return None
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return literal.encode()
    try:
        return pa.array([literal], pa.string()).cast(kind)[0].as_py()
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


@dataclass(frozen=True)
class Now:
    """A statement's time: microseconds since the epoch (header seconds and, where the binlog has
    it, their fraction: MySQL ``Q_MICROSECONDS``, MariaDB ``Q_HRNOW``) and its session time zone
    when the binlog names it."""

    micros: int
    time_zone: str | None = None


_NOW = re.compile(r"^(?:current_timestamp|now|localtimestamp|localtime)\s*(?:\(\s*(\d?)\s*\))?$", re.IGNORECASE)
_OFFSET = re.compile(r"^([+-])(\d{1,2}):(\d{2})$")


def _zone(name: str | None) -> tzinfo | None:
    """A session time zone as the binlog writes it (``+02:00``, ``Europe/Paris``); None: not known
    (``SYSTEM`` is the server's, which the binlog does not say)."""
    if name is None:
        return None
    offset = _OFFSET.match(name)
    if offset is not None:
        sign = -1 if offset.group(1) == "-" else 1
        return timezone(sign * timedelta(hours=int(offset.group(2)), minutes=int(offset.group(3))))
    try:
        return ZoneInfo(name)
    except (ValueError, ZoneInfoNotFoundError):
        return None


def now_default(text: str, kind: pa.DataType, now: Now) -> Any:
    """A default that is the statement's time (``CURRENT_TIMESTAMP``, ``NOW(3)``, ...) as the value
    of a field of type ``kind``, at the expression's precision: an instant for a TIMESTAMP; for a
    DATETIME the wall-clock time in the statement's time zone where the binlog names it. None for
    any other default, or a DATETIME whose time zone is not known.

    >>> now_default("current_timestamp()", pa.timestamp("us", "UTC"), Now(1_700_000_000_123_456))
    datetime.datetime(2023, 11, 14, 22, 13, 20, tzinfo=datetime.timezone.utc)
    >>> now_default("NOW(3)", pa.timestamp("us"), Now(1_700_000_000_123_456, "+02:00"))
    datetime.datetime(2023, 11, 15, 0, 13, 20, 123000)
    """
    found = _NOW.match(text.strip())
    if found is None or not pa.types.is_timestamp(kind):
        return None
    unit = 10 ** (6 - int(found.group(1) or 0))
    instant = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=now.micros - now.micros % unit)
    if kind.tz is not None:
        return instant
    zone = _zone(now.time_zone)
    return None if zone is None else instant.astimezone(zone).replace(tzinfo=None)


def typed_defaults(defaults: dict[str, str], types: dict[str, pa.DataType], now: Now | None = None) -> dict[str, Any]:
    """Column -> its default as a value of the column's type: a constant, or with ``now`` (the time of
    the statement that filled it in) one that is the statement's time; other defaults left out."""
    values = {}
    for column, text in defaults.items():
        if column not in types:
            continue
        value = typed_default(text, types[column])
        if value is None and now is not None:
            value = now_default(text, types[column], now)
        if value is not None:
            values[column] = value
    return values


SEED = "seed"
"""The ``op`` of an input row that is no change but a version open where an incremental replay starts."""

Start = tuple[int, str]
"""``(file sequence or -1, file)``: where a server's incremental replay starts (its first new file)."""


def _steps(
    rows: list[dict[str, Any]], known: _Known, server: str, types: dict[str, pa.DataType], since: Start | None
) -> Iterator[Step]:
    """One server's steps of the tables replayed together: their row changes, and the DDL acting on
    them (from ``since`` on, when the replay starts there)."""
    members = {t: known.names[t] for t in {r["_table"] for r in rows} if t in known.names}
    for row in rows:
        if row["op"] == SEED:
            continue
        members.setdefault(row["_table"], (row["schema_name"], row["table_name"]))
        absent = row["absent_columns"] or {}
        yield Step(
            _position(
                known.sequences.get(row["file"]), row["file"], row["offset"], row["inner_index"], row["row_index"]
            ),
            row["op"],
            row["_table"],
            None,
            row["gtid"],
            row["commit_timestamp"],
            row["before"],
            row["after"],
            frozenset(absent.get("before") or ()),
            frozenset(absent.get("after") or ()),
        )
    ddl = [d for d in known.ddl.get(server, []) if since is None or d.position[:2] >= since]
    members |= {d.target_table: d.target for d in ddl if d.target_table and d.target}
    for step in ddl:
        for name, (schema, table_name) in members.items():
            if step.action != ALTER and step.acts_on(schema, table_name):
                yield Step(step.position, step.action, name, step.target_table, step.gtid, step.commit_timestamp)
    alters = {d.position[:4]: d for d in ddl if d.action == ALTER}
    for name, at, defaults in known.fills.get(server, []):
        alter = alters.get(at[:4])
        if name in members and alter is not None:
            after = typed_defaults(defaults, types, alter.now)
            yield Step(at, FILL, name, None, alter.gtid, alter.commit_timestamp, after=after)


def _seeds(rows: list[dict[str, Any]], known: _Known) -> list[tuple[str, Version]]:
    """The versions open where the replay starts (input rows :data:`SEED`), by table."""
    seeds = []
    for row in rows:
        if row["op"] != SEED:
            continue
        action = row["_seed_op"]
        index = row["row_index"] if action in ROW_OPS else None
        opened = Step(
            _position(known.sequences.get(row["file"]), row["file"], row["offset"], row["inner_index"], index),
            action,
            row["_table"],
            gtid=row["gtid"],
            commit_timestamp=row["commit_timestamp"],
        )
        seeds.append((row["_table"], Version(dict(row["after"]), opened, row=row["row_index"])))
    return seeds


def _bounds(step: Step | None, prefix: str, row: int | None) -> dict[str, Any]:
    if step is None:
        return dict.fromkeys(
            (f"{prefix}sequence", f"{prefix}file", f"{prefix}offset", f"{prefix}inner_index", f"{prefix}row_index")
        )
    sequence, file, offset, inner, _ = step.position
    return {
        f"{prefix}sequence": None if sequence < 0 else sequence,
        f"{prefix}file": file,
        f"{prefix}offset": offset,
        f"{prefix}inner_index": None if inner < 0 else inner,
        f"{prefix}row_index": row,
    }


def _row_of(step: Step | None) -> int | None:
    """The row index of a row change (None: a DDL statement)."""
    if step is None or step.action not in ROW_OPS or step.position[4] < 0:
        return None
    return step.position[4]


def _history_row(server: str, version: Version) -> dict[str, Any]:
    opened, closed = version.opened, version.closed
    return {
        **version.values,
        "_server": server,
        "_op": opened.action,
        "_gtid": opened.gtid,
        "_valid_from": opened.commit_timestamp,
        "_valid_to": None if closed is None else closed.commit_timestamp,
        "_is_current": closed is None,
        "_closed_by": None if closed is None else closed.action,
        **_bounds(opened, "_valid_from_", version.row),
        **_bounds(closed, "_valid_to_", _row_of(closed)),
    }


def replay_server(
    known: _Known, meta: StructType, name: str, columns: list[str], since: dict[str, Start] | None = None
) -> Any:
    """``pa.Table -> pa.Table`` for ``applyInArrow``: one server's changes -> the versions of gold
    table ``name``, its source ``columns`` typed as the gold image arrives, ``meta`` (the history
    columns) after them.

    ``since`` (server -> where its new files start): the input holds the changes from there on and
    the versions open there (:data:`SEED` rows); the output, the versions opened from there on and
    those of the seeds that a change closed."""

    def replay_group(table: pa.Table) -> pa.Table:
        image = table.schema.field("after").type
        out_schema = _out_schema(image, columns, meta, table.schema)
        if table.num_rows == 0:
            return out_schema.empty_table()
        server = table.column("server")[0].as_py()
        types = {image.field(i).name: image.field(i).type for i in range(image.num_fields)}
        schemas = SchemaHistory(
            {t: [v.typed(types) for v in found] for t, found in known.schemas.get(server, {}).items()}
        )
        rows = table.to_pylist()
        start = None if since is None else since.get(server)
        versions = replay(_steps(rows, known, server, types, start), list(types), schemas, name, _seeds(rows, known))
        changed = [v for v in versions if not v.seed or v.closed is not None]
        return pa.Table.from_pylist([_history_row(server, v) for v in changed], schema=out_schema)

    return replay_group


def _out_schema(image: pa.StructType, columns: list[str], meta: StructType, given: pa.Schema) -> pa.Schema:
    """The Arrow schema of history rows: the image's fields named ``columns``, then ``meta`` in the
    time zone and string type Spark hands the input in."""
    from pyspark.sql.pandas.types import to_arrow_schema  # noqa: PLC0415

    zone = given.field("commit_timestamp").type.tz or "UTC"
    text = given.field("file").type
    fields = [
        field.with_type(text) if pa.types.is_string(field.type) or pa.types.is_large_string(field.type) else field
        for field in to_arrow_schema(meta, timezone=zone)
    ]
    return pa.schema([*(image.field(c) for c in columns), *fields])


def _image_of(name: str, members: dict[str, DataFrame]) -> tuple[StructType, StructType]:
    """The source columns of table ``name`` (its gold image; for a table only RENAMEs filled, those of
    the tables renamed into it), and the image its replay reads: those and every other member's."""
    images = [frames.schema["after"].dataType for frames in members.values()]
    merged = StructType()
    for image in images:
        assert isinstance(image, StructType)
        for f in image.fields:
            if f.name not in merged.fieldNames():
                merged.add(f)
    own = members[name].schema["after"].dataType if name in members else merged
    assert isinstance(own, StructType)
    wide = StructType([*own.fields, *(f for f in merged.fields if f.name not in own.fieldNames())])
    return own, wide


def _union(parts: dict[str, list[DataFrame]], image: StructType) -> DataFrame:
    """The input rows of every member table (:func:`_changes`, :func:`_seed_rows`), named by
    ``_table``, their images cast to ``image`` by name."""

    def conform(frame: DataFrame, column: str) -> Any:
        have = frame.schema[column].dataType
        assert isinstance(have, StructType)
        if have == image:
            return F.col(column)
        fields = [
            (F.col(f"{column}.{f.name}") if f.name in have.fieldNames() else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in image.fields
        ]
        return F.when(F.col(column).isNull(), F.lit(None)).otherwise(F.struct(*fields)).alias(column)

    frames = [
        frame.select(
            *(conform(frame, c) if c in ("before", "after") else F.col(c) for c in CHANGE_COLUMNS),
            F.lit(table).alias("_table"),
            "_seed_op",
        )
        for table, found in parts.items()
        for frame in found
    ]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    return union


@dataclass(frozen=True)
class _GoldRows:
    """Where the replay reads a gold table's rows: the frame gold built in this run when it holds
    every row the replay needs (no Delta snapshot to plan, no file read again), else the table as
    stored."""

    lake: Lakehouse
    built: dict[str, DataFrame]
    """Gold table -> its rows gold built in this run (of ``fresh`` files only)."""
    fresh: frozenset[str]
    complete: frozenset[str]
    """The tables of ``built`` whose every file with rows is ``fresh``."""

    @classmethod
    def of(cls, ctx: Context) -> _GoldRows:
        handed = ctx.handed.get(Layer.GOLD.value)
        if not isinstance(handed, GoldOutput):
            return cls(ctx.lake, {}, frozenset(), frozenset())
        fresh = frozenset(handed.files)
        gold = ctx.state.progress(Layer.GOLD)
        built = {
            name: frame
            for name, (spec, _staged) in handed.tables.items()
            if (frame := ctx.lake.written_frame(spec)) is not None
        }
        complete = frozenset(
            name for name in built if all(f in fresh for f, row in gold.items() if (row.get("counts") or {}).get(name))
        )
        return cls(ctx.lake, built, fresh, complete)

    def frame(self, name: str, pending: list[str] | None) -> DataFrame:
        """Table ``name``'s rows for a replay that continues from the ``pending`` files, or (None)
        that starts over."""
        if name in self.built and (name in self.complete if pending is None else self.fresh.issuperset(pending)):
            return self.built[name]
        return self.lake.read(Table(Layer.GOLD, name))


def _changes(gold: DataFrame, files: list[str] | None) -> DataFrame:
    """A gold table's row changes as replay input (of ``files`` only, when given)."""
    if files is not None:
        gold = gold.where(file_predicate(files))
    return gold.select(*CHANGE_COLUMNS, F.lit(None).cast("string").alias("_seed_op"))


def _opened_before(side: str, start: Start) -> Any:
    """Whether the ``_valid_from_`` or ``_valid_to_`` bound of a history row lies before ``start``."""
    sequence = F.coalesce(F.col(f"_{side}_sequence"), F.lit(-1))
    return (sequence < start[0]) | ((sequence == start[0]) & (F.col(f"_{side}_file") < start[1]))


def _seed_rows(history: DataFrame, gold: DataFrame, since: dict[str, Start]) -> DataFrame:
    """The versions of a history table open where each server's replay starts, as replay input
    (:data:`SEED` rows: the history's own image, other columns typed as in ``gold``)."""
    source = [f.name for f in history.schema.fields[: -len(HISTORY_META)]]
    image = StructType(history.schema.fields[: -len(HISTORY_META)])
    open_at = F.lit(False)
    for server, start in since.items():
        open_at = open_at | (
            (F.col("_server") == server)
            & _opened_before("valid_from", start)
            & (F.col("_valid_to_file").isNull() | ~_opened_before("valid_to", start))
        )
    typed = {f.name: f.dataType for f in gold.schema.fields} | {"before": image, "after": image}
    return history.where(open_at).select(
        *(
            column.cast(typed[name]).alias(name)
            for name, column in {
                "server": F.col("_server"),
                "schema_name": F.lit(None),
                "table_name": F.lit(None),
                "file": F.col("_valid_from_file"),
                "offset": F.col("_valid_from_offset"),
                "inner_index": F.col("_valid_from_inner_index"),
                "row_index": F.col("_valid_from_row_index"),
                "op": F.lit(SEED),
                "gtid": F.col("_gtid"),
                "commit_timestamp": F.col("_valid_from"),
                "before": F.lit(None),
                "after": F.struct(*source),
                "absent_columns": F.lit(None),
            }.items()
        ),
        F.col("_op").alias("_seed_op"),
    )


def _since(files: dict[str, dict[str, Any]], pending: list[str], done: dict[str, Any]) -> dict[str, Start] | None:
    """server -> where its new files start, when every pending file is new and comes after every
    file already replayed of its server; None: the tables must be replayed from the start."""
    if not done:
        return None

    def start(file: str) -> tuple[str, Start]:
        row = files[file]
        return row["server"], (-1 if row["sequence"] is None else int(row["sequence"]), file)

    last: dict[str, Start] = {}
    for file in done:
        if file in files:
            server, at = start(file)
            last[server] = max(last.get(server, at), at)
    since: dict[str, Start] = {}
    for file in pending:
        server, at = start(file)
        if file in done or (server in last and at <= last[server]):
            return None
        since[server] = min(since.get(server, at), at)
    return since


def _touched(names: list[str], counts: list[dict[str, int]], known: _Known, since: dict[str, Start]) -> set[str]:
    """The tables whose rows the new files change: by row changes (``counts``: gold's per file) or
    by DDL from where each server's replay starts."""
    touched = {t for c in counts for t, n in c.items() if n}
    for server, start in since.items():
        for step in known.ddl.get(server, []):
            if step.position[:2] < start:
                continue
            if step.source_table is None:  # a database: every table of it, and any table not known by name
                touched |= {t for t in names if t not in known.names or step.acts_on(*known.names[t])}
            touched |= {t for t in (step.source_table, step.target_table) if t is not None}
        touched |= {name for name, at, _ in known.fills.get(server, []) if at[:2] >= start}
        touched |= {
            name
            for name, versions in known.schemas.get(server, {}).items()
            if any(v.declared and v.start[:2] >= start for v in versions)
        }
    return touched


def _image_fields(struct: StructType) -> list[tuple[str, Any]]:
    return [(f.name, f.dataType) for f in struct.fields]


@dataclass(frozen=True)
class _Replayed:
    """One table's replay: its specs, its history rows (every version, or from ``merge``: the new
    versions and the old ones closed), and whether it continues the tables (``merge``) or rebuilds them."""

    current: TableSpec
    history: TableSpec
    versions: DataFrame
    merge: bool


class CurrentStage:
    """Current state and history (see the module doc)."""

    name = "current"

    def build(self, ctx: Context) -> CurrentOutput:
        """Replay the gold tables the files gold has (re)built since the last replay change: from the
        versions open before them when they all follow what was replayed, else from the start."""
        state = ctx.state
        files = state.files()
        gold = state.progress(Layer.GOLD)
        upstream = {f: gold[f]["run_id"] for f in files if f in gold}
        pending = state.pending(Layer.CURRENT, upstream)
        waiting = [f for f in files if f not in gold]
        ctx.say(f"{len(pending)} file(s) pending" + (f", {len(waiting)} waiting for gold" if waiting else ""))
        out = CurrentOutput(files=pending)
        if not pending:
            return out
        ctx.expect_work(ctx.size_of(list(files)))  # a replay may read the history of every file
        sequences = {f: row["sequence"] for f, row in files.items()}
        known = _schema_facts(ctx, sequences, _ddl_steps(ctx, sequences))
        lineage = _renamed_into(known.ddl)
        since = _since(files, pending, state.progress(Layer.CURRENT))
        rows = _GoldRows.of(ctx)
        stored = [t for t in ctx.lake.tables(Layer.GOLD) if t != CHANGES.name]
        names = sorted({*stored, *(t for t, sources in lineage.items() if sources & set(stored))})
        if since is not None:
            touched = _touched(names, [gold[f].get("counts") or {} for f in pending], known, since)
            names = [n for n in names if n in touched]
        for name in names:
            tables = [t for t in sorted(lineage.get(name, {name}) | {name}) if t in stored]
            members = {t: rows.frame(t, None if since is None else pending) for t in tables}
            own, image = _image_of(name, members)
            own = _declared(name, own, known)
            image = StructType([*own.fields, *(f for f in image.fields if f.name not in own.fieldNames())])
            history = history_table(name, own)
            meta = StructType([c.field() for c in history.columns[len(own.fields) :]])
            histories = self._histories(ctx, name, own, members, lineage, known) if since is not None else None
            start = since if histories is not None else None
            if start is None and since is not None:  # starts over after all: every row of every member
                members = {t: rows.frame(t, None) for t in tables}
            parts: dict[str, list[DataFrame]] = {
                t: [_changes(f, None if start is None else pending)] for t, f in members.items()
            }
            if start is not None and histories is not None:
                for t, found in histories.items():
                    parts.setdefault(t, []).append(_seed_rows(found, next(iter(members.values())), start))
            versions = ctx.grouped(
                _union(parts, image),
                "server",
                replay_server(known, meta, name, own.fieldNames(), start),
                history.schema,
            )
            out.tables[name] = _Replayed(current_table(name, own), history, out.kept.keep(versions), start is not None)
        out.counts["current_tables"] = len(names)
        out.progress = [{"file": f, "built_from": upstream[f], "run_id": ctx.run_id} for f in pending]
        return out

    @staticmethod
    def _histories(
        ctx: Context,
        name: str,
        own: StructType,
        members: dict[str, DataFrame],
        lineage: dict[str, set[str]],
        known: _Known,
    ) -> dict[str, DataFrame] | None:
        """The history tables the replay of ``name`` continues from (every table whose rows may reach
        it), or None when one of them holds other columns than its gold table now has (a column
        added, dropped or retyped since): then the table is replayed from the start."""
        found = {}
        for table in sorted(lineage.get(name, {name}) | {name}):
            ref = Table(Layer.HISTORY, table)
            if not ctx.lake.exists(ref):
                continue
            history = ctx.lake.read(ref)
            if table in members:
                gold = members[table].schema["after"].dataType
                assert isinstance(gold, StructType)
                image = own if table == name else _declared(table, gold, known)
            elif table == name:
                image = own
            else:
                return None
            if _image_fields(StructType(history.schema.fields[: -len(HISTORY_META)])) != _image_fields(image):
                return None
            found[table] = history
        return found

    def write(self, ctx: Context, out: CurrentOutput) -> None:
        """Each table's history, then its current state from the same (cached) replay; progress last.

        A table replayed from the start is overwritten; one continued is merged on its key: new
        versions inserted, the versions the new steps closed updated (history) or deleted
        (current). Merging what a killed run merged already changes nothing."""
        ctx.lake.write_all(
            [
                Write(t.history, t.versions, mode="merge" if t.merge else "overwrite", properties=CHANGE_DATA_FEED)
                for t in out.tables.values()
            ]
        )
        ctx.lake.write_all(
            [
                Write(
                    t.current,
                    _current_rows(t.current, t.versions),
                    mode="merge",
                    keep="_is_current",
                    properties=CHANGE_DATA_FEED,
                )
                if t.merge
                else Write(
                    t.current,
                    _current_rows(t.current, t.versions.where(F.col("_is_current"))),
                    mode="overwrite",
                    properties=CHANGE_DATA_FEED,
                )
                for t in out.tables.values()
            ]
        )
        ctx.state.record(Layer.CURRENT, [{**row, "quarantined": 0, "counts": {}} for row in out.progress])


def _current_rows(current: TableSpec, versions: DataFrame) -> DataFrame:
    """History rows as current-state rows: their metadata renamed, ``_is_current`` kept beside them."""
    source = current.columns[: -len(CURRENT_META)]
    return versions.select(
        *[c.name for c in source],
        *[F.col(_CURRENT_FROM.get(c.name, c.name)).alias(c.name) for c in current.columns[len(source) :]],
        "_is_current",
    )


_CURRENT_FROM = {
    "_committed_at": "_valid_from",
    "_sequence": "_valid_from_sequence",
    "_file": "_valid_from_file",
    "_offset": "_valid_from_offset",
    "_inner_index": "_valid_from_inner_index",
    "_row_index": "_valid_from_row_index",
}
"""Current-state metadata column -> the history column it is."""

__all__ = ["CHANGE_DATA_FEED", "CurrentOutput", "CurrentStage", "replay_server"]
